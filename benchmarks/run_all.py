"""`make bench`: run the CPU benchmarks and regenerate their sections of benchmarks/RESULTS.md.

Each benchmark below owns one generated section (``<!-- generated:NAME -->``); the full run
writes it, stamped with the command, date, commit and machine (harness.py). ``--quick`` runs
every benchmark on a few inputs with one repeat and writes nothing: the smoke test in
``make test`` that checks each one still runs (no timing is asserted anywhere).

Benchmarks not listed here (GPU throughput and kernels, the 1B-token loader, lm-eval-harness)
need hardware or hours this runner does not assume; their sections of RESULTS.md say how they
were run.

Run: python benchmarks/run_all.py [--quick] [--only extract,dedup]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402


@dataclass(frozen=True)
class Benchmark:
    name: str
    script: str
    full: tuple[str, ...]      # arguments of the run that regenerates the section
    needs: str                  # what it reads, for the skip message
    peers: bool = False         # runs in .venv-peers (beside datatrove, without apache-beam)
    in_quick: bool = True       # False: left out of --quick (its quick run would repeat another's)


BENCHMARKS = (
    Benchmark("clean", "bench_clean.py", ("--repeat", "5", "--write"), "../shared/data/crawl", peers=True),
    Benchmark("extract", "bench_extract.py", ("--repeats", "3", "--peers", "--write"),
              "../shared/data/crawl-extra/wcxb-dev.warc.gz"),
    Benchmark("route", "bench_route.py", ("--unfamiliar", "../html-cleaning-dataset-merged", "--write"),
              "../shared/data/crawl-extra/wcxb-dev.warc.gz"),
    Benchmark("dedup", "bench_dedup.py", ("--repeats", "5", "--write"), "../shared/data/crawl"),
    Benchmark("reader", "bench_reader.py", ("--repeats", "5", "--write"), "../shared/data/crawl-extra"),
    Benchmark("build", "bench_build.py", ("--scales", "4,16", "--engines",
                                          "clean,direct,flink-local,spark-local,datatrove",
                                          "--workers", "2", "--repeat", "3", "--write"),
              "../shared/data/crawl"),
    # issue 55's memory row: flink-local's peak at 64x distinct pages against its own at 16x
    Benchmark("build-memory", "bench_build.py", ("--scales", "16,64", "--engines", "flink-local",
                                                 "--workers", "2", "--repeat", "1",
                                                 "--section", "build-memory", "--write"),
              "../shared/data/crawl", in_quick=False),
    # issue 55's chain row: `corpus clean` of the commit the issue was filed at, beside this one
    Benchmark("baseline", "bench_baseline.py", ("--scale", "16", "--repeat", "3", "--write"),
              "../shared/data/crawl", in_quick=False),
    # the same two chains counted in instructions (valgrind), which the VM's speed cannot move
    Benchmark("baseline-instructions", "bench_baseline.py", ("--instructions", "--write"),
              "../shared/data/crawl", in_quick=False),
    Benchmark("estimate", "bench_estimate.py", ("--repeat", "3", "--write"), "../shared/data/crawl-extra"),
    Benchmark("estimate-flink", "bench_estimate.py", ("--runner", "flink-local", "--repeat", "2",
                                                  "--rounds", "3", "--write"),
              "../shared/data/crawl-extra", in_quick=False),
    Benchmark("samples", "bench_samples.py", ("--repeat", "3", "--write"), "../shared/data/crawl-extra"),
    Benchmark("stages", "bench_stages.py", ("--scale", "4", "--repeat", "3", "--write"),
              "../shared/data/crawl-extra"),
    Benchmark("engines", "bench_engines.py", ("--scales", "4,16", "--repeat", "3", "--write"),
              "../shared/data/crawl-extra"),
    Benchmark("sequential", "bench_sequential.py", ("--trials", "20000", "--write"), "examples/"),
    Benchmark("remote", "bench_remote.py", ("--repeat", "5", "--write"), "../shared/data/crawl"),
    Benchmark("tokenizer", "bench_tokenizer.py", ("--repeat", "3", "--write"), "../shared/data/crawl"),
    Benchmark("rulesets", "bench_rulesets.py", ("--repeats", "3", "--write"), "../shared/data/crawl"),
    # issue 74: the three presets through corpus clean and flink-local beside datatrove's pipeline
    Benchmark("presets", "bench_presets.py", ("--scales", "1,4,16", "--peer-scales", "1", "--repeat", "3",
                                              "--write"), "../shared/data/crawl-extra"),
    # issue 81: each preset's stages at 1x, 4x and 16x (what grows with the work)
    Benchmark("presets-stages", "bench_presets.py", ("--stages-scales", "1,4,16", "--repeat", "2", "--write"),
              "../shared/data/crawl-extra", in_quick=False),
    # issue 81: the presets beside datatrove, NeMo Curator and dolma on the same pages
    Benchmark("peer-tools", "bench_peer_tools.py", ("--scales", "1", "--repeat", "3", "--write"),
              "../shared/data/crawl-extra"),
    Benchmark("estimate-fineweb", "bench_estimate.py", ("--preset", "fineweb", "--repeat", "3", "--rounds", "3",
                                                        "--no-instructions", "--write"),
              "../shared/data/crawl-extra", in_quick=False),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Smoke test: tiny inputs, nothing written.")
    parser.add_argument("--only", default="", help="Comma-separated benchmark names.")
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if (not args.only or b.name in args.only.split(","))
              and (b.in_quick or not args.quick)]
    failed = []
    for bench in chosen:
        python = harness.peers_python() if bench.peers else sys.executable
        argv = [python, str(ROOT / "benchmarks" / bench.script),
                *(("--quick",) if args.quick else bench.full)]
        print(f"== {bench.name}: {' '.join(['python', 'benchmarks/' + bench.script, *argv[2:]])}", flush=True)
        started = time.perf_counter()
        result = subprocess.run(argv, cwd=ROOT)
        print(f"== {bench.name}: exit {result.returncode} in {time.perf_counter() - started:.0f} s", flush=True)
        if result.returncode:
            failed.append(bench.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
