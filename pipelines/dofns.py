"""What every DoFn of the corpus graph shares: batching by bucket for the shuffles, counters
summed per bundle, rule samples kept per bundle, and the page steps run through the one step
loop (corpus/chain/loop.py). The graph's steps (pipelines/c4.py and the twins it composes) build
on these.
"""
from __future__ import annotations

import json
import uuid
import zlib
from collections.abc import Iterator
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from c4forge.corpus.chain.chains import plan
from c4forge.corpus.chain.loop import StepLoop
from c4forge.corpus.chain.step import Step, loaded
from c4forge.corpus.chain.verdict import Count
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup.minhash import MinHasher
from c4forge.corpus.dedup.near_dedup import NS_NEAR
from c4forge.corpus.document import Document, to_bytes
from c4forge.corpus.output.samples import Reservoir, Sample, SampleOptions, SampleSink, traced_key
from c4forge.pipelines.store import SHUFFLE_COMPRESSION

# Pages, line claims and line owners cross the shuffles of URL and line dedup in *batches*: one
# element per (bucket, bundle) holding a list, not one element per page or line. Beam's
# per-element machinery (windowed values, the data plane, the runner's grouping table) cost
# about 5 us per element and hop; batching leaves the same decisions (a URL's candidates, a
# line's claims and a page's owned lines all still meet in one group) at a fraction of the
# elements. A bucket is a stable hash of the key modulo ``buckets``; each batch buffer is
# flushed when it holds BATCH_BYTES, so a bundle's memory stays bounded.
DEFAULT_BUCKETS = 16
# Compressed crawl bytes per bucket (see shuffle_buckets). 2 MB, not the 8 MB of before: at 64x
# distinct input (1.6 GB) flink-local's JVM ran out of heap in the GroupReduce of MinHash's band
# grouping with 8 MB buckets, and completed with 2 MB (flink-local, 16x, 2 interleaved runs
# each: 1.046x the CPU, 0.92x the peak memory; benchmarks/RESULTS.md, build-memory).
BUCKET_INPUT_BYTES = 2 << 20
BATCH_BYTES = 32 << 20


