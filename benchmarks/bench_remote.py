"""Reading the shared crawl over loopback HTTP (corpus.remote.ResumingReader, the reader
`corpus build` uses for https://) against the local files, with 0% and 20% injected faults.

    python benchmarks/bench_remote.py --repeat 5 [--write] [--quick]   (make bench runs it)

Interleaved: local, remote 0%, remote 20%, local, ... ; MB/s of compressed bytes delivered,
min / median / max over the repeats; the bytes are checked equal to the local file's.
The server is tests/faultserver.py on 127.0.0.1 (bounded requests and lifetime).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402

from c4forge.corpus.read.remote import RemotePolicy, ResumingReader
from tests.faultserver import FaultServer


def read_local(paths: list[Path]) -> bytes:
    return b"".join(p.read_bytes() for p in paths)


def read_remote(base: str, names: list[str], policy: RemotePolicy) -> bytes:
    out = []
    for name in names:
        with ResumingReader(f"{base}/{name}", policy) as reader:
            while chunk := reader.read(1 << 20):
                out.append(chunk)
    return b"".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--passes", type=int, default=10,
                        help="reads of the whole crawl per measurement (longer, steadier timings)")
    parser.add_argument("--data", default=str(harness.SHARED))
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="One pass, one repeat, nothing written.")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.passes, args.write = 1, 1, False
    machine = harness.machine()
    files = sorted(Path(args.data, "crawl").glob("*.wet.gz")) * args.passes
    if not files:
        sys.exit(f"no crawl files under {args.data}/crawl")
    expected = read_local(files)
    megabytes = len(expected) / 1e6
    policy = RemotePolicy(backoff_base=0.001, requests_per_second=0)
    with tempfile.TemporaryDirectory() as tmp:
        for f in set(files):
            shutil.copy(f, Path(tmp) / f.name)
        names = [f.name for f in files]
        times: dict[str, list[float]] = {"local files": [], "loopback, 0% faults": [],
                                         "loopback, 20% faults": []}
        with FaultServer(Path(tmp)) as clean, FaultServer(Path(tmp), random_rate=0.2, seed=1) as faulty:
            for _ in range(args.repeat):
                for label, read in (("local files", lambda: read_local(files)),
                                    ("loopback, 0% faults", lambda: read_remote(clean.url, names, policy)),
                                    ("loopback, 20% faults", lambda: read_remote(faulty.url, names, policy))):
                    start = time.perf_counter()
                    data = read()
                    times[label].append(time.perf_counter() - start)
                    assert data == expected, label
            retried = faulty.total - args.repeat * len(names)
    lines = [f"{len(files)} file reads ({len(set(files))} crawl files x {args.passes} passes), {megabytes:.1f} MB "
             f"compressed per measurement, {args.repeat} interleaved repeats ({retried} faulty responses "
             "retried in the 20% runs); bytes checked equal to the local files'; loopback server "
             "tests/faultserver.py on 127.0.0.1.", "",
             "| read | MB/s min | median | max | time vs local files, median (min-max) |",
             "|---|---:|---:|---:|---:|"]
    for label, seconds in times.items():
        rates = sorted(megabytes / s for s in seconds)
        ratio = harness.spread(harness.ratios(seconds, times["local files"])) + "x"
        lines.append(f"| {label} | {rates[0]:,.0f} | {statistics.median(rates):,.0f} | {rates[-1]:,.0f} | {ratio} |")
    harness.publish("remote", lines, args.write, machine)


if __name__ == "__main__":
    main()
