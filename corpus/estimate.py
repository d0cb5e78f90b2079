"""`corpus estimate`: what a build of the given inputs will cost, from timing the real pipeline
on a sample of them.

How (each step measured, nothing taken from a table):

1. **A sample of pages**, drawn by the md5 of each page's normalised URL (so every copy of a
   URL is in or out together, as URL dedup needs), in ``groups`` disjoint parts, written as WET
   files; with ``sample_files`` only that many input files (chosen by the md5 of their names)
   are read, and the count of files scales the result (for `--crawl` slices of thousands).
2. **Uncertainty**: the single-process chain (`corpus clean`'s, the same functions every
   engine runs) on each part alone: CPU per input byte, documents and kept bytes per input
   byte, per part. Their spread over the parts gives a 95% interval (Student's t).
3. **The engine**: `corpus build` with the chosen runner, as child processes, on a tiny input
   (the first 20 sampled pages: its fixed cost, start-up, the JVM, workers, the graph, the
   models) and on the whole sample, in ``ENGINE_ROUNDS`` rounds of the two back to back (a
   slow or fast spell of the machine falls on both): CPU (user + sys of every process it
   started), wall, largest process. The fixed cost is the tiny builds' median and the sample's
   marginal cost the median of the rounds' differences: one run can cost a second more CPU
   than its neighbours for no reason the input gives (measured here: the same sample build
   6.6-8.4 s), and the projection multiplies the marginal cost by the scale, so an outlier
   would move it by several times its size; the differences' spread is the noise.
4. **Projection**: fixed + marginal x (input bytes / sample bytes) for CPU and wall;
   documents and output bytes in proportion; memory: the DirectRunner holds every shuffle
   (it grows in proportion), Flink and Spark spill (the sample's peak is the bound). The
   interval combines the parts' spread and the engine's run-to-run noise, both scaled up.

Page-level sampling keeps each part's mix of languages, duplicates and rule hits but sees fewer
of the corpus's duplicates than the whole (line and near-dedup find more in more text), so the
projection leans high where the crawl repeats itself; the test on the shared crawl bounds it.
"""
from __future__ import annotations

import gzip
import hashlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Optional

import yaml

from c4forge.core.counters import Counters
from c4forge.core.errors import C4forgeError
from c4forge.corpus.chain.chains import load_steps
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.read.records import iter_records
from c4forge.corpus.read.warc import WarcRecord
from c4forge.corpus.text.urls import normalize_url

PAGE_RECORDS = ("conversion", "response")
TINY_PAGES = 20
ENGINE_ROUNDS = 3
ESTIMATE_RUNNERS = ("DirectRunner", "flink-local", "spark-local")
# Student's t, two-sided 95%, by degrees of freedom (groups - 1)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


class EstimateError(C4forgeError):
    """The estimate cannot be made: no pages in the sample, a build of the sample failed."""


def t95(df: int) -> float:
    return T95.get(df) or T95[max(k for k in T95 if k <= df)]


def unit_hash(text: str) -> float:
    """A stable number in [0, 1) from ``text`` (md5)."""
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "big") / 2 ** 64


def record_bytes(record: WarcRecord) -> bytes:
    """A parsed record written back as WARC bytes (Content-Length recomputed)."""
    headers = {k: v for k, v in record.headers.items() if k.lower() != "content-length"}
    headers["Content-Length"] = str(len(record.body))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"WARC/1.0\r\n{head}\r\n".encode() + record.body + b"\r\n\r\n"


@dataclass
class Sample:
    """The sample's files and sizes. Bytes are page records' bodies (WET text, WARC HTTP
    blocks), the size every per-page cost scales with."""

    folder: str
    parts: list[str]
    tiny: str             # the first sampled pages
    part_pages: list[int]
    part_bytes: list[int]
    input_pages: int      # page records in the files read
    input_bytes: int
    files_read: int
    files_total: int

    @property
    def pages(self) -> int:
        return sum(self.part_pages)

    @property
    def bytes(self) -> int:
        return sum(self.part_bytes)

    @property
    def scale(self) -> float:
        """Whole input / sample, in page bytes."""
        return self.input_bytes / self.bytes * self.files_total / self.files_read


