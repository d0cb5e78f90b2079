"""Line dedup on Beam (the twin of corpus/dedup/line_dedup.py; contract: corpus/steps/line_dedup.py):
every line's claims meet in a group by line bucket (the owner: the smallest md5(url)), the
owners go to their page's bucket, and each page meets the lines it owns at the join by page
bucket (``keep_owned_lines``). The claims are made here from the pages (``ClaimLinesFn``), or,
where the planning pass fused this step with a URL dedup right before it
(``Fused.LINES_CLAIMED_AT_URL_JOIN``), are the ones its URL groups made; the pages then already wait at
its join. The transforms: pipelines/c4.py ``line_dedup``.

A claim names the page (md5(url): URLs are unique after URL dedup) and the index of the line in
it (corpus/dedup/line_claims.py); the smallest claim of a key is its owner, and names the line of its
page that the join keeps, so the join keeps lines without hashing the page's lines again
(``keep_lines_at``). Claims and owners are combined as numpy records and cross the shuffles as
bytes, batches of fixed-size records (36 bytes a claim, 20 an owner): no Python object per line
on either side of a shuffle.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

import apache_beam as beam

from c4forge.corpus.chain.verdict import count_verdict
from c4forge.corpus.dedup import digest_records, line_claims
from c4forge.corpus.dedup.line_claims import ClaimBuffer, pack_keys, text_line_keys
from c4forge.corpus.dedup.line_dedup import NS_LINES, dedupe_page_at, page_owning_nothing, sentence_check
from c4forge.corpus.document import Document, from_bytes, packed_normalized_url, packed_text_size
from c4forge.corpus.text.urls import url_rank
from c4forge.pipelines.dofns import DEFAULT_BUCKETS, BucketBatchingFn, in_global_window


class ClaimLinesFn(beam.DoFn):
    """Pages -> line claims, combined in the DoFn (``ClaimBuffer``): per line key only the
    smallest claim of the bundle goes out, so the shuffle carries one claim per distinct line
    per bundle, not one per line of every page (in-mapper combining: Beam's lifted combine did
    the same per element, at several times the CPU), as (line bucket, [CLAIM records...])."""

    def __init__(self, max_lines: int = 500_000, buckets: int = DEFAULT_BUCKETS) -> None:
        self.max_lines = max_lines
        self.buckets = buckets
        self.claims = ClaimBuffer(buckets, max_lines)

    def start_bundle(self) -> None:
        self.claims = ClaimBuffer(self.buckets, self.max_lines)

    def process(self, page: Document):
        yield from self.claims.add(url_rank(page.url), pack_keys(text_line_keys(page.text)))

    def finish_bundle(self):
        yield from in_global_window(self.claims.drain())


class LineOwnersFn(BucketBatchingFn):
    """(line bucket, batches of CLAIM records) -> every line's owner (its smallest claim: the
    smallest md5(url) that claimed it and the line's index in that page), batched by the
    owner's page bucket: (page bucket, [OWNER records...])."""

    def process(self, element):
        _, batches = element
        claims = digest_records.join((blob for batch in batches for blob in batch), line_claims.CLAIM)
        for bucket, blob in digest_records.by_bucket(line_claims.owners(claims), self.buckets):
            yield from self.batcher.add(bucket, blob, len(blob))


def keep_owned_lines(grouped: Mapping, arriving: Iterator, fn) -> Iterator:
    """At the join: each page keeps the lines it owns (their indices, from the owners' claims).
    A page that owns none is counted from its line count and packed header
    (``page_owning_nothing``), never unpacked, unless traced."""
    owners = digest_records.join((blob for batch in grouped["lines"] for blob in batch), line_claims.OWNER)
    owned = line_claims.kept_lines(owners)
    seen: set[bytes] = set()
    inc = fn.inc_for(NS_LINES)
    min_sentences = sentence_check(fn.config)
    for entry in arriving:
        if entry.rank in seen:  # URL dedup makes urls unique; anything else is a wiring bug
            raise ValueError(f"several pages for md5(url) {entry.rank.hex()}")
        seen.add(entry.rank)
        mine = owned.get(entry.rank)
        key = fn.traced(packed_normalized_url(entry.ref)) if fn.samples_dir else None
        if key is not None:  # a traced page: unpacked even if it owns nothing
            yield dedupe_page_at(from_bytes(entry.ref), mine or set(), min_sentences, inc, key, fn.samples())
        elif mine is None:
            count_verdict(inc, None, packed_text_size(entry.ref), page_owning_nothing(entry.n_lines))
        else:
            yield dedupe_page_at(from_bytes(entry.ref), mine, min_sentences, inc)
    orphans = owned.keys() - seen
    if orphans:
        raise ValueError(f"lines owned by md5(url) {min(orphans).hex()}, which has no page")
