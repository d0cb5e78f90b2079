"""`corpus build` at scale: wall, CPU and peak memory of `corpus clean` (one process), the Beam
DirectRunner (as `corpus build` runs it by default here, and in multi-processing mode with one
worker per core) and the portable path (job service + external SDK worker pool, as
Flink/Spark/Dataflow run Python), on the shared crawl replicated 1x..32x with new URLs; output
checked identical across engines at every scale.

Each copy k of the crawl rewrites every WARC-Target-URI's host to ``c<k>.<host>`` (so URL dedup
keeps every copy; line dedup and near-dedup then see exact duplicate text, as they do for
mirrors in a real crawl). Copies are written once under .cache/bench-build/ and reused.

Measured: wall seconds, CPU seconds of every process the command started (user + sys, the
portable services and their workers included), peak RSS of the whole process tree (sampled every
0.1 s) and of its largest process, pages/s per core. Extrapolated (stated as such): the
core-hours for one Common Crawl dump from the marginal CPU per page between the two largest
scales.

Run: .venv/bin/python benchmarks/bench_build.py [--scales 1,4,16,32] [--engines clean,direct,portable]
     [--repeat 3]
"""
from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CACHE = ROOT / ".cache" / "bench-build"
# A Common Crawl dump's size (CC-MAIN-2019-18, the crawl C4 was built from: about 2.5 billion
# pages in 56,000 WET files); newer dumps hold 2.5-3.5 billion.
DUMP_PAGES = 2.5e9

sys.path.insert(0, str(ROOT))


def rel(path) -> str:
    try:
        return os.path.relpath(path, ROOT)
    except ValueError:
        return str(path)


def make_copies(files: list[str], scale: int) -> list[str]:
    """``scale`` copies of the crawl files, URLs rewritten per copy; one gzip member per record
    (as in Common Crawl). Cached by scale."""
    from c4forge.corpus.wet import iter_records

    folder = CACHE / f"x{scale}"
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
                    handle.write(gzip.compress(_rewrite(record, copy), 6))
            out.append(str(target))
    done.write_text("ok\n")
    return sorted(out)


def _rewrite(record, copy: int) -> bytes:
    headers = dict(record.headers)
    uri = headers.get("WARC-Target-URI")
    if uri and "://" in uri:
        scheme, rest = uri.split("://", 1)
        headers["WARC-Target-URI"] = f"{scheme}://c{copy}.{rest}"
    body = record.body if isinstance(record.body, bytes) else record.body.encode("utf-8")
    headers["Content-Length"] = str(len(body))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"WARC/1.0\r\n{head}\r\n".encode() + body + b"\r\n\r\n"


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