def choose_files(paths: Sequence[str], sample_files: Optional[int]) -> list[str]:
    """All of ``paths``, or ``sample_files`` of them chosen by the md5 of their names."""
    if not sample_files or sample_files >= len(paths):
        return list(paths)
    return sorted(sorted(paths, key=lambda p: unit_hash(os.path.basename(p)))[:sample_files])


def draw_sample(paths: Sequence[str], fraction: float, groups: int, folder: str,
                config: CorpusConfig, sample_files: Optional[int] = None) -> Sample:
    """Write the pages whose normalised URL hashes below ``fraction`` into ``groups`` WET
    files (by where the hash falls) and a tiny file of the first sampled pages."""
    read = choose_files(paths, sample_files)
    handles = [gzip.open(os.path.join(folder, f"part-{g}.warc.wet.gz"), "wb", compresslevel=1)
               for g in range(groups)]
    tiny_path = os.path.join(folder, "tiny.warc.wet.gz")
    tiny, tiny_left = gzip.open(tiny_path, "wb", compresslevel=1), TINY_PAGES
    pages, sizes = [0] * groups, [0] * groups
    input_pages = input_bytes = 0
    try:
        for path in read:
            for record in iter_records(path, options=config.read):
                if record.type not in PAGE_RECORDS:
                    continue
                input_pages += 1
                input_bytes += len(record.body)
                h = unit_hash(normalize_url(record.header("WARC-Target-URI")))
                if h >= fraction:
                    continue
                group = min(groups - 1, int(h / fraction * groups))
                data = record_bytes(record)
                handles[group].write(data)
                pages[group] += 1
                sizes[group] += len(record.body)
                if tiny_left:
                    tiny.write(data)
                    tiny_left -= 1
    finally:
        for handle in [*handles, tiny]:
            handle.close()
    if min(pages) == 0:
        raise EstimateError(f"the sample ({fraction:.1%} of {input_pages:,} pages, {groups} parts) "
                            "leaves a part empty: raise --sample or lower --groups")
    return Sample(folder, [h.name for h in handles], tiny_path, pages, sizes, input_pages,
                  input_bytes, len(read), len(paths))


@dataclass
class PartCost:
    """The single-process chain on one part: CPU seconds, documents kept, text bytes kept."""

    cpu: float
    documents: int
    kept_bytes: int
    bytes: int


def time_parts(sample: Sample, config: CorpusConfig) -> list[PartCost]:
    """Each part through the chain alone, after a warm-up on the tiny file (models loaded,
    numba compiled), CPU of this process per part."""
    load_steps(config)
    run_chain([sample.tiny], config, Counters())
    costs = []
    for path, size in zip(sample.parts, sample.part_bytes):
        start = time.process_time()
        docs = run_chain([path], config, Counters())
        costs.append(PartCost(time.process_time() - start, len(docs),
                              sum(d.text_size() for d in docs), size))
    return costs


@dataclass
class EngineRun:
    """One `corpus build` as a child process: CPU (user + sys of it and every process it
    waited for), wall, the largest process's peak RSS, what it wrote."""

    cpu: float
    wall: float
    peak_rss: int
    documents: int
    output_bytes: int


