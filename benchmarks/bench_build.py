"""`corpus build` at scale: wall, CPU and peak memory of `corpus clean` (one process), the Beam
DirectRunner (as `corpus build` runs it by default here, and in multi-processing mode with one
worker per core), the portable path (job service + external SDK worker pool, as
Flink/Spark/Dataflow run Python) and the peer, on N copies of a real crawl; output checked
identical across engines at every scale.

Inputs (``--copies``):

- ``distinct`` (the default): copies 0..N-1 of the shared crawl + crawl-extra (5,351 real pages)
  made distinct by benchmarks/distinct_inputs.py (copy 0 is the real crawl; every other copy
  maps the vocabulary, digits and hosts through its own bijection, keeping each copy's
  duplicate structure, line lengths, language mix and rule hits: tests/test_distinct_inputs.py).
  Every copy costs what new pages cost: line dedup, language ID, bad words and near-dedup see
  N copies' worth of text.
- ``hosts`` (the figures published until 2026-11-25, retracted): the shared crawl with every
  URL's host rewritten per copy. Line dedup then removes every line of every copy after the
  first, so language ID, bad words and near-dedup ran on one copy's worth of text whatever the
  scale, and the fitted per-copy cost left them out.

``corpus clean`` runs as ``corpus clean -o``: the shards, manifest and rule samples that every
``corpus build`` writes, so a ratio to it is the engine's cost for the same job. (Until the
evening of 2026-11-27 it wrote ``--jsonl`` without shards or rule samples, 6.4% fewer
instructions than the same job by valgrind: engine ``clean-jsonl`` measures that command.)

Measured: wall seconds, CPU seconds of every process the command started (user + sys, the
portable services and their workers included), peak RSS of the whole process tree (sampled every
0.1 s) and of its largest process, pages/s per core; engines interleaved per repeat (clean,
direct, ..., clean, direct, ...), every ratio to ``corpus clean`` per repeat as median (min-max).
Fitted: CPU = fixed + per-copy x copies, least squares over the scales. Extrapolated (stated as
such): core-hours for one Common Crawl dump of 90,000 WET files from the fitted per-page cost.

The peer: ``datatrove`` (in .venv-peers) runs its own WARC/WET reader, C4QualityFilter and
fastText LanguageFilter (the same lid.176 model and Punkt parameters as ours, as in
bench_clean.py) and its JSONL writer over the same copies, in one process. It does no URL or
line dedup, no bad-word filter (its C4BadWordsFilter downloads its lists) and no near-dedup
(its MinHash pipeline is four separate stages with their own files), so its cost is a lower
bound for the same job.

Run: make bench  (or: .venv/bin/python benchmarks/bench_build.py [--scales 1,4,16]
     [--copies distinct|hosts] [--engines clean,direct,datatrove] [--repeat 3] [--write] [--quick])
"""
from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from c4forge.corpus.config import build_config

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CACHE = ROOT / ".cache" / "bench-build"
# A Common Crawl dump as issue 29 sizes it: 90,000 WET files. Recent dumps hold 2.5-3.0 billion
# pages in 90,000 WET files, about 30,000 pages per file; the shared crawl's files are excerpts,
# so the extrapolation goes through pages, not files.
DUMP_WET_FILES = 90_000
PAGES_PER_WET_FILE = 30_000
DUMP_PAGES = DUMP_WET_FILES * PAGES_PER_WET_FILE

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402


def rel(path) -> str:
    try:
        return os.path.relpath(path, ROOT)
    except ValueError:
        return str(path)


def make_copies(files: list[str], scale: int) -> list[str]:
    """``scale`` copies of the crawl files, URLs rewritten per copy; one gzip member per record
    (as in Common Crawl). Cached by scale."""
    from c4forge.corpus.read.records import iter_records
    from tests.wetfiles import renamed_copy

    tag = hashlib.sha1("\0".join(os.path.basename(f) for f in files).encode()).hexdigest()[:8]
    folder = CACHE / f"x{scale}-{tag}"
    done = folder / "complete"
    if done.exists():
        return sorted(str(p) for p in folder.glob("*.wet.gz"))
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for path in files:
        for record in iter_records(path):
            records.append((Path(path).name, record))
    out = []
    for copy in range(scale):
        for name in sorted({n for n, _ in records}):
            target = folder / f"c{copy:03d}-{name}"
            with open(target, "wb") as handle:
                for source, record in records:
                    if source != name:
                        continue
                    handle.write(gzip.compress(renamed_copy(record, copy), 6))
            out.append(str(target))
    done.write_text("ok\n")
    return sorted(out)


