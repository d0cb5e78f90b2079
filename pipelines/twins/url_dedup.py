"""URL dedup on Beam (the twin of corpus/dedup/url_dedup.py; contract: corpus/steps/url_dedup.py), with
the engine's one optimisation of the chain: the page steps between URL dedup and the next
corpus-wide step run on every crawl *where it is read* (``Fused.PAGE_STEPS_AT_READER``), and the
page is split in two.

Its *candidate*, (normalised url, UrlCandidate: crawl time, raw text bytes, the counts its page
steps recorded, md5(url), record id, the cleaned lines' keys, its samples), goes to the URL
groups (batched by url bucket): small, no text. Its cleaned text goes into the page store and
its reference straight to the join that follows (the ``PAGES`` output, batched by the bucket of
md5(url) as PageEntry), where only the URL group's winner is kept. So the text crosses one
shuffle, not two. Page steps are per page, so the winner's output is the same either way; their
counts are recorded at the reader and counted only for the winner (NewestPagesFn), so every
counter equals tfds' order (dedup, then clean) and ``corpus clean``'s. The record id
(``page_record_id``: md5 of the record's file name and offset) tells apart two crawls of one URL
and breaks ties between equally new ones. Where the plan says so
(``Fused.CLAIM_LINES_IN_URL_GROUPS``), the URL groups claim the winners' lines at once, for the
line dedup that meets the pages at the same join. The transforms: pipelines/c4.py ``url_dedup``.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Optional

import apache_beam as beam

from c4forge.corpus.chain.step import Step
from c4forge.corpus.dedup.line_claims import ClaimBuffer, pack_keys, text_line_keys
from c4forge.corpus.dedup.url_dedup import NS_URL
from c4forge.corpus.document import Document, to_bytes
from c4forge.corpus.output.samples import Sample, SampleList, SampleOptions, url_duplicates
from c4forge.corpus.text.urls import UrlCandidate, count_url_group, page_record_id, url_rank
from c4forge.pipelines.dofns import (
    DEFAULT_BUCKETS,
    Batcher,
    Counting,
    Sampling,
    digest_bucket,
    in_global_window,
    on_the_wire,
    pack_counts,
    recorder,
    unpack_counts,
    url_bucket,
)
from c4forge.pipelines.pages import BeamJob, PageEntry, ReadFn
from c4forge.pipelines.store import PageStore, StoreWriter


class ReadCandidatesFn(ReadFn):
    """One crawl file -> a URL candidate per page (main output) and its cleaned text's
    reference into ``store`` (``PAGES``), after the page steps before URL dedup (``before``)
    and those after it (``after``)."""

    PAGES = "pages"

    def __init__(self, job: BeamJob, before: tuple[Step, ...], after: tuple[Step, ...],
                 line_keys: bool, store: PageStore) -> None:
        super().__init__(job, before)
        self.after = after
        self.line_keys = line_keys  # the winners' line keys are claimed at the URL groups
        self.buckets = job.buckets
        self.store = store
        self.batcher = Batcher()
        self.pages = Batcher()
        self.writer: Optional[StoreWriter] = None

    def setup(self) -> None:
        super().setup()
        self.after_loop = self.loop(self.after)

    def start_bundle(self) -> None:
        self.batcher, self.pages = Batcher(), Batcher()
        self.writer = self.store.writer()

    def emit(self, page: Document):
        counts: dict[tuple[str, str], int] = {}
        carried = SampleList()
        cleaned = self.run_steps(self.after_loop, page, lambda namespace: recorder(counts, namespace),
                                 carried)
        rank = keys = b""
        record = page_record_id(page)  # every page: it breaks ties between equally new crawls
        if cleaned is not None:
            rank = url_rank(cleaned.url)
            if self.line_keys:
                keys = pack_keys(text_line_keys(cleaned.text))
            ref = self.writer.put(to_bytes(cleaned, self.store.compression))
            entry = tuple(PageEntry(rank, record, ref, cleaned.text.count("\n") + 1))
            for batch in self.pages.add(digest_bucket(rank, self.buckets), entry, len(ref) + 96):
                yield beam.pvalue.TaggedOutput(self.PAGES, batch)
        url = page.normalized_url
        candidate = UrlCandidate(page.timestamp, page.text_size(), pack_counts(counts), rank, record, keys,
                                 json.dumps([s.to_wire() for s in carried]) if carried else "")
        yield from self.batcher.add(url_bucket(url, self.buckets), (url, on_the_wire(candidate)),
                                    len(url) + len(candidate.counts) + len(keys) + 96)

    def finish_bundle(self):
        super().finish_bundle()
        self.writer.close()  # the pages are in the store before their references go on
        yield from in_global_window(self.batcher.drain())
        for batch in in_global_window(self.pages.drain()):
            yield beam.pvalue.TaggedOutput(self.PAGES, batch)


@dataclasses.dataclass
class UrlGroup:
    """The crawls of one normalised URL met so far: the newest, how many, their text bytes."""

    newest: UrlCandidate
    crawls: int
    raw_bytes: int
    traced: Optional[list[UrlCandidate]] = None  # every crawl, where the URL is traced (samples)


class NewestPagesFn(Counting, Sampling, beam.DoFn):
    """(url bucket, batches of (normalised url, candidate)) -> for every URL of the bucket the
    newest crawl wins; the others are counted as duplicates and the winner's recorded counts
    are counted. Equally new crawls keep the smallest record id (``replaces``), so the winner
    does not depend on the order the shuffle delivers them. A winner with cleaned text goes out
    as (page bucket, [(md5(url), record id)...]) for the join with the pages.

    With ``lines`` (line dedup follows) the winners' line keys (carried in the candidate) are
    claimed in a buffer combined per bundle, as line_dedup.ClaimLinesFn does, and go to the
    ``CLAIMS`` output in batches (line bucket, [CLAIM records...]): a claim is the line key,
    md5(url) and the line's index in the page (corpus/dedup/line_claims.py).

    A GroupByKey, not a CombinePerKey: Beam lifts a combine into the reading workers, where its
    table keeps up to 100,000 accumulators per bundle."""

    CLAIMS = "claims"

    def __init__(self, lines: bool = False, buckets: int = DEFAULT_BUCKETS,
                 samples_dir: Optional[str] = None,
                 sample_options: SampleOptions = SampleOptions(per_rule=0),
                 max_lines: int = 500_000) -> None:
        self.samples_dir = samples_dir if sample_options.on else None
        self.sample_options = sample_options
        self.lines = lines
        self.buckets = buckets
        self.max_lines = max_lines
        self.batcher = Batcher()
        self.claims = ClaimBuffer(buckets, max_lines)

    def start_bundle(self) -> None:
        self.batcher = Batcher()
        self.claims = ClaimBuffer(self.buckets, self.max_lines)

    def process(self, element):
        _, batches = element
        url_inc = self.inc_for(NS_URL)
        for url, group in self._groups(batches).items():
            best = group.newest
            count_url_group(url_inc, group.crawls, group.raw_bytes, best.raw_bytes)
            if group.traced is not None:
                self._sample(url, group)
            for count in unpack_counts(best.counts):
                self.inc_for(count.namespace)(count.name, count.n)
            if not best.rank:  # the newest crawl was cleaned away
                continue
            if self.lines:
                for claims in self.claims.add(best.rank, best.line_keys):
                    yield beam.pvalue.TaggedOutput(self.CLAIMS, claims)
            yield from self.batcher.add(digest_bucket(best.rank, self.buckets), (best.rank, best.record_id), 40)

    def _groups(self, batches) -> dict[str, UrlGroup]:
        groups: dict[str, UrlGroup] = {}
        for batch in batches:
            for url, wire in batch:
                candidate = UrlCandidate._make(wire)
                group = groups.get(url)
                if group is None:
                    groups[url] = group = UrlGroup(candidate, 1, candidate.raw_bytes)
                    if self.traced(url) is not None:
                        group.traced = [candidate]
                    continue
                if candidate.replaces(group.newest):
                    group.newest = candidate
                group.crawls += 1
                group.raw_bytes += candidate.raw_bytes
                if group.traced is not None:
                    group.traced.append(candidate)
        return groups

    def _sample(self, url: str, group: UrlGroup) -> None:
        """A traced URL: its duplicate crawls, and what the page steps did to the crawl kept."""
        samples, best = self.samples(), group.newest
        if group.crawls > 1:
            crawls = [(c.timestamp, c.record_id) for c in group.traced]
            crawls.remove((best.timestamp, best.record_id))
            samples.add(url_duplicates(f"{NS_URL}/filtered", self.traced(url), url,
                                       (best.timestamp, best.record_id), crawls))
        if best.samples:
            samples.extend(Sample.from_wire(wire) for wire in json.loads(best.samples))

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()
        yield from in_global_window(self.batcher.drain())
        for claims in in_global_window(self.claims.drain()):
            yield beam.pvalue.TaggedOutput(self.CLAIMS, claims)


def keep_winners(grouped: Mapping, arriving: Iterator, fn) -> Iterator:
    """At the join: each URL's winning crawl goes on; an older crawl is dropped unread (the URL
    groups counted it)."""
    winners = {winner for batch in grouped["winners"] for winner in batch}
    for entry in arriving:
        if (entry.rank, entry.record_id) not in winners:
            continue
        winners.discard((entry.rank, entry.record_id))  # the same record read twice counts once
        yield entry
    if winners:
        raise ValueError(f"the winning crawl of md5(url) {min(winners)[0].hex()} has no page")
