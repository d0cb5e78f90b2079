"""Line dedup on Beam (the twin of corpus/line_dedup.py; contract: corpus/chain.py's LINE_DEDUP):
every line's claims meet in a group by line bucket (the owner: the smallest md5(url)), the
owners go to their page's bucket, and each page meets the lines it owns at the join by page
bucket (``keep_owned_lines``). The claims come from URL dedup's winners where it ran just
before (pipelines/url_dedup.py), from the pages otherwise (``ClaimLinesFn``).

A claim is 20 bytes: the 16-byte md5(url) that names the page (URLs are unique after URL dedup)
and the index of the line's first occurrence in it (corpus.line_dedup.claim_lines_at). So the
owners tell each page which lines it keeps, and the join keeps them without hashing the page's
lines again (``keep_lines_at``): compact bytes, not tuples with URL strings, and 20 bytes an
owned line to the join instead of 32 (md5(url) and the line's key).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

import apache_beam as beam

from c4forge.corpus.chain import Segment
from c4forge.corpus.document import Document, from_bytes, packed_normalized_url, packed_text_size, to_bytes
from c4forge.corpus.line_dedup import (
    claim_index,
    claim_lines_at,
    claim_rank,
    dedupe_page_at,
    line_keys,
    page_owning_nothing,
    url_rank,
)
from c4forge.corpus.steps import NS_LINES
from c4forge.corpus.verdict import count_verdict
from c4forge.pipelines.dofns import (
    DEFAULT_BUCKETS,
    SHUFFLE_COMPRESSION,
    Batcher,
    BucketBatchingFn,
    digest_bucket,
    in_global_window,
)
from c4forge.pipelines.wide import BeamJob, PageEntry, Stream, pages_of


def expand(stream: Stream, segment: Segment, job: BeamJob) -> Stream:
    if stream.claims is not None:  # URL dedup's winners claimed their lines; pages wait at the join
        join, claims, joiners = dict(stream.join), stream.claims, stream.joiners
    else:
        pages = pages_of(stream, job, "line-dedup")
        join = {"pages": pages | "key by url rank" >> beam.ParDo(KeyPagesFn(job.buckets))}
        claims = pages | "line claims" >> beam.ParDo(ClaimLinesFn(buckets=job.buckets))
        joiners = ()
    join["lines"] = (claims
                     | "group claims by line bucket" >> beam.GroupByKey()
                     | "owner of line" >> beam.ParDo(LineOwnersFn(job.buckets)))
    return Stream(join=join, joiners=(*joiners, keep_owned_lines), pending=segment.after)


def claim_batches(table: dict[bytes, bytes], buckets: int) -> list:
    """A claims table as (line bucket, [(line key, claim)...]) batches (the table is
    already bounded, so the batcher never flushes early)."""
    batcher = Batcher(limit=len(table) + 1)
    for key, claim in table.items():
        batcher.add(digest_bucket(key, buckets), (key, claim), 1)
    return batcher.drain()


class ClaimLinesFn(beam.DoFn):
    """Pages -> line claims, combined in the DoFn: per line key only the smallest claim seen in
    the bundle goes out (the smallest md5(url): tfds' owner; with it, the line's index in that
    page), so the shuffle carries one claim per distinct line per bundle, not one element per
    line of every page (in-mapper combining: Beam's lifted combine did the same per element,
    at several times the CPU). The claims go out in batches, (line bucket, [(line key,
    claim)...]). The table is bounded (``max_keys``; 250,000 keys hold about 35 MB): when full,
    it is emitted and emptied, so a line may be claimed once per drain, never lost."""

    def __init__(self, max_keys: int = 250_000, buckets: int = DEFAULT_BUCKETS) -> None:
        self.max_keys = max_keys
        self.buckets = buckets
        self.table: dict[bytes, bytes] = {}

    def start_bundle(self) -> None:
        self.table = {}

    def process(self, page: Document):
        claim_lines_at(self.table, url_rank(page.url), line_keys(page))
        if len(self.table) >= self.max_keys:
            yield from self._drain()

    def finish_bundle(self):
        yield from in_global_window(self._drain())

    def _drain(self) -> list:
        table, self.table = self.table, {}
        return claim_batches(table, self.buckets)


class LineOwnersFn(BucketBatchingFn):
    """(line bucket, batches of claims) -> every line's owning claim (the smallest md5(url) that
    claimed it, and the line's index in that page), batched by the owner's page bucket:
    (page bucket, [claim...])."""

    def process(self, element):
        _, batches = element
        owners: dict[bytes, bytes] = {}
        for batch in batches:
            for key, claim in batch:
                current = owners.get(key)
                if current is None or claim < current:
                    owners[key] = claim
        for claim in owners.values():
            yield from self.batcher.add(digest_bucket(claim_rank(claim), self.buckets), claim, 36)


class KeyPagesFn(BucketBatchingFn):
    """Pages -> (page bucket, [PageEntry...]) for the join, when no URL dedup made them."""

    def process(self, page: Document):
        rank = url_rank(page.url)
        packed = to_bytes(page, SHUFFLE_COMPRESSION)
        entry = tuple(PageEntry(rank, b"", packed, page.text.count("\n") + 1))
        yield from self.batcher.add(digest_bucket(rank, self.buckets), entry, len(packed) + 64)


def keep_owned_lines(grouped: Mapping, arriving: Iterator, fn) -> Iterator:
    """At the join: each page keeps the lines it owns (their indices, from the owners' claims).
    A page that owns none is counted from its line count and packed header
    (``page_owning_nothing``), never unpacked, unless traced."""
    owned: dict[bytes, set[int]] = {}
    for batch in grouped["lines"]:
        for claim in batch:
            rank = claim_rank(claim)
            kept = owned.get(rank)
            if kept is None:
                owned[rank] = kept = set()
            kept.add(claim_index(claim))
    seen: set[bytes] = set()
    inc = fn.inc_for(NS_LINES)
    min_sentences = fn.config.dedupe_min_sentences
    for entry in arriving:
        if entry.rank in seen:  # URL dedup makes urls unique; anything else is a wiring bug
            raise ValueError(f"several pages for md5(url) {entry.rank.hex()}")
        seen.add(entry.rank)
        mine = owned.get(entry.rank)
        key = fn.traced(packed_normalized_url(entry.packed)) if fn.samples_dir else None
        if key is not None:  # a traced page: unpacked even if it owns nothing
            yield dedupe_page_at(from_bytes(entry.packed), mine or set(), min_sentences, inc, key, fn.samples())
        elif mine is None:
            count_verdict(inc, None, packed_text_size(entry.packed), page_owning_nothing(entry.n_lines))
        else:
            yield dedupe_page_at(from_bytes(entry.packed), mine, min_sentences, inc)
    orphans = owned.keys() - seen
    if orphans:
        raise ValueError(f"lines owned by md5(url) {min(orphans).hex()}, which has no page")