class TreeSampler(threading.Thread):
    """Peak RSS of a process's descendants (sum) and of the largest single one."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(pid)
        self.peak_total = 0
        self.peak_single = 0
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            total = 0
            try:
                procs = self.root.children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for proc in procs:
                try:
                    rss = proc.memory_info().rss
                except psutil.Error:
                    continue
                total += rss
                self.peak_single = max(self.peak_single, rss)
            self.peak_total = max(self.peak_total, total)
            self.stop.wait(0.1)


class RunFailed(Exception):
    """A measured command exited non-zero or ran past its time limit (its process group is
    stopped first)."""


def _run_bounded(cmd: list[str], timeout: float | None) -> None:
    """Run ``cmd`` in its own process group; past ``timeout`` seconds, or on failure, stop the
    whole group (a build's JVM and SDK workers included) so one bad run does not leave load
    behind for the next."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(2)
        proc.wait()
    if rc is None:
        raise RunFailed(f"ran past {timeout:.0f} s: {' '.join(cmd[:3])} ...")
    if rc != 0:
        raise RunFailed(f"exit status {rc}: {' '.join(cmd[:3])} ...")


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER).
    CPU is read from RUSAGE_CHILDREN, which counts a process once its parent has waited for
    it; an SDK worker still running when its engine's JVM exits is re-parented, and without
    this to init, its CPU lost: a flink-local build at 64x distinct input read 339.0 CPU s in
    338.7 s of wall on 2 cores (the workers' CPU missing). False where not available."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans() -> None:
    """Collect the orphans this process adopted, so that their CPU is in RUSAGE_CHILDREN. They
    are dead by now: the measured command's process group was killed (``_run_bounded``)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def measure(cmd: list[str], setup=None, timeout: float | None = None) -> dict[str, float]:
    """Run ``cmd`` (and the services ``setup`` starts, inside this process's children):
    wall, CPU of everything started (orphans adopted and reaped: ``adopt_orphans``), peak RSS.
    Raises RunFailed on a non-zero exit or past ``timeout`` seconds."""
    adopt_orphans()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = TreeSampler(os.getpid())
    sampler.start()
    start = time.perf_counter()
    try:
        if setup is None:
            _run_bounded(cmd, timeout)
        else:
            with setup() as beam_args:
                _run_bounded(cmd + beam_args, timeout)
    finally:
        wall = time.perf_counter() - start
        sampler.stop.set()
        sampler.join()
        reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "peak_total": sampler.peak_total,
            "peak_single": sampler.peak_single}


def _digest(docs) -> str:
    """Order-free digest of (url, text) pairs: equal outputs, equal digests."""
    h = hashlib.sha256()
    for url, text in sorted(docs):
        h.update(url.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


def digest_of_corpus(directory: str) -> str:
    from c4forge.corpus.output.shards import iter_corpus_documents

    return _digest((d["url"], d["text"]) for s in ("train", "validation")
                   for d in iter_corpus_documents(directory, s))


def digest_of_jsonl(path: str) -> str:
    with open(path) as handle:
        return _digest((d["url"], d["text"]) for d in map(json.loads, handle))


def text_size(files: list[str]):
    from c4forge.corpus.read.wet import iter_crawl_documents

    pages = n_bytes = 0
    for path in files:
        for doc in iter_crawl_documents(path):
            pages += 1
            n_bytes += doc.text_size()
    return pages, n_bytes


def run_engine(engine: str, inputs: list[str], common: list[str], workers: int,
               digests: dict[str, set]) -> dict[str, float]:
    """One run of ``engine`` on ``inputs``; the digest of its output is added to ``digests``."""
    from c4forge.pipelines.engines.workers.worker_pool import local_portable_services

    with tempfile.TemporaryDirectory() as tmp:
        if engine == "clean":  # the same output as `corpus build`: shards, manifest, rule samples
            cmd = [str(BIN / "corpus"), "clean", "-i", *inputs, "-o", f"{tmp}/c", *common]
            result = measure(cmd)
            digests.setdefault(engine, set()).add(digest_of_corpus(f"{tmp}/c"))
            return result
        if engine == "clean-jsonl":  # before 2026-11-27 (evening): JSONL, no rule samples
            cmd = [str(BIN / "corpus"), "clean", "-i", *inputs, "--jsonl", f"{tmp}/c.jsonl", *common]
            result = measure(cmd)
            digests.setdefault(engine, set()).add(digest_of_jsonl(f"{tmp}/c.jsonl"))
            return result
        cmd = [str(BIN / "corpus"), "build", "-i", *inputs, "-o", f"{tmp}/b", *common]
        if engine == "direct":  # the mode `corpus build` picks for this machine
            result = measure(cmd)
        elif engine == "direct-mp":
            result = measure(cmd + ["--direct_running_mode=multi_processing",
                                    f"--direct_num_workers={workers}"])
        elif engine in ("flink-local", "spark-local"):  # the engine embedded in Beam's job server
            result = measure(cmd + ["--runner", engine, "--workers", str(workers)])
        else:
            result = measure(cmd, lambda: local_portable_services(f"{tmp}/services", workers))
        digests.setdefault(engine, set()).add(digest_of_corpus(f"{tmp}/b"))
        return result


def run_datatrove(inputs: list[str], script: str = __file__, args: tuple[str, ...] = (),
                  timeout: float | None = None) -> dict[str, float]:
    """A datatrove pipeline on ``inputs`` in a child process of .venv-peers (measured like the
    engines): ``script --datatrove-worker TMP *args *INPUTS``, this file's by default (reader +
    C4 quality + language filters + writer). Its reader takes one folder: the inputs are linked
    into one."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "in")
        os.makedirs(folder)
        linked = []
        for path in inputs:
            target = os.path.join(folder, os.path.basename(path))
            os.symlink(os.path.abspath(path), target)
            linked.append(target)
        return measure([harness.peers_python(), script, "--datatrove-worker", tmp, *args, *linked],
                       timeout=timeout)


def datatrove_worker(out: str, inputs: list[str], filters: list | None = None) -> None:
    """The peer's pipeline, in this process (``--datatrove-worker``): its reader, ``filters``
    (default: C4 quality + language, bench_clean.py's), its JSONL writer."""
    import bench_clean
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import JsonlWriter

    folder = os.path.dirname(inputs[0])
    if sorted(glob.glob(os.path.join(folder, "*.wet.gz"))) != sorted(inputs):
        raise SystemExit("datatrove worker: the inputs must be every *.wet.gz of one folder")
    # The steps chained as LocalPipelineExecutor's _run_for_rank chains them (it deep-copies the
    # pipeline first, which the shared fastText model cannot survive).
    data = None
    for step in [WarcReader(folder, glob_pattern="*.wet.gz", doc_progress=False),
                 *(bench_clean.datatrove_filters() if filters is None else filters),
                 JsonlWriter(os.path.join(out, "out"))]:
        data = step(data, rank=0, world_size=1)
    for _ in data or ():
        pass


def fit_per_copy(scales: list[int], cpu: list[float]) -> tuple[float, float]:
    """(fixed CPU s, CPU s per copy): least squares of cpu = fixed + per_copy * scale."""
    import numpy as np

    per_copy, fixed = np.polyfit(np.asarray(scales, float), np.asarray(cpu, float), 1)
    return float(fixed), float(per_copy)


def aggregate(results: list[dict[str, float]]) -> dict[str, float]:
    """Median wall and CPU over the runs (and every run's CPU), the highest peaks."""
    return {"wall": statistics.median(r["wall"] for r in results),
            "cpu": statistics.median(r["cpu"] for r in results),
            "cpu_runs": [r["cpu"] for r in results],
            "peak_total": max(r["peak_total"] for r in results),
            "peak_single": max(r["peak_single"] for r in results)}


def cpu_cell(runs: list[float]) -> str:
    """The median, with the range when there were several runs."""
    median = f"{statistics.median(runs):.1f}"
    return median if len(runs) == 1 else f"{median} ({min(runs):.1f}-{max(runs):.1f})"




def datatrove_available() -> bool:
    return harness.peer_importable("datatrove")


def has_bad_words(preset: str) -> bool:
    """Whether the preset's chain holds the bad-words step (``--badwords`` is refused otherwise)."""
    return build_config(preset=preset).runs("bad-words")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--datatrove-worker":
        datatrove_worker(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(harness.SHARED / "crawl" / "*.wet.gz"),
                        help="the files --copies hosts replicates")
    parser.add_argument("--copies", choices=("distinct", "hosts"), default="distinct",
                        help="distinct: benchmarks/distinct_inputs.py's copies of crawl + crawl-extra; "
                             "hosts: --input with URLs rewritten per copy (retracted figures)")
    parser.add_argument("--badwords", default=str(harness.SHARED / "badwords"))
    parser.add_argument("--preset", default="c4")
    parser.add_argument("--scales", default="1,4,16")
    parser.add_argument("--engines", default="",
                        help="clean: `corpus clean`; direct: `corpus build` as it runs here by default "
                             "(one process on <= 2 cores); direct-mp: the DirectRunner's multi-processing "
                             "mode; portable: job service + external worker pool; flink-local, "
                             "spark-local: `--runner ENGINE --workers N`; datatrove: the peer "
                             "(default: clean,direct and datatrove where it is installed)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per engine and scale, engines interleaved within each repeat")
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--section", default="build",
                        help="The RESULTS.md section written (build-memory: the 64x memory row).")
    parser.add_argument("--quick", action="store_true",
                        help="Two crawl files, 1x, clean and direct, one run, nothing written.")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a corpus setting for every engine (repeatable), e.g. url-filter.on=false")
    args = parser.parse_args()
    files = sorted(glob.glob(args.input))
    if not files:
        print(f"no input matches {args.input}", file=sys.stderr)
        return 2
    engines = args.engines.split(",") if args.engines else (
        ["clean", "direct"] + (["datatrove"] if datatrove_available() else []))
    if args.quick:
        files, args.scales, args.repeat, args.write, args.copies = files[:2], "1", 1, False, "hosts"
        engines = [e for e in engines if e in ("clean", "direct")]
    machine = harness.machine()
    common = ["--preset", args.preset, *(["--badwords", args.badwords] if has_bad_words(args.preset) else []),
              *(f"--set={o}" for o in args.overrides)]
    scales = [int(s) for s in args.scales.split(",")]
    rows = []
    if args.copies == "distinct":
        import distinct_inputs

        files = distinct_inputs.base_files()
    for scale in scales:
        inputs = (distinct_inputs.distinct_copies(scale, log=lambda m: print(m, file=sys.stderr))
                  if args.copies == "distinct" else make_copies(files, scale))
        pages, n_bytes = text_size(inputs)
        digests: dict[str, set] = {}
        runs: dict[str, list[dict[str, float]]] = {engine: [] for engine in engines}
        for _ in range(args.repeat):  # engines interleaved, so drifting load hits each alike
            for engine in engines:
                runs[engine].append(run_datatrove(inputs) if engine == "datatrove" else
                                    run_engine(engine, inputs, common, args.workers, digests))
        same = len(set().union(*digests.values())) == 1 if digests else True
        for engine in engines:
            result = aggregate(runs[engine])
            vs_clean = (harness.ratios([r["cpu"] for r in runs[engine]], [r["cpu"] for r in runs["clean"]])
                        if "clean" in runs else [])
            rows.append({"scale": scale, "engine": engine, "pages": pages, "text_mb": n_bytes / 1e6,
                         **result, "vs_clean": vs_clean, "ram_per_byte": result["peak_total"] / n_bytes,
                         "output_identical": same if engine != "datatrove" and "clean" in runs else None})
            print(f"x{scale} {engine}: CPU {harness.spread(result['cpu_runs'], '{:.1f}')} s", file=sys.stderr,
                  flush=True)
    default = " ".join(direct_runner_defaults_line())
    described = (f"copies 0..N-1 of {len(files)} WET files ({', '.join(sorted({rel(Path(f).parent) for f in files}))}: "
                 f"{rows[0]['pages'] // scales[0]:,} real pages) made distinct by benchmarks/distinct_inputs.py"
                 if args.copies == "distinct" else
                 f"{len(files)} WET files ({rel(Path(files[0]).parent)}) x scale, URLs rewritten per copy")
    lines = [f"Input: {described}; preset {args.preset}; clean = `corpus clean -o` (shards, manifest and rule "
             f"samples, the output `corpus build` writes); direct = `corpus build` as it runs here ({default}); "
             f"{args.repeat} run(s) per engine and scale, engines interleaved in every run; CPU = user + "
             "sys of every process started, median (min-max); CPU vs clean per run, median (min-max); "
             "peak RSS of the process tree, highest run. datatrove: reader + C4 quality + language "
             "filters + writer, no URL/line/near dedup or bad words (a lower bound for the same job)"
             + ("; all rows share one fastText build (fasttext-numpy2-wheel, which datatrove needs; "
                "`.venv`'s fasttext-predict makes c4forge's rows faster)" if "datatrove" in engines else "")
             + ".", "",
             "| scale | pages | text MB | engine | CPU s | CPU vs clean | wall s | pages/s/core | "
             "peak RSS GB | RAM B per text B | same output as clean |",
             "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ratio = harness.spread(r["vs_clean"]) + "x" if r["vs_clean"] else "-"
        same = "-" if r["output_identical"] is None else ("yes" if r["output_identical"] else "NO")
        lines.append(f"| {r['scale']}x | {r['pages']:,} | {r['text_mb']:.0f} | {r['engine']} | "
                     f"{harness.spread(r['cpu_runs'], '{:.1f}')} | {ratio} | {r['wall']:.1f} | "
                     f"{r['pages'] / r['cpu']:,.0f} | {r['peak_total'] / 1e9:.2f} | {r['ram_per_byte']:.2f} | {same} |")
    if len(scales) >= 2:
        lines += ["", f"Fitted CPU = fixed + per copy x copies (least squares over {', '.join(f'{s}x' for s in scales)}; "
                  f"one copy = {rows[0]['pages'] // scales[0]:,} pages) and **extrapolated** to one Common Crawl dump of "
                  f"{DUMP_WET_FILES:,} WET files (about {PAGES_PER_WET_FILE:,} pages each, "
                  f"{DUMP_PAGES / 1e9:.1f} billion pages; linear: near-dedup rounds and a real dump's "
                  "duplicate structure are not modelled):", "",
                  "| engine | fixed CPU s | CPU s per copy | marginal pages/s per core | core-hours per dump (extrapolated) |",
                  "|---|---:|---:|---:|---:|"]
        per_copy_pages = rows[0]["pages"] / scales[0]
        for engine in engines:
            mine = [r for r in rows if r["engine"] == engine]
            fixed, per_copy = fit_per_copy([r["scale"] for r in mine], [r["cpu"] for r in mine])
            per_page = per_copy / per_copy_pages
            lines.append(f"| {engine} | {fixed:.1f} | {per_copy:.2f} | {1 / per_page:,.0f} | "
                         f"{DUMP_PAGES * per_page / 3600:,.0f} |")
    harness.publish(args.section, lines, args.write, machine)
    if any(r["output_identical"] is False for r in rows):
        print("engines' outputs differ", file=sys.stderr)
        return 1
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def direct_runner_defaults_line() -> list[str]:
    from c4forge.pipelines.build import direct_runner_defaults

    return direct_runner_defaults([], os.cpu_count() or 1)


if __name__ == "__main__":
    sys.exit(main())