def measure(cmd: list[str], setup=None) -> dict[str, float]:
    """Run ``cmd`` (and the services ``setup`` starts, inside this process's children):
    wall, CPU of everything started, peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = TreeSampler(os.getpid())
    sampler.start()
    start = time.perf_counter()
    if setup is None:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        with setup() as beam_args:
            subprocess.run(cmd + beam_args, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
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
    from c4forge.corpus.shards import iter_documents

    return _digest((d["url"], d["text"]) for s in ("train", "validation")
                   for d in iter_documents(directory, s))


def digest_of_jsonl(path: str) -> str:
    with open(path) as handle:
        return _digest((d["url"], d["text"]) for d in map(json.loads, handle))


def text_size(files: list[str]):
    from c4forge.corpus.wet import iter_documents

    pages = n_bytes = 0
    for path in files:
        for doc in iter_documents(path):
            pages += 1
            n_bytes += doc.text_size()
    return pages, n_bytes


def run_engine(engine: str, inputs: list[str], common: list[str], workers: int,
               digests: dict[str, set]) -> dict[str, float]:
    """One run of ``engine`` on ``inputs``; the digest of its output is added to ``digests``."""
    from c4forge.pipelines.worker_pool import local_portable_services

    with tempfile.TemporaryDirectory() as tmp:
        if engine == "clean":
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
        else:
            result = measure(cmd, lambda: local_portable_services(f"{tmp}/services", workers))
        digests.setdefault(engine, set()).add(digest_of_corpus(f"{tmp}/b"))
        return result


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(ROOT.parent / "shared" / "data" / "crawl" / "*.wet.gz"))
    parser.add_argument("--badwords", default=str(ROOT.parent / "shared" / "data" / "badwords"))
    parser.add_argument("--preset", default="c4")
    parser.add_argument("--scales", default="1,4,16,32")
    parser.add_argument("--engines", default="clean,direct,direct-mp,portable",
                        help="clean: `corpus clean`; direct: `corpus build` as it runs here by default "
                             "(one process on <= 2 cores); direct-mp: the DirectRunner's multi-processing "
                             "mode; portable: job service + external worker pool")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per engine and scale, interleaved; the table gives the median "
                             "wall and CPU and the highest peak memory")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    files = sorted(glob.glob(args.input))
    if not files:
        print(f"no input matches {args.input}", file=sys.stderr)
        return 2
    engines = args.engines.split(",")
    common = ["--preset", args.preset, "--badwords", args.badwords]
    rows = []
    for scale in [int(s) for s in args.scales.split(",")]:
        inputs = make_copies(files, scale)
        pages, n_bytes = text_size(inputs)
        digests = {}
        runs: dict[str, list[dict[str, float]]] = {engine: [] for engine in engines}
        for _ in range(args.repeat):  # engines interleaved, so drifting load hits each alike
            for engine in engines:
                runs[engine].append(run_engine(engine, inputs, common, args.workers, digests))
        for engine in engines:
            result = aggregate(runs[engine])
            row = {"scale": scale, "engine": engine, "pages": pages, "text_mb": n_bytes / 1e6,
                   **result, "ram_per_byte": result["peak_total"] / n_bytes}
            rows.append(row)
            print(f"x{scale} {engine}: {result['wall']:.1f} s wall, {result['cpu']:.1f} s CPU "
                  f"(runs: {', '.join(f'{r:.1f}' for r in result['cpu_runs'])}), "
                  f"peak {result['peak_total'] / 1e9:.2f} GB ({row['ram_per_byte']:.2f} B/B), "
                  f"largest process {result['peak_single'] / 1e9:.2f} GB", file=sys.stderr, flush=True)
        same = len(set().union(*digests.values())) == 1
        print(f"x{scale}: outputs {'identical' if same else 'DIFFER: ' + json.dumps({e: sorted(d) for e, d in digests.items()})}",
              file=sys.stderr, flush=True)
        for row in rows:
            if row["scale"] == scale:
                row["output_identical"] = same

    from c4forge.pipelines.build import direct_runner_defaults

    default = " ".join(direct_runner_defaults([], os.cpu_count() or 1))
    print(f"input: {len(files)} WET files ({rel(Path(files[0]).parent)}) x scale, URLs rewritten "
          f"per copy; preset {args.preset}; {os.cpu_count()} cores; direct = `corpus build` "
          f"defaults here ({default}); direct-mp and portable: {args.workers} workers; "
          f"{args.repeat} run(s) per engine and scale, interleaved: median wall and CPU, "
          "highest peak memory\n")
    print("| scale | pages | text MB | engine | wall s | CPU s (range) | CPU vs clean | pages/s/core "
          "| peak RSS GB (tree) | RAM B per text B | largest process GB | same output |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    clean_cpu = {r["scale"]: r["cpu"] for r in rows if r["engine"] == "clean"}
    for r in rows:
        ratio = f"{r['cpu'] / clean_cpu[r['scale']]:.2f}x" if r["scale"] in clean_cpu else "-"
        print(f"| {r['scale']}x | {r['pages']:,} | {r['text_mb']:.0f} | {r['engine']} | {r['wall']:.1f} "
              f"| {cpu_cell(r['cpu_runs'])} | {ratio} | {r['pages'] / r['cpu']:,.0f} | {r['peak_total'] / 1e9:.2f} "
              f"| {r['ram_per_byte']:.2f} | {r['peak_single'] / 1e9:.2f} | {'yes' if r['output_identical'] else 'NO'} |")
    scales = sorted({r["scale"] for r in rows})
    if len(scales) >= 2:
        lo, hi = scales[-2], scales[-1]
        print(f"\nMarginal cost between {lo}x and {hi}x (measured) and one Common Crawl dump of "
              f"{DUMP_PAGES / 1e9:.1f} billion pages (extrapolated linearly; near-dedup's shuffles "
              "grow with cluster diameter, not modelled):\n")
        print("| engine | CPU s per copy | marginal pages/s per core | core-hours per dump |")
        print("|---|---:|---:|---:|")
        for engine in engines:
            a = next(r for r in rows if r["scale"] == lo and r["engine"] == engine)
            b = next(r for r in rows if r["scale"] == hi and r["engine"] == engine)
            per_page = (b["cpu"] - a["cpu"]) / max(b["pages"] - a["pages"], 1)
            per_copy = (b["cpu"] - a["cpu"]) / (hi - lo)
            print(f"| {engine} | {per_copy:.2f} | {1 / per_page:,.0f} | {DUMP_PAGES * per_page / 3600:,.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
