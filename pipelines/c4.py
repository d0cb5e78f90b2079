"""The C4 Beam graph. Wiring only: every decision is a function from corpus/; this module maps,
groups and counts. The steps and their order are corpus/chain.py's list (``c4_pages`` compiles
it: each run of page steps fused into one DoFn, each corpus-wide step its grouping); counters
use the namespaces of corpus/steps.py, the same names the manifest and ``corpus stats`` report.
"""
from __future__ import annotations

import dataclasses
import json
import os
import uuid
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, Optional

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from c4forge.corpus.chain import C4_CHAIN, Plan, Step, plan, run_page_steps, run_traced_page_steps
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document, from_bytes, packed_normalized_url, packed_text_size, to_bytes
from c4forge.corpus.line_dedup import (
    add_claims,
    claim_keys,
    count_page_owning_nothing,
    dedupe_page_lines,
    line_key,
    pack_keys,
    unpack_keys,
    url_rank,
)
from c4forge.corpus.local import near_sample, traced_line_dedup
from c4forge.corpus.minhash import MinHasher
from c4forge.corpus.near_dedup import (
    DEFAULT_CC_ROUNDS,
    bucket_edges,
    count_near_dedup,
    doc_id,
    hash_to_min,
    initial_cluster,
)
from c4forge.corpus.samples import Reservoir, Sample, SampleOptions, traced_key, url_duplicates
from c4forge.corpus.shards import (
    DEFAULT_DOCS_PER_SHARD,
    DEFAULT_SHARD_FORMAT,
    counting_extractors,
    document_row,
    shard_key,
    shard_metadata,
    shard_name,
    shard_stats,
    write_shard,
)
from c4forge.corpus.steps import NS_LINES, NS_NEAR, NS_READ, NS_URL, PageSteps, text_bytes
from c4forge.corpus.urls import UrlCandidate, count_url_group, page_record_id, split_of
from c4forge.corpus.wet import iter_file_documents
from c4forge.pipelines.progress import ProgressReporter

NS_OUTPUT = "output"
# Documents cross every grouping as corpus.document bytes, their text LZ4-compressed (1.6x
# smaller; see corpus.document._codec for why LZ4 and not zstd).
SHUFFLE_COMPRESSION = True

# Pages, line claims and line owners cross the shuffles of URL and line dedup in *batches*: one
# element per (bucket, bundle) holding a list, not one element per page or line. Beam's
# per-element machinery (windowed values, the data plane, the runner's grouping table) cost
# about 5 us per element and hop; batching leaves the same decisions (a URL's candidates, a
# line's claims and a page's owned lines all still meet in one group) at a fraction of the
# elements. A bucket is a stable hash of the key modulo ``buckets``; each batch buffer is
# flushed when it holds BATCH_BYTES, so a bundle's memory stays bounded.
DEFAULT_BUCKETS = 16
BUCKET_INPUT_BYTES = 8 << 20  # compressed crawl bytes per bucket (see shuffle_buckets)
BATCH_BYTES = 32 << 20