def run_engine(inputs: Sequence[str], folder: str, config: CorpusConfig, runner: str,
               workers: Optional[int]) -> EngineRun:
    """`corpus build` on ``inputs`` with ``runner``, the config passed whole as YAML."""
    from c4forge.corpus.output.shards import (
        read_manifest,  # lazy: pyarrow, only once a build has been measured
    )

    settings = os.path.join(folder, "config.yaml")
    if not os.path.exists(settings):
        with open(settings, "w", encoding="utf-8") as handle:
            given = {k: v for k, v in config.to_dict().items() if k != "preset"}  # --preset says it
            yaml.safe_dump(_plain(given), handle)
    out = tempfile.mkdtemp(prefix="build-", dir=folder)
    os.rmdir(out)
    cmd = [sys.executable, "-m", "c4forge.cli.corpus", "build", "-i", *inputs, "-o", out,
           "--preset", config.preset, "--config", settings, "-q", "--runner", runner]
    if workers and runner != "DirectRunner":
        cmd += ["--workers", str(workers)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        last = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise EstimateError(f"building the sample with --runner {runner} failed: {last[0]}")
    manifest = read_manifest(out)
    splits = manifest["splits"].values()
    return EngineRun(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss * 1024,
                     sum(s["documents"] for s in splits), sum(s["bytes"] for s in splits))


def _plain(value):
    """A config dict with tuples as lists (YAML that `--config` reads back)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass
class Range:
    """A projected figure and its 95% interval."""

    value: float
    low: float
    high: float


@dataclass
class Estimate:
    runner: str
    workers: Optional[int]
    sample_fraction: float
    sample_pages: int
    input_pages: int
    input_bytes: int
    files_read: int
    files_total: int
    scale: float
    cpu_seconds: Range
    wall_seconds: Range
    peak_memory_bytes: int
    memory_grows: bool
    documents: Range
    output_bytes: Range
    fixed_cpu_seconds: float
    price_per_core_hour: Optional[float] = None
    parts: list = field(default_factory=list)

    @property
    def core_hours(self) -> Range:
        return Range(*(v / 3600 for v in (self.cpu_seconds.value, self.cpu_seconds.low,
                                          self.cpu_seconds.high)))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["core_hours"] = asdict(self.core_hours)
        if self.price_per_core_hour is not None:
            out["cost"] = {k: v * self.price_per_core_hour for k, v in out["core_hours"].items()}
        return out


def interval(value: float, rates: Sequence[float]) -> tuple[float, float]:
    """``value`` +- t95 x the standard error of the mean of ``rates``, relative."""
    if len(rates) < 2:
        return value, value
    mean = statistics.fmean(rates)
    if mean == 0:
        return value, value
    relative = statistics.stdev(rates) / mean / math.sqrt(len(rates)) * t95(len(rates) - 1)
    return value * (1 - relative), value * (1 + relative)


def project(sample: Sample, parts: list[PartCost], tiny: Sequence[EngineRun],
            whole: Sequence[EngineRun], runner: str, workers: Optional[int], fraction: float,
            price: Optional[float] = None) -> Estimate:
    """The whole input's figures from the sample's (see the module docstring): ``tiny`` are
    the builds of the tiny input, ``whole`` of the sample."""
    scale = sample.scale

    def grown(at_tiny: Sequence[float], at_whole: Sequence[float], rates: Sequence[float]) -> Range:
        fixed = statistics.median(at_tiny)
        # the sample's marginal cost round by round (each round's two builds ran back to back,
        # so a slow or fast spell of the machine falls on both), then their median
        differences = [w - t for t, w in zip(at_tiny, at_whole)]
        marginal = max(0.0, statistics.median(differences)) * scale
        low, high = interval(marginal, rates)
        # the median difference's standard error from the rounds' spread (a median's taken as
        # the mean's); 2 of them for 95%
        error = statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else 0.0
        half = math.hypot(high - marginal, 2 * error * scale)
        return Range(fixed + marginal, fixed + max(0.0, marginal - half), fixed + marginal + half)

    cpu_rates = [p.cpu / p.bytes for p in parts]
    doc_rates = [p.documents / p.bytes for p in parts]
    kept_rates = [p.kept_bytes / p.bytes for p in parts]
    documents = whole[0].documents * scale
    output = whole[0].output_bytes * scale
    grows = runner == "DirectRunner"
    base = min(run.peak_rss for run in tiny)
    largest = max(run.peak_rss for run in whole)
    memory = (base + max(0, largest - base) * scale if grows
              else max(largest, *(run.peak_rss for run in tiny)))
    return Estimate(
        runner=runner, workers=workers, sample_fraction=fraction, sample_pages=sample.pages,
        input_pages=round(sample.input_pages * sample.files_total / sample.files_read),
        input_bytes=round(sample.input_bytes * sample.files_total / sample.files_read),
        files_read=sample.files_read, files_total=sample.files_total, scale=scale,
        cpu_seconds=grown([run.cpu for run in tiny], [run.cpu for run in whole], cpu_rates),
        wall_seconds=grown([run.wall for run in tiny], [run.wall for run in whole], cpu_rates),
        peak_memory_bytes=int(memory), memory_grows=grows,
        documents=Range(documents, *interval(documents, doc_rates)),
        output_bytes=Range(output, *interval(output, kept_rates)),
        fixed_cpu_seconds=statistics.median([run.cpu for run in tiny]), price_per_core_hour=price,
        parts=[asdict(p) for p in parts])


def estimate(paths: Sequence[str], config: CorpusConfig, *, fraction: float = 0.05,
             groups: int = 4, runner: str = "DirectRunner", workers: Optional[int] = None,
             sample_files: Optional[int] = None, price: Optional[float] = None,
             rounds: int = ENGINE_ROUNDS, log=lambda message: None) -> Estimate:
    """Sample, time, project (see the module docstring); ``rounds`` of the two engine builds."""
    with tempfile.TemporaryDirectory(prefix="c4forge-estimate-") as folder:
        log(f"sampling {fraction:.1%} of the pages in {groups} parts")
        sample = draw_sample(paths, fraction, groups, folder, config, sample_files)
        log(f"timing the chain on each part ({sample.pages:,} pages)")
        parts = time_parts(sample, config)
        log(f"`corpus build --runner {runner}` on a tiny input and on the sample, "
            f"{rounds} rounds")
        tiny, whole = [], []
        for _ in range(rounds):
            tiny.append(run_engine([sample.tiny], folder, config, runner, workers))
            whole.append(run_engine(sample.parts, folder, config, runner, workers))
        return project(sample, parts, tiny, whole, runner, workers, fraction, price)


def report(result: Estimate) -> list[str]:
    """The estimate as lines for a terminal."""
    def span(r: Range, fmt: str) -> str:
        return f"{fmt.format(r.value)} ({fmt.format(r.low)}-{fmt.format(r.high)})"

    hours = result.core_hours
    workers = f", {result.workers} worker(s)" if result.workers else ""
    files = (f"{result.files_read} of {result.files_total} files read, "
             if result.files_read != result.files_total else "")
    lines = [
        f"input: {files}{result.input_pages:,} pages, {result.input_bytes / 1e6:,.1f} MB of page "
        f"records; sample {result.sample_pages:,} pages ({result.sample_fraction:.1%}), "
        f"projection x{result.scale:,.1f}",
        f"projected for `corpus build --runner {result.runner}`{workers} on this machine "
        "(95% intervals from the sample's parts):",
        f"  CPU            {span(hours, '{:,.3f}')} core-hours "
        f"({result.cpu_seconds.value:,.0f} s; fixed {result.fixed_cpu_seconds:,.1f} s)",
        f"  wall           {span(Range(*(v / 60 for v in asdict(result.wall_seconds).values())), '{:,.1f}')} min",
        f"  peak memory    {result.peak_memory_bytes / 1e9:,.2f} GB in the largest process "
        + ("(the DirectRunner holds every shuffle: grows with the input)" if result.memory_grows
           else "(the engine spills beyond its budget: the sample's peak)"),
        f"  documents      {span(result.documents, '{:,.0f}')}",
        f"  output         {span(Range(*(v / 1e6 for v in asdict(result.output_bytes).values())), '{:,.1f}')} MB",
    ]
    if result.price_per_core_hour is not None:
        cost = Range(*(v * result.price_per_core_hour for v in asdict(hours).values()))
        lines.append(f"  cost           {span(cost, '{:,.2f}')} at {result.price_per_core_hour:g} "
                     "per core-hour")
    return lines
