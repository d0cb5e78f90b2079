"""Reading crawl files: c4forge's WARC/WET reader vs FastWARC (Resiliparse's reader, the fastest
one Python can call), on the same files, interleaved repeats.

Both sides do the same work: decompress every gzip member, parse every record's headers and read
its whole body (c4forge yields :class:`WarcRecord` with the body as bytes; FastWARC's
ArchiveIterator with ``record.reader.read()``), counting records and body bytes, which must
agree. CPU seconds of one core; ratios per repeat, median (min-max).

What the numbers decide: c4forge's reader keeps the reliability properties the tests check -
resync after a corrupt record or gzip member, every fault a counted skip, remote reading with
resume (corpus/read/remote.py) - so a switch to FastWARC pays only if reading is a large share of a
build and FastWARC keeps those properties; the section below states the ratio and the share.

Run: python benchmarks/bench_reader.py [--repeats 5] [--write] [--quick]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness

from c4forge.corpus.read.records import iter_records

SHARED = harness.SHARED
FILES = {"WET, 3,519 pages (crawl-extra/web-benchmarks.warc.wet.gz)": SHARED / "crawl-extra" / "web-benchmarks.warc.wet.gz",
         "WARC, 1,476 HTML responses (crawl-extra/wcxb-dev.warc.gz)": SHARED / "crawl-extra" / "wcxb-dev.warc.gz"}


def ours(path: Path):
    def run():
        n = size = 0
        for record in iter_records(str(path)):
            n += 1
            size += len(record.body)
        return n, size
    return run


def fastwarc(path: Path):
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    def run():
        n = size = 0
        for record in ArchiveIterator(str(path), record_types=WarcRecordType.any_type,
                                      parse_http=False, fsspec_args=False):
            n += 1
            size += len(record.reader.read())
        return n, size
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--quick", action="store_true", help="One repeat of the WET file, nothing written.")
    args = parser.parse_args()
    files = dict(FILES)
    if args.quick:
        files, args.repeats, args.write = dict(list(files.items())[:1]), 1, False
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        print(f"bench_reader: {missing[0]} not found (../shared/data is needed)", file=sys.stderr)
        return 2
    machine = harness.machine()
    lines = [f"CPU seconds of one core, {args.repeats} interleaved repeats; median (min-max).", "",
             "| file | records | MB of bodies | c4forge MB/s | FastWARC MB/s | FastWARC x c4forge |",
             "|---|---:|---:|---:|---:|---:|"]
    for label, path in files.items():
        results, cpu, _ = harness.interleave({"ours": ours(path), "fastwarc": fastwarc(path)}, args.repeats)
        if results["ours"] != results["fastwarc"]:
            print(f"{label}: the readers disagree: {results}", file=sys.stderr)
            return 1
        n, size = results["ours"]
        mb = size / 1e6
        lines.append(f"| {label} | {n:,} | {mb:.1f} | {harness.spread([mb / t for t in cpu['ours']], '{:.0f}')} | "
                     f"{harness.spread([mb / t for t in cpu['fastwarc']], '{:.0f}')} | "
                     f"{harness.spread(harness.ratios(cpu['ours'], cpu['fastwarc']))}x |")
    harness.publish("reader", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