def shuffle_buckets(input_bytes: int, minimum: int = DEFAULT_BUCKETS) -> int:
    """How many buckets the batched shuffles use: one per BUCKET_INPUT_BYTES of (compressed)
    input, at least ``minimum`` (parallelism for the groups' consumers). A page bucket's pages
    are held in memory together by one worker in the join: about a fifth of the bucket's input
    bytes (cleaned, LZ4-compressed text); a URL bucket's candidates carry no text."""
    return max(minimum, -(-input_bytes // BUCKET_INPUT_BYTES))


def url_bucket(normalized_url: str, buckets: int) -> int:
    return zlib.crc32(normalized_url.encode("utf-8")) % buckets


def digest_bucket(digest: bytes, buckets: int) -> int:
    """Bucket of an md5 digest (a line key or an md5(url) rank)."""
    return int.from_bytes(digest[:8], "little") % buckets


class Count(NamedTuple):
    """One counter increment recorded on a worker and applied where the page's fate is known."""

    namespace: str
    name: str
    n: int


def pack_counts(counts: dict[tuple[str, str], int]) -> str:
    """Counts as one string on the wire (``namespace TAB name TAB n`` per line): the runner
    decodes and re-encodes every grouped value, and one string is the cheapest value to carry."""
    return "\n".join(f"{ns}\t{name}\t{n}" for (ns, name), n in counts.items())


def unpack_counts(packed: str) -> Iterator[Count]:
    for line in packed.split("\n") if packed else ():
        namespace, name, n = line.split("\t")
        yield Count(namespace, name, int(n))


def on_the_wire(record: tuple) -> tuple:
    """A NamedTuple as the plain tuple it is: Beam's FastPrimitivesCoder encodes tuples natively
    and would pickle a NamedTuple, class reference included, per element. The reader rebuilds
    it with ``Record._make``."""
    return tuple(record)


@dataclasses.dataclass
class UrlGroup:
    """The crawls of one normalised URL met so far: the newest, how many, their text bytes."""

    newest: UrlCandidate
    crawls: int
    raw_bytes: int
    traced: Optional[list[UrlCandidate]] = None  # every crawl, where the URL is traced (samples)


class Batcher:
    """Items collected per bucket, bounded by their byte size: ``add`` returns the batches to
    emit (all of them, when the buffer is full), ``drain`` the rest. Items keep their order
    within a bucket."""

    def __init__(self, limit: Optional[int] = None) -> None:
        self.limit = BATCH_BYTES if limit is None else limit
        self.batches: dict[int, list] = {}
        self.size = 0

    def add(self, bucket: int, item, size: int) -> list:
        batch = self.batches.get(bucket)
        if batch is None:
            self.batches[bucket] = batch = []
        batch.append(item)
        self.size += size
        return self.drain() if self.size >= self.limit else []

    def drain(self) -> list:
        out = list(self.batches.items())
        self.batches, self.size = {}, 0
        return out


def _in_global_window(batches) -> Iterator[WindowedValue]:
    """Elements output from ``finish_bundle`` must carry their window."""
    for batch in batches:
        yield WindowedValue(batch, GlobalWindow().max_timestamp(), (GlobalWindow(),))


class _Counting:
    """Mixin: ``self.inc_for(namespace)`` gives an inc(name, amount) that sums into a table for
    the bundle; ``finish_bundle`` adds each (namespace, name) to its Beam counter once. A Beam
    counter update per page and counter cost several microseconds (the metrics container is
    looked up each time): over the ~15 counter updates of every page this was a measurable share
    of a build's CPU. Totals are the same; they become visible when a bundle finishes (a failed
    bundle's counts are dropped with it, as Beam drops its committed metrics)."""

    def inc_for(self, namespace: str):
        incs = self.__dict__.setdefault("_incs", {})
        inc = incs.get(namespace)
        if inc is None:
            pending = self.__dict__.setdefault("_pending", {})

            def inc(name: str, amount: int = 1) -> None:
                key = (namespace, name)
                pending[key] = pending.get(key, 0) + amount

            incs[namespace] = inc
        return inc

    def finish_bundle(self):
        pending = self.__dict__.get("_pending")
        if pending:
            for (namespace, name), amount in pending.items():
                Metrics.counter(namespace, name).inc(amount)
            pending.clear()


class _Sampling:
    """Mixin: the rule samples (corpus/samples.py) a DoFn finds, kept per bundle in a
    Reservoir and written when the bundle finishes, one file per bundle in ``samples_dir``
    (the launcher merges them: :func:`merge_sample_parts`). Only events that are final where
    they are found go in: a crawl's cleaning is sampled where it is read but travels with its
    URL candidate, since only the URL group knows whether it is the crawl kept."""

    samples_dir: Optional[str] = None
    sample_options: SampleOptions = SampleOptions(per_rule=0)

    def samples(self) -> Optional[Reservoir]:
        if not self.samples_dir:
            return None
        reservoir = self.__dict__.get("_reservoir")
        if reservoir is None:
            reservoir = self.__dict__["_reservoir"] = Reservoir(self.sample_options.per_rule)
        return reservoir

    def traced(self, normalized_url: str) -> Optional[int]:
        return traced_key(normalized_url, self.sample_options) if self.samples_dir else None

    def write_samples(self) -> None:
        from apache_beam.io.filesystems import FileSystems

        reservoir = self.__dict__.pop("_reservoir", None)
        if not reservoir:
            return
        path = FileSystems.join(self.samples_dir, f"{uuid.uuid4().hex}.json")
        handle = FileSystems.create(path)
        handle.write(json.dumps(reservoir.to_wire()).encode("utf-8"))
        handle.close()


def merge_sample_parts(directory: str, options: SampleOptions) -> dict:
    """The workers' sample files merged into the rule samples' document (corpus/samples.py)."""
    from apache_beam.io.filesystems import FileSystems

    reservoir = Reservoir(options.per_rule)
    pattern = FileSystems.join(directory, "*.json")
    for match in FileSystems.match([pattern])[0].metadata_list:
        with FileSystems.open(match.path) as handle:
            reservoir.extend(Sample.from_wire(wire) for wire in json.loads(handle.read().decode("utf-8")))
    return reservoir.document(options)


class StepsFn(_Counting, _Sampling, beam.DoFn):
    """Base for DoFns that run page steps of the chain (``layout``, corpus/chain.py's plan of
    it) with the configured PageSteps (built once per worker in setup)."""

    def __init__(self, config: CorpusConfig, layout: Optional[Plan] = None,
                 samples_dir: Optional[str] = None) -> None:
        self.config = config
        self.layout = layout or plan(config)
        self.steps: Optional[PageSteps] = None
        self.samples_dir = samples_dir if config.rule_samples.on else None
        self.sample_options = config.rule_samples

    def setup(self) -> None:
        self.steps = PageSteps(self.config)

    def run_steps(self, steps, page: Document, inc_for, carried: Optional[list] = None) -> Optional[Document]:
        """``run_page_steps``, tracing the page when it is sampled: its samples go to the
        bundle's reservoir, or to ``carried`` (a URL candidate's)."""
        key = self.traced(page.normalized_url) if steps else None
        if key is None:
            return run_page_steps(steps, self.steps, page, inc_for)
        found: list[Sample] = []
        kept = run_traced_page_steps(steps, self.steps, page, inc_for, key, found)
        if carried is not None:
            carried.extend(found)
        else:
            self.samples().extend(found)
        return kept


def _recorder(counts: dict[tuple[str, str], int], namespace: str):
    """An inc() that adds into ``counts`` (summed per name: a page's line counters are many)."""
    def inc(name: str, amount: int = 1) -> None:
        key = (namespace, name)
        counts[key] = counts.get(key, 0) + amount
    return inc


class ReadCleanFn(StepsFn):
    """One crawl file -> its pages through the page steps before line dedup (the length limit,
    [paragraph filter], clean_page in the C4 chain) in one DoFn, so a page crosses no Beam hop
    between them (each hop costs microseconds of the SDK's per-element machinery). An
    unreadable file is counted, never fatal.

    ``candidates`` (URLs deduplicated): the page steps between URL dedup and line dedup
    (``layout.before_lines``: what cleans a page) run on every page *before* the URL dedup,
    and the page is split
    in two. Its *candidate*, (normalised url, (crawl time, raw text bytes, recorded counters,
    md5(url), candidate id, the cleaned lines' keys)), goes to the URL groups (main output,
    batched by url bucket): small, no text. Its cleaned text goes straight to the join that
    follows the URL dedup (``PAGES`` output, batched by the bucket of md5(url): (md5(url),
    candidate id, packed page, line count)), where only the URL group's winner is kept. So the
    text crosses one shuffle, not two. Cleaning is per page, so the winner's cleaned text is
    the same either way; its counters are recorded here and counted only for the winner
    (NewestPagesFn), so every counter equals tfds' order (dedup, then clean) and `corpus
    clean`'s. The candidate id (``page_record_id``: md5 of the record's file name and offset)
    tells apart two crawls of one URL and breaks ties between equally new ones. Without
    ``candidates``, the cleaned pages go out one by one, counted at once."""

    PAGES = "pages"

    def __init__(self, config: CorpusConfig, progress_dir: Optional[str] = None,
                 candidates: bool = True, buckets: int = DEFAULT_BUCKETS,
                 launch_dir: Optional[str] = None, layout: Optional[Plan] = None,
                 samples_dir: Optional[str] = None) -> None:
        super().__init__(config, layout, samples_dir)
        self.progress_dir = progress_dir
        self.launch_dir = launch_dir
        self.candidates = candidates
        self.buckets = buckets
        self.keys = self.layout.line_dedup  # the winners' line keys are claimed at the URL groups
        self.reporter = None
        self.batcher = Batcher()
        self.pages = Batcher()

    def setup(self) -> None:
        super().setup()
        if self.progress_dir:
            self.reporter = ProgressReporter(self.progress_dir)

    def start_bundle(self) -> None:
        self.batcher, self.pages = Batcher(), Batcher()

    def process(self, path: str):
        """``path`` as the user gave it (what documents record as their ``source``, as in
        ``corpus clean``), opened relative to ``launch_dir``: workers start in folders of their
        own."""
        before_urls, before_lines = self.layout.before_urls, self.layout.before_lines
        where = os.path.join(self.launch_dir, path) if self.launch_dir and "://" not in path else path
        for page in iter_file_documents(where, self.inc_for(NS_READ), self.config.read, source=path):
            if self.reporter:
                self.reporter.page(text_bytes(page))
            page = self.run_steps(before_urls, page, self.inc_for)
            if page is None:
                continue
            if self.candidates:
                yield from self._candidate(page)
            else:
                cleaned = self.run_steps(before_lines, page, self.inc_for)
                if cleaned is not None:
                    yield cleaned
        if self.reporter:
            self.reporter.file_done()

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()
        if self.reporter:
            self.reporter.flush()
        yield from _in_global_window(self.batcher.drain())
        for batch in _in_global_window(self.pages.drain()):
            yield beam.pvalue.TaggedOutput(self.PAGES, batch)

    def _candidate(self, page: Document):
        counts: dict[tuple[str, str], int] = {}
        carried: list[Sample] = []
        cleaned = self.run_steps(self.layout.before_lines, page,
                                 lambda namespace: _recorder(counts, namespace), carried)
        rank = keys = b""
        record = page_record_id(page)  # every page: it breaks ties between equally new crawls
        if cleaned is not None:
            rank = url_rank(cleaned.url)
            lines = cleaned.text.split("\n")
            if self.keys:
                keys = pack_keys(map(line_key, lines))
            packed = to_bytes(cleaned, SHUFFLE_COMPRESSION)
            for batch in self.pages.add(digest_bucket(rank, self.buckets), (rank, record, packed, len(lines)),
                                        len(packed) + 64):
                yield beam.pvalue.TaggedOutput(self.PAGES, batch)
        url = page.normalized_url
        candidate = UrlCandidate(page.timestamp, text_bytes(page), pack_counts(counts), rank, record, keys,
                                 json.dumps([s.to_wire() for s in carried]) if carried else "")
        yield from self.batcher.add(url_bucket(url, self.buckets), (url, on_the_wire(candidate)),
                                    len(url) + len(candidate.counts) + len(keys) + 96)


class NewestPagesFn(_Counting, _Sampling, beam.DoFn):
    """(url bucket, batches of (normalised url, candidate)) -> for every URL of the bucket the
    newest crawl wins; the others are counted as duplicates and the winner's recorded clean
    counters are counted. Equally new crawls keep the smallest record id (``replaces``), so the
    winner does not depend on the order the shuffle delivers them. A winner with cleaned text
    goes out as (page bucket, [(md5(url), candidate id)...]) for the join with the pages
    (ReadCleanFn's PAGES output).

    With ``lines`` (line dedup follows) the winners' line keys (carried in the candidate) are
    claimed in a table combined per bundle, as ClaimLinesFn does, and go to the ``CLAIMS``
    output in batches (line bucket, [(line key, md5(url))...]).

    A GroupByKey, not a CombinePerKey: Beam lifts a combine into the reading workers, where its
    table keeps up to 100,000 accumulators per bundle."""

    CLAIMS = "claims"

    def __init__(self, lines: bool = False, buckets: int = DEFAULT_BUCKETS,
                 max_keys: int = 250_000, samples_dir: Optional[str] = None,
                 sample_options: SampleOptions = SampleOptions(per_rule=0)) -> None:
        self.samples_dir = samples_dir if sample_options.on else None
        self.sample_options = sample_options
        self.lines = lines
        self.buckets = buckets
        self.max_keys = max_keys
        self.batcher = Batcher()
        self.table: dict[bytes, bytes] = {}

    def start_bundle(self) -> None:
        self.batcher = Batcher()
        self.table = {}

    def process(self, element):
        _, batches = element
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
        url_inc = self.inc_for(NS_URL)
        for url, group in groups.items():
            best = group.newest
            count_url_group(url_inc, group.crawls, group.raw_bytes, best.raw_bytes)
            if group.traced is not None:
                self._sample(url, group)
            for count in unpack_counts(best.counts):
                self.inc_for(count.namespace)(count.name, count.n)
            if not best.rank:  # the newest crawl was cleaned away
                continue
            if self.lines:
                claim_keys(self.table, best.rank, unpack_keys(best.line_keys))
                if len(self.table) >= self.max_keys:
                    for claims in _claim_batches(self._drain(), self.buckets):
                        yield beam.pvalue.TaggedOutput(self.CLAIMS, claims)
            yield from self.batcher.add(digest_bucket(best.rank, self.buckets), (best.rank, best.record_id), 40)

    def _sample(self, url: str, group: UrlGroup) -> None:
        """A traced URL: its duplicate crawls, and what cleaning did to the crawl kept."""
        samples, best = self.samples(), group.newest
        if group.crawls > 1:
            crawls = [(c.timestamp, c.record_id) for c in group.traced]
            crawls.remove((best.timestamp, best.record_id))
            samples.add(url_duplicates(f"{NS_URL}/filtered", self.traced(url), url,
                                       (best.timestamp, best.record_id), crawls))
        if best.samples:
            samples.extend(Sample.from_wire(wire) for wire in json.loads(best.samples))

    def _drain(self) -> dict[bytes, bytes]:
        table, self.table = self.table, {}
        return table

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()
        yield from _in_global_window(self.batcher.drain())
        for claims in _in_global_window(_claim_batches(self._drain(), self.buckets)):
            yield beam.pvalue.TaggedOutput(self.CLAIMS, claims)


def _claim_batches(table: dict[bytes, bytes], buckets: int) -> list:
    """A claims table as (line bucket, [(line key, md5(url))...]) batches (the table is
    already bounded, so the batcher never flushes early)."""
    batcher = Batcher(limit=len(table) + 1)
    for key, rank in table.items():
        batcher.add(digest_bucket(key, buckets), (key, rank), 1)
    return batcher.drain()


class ClaimLinesFn(beam.DoFn):
    """Pages -> line claims, combined in the DoFn: per line key only the smallest md5(url) seen
    in the bundle goes out (``min`` picks tfds' owner), so the shuffle carries one claim per
    distinct line per bundle, not one element per line of every page (in-mapper combining:
    Beam's lifted combine did the same per element, at several times the CPU). The claims go
    out in batches, (line bucket, [(line key, md5(url))...]). The table is bounded
    (``max_keys``; 250,000 keys hold about 35 MB): when full, it is emitted and emptied, so a
    line may be claimed once per drain, never lost. Used when no URL dedup runs first
    (NewestPagesFn claims the winners' lines otherwise).

    The 16-byte digest names the page (URLs are unique after URL dedup) in the shuffle and in
    the join back to the pages: compact bytes, not tuples with URL strings."""

    def __init__(self, max_keys: int = 250_000, buckets: int = DEFAULT_BUCKETS) -> None:
        self.max_keys = max_keys
        self.buckets = buckets
        self.table: dict[bytes, bytes] = {}

    def start_bundle(self) -> None:
        self.table = {}

    def process(self, page: Document):
        add_claims(self.table, page)
        if len(self.table) >= self.max_keys:
            yield from self._drain()

    def finish_bundle(self):
        yield from _in_global_window(self._drain())

    def _drain(self) -> list:
        table, self.table = self.table, {}
        return _claim_batches(table, self.buckets)


class LineOwnersFn(beam.DoFn):
    """(line bucket, batches of claims) -> every line's owner (the smallest md5(url) that
    claimed it), batched by the owner's page bucket: (page bucket, [(md5(url), line key)...])."""

    def __init__(self, buckets: int = DEFAULT_BUCKETS) -> None:
        self.buckets = buckets
        self.batcher = Batcher()

    def start_bundle(self) -> None:
        self.batcher = Batcher()

    def process(self, element):
        _, batches = element
        owners: dict[bytes, bytes] = {}
        for batch in batches:
            for key, rank in batch:
                current = owners.get(key)
                if current is None or rank < current:
                    owners[key] = rank
        for key, rank in owners.items():
            yield from self.batcher.add(digest_bucket(rank, self.buckets), (rank, key), 48)

    def finish_bundle(self):
        yield from _in_global_window(self.batcher.drain())


class KeyPagesFn(beam.DoFn):
    """Pages -> (page bucket, [(md5(url), b"", packed page, line count)...]) for the line-dedup
    join, when no URL dedup ran before it (ReadCleanFn's PAGES output does this otherwise)."""

    def __init__(self, buckets: int = DEFAULT_BUCKETS) -> None:
        self.buckets = buckets
        self.batcher = Batcher()

    def start_bundle(self) -> None:
        self.batcher = Batcher()

    def process(self, page: Document):
        rank = url_rank(page.url)
        packed = to_bytes(page, SHUFFLE_COMPRESSION)
        yield from self.batcher.add(digest_bucket(rank, self.buckets),
                                    (rank, b"", packed, page.text.count("\n") + 1), len(packed) + 64)

    def finish_bundle(self):
        yield from _in_global_window(self.batcher.drain())


def _packed(kv):
    """(key, Document) -> (key, bytes) before a grouping: see corpus.document.to_bytes."""
    return kv[0], to_bytes(kv[1], SHUFFLE_COMPRESSION)


class FilterPagesFn(StepsFn):
    """The page steps after the dedup joins, in one DoFn (no Beam hop between them): [keep
    each URL's winning crawl (``winners``)] -> [keep the lines each page owns
    (``owned_lines``)] -> the page steps after line dedup (``layout.after_lines``: language ID
    -> bad words in the C4 chain).

    With either, elements are (page bucket, {"pages", "winners", "lines"}) from the join:
    batches of (md5(url), record id, packed page, line count), of (md5(url), record id)
    the URL groups' winners, and of (md5(url), owned line key). A crawl that lost its URL group
    is dropped unread (the URL groups counted it); a page that owns none of its lines is counted
    from its line count and packed header (count_page_owning_nothing), never unpacked. Without
    either, elements are Documents."""

    def __init__(self, config: CorpusConfig, owned_lines: bool, winners: bool = False,
                 layout: Optional[Plan] = None, samples_dir: Optional[str] = None) -> None:
        super().__init__(config, layout, samples_dir)
        self.owned_lines = owned_lines
        self.winners = winners

    def setup(self) -> None:
        super().setup()
        self.steps.setup()  # the LID model and bad-word lists, once per worker

    def process(self, element):
        # The whole group's dedup first, then language ID over the survivors in one run:
        # measured faster than alternating per page (fastText's tables stay in cache).
        joined = self.owned_lines or self.winners
        pages = list(self._joined_pages(element)) if joined else (element,)
        after_lines = self.layout.after_lines
        for page in pages:
            if page is None:
                continue
            page = self.run_steps(after_lines, page, self.inc_for)
            if page is not None:
                yield page

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()

    def _joined_pages(self, element) -> Iterator[Optional[Document]]:
        _, grouped = element
        winners = {winner for batch in grouped["winners"] for winner in batch} if self.winners else None
        owned: dict[bytes, set[bytes]] = {}
        for batch in grouped["lines"] if self.owned_lines else ():
            for rank, key in batch:
                keys = owned.get(rank)
                if keys is None:
                    owned[rank] = keys = set()
                keys.add(key)
        seen: set[bytes] = set()
        inc = self.inc_for(NS_LINES)
        for batch in grouped["pages"]:
            for rank, candidate, packed, n_lines in batch:
                if winners is not None:
                    if (rank, candidate) not in winners:
                        continue  # an older crawl of the URL
                    winners.discard((rank, candidate))  # the same record read twice counts once
                if rank in seen:  # URL dedup makes urls unique; anything else is a wiring bug
                    raise ValueError(f"several pages for md5(url) {rank.hex()}")
                seen.add(rank)
                if not self.owned_lines:
                    yield from_bytes(packed)
                    continue
                mine = owned.get(rank)
                key = self.traced(packed_normalized_url(packed)) if self.samples_dir else None
                if key is not None:  # a traced page: unpacked even if it owns nothing
                    yield traced_line_dedup(from_bytes(packed), mine or set(),
                                            self.config.dedupe_min_sentences, inc, key, self.samples())
                elif mine is None:
                    count_page_owning_nothing(n_lines, packed_text_size(packed), inc)
                else:
                    yield dedupe_page_lines(from_bytes(packed), mine, self.config.dedupe_min_sentences, inc)
        if winners:
            raise ValueError(f"the winning crawl of md5(url) {min(winners)[0].hex()} has no page")
        orphans = owned.keys() - seen
        if orphans:
            raise ValueError(f"lines owned by md5(url) {min(orphans).hex()}, which has no page")


class BandKeysFn(beam.DoFn):
    """(id, page) -> (band key, (id, signature)) for each band of its MinHash signature; the
    signatures are computed vectorised over up to ``batch`` pages of the bundle at a time (one
    DoFn instead of Beam's BatchElements composite, a signature step and a band step: fewer
    transforms to build, translate and start)."""

    def __init__(self, config: CorpusConfig, batch: int = 512) -> None:
        self.config = config
        self.batch = batch
        self.hasher: Optional[MinHasher] = None
        self.pending: list[tuple[int, Document]] = []

    def setup(self) -> None:
        self.hasher = MinHasher(self.config.minhash)

    def start_bundle(self) -> None:
        self.pending = []

    def process(self, element):
        self.pending.append(element)
        if len(self.pending) >= self.batch:
            yield from self._flush()

    def finish_bundle(self):
        yield from _in_global_window(self._flush())

    def _flush(self):
        pending, self.pending = self.pending, []
        if not pending:
            return
        signatures = self.hasher.signatures([page.text for _, page in pending])
        for (node, _), signature in zip(pending, signatures):
            for key in self.hasher.band_keys(signature):
                yield key, (node, signature)


def _both_directions(edge: tuple[int, int]):
    a, b = edge
    yield a, b
    yield b, a


_PREVIOUS = -1  # leads a node's message to itself carrying its cluster (ids are >= 0)


class ClusterRoundFn(beam.DoFn):
    """One Hash-to-Min round in one step: (node, what it received) -> its new cluster, then
    the next round's messages (main output), or in the last round its label (main output) and,
    if its cluster still changed, the node (``CHANGED`` output).

    The first round receives a node's neighbours (its cluster: itself and them); later rounds
    receive clusters, whose union is the node's new cluster. The round before the last also
    sends each node its own cluster (led by ``_PREVIOUS``), so the last round sees whether it
    changed without a join. A GroupByKey and this DoFn per round, instead of a send step, a
    CombinePerKey, a label step and a CoGroupByKey for convergence: a third of the transforms
    to build, translate and start (the rounds were most of the graph's fixed cost, issue 29);
    the same clusters and labels."""

    CHANGED = "changed"

    def __init__(self, first: bool, last: bool, tell_self: bool) -> None:
        self.first = first
        self.last = last
        self.tell_self = tell_self

    def process(self, element):
        node, received = element
        previous = None
        if self.first:
            cluster = initial_cluster(node, received)
        else:
            union: set[int] = set()
            for members in received:
                if members[0] == _PREVIOUS:
                    previous = members[1:]
                else:
                    union.update(members)
            cluster = tuple(sorted(union))
        if self.last:
            yield node, cluster[0]
            if previous is not None and previous != cluster:
                yield beam.pvalue.TaggedOutput(self.CHANGED, node)
            return
        yield from hash_to_min(node, cluster)
        if self.tell_self:
            yield node, (_PREVIOUS, *cluster)


def connected_components(edges, rounds: int):
    """{node: smallest id in its component} by Hash-to-Min (corpus.near_dedup.hash_to_min;
    Rastogi et al., "Finding Connected Components in Map-Reduce in Logarithmic Rounds", ICDE
    2013), unrolled ``rounds`` times on the engine: no collect-to-one-node step, one shuffle per
    round (plus one for the neighbour lists). Returns the labels and the nodes whose cluster
    still changed in the last round (none: the fixed point, every label final). Edges may repeat
    (a node's first cluster is a set)."""
    messages = edges | "both directions" >> beam.FlatMap(_both_directions)
    for r in range(rounds + 1):
        name = "neighbours" if r == 0 else f"cc{r - 1}"
        out = (messages
               | f"{name} gather" >> beam.GroupByKey()
               | f"{name} cluster" >> beam.ParDo(ClusterRoundFn(first=r == 0, last=r == rounds,
                                                                tell_self=r == rounds - 1))
               .with_outputs(ClusterRoundFn.CHANGED, main="out"))
        messages = out.out
    return out.out, out[ClusterRoundFn.CHANGED]


class ApplyClustersFn(_Counting, _Sampling, beam.DoFn):
    """Keep a page unless its cluster label is a smaller id; record the cluster size."""

    def __init__(self, config: CorpusConfig, samples_dir: Optional[str] = None) -> None:
        self.config = config
        self.samples_dir = samples_dir if config.rule_samples.on else None
        self.sample_options = config.rule_samples

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()

    def process(self, element):
        node, grouped = element
        pages = [from_bytes(p) for p in grouped["page"]]
        if not pages:
            return
        labels = list(grouped["label"])
        sizes = list(grouped["size"])
        size = sizes[0] if sizes else 1
        survives = not labels or labels[0] == node
        count_near_dedup(self.inc_for(NS_NEAR), text_bytes(pages[0]), survives, size)
        if not survives and self.samples_dir:
            near_sample(pages[0], labels[0], self.config, self.samples())
        if survives:
            yield pages[0].replace(near_dup_cluster_size=size)


def near_dedup(pages, config: CorpusConfig, rounds: int, samples_dir: Optional[str] = None):
    keyed = pages | "key by id" >> beam.Map(lambda p: (doc_id(p.normalized_url), p))
    threshold = config.minhash.threshold
    edges = (keyed
             | "signatures and band keys" >> beam.ParDo(BandKeysFn(config))
             | "group bands" >> beam.GroupByKey()
             | "bucket edges" >> beam.FlatMap(lambda kv: bucket_edges(list(kv[1]), threshold)))
    labels, changed = connected_components(edges, rounds)
    sizes = (labels
             | "root of node" >> beam.Map(lambda kv: (kv[1], 1))
             | "cluster size" >> beam.CombinePerKey(sum))
    deduped = ({"page": keyed | "pack pages for join" >> beam.Map(_packed), "label": labels, "size": sizes}
               | "join clusters" >> beam.CoGroupByKey()
               | "apply clusters" >> beam.ParDo(ApplyClustersFn(config, samples_dir)))
    _ = changed | "count unconverged" >> beam.ParDo(_CountUnconverged())
    return deduped


class _CountUnconverged(_Counting, beam.DoFn):
    """One count per node whose cluster still changed (the counter sums them)."""

    def process(self, _node: int):
        self.inc_for(NS_NEAR)("unconverged-nodes")


def c4_pages(pipeline_or_paths, config: CorpusConfig, cc_rounds: int = DEFAULT_CC_ROUNDS,
             progress_dir: Optional[str] = None, buckets: int = DEFAULT_BUCKETS,
             launch_dir: Optional[str] = None, chain: Sequence[Step] = C4_CHAIN,
             samples_dir: Optional[str] = None):
    """The filtered, deduplicated pages (a PCollection of Documents) from crawl file paths:
    ``chain`` (corpus/chain.py) compiled into the graph (``progress_dir``: where the reading
    step reports, see pipelines/progress.py; ``buckets``: see shuffle_buckets; ``launch_dir``:
    what relative paths are relative to; ``samples_dir``: where the DoFns write the rule
    samples they find, see merge_sample_parts)."""
    layout = plan(config, chain)
    files = pipeline_or_paths | "reshuffle files" >> beam.Reshuffle()
    join = {}  # what meets each page, by the bucket of its md5(url)
    claims = None  # (line bucket, [(line key, md5(url))...])
    if layout.url_dedup:
        read = (files
                | "read and clean" >> beam.ParDo(ReadCleanFn(config, progress_dir, candidates=True,
                                                             buckets=buckets, launch_dir=launch_dir,
                                                             layout=layout, samples_dir=samples_dir))
                .with_outputs(ReadCleanFn.PAGES, main="candidates"))
        newest = (read.candidates
                  | "group by url bucket" >> beam.GroupByKey()
                  | "newest per url" >> beam.ParDo(NewestPagesFn(lines=layout.line_dedup, buckets=buckets,
                                                               samples_dir=samples_dir,
                                                               sample_options=config.rule_samples))
                  .with_outputs(NewestPagesFn.CLAIMS, main="winners"))
        join.update(pages=read[ReadCleanFn.PAGES], winners=newest.winners)
        claims = newest[NewestPagesFn.CLAIMS]
    else:
        pages = files | "read and clean" >> beam.ParDo(ReadCleanFn(config, progress_dir, candidates=False,
                                                                   launch_dir=launch_dir, layout=layout,
                                                                   samples_dir=samples_dir))
        if layout.line_dedup:
            join.update(pages=pages | "key by url rank" >> beam.ParDo(KeyPagesFn(buckets)))
            claims = pages | "line claims" >> beam.ParDo(ClaimLinesFn(buckets=buckets))
    if layout.line_dedup:
        join["lines"] = (claims
                         | "group claims by line bucket" >> beam.GroupByKey()
                         | "owner of line" >> beam.ParDo(LineOwnersFn(buckets)))
    steps = "owned lines, language, bad words" if layout.line_dedup else "language, bad words"
    if join:
        pages = (join
                 | "group by page bucket" >> beam.CoGroupByKey()
                 | steps >> beam.ParDo(FilterPagesFn(config, owned_lines=layout.line_dedup,
                                                     winners=layout.url_dedup, layout=layout,
                                                     samples_dir=samples_dir)))
    else:
        pages = pages | steps >> beam.ParDo(FilterPagesFn(config, owned_lines=False, layout=layout,
                                                          samples_dir=samples_dir))
    if layout.near_dedup:
        pages = near_dedup(pages, config, cc_rounds, samples_dir)
    return pages


class WriteShardFn(_Counting, beam.DoFn):
    """((split, index, count), pages) -> one shard file in the staging directory (and the
    documents written, to the build's progress: pipelines/progress.py)."""

    def __init__(self, staging: str, shard_format: str, metadata: dict,
                 progress_dir: Optional[str] = None) -> None:
        self.staging = staging
        self.shard_format = shard_format
        self.metadata = metadata
        self.progress_dir = progress_dir
        self.reporter: Optional[ProgressReporter] = None

    def setup(self) -> None:
        if self.progress_dir:
            self.reporter = ProgressReporter(self.progress_dir)

    def process(self, element):
        from apache_beam.io.filesystems import FileSystems

        (split, index, count), pages = element
        # (url, packed page) pairs: sorted by url without unpacking, then unpacked one batch at
        # a time as the shard is written, so a worker holds the shard's packed pages, not its rows
        pages = sorted(pages, key=lambda pair: pair[0])
        extractors: dict[str, int] = {}
        rows = counting_extractors((document_row(from_bytes(packed)) for _, packed in pages), extractors)
        name = shard_name(split, index, count, self.shard_format)
        path = FileSystems.join(self.staging, name)
        text_bytes = write_shard(path, rows, create=FileSystems.create,
                                 rename=lambda a, b: FileSystems.rename([a], [b]),
                                 metadata=self.metadata)
        stats = shard_stats(len(pages), text_bytes, extractors)
        handle = FileSystems.create(path + ".json")
        handle.write(json.dumps(stats).encode("utf-8"))
        handle.close()
        inc = self.inc_for(NS_OUTPUT)
        inc(f"{split}:documents", len(pages))
        inc(f"{split}:bytes", text_bytes)
        if self.reporter:
            self.reporter.documents_written(len(pages))
        yield name, stats


def _packed_with_url(kv):
    """(key, Document) -> (key, (url, bytes)): a shard's pages sort by url while packed."""
    return kv[0], (kv[1].url, to_bytes(kv[1], SHUFFLE_COMPRESSION))


def _assign_shard(page: Document, counts: dict[str, int], docs_per_shard: int,
                  fixed: Optional[int], per_mille: int):
    split = split_of(page.normalized_url, per_mille)
    return tuple(shard_key(page.normalized_url, split, counts.get(split, 0), docs_per_shard, fixed)), page


def write_shards(pages, staging: str, docs_per_shard: int = DEFAULT_DOCS_PER_SHARD,
                 num_shards: Optional[int] = None, per_mille: int = 1,
                 shard_format: str = DEFAULT_SHARD_FORMAT, metadata: Optional[dict] = None,
                 progress_dir: Optional[str] = None):
    """Split and shard the pages; returns a PCollection of (file name, stats)."""
    counts = (pages
              | "split of page" >> beam.Map(lambda p: (split_of(p.normalized_url, per_mille), 1))
              | "count per split" >> beam.CombinePerKey(sum))
    return (pages
            | "assign shard" >> beam.Map(_assign_shard, counts=beam.pvalue.AsDict(counts),
                                         docs_per_shard=docs_per_shard, fixed=num_shards,
                                         per_mille=per_mille)
            | "pack pages for shards" >> beam.Map(_packed_with_url)
            | "group shards" >> beam.GroupByKey()
            | "write shards" >> beam.ParDo(WriteShardFn(staging, shard_format, metadata or {}, progress_dir)))


def build_graph(pipeline, paths: Iterable[str], config: CorpusConfig, staging: str,
                docs_per_shard: int = DEFAULT_DOCS_PER_SHARD, num_shards: Optional[int] = None,
                cc_rounds: int = DEFAULT_CC_ROUNDS, shard_format: str = DEFAULT_SHARD_FORMAT,
                progress_dir: Optional[str] = None, buckets: int = DEFAULT_BUCKETS,
                launch_dir: Optional[str] = None, recorded: Optional[CorpusConfig] = None,
                chain: Sequence[Step] = C4_CHAIN, samples_dir: Optional[str] = None):
    """The whole graph on ``pipeline`` (``chain``: corpus/chain.py's steps); returns the (file
    name, stats) PCollection.
    ``recorded``: the config as the manifest records it (``config`` by default), whose hash
    every shard carries; ``config`` itself may be its worker form (absolute paths).
    ``samples_dir``: where the rule samples' parts go (None: none recorded)."""
    files = pipeline | "input files" >> beam.Create(sorted(paths))
    pages = c4_pages(files, config, cc_rounds, progress_dir, buckets, launch_dir, chain, samples_dir)
    return write_shards(pages, staging, docs_per_shard=docs_per_shard, num_shards=num_shards,
                        per_mille=config.validation_per_mille, shard_format=shard_format,
                        metadata=shard_metadata((recorded or config).to_dict(), shard_format),
                        progress_dir=progress_dir)