def shuffle_buckets(input_bytes: int, minimum: int = DEFAULT_BUCKETS) -> int:
    """How many buckets the batched shuffles use: one per BUCKET_INPUT_BYTES of (compressed)
    input, at least ``minimum`` (parallelism for the groups' consumers). A page bucket's pages
    are held in memory together by one worker in the join: about a fifth of the bucket's input
    bytes (cleaned, zstd-compressed text); a URL bucket's candidates carry no text."""
    return max(minimum, -(-input_bytes // BUCKET_INPUT_BYTES))


def url_bucket(normalized_url: str, buckets: int) -> int:
    return zlib.crc32(normalized_url.encode("utf-8")) % buckets


def digest_bucket(digest: bytes, buckets: int) -> int:
    """Bucket of an md5 digest (a line key or an md5(url) rank)."""
    return int.from_bytes(digest[:8], "little") % buckets


def packed(kv):
    """(key, Document) -> (key, bytes) before a grouping: see corpus.document.to_bytes."""
    return kv[0], to_bytes(kv[1], SHUFFLE_COMPRESSION)


def pack_counts(counts: dict[tuple[str, str], int]) -> str:
    """Counts as one string on the wire (``namespace TAB name TAB n`` per line): the runner
    decodes and re-encodes every grouped value, and one string is the cheapest value to carry."""
    return "\n".join(f"{ns}\t{name}\t{n}" for (ns, name), n in counts.items())


def unpack_counts(packed_counts: str) -> Iterator[Count]:
    for line in packed_counts.split("\n") if packed_counts else ():
        namespace, name, n = line.split("\t")
        yield Count(namespace, name, int(n))


def recorder(counts: dict[tuple[str, str], int], namespace: str):
    """An inc() that adds into ``counts`` (summed per name: a page's line counters are many)."""
    def inc(name: str, amount: int = 1) -> None:
        key = (namespace, name)
        counts[key] = counts.get(key, 0) + amount
    return inc


def on_the_wire(record: tuple) -> tuple:
    """A NamedTuple as the plain tuple it is: Beam's FastPrimitivesCoder encodes tuples natively
    and would pickle a NamedTuple, class reference included, per element. The reader rebuilds
    it with ``Record._make``."""
    return tuple(record)


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


def in_global_window(batches) -> Iterator[WindowedValue]:
    """Elements output from ``finish_bundle`` must carry their window."""
    for batch in batches:
        yield WindowedValue(batch, GlobalWindow().max_timestamp(), (GlobalWindow(),))


class BucketBatchingFn(beam.DoFn):
    """A DoFn whose output goes out batched per shuffle bucket (``self.batcher``, fresh every
    bundle, ``buckets`` buckets); what is left at the end of a bundle is emitted there."""

    def __init__(self, buckets: int = DEFAULT_BUCKETS) -> None:
        self.buckets = buckets
        self.batcher = Batcher()

    def start_bundle(self) -> None:
        self.batcher = Batcher()

    def finish_bundle(self):
        yield from in_global_window(self.batcher.drain())


class Counting:
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
            inc = incs[namespace] = recorder(self.__dict__.setdefault("_pending", {}), namespace)
        return inc

    def finish_bundle(self):
        pending = self.__dict__.get("_pending")
        if pending:
            for (namespace, name), amount in pending.items():
                Metrics.counter(namespace, name).inc(amount)
            pending.clear()


class Sampling:
    """Mixin: the rule samples (corpus/output/samples.py) a DoFn finds, kept per bundle in a
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
        reservoir = self.__dict__.pop("_reservoir", None)
        if not reservoir:
            return
        path = FileSystems.join(self.samples_dir, f"{uuid.uuid4().hex}.json")
        handle = FileSystems.create(path)
        handle.write(json.dumps(reservoir.to_wire()).encode("utf-8"))
        handle.close()


def merge_sample_parts(directory: str, options: SampleOptions) -> dict:
    """The workers' sample files merged into the rule samples' document (corpus/output/samples.py)."""
    reservoir = Reservoir(options.per_rule)
    pattern = FileSystems.join(directory, "*.json")
    for match in FileSystems.match([pattern])[0].metadata_list:
        with FileSystems.open(match.path) as handle:
            reservoir.extend(Sample.from_wire(wire) for wire in json.loads(handle.read().decode("utf-8")))
    return reservoir.document(options)


WARM_TEXT = "A short text of a few words, enough for one shingle or more."


def load_worker_models(config: CorpusConfig) -> None:
    """Load into this process's caches what the graph's DoFns load in a worker before their
    first page (what the chain's steps load, numba's compiled MinHash kernels): the warm-up of
    the process SDK workers are forked from (pipelines/engines/workers/worker_fork.py)."""
    layout = plan(config)
    for step in layout.steps():
        loaded(step, config)
    if layout.runs(NS_NEAR):
        MinHasher(config.settings_of(NS_NEAR)).signatures([WARM_TEXT])


class StepsFn(Counting, Sampling, beam.DoFn):
    """Base for DoFns that run page steps of the chain (what each step loads, once per worker:
    corpus/chain/step.py ``loaded``): ``run_steps`` is the step loop, its counts to the bundle's table
    and a traced page's samples to the bundle's reservoir (or to a ``sink`` given)."""

    def __init__(self, config: CorpusConfig, samples_dir: Optional[str] = None) -> None:
        self.config = config
        self.samples_dir = samples_dir if config.rule_samples.on else None
        self.sample_options = config.rule_samples

    def loop(self, steps: tuple[Step, ...]) -> StepLoop:
        return StepLoop(steps, self.config, samples=self.sample_options if self.samples_dir else None)

    def run_steps(self, loop: StepLoop, page: Document, inc_for=None,
                  sink: Optional[SampleSink] = None) -> Optional[Document]:
        return loop.run(page, inc_for or self.inc_for, sink if sink is not None else self.samples())

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()
