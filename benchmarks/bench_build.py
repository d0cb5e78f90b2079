"""End-to-end corpus throughput: `corpus build` (Beam DirectRunner, multi-processing on every
core) vs `corpus clean` (one process), same input, same preset, one run.

Both read the WET files, apply the whole chain and write output; the figures include process
start-up, model loading and (for Beam) pipeline construction and worker start, which dominate on
small inputs - read them as what a user waits for, not as per-page cost.

Run: .venv/bin/python benchmarks/bench_build.py [--preset c4] [--input GLOB]
"""
from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(ROOT.parent / "shared" / "data" / "crawl" / "*.wet.gz"))
    parser.add_argument("--badwords", default=str(ROOT.parent / "shared" / "data" / "badwords"))
    parser.add_argument("--preset", default="c4")
    args = parser.parse_args()
    files = sorted(glob.glob(args.input))
    if not files:
        print(f"no input matches {args.input}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from corpus.wet import iter_documents

    pages = [d for f in files for d in iter_documents(f)]
    text_mb = sum(len(p.text.encode("utf-8")) for p in pages) / 1e6
    gz_mb = sum(os.path.getsize(f) for f in files) / 1e6
    common = ["--preset", args.preset, "--badwords", args.badwords]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            ("corpus clean (1 process)", timed([str(BIN / "corpus"), "clean", "-i", *files,
                                                "--jsonl", f"{tmp}/c.jsonl", *common])),
            (f"corpus build (DirectRunner, {os.cpu_count()} workers)",
             timed([str(BIN / "corpus"), "build", "-i", args.input, "-o", f"{tmp}/b", *common])),
        ]
    print(f"input: {len(files)} WET files, {gz_mb:.1f} MB gzip, {len(pages):,} pages, "
          f"{text_mb:.1f} MB text; preset {args.preset}; {os.cpu_count()} cores\n")
    print("| command | seconds | pages/s | text MB/s |")
    print("|---|---:|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} | {len(pages) / seconds:,.0f} | {text_mb / seconds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
