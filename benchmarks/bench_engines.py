"""`corpus build` on the engines that use more than one core: wall, CPU and peak memory at 1 and
2 workers, at 4x and 16x distinct input.

Engines: ``flink-local`` and ``spark-local`` (Flink or Spark embedded in Beam's job server,
started and stopped by `corpus build`, one slot and one SDK worker process per worker), and the
DirectRunner's multi-processing mode (``direct-mp``) for comparison. Inputs: copies 0..N-1 of
the shared crawl + crawl-extra (5,351 real pages) made distinct by benchmarks/distinct_inputs.py,
so every copy costs what new pages cost. Every run's output is checked identical (documents and
texts) across engines and worker counts.

Measured per run: wall seconds; CPU seconds of every process the command started (the JVM, the
SDK workers: user + sys); peak RSS of the whole process tree (sampled every 0.1 s). Repeats are
interleaved (every engine and worker count once, then again); median (min-max). Speedup = wall
at 1 worker / wall at 2 workers per repeat; memory growth = peak at 16x / peak at 4x.

Run: make bench  (or: .venv-bench/bin/python benchmarks/bench_engines.py [--scales 4,16]
     [--workers 1,2] [--engines flink-local,spark-local,direct-mp] [--repeat 3] [--write] [--quick])
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_build  # noqa: E402
import distinct_inputs  # noqa: E402
import harness  # noqa: E402


def run(engine: str, workers: int, inputs: list[str], common: list[str],
        timeout: float | None = None) -> tuple[dict, str | None]:
    """One build; (measurements, digest of its documents). A build that fails or runs past
    ``timeout`` is a row entry ({"failed": why}, None), not the end of the benchmark."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(BIN / "corpus"), "build", "-i", *inputs, "-o", f"{tmp}/b", *common]
        if engine == "direct-mp":
            cmd += ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
        else:
            cmd += ["--runner", engine, "--workers", str(workers)]
        try:
            result = bench_build.measure(cmd, timeout=timeout)
        except bench_build.RunFailed as failure:
            return {"failed": str(failure)}, None
        return result, bench_build.digest_of_corpus(f"{tmp}/b")


def spread(values: list[float], fmt: str = "{:.1f}") -> str:
    return harness.spread(values, fmt)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--badwords", default=str(harness.SHARED / "badwords"))
    parser.add_argument("--scales", default="4,16")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--engines", default="flink-local,spark-local,direct-mp")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3600,
                        help="Seconds one build may run before it is stopped and reported failed.")
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true",
                        help="The shared crawl's sample file, flink-local at 1 worker, nothing written.")
    args = parser.parse_args()
    engines = args.engines.split(",")
    workers = [int(w) for w in args.workers.split(",")]
    scales = [int(s) for s in args.scales.split(",")]
    common = ["--preset", "c4", "--badwords", args.badwords, "-q"]
    if args.quick:
        sample = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
        result, _ = run("flink-local", 1, [sample], ["--preset", "c4", "--badwords",
                                                     str(ROOT / "corpus/data/demo-badwords"), "-q"])
        print(f"flink-local quick: wall {result['wall']:.1f} s, CPU {result['cpu']:.1f} s", file=sys.stderr)
        return 0
    machine = harness.machine()
    rows = {}
    same = True
    for scale in scales:
        inputs = distinct_inputs.distinct_copies(scale, log=lambda m: print(m, file=sys.stderr))
        pages, n_bytes = bench_build.text_size(inputs)
        digests = set()
        runs: dict[tuple, list[dict]] = {(e, w): [] for e in engines for w in workers}
        for _ in range(args.repeat):
            for key in runs:
                result, digest = run(*key, inputs, common, args.timeout)
                runs[key].append(result)
                if digest is None:
                    print(f"x{scale} {key[0]} {key[1]}w: FAILED ({result['failed']})", file=sys.stderr,
                          flush=True)
                    continue
                digests.add(digest)
                print(f"x{scale} {key[0]} {key[1]}w: wall {result['wall']:.1f} s, CPU {result['cpu']:.1f} s, "
                      f"peak {result['peak_total'] / 1e9:.2f} GB", file=sys.stderr, flush=True)
        same = same and len(digests) <= 1
        for key, results in runs.items():
            rows[(scale, *key)] = {"pages": pages, "text_mb": n_bytes / 1e6, "runs": results}
    lines = [f"Input: copies 0..N-1 of the shared crawl + crawl-extra made distinct by "
             f"benchmarks/distinct_inputs.py ({rows[(scales[0], engines[0], workers[0])]['pages'] // scales[0]:,} "
             f"pages a copy); preset c4; `corpus build --runner ENGINE --workers N` (direct-mp: "
             "`--direct_running_mode multi_processing --direct_num_workers N`); "
             f"{args.repeat} interleaved run(s) per row; median (min-max). CPU = user + sys of every "
             "process started (JVM and SDK workers included); peak RSS of the whole process tree. "
             f"Outputs identical across every row of a scale: {'yes' if same else 'NO'}.", "",
             "| scale | engine | workers | wall s | CPU s | speedup vs 1 worker | CPU vs 1 worker | "
             "peak RSS GB | peak vs 4x |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    for (scale, engine, n), row in rows.items():
        done = [r for r in row["runs"] if "failed" not in r]
        failed = [r["failed"] for r in row["runs"] if "failed" in r]
        if failed:
            failures.append(f"{scale}x {engine} {n} worker(s): {len(failed)} of {len(row['runs'])} "
                            f"run(s) failed ({failed[0]})")
        if not done:
            lines.append(f"| {scale}x | {engine} | {n} | failed | - | - | - | - | - |")
            continue
        walls = [r["wall"] for r in done]
        cpus = [r["cpu"] for r in done]
        one = rows.get((scale, engine, 1))
        one_done = one and all("failed" not in r for r in one["runs"]) and len(done) == len(one["runs"])
        speedup = (spread(harness.ratios([r["wall"] for r in one["runs"]], walls), "{:.2f}") + "x"
                   if one_done and n != 1 else "-")
        cpu_ratio = (spread(harness.ratios(cpus, [r["cpu"] for r in one["runs"]]), "{:.2f}") + "x"
                     if one_done and n != 1 else "-")
        peak = max(r["peak_total"] for r in done)
        base = rows.get((scales[0], engine, n))
        base_done = [r for r in base["runs"] if "failed" not in r] if base else []
        growth = (f"{peak / max(r['peak_total'] for r in base_done):.2f}x"
                  if base_done and scale != scales[0] else "-")
        lines.append(f"| {scale}x | {engine} | {n} | {spread(walls)} | {spread(cpus)} | {speedup} | "
                     f"{cpu_ratio} | {peak / 1e9:.2f} | {growth} |")
    if failures:
        lines += ["", "Failed runs (stopped after --timeout or non-zero exit): " + "; ".join(failures) + "."]
    harness.publish("engines", lines, args.write, machine)
    if not same:
        print("engines' outputs differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
