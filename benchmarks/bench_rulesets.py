"""Today's rule sets: CPU per page of each filter of c4forge beside datatrove 0.10's same filter,
on the same real pages, with the same settings (datatrove's defaults; FineWeb's for C4's rules).

Both run in .venv-peers (datatrove needs a dill that Beam forbids; c4forge is installed there
without Beam), on one interpreter and one spaCy, each (system, filter) in a fresh process that
loads the pages, applies the filter to one page untimed (spaCy loaded, lists read), then times
the filter over every page (CPU seconds of the process). Systems and filters are interleaved in a
seeded order, several repeats; min/median/max per page. The verdicts are the same (checked on
every page by tests/test_quality.py); the URL filter uses the lists the tests ship.

Run: .venv-bench/bin/python benchmarks/bench_rulesets.py [--repeats 3] [--write]
     (`make peers` makes .venv-peers; `--quick`: 200 pages, one repeat, nothing written)
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402 - the benchmarks' shared helpers, beside this file

FILTERS = ("gopher_quality", "gopher_repetition", "fineweb_quality", "c4_quality", "url_filter", "pii")
LISTS = ROOT / "tests" / "data" / "url-lists"

WORKER = r'''
import json, sys, time
system, name, pages_path, lists = sys.argv[1:5]
pages = [json.loads(line) for line in open(pages_path, encoding="utf-8")]
if system == "c4forge":
    from c4forge.corpus.document import Document
    from c4forge.corpus.steps.pii import format_pii
    from c4forge.corpus.steps import c4_quality, fineweb_quality, gopher_quality, gopher_repetition
    from c4forge.corpus.steps.url_filter import UrlBlocklist, load_lists
    docs = [Document(url=p["url"], text=p["text"]) for p in pages]
    step = {
        "gopher_quality": lambda d, r=gopher_quality.GopherQuality(): gopher_quality.gopher_quality(r, d),
        "gopher_repetition": lambda d, r=gopher_repetition.GopherRepetition(): gopher_repetition.gopher_repetition(r, d),
        "fineweb_quality": lambda d, r=fineweb_quality.FineWebQuality(): fineweb_quality.fineweb_quality(r, d),
        "c4_quality": lambda d, r=c4_quality.C4Quality(): c4_quality.c4_quality(r, d),
        "pii": format_pii,
    }.get(name)
    if name == "url_filter":
        block = UrlBlocklist(load_lists(lists))
        step = block
    run = lambda d: step(d)
else:
    from datatrove.data import Document
    from datatrove.pipeline import filters
    from datatrove.pipeline.formatters import PIIFormatter
    from tldextract import TLDExtract
    docs = [Document(text=p["text"], id=str(i), metadata={"url": p["url"]}) for i, p in enumerate(pages)]
    lines = lambda f: open(f"{lists}/{f}", encoding="utf-8").readlines()
    if name == "url_filter":
        step = filters.URLFilter(extra_domains=lines("domains"), extra_urls=lines("urls"),
                                 banned_words=lines("banned_words.txt"),
                                 banned_subwords=lines("banned_subwords.txt"),
                                 soft_banned_words=lines("soft_banned_words.txt"), use_integrated_lists=False)
        step.tldextractor = TLDExtract(suffix_list_urls=(), cache_dir=None)
    elif name == "pii":
        step = PIIFormatter()
    else:
        step = {"gopher_quality": filters.GopherQualityFilter, "gopher_repetition": filters.GopherRepetitionFilter,
                "fineweb_quality": filters.FineWebQualityFilter,
                "c4_quality": lambda: filters.C4QualityFilter(filter_no_terminal_punct=False)}[name]()
    if name == "pii":
        run = lambda d: step.format(d.text)
    else:
        run = lambda d: step.filter(Document(text=d.text, id=d.id, metadata=d.metadata))
run(docs[0])  # untimed: models, lists and tables loaded
started = time.process_time()
for d in docs:
    run(d)
print(json.dumps({"cpu": time.process_time() - started, "pages": len(docs)}))
'''


def measure(system: str, name: str, pages_path: str) -> float:
    out = subprocess.run([harness.peers_python(), "-c", WORKER, system, name, pages_path, str(LISTS)],
                         capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])["cpu"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", type=Path, default=harness.SHARED / "crawl")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if not harness.peer_importable("datatrove"):
        print("datatrove is not in .venv-peers: make peers", file=sys.stderr)
        return 2
    machine = harness.machine()
    sys.path.insert(0, str(ROOT))
    from c4forge.corpus.read.wet import iter_crawl_documents

    pages = [page for path in sorted(args.crawl.glob("*.wet.gz")) for page in iter_crawl_documents(str(path))]
    if args.quick:
        pages, args.repeats, args.write = pages[:200], 1, False
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        pages_path = f"{tmp}/pages.jsonl"
        with open(pages_path, "w", encoding="utf-8") as handle:
            for page in pages:
                handle.write(json.dumps({"url": page.url, "text": page.text}) + "\n")
        runs = [(system, name) for name in FILTERS for system in ("c4forge", "datatrove")]
        for repeat in range(args.repeats):
            for system, name in random.Random(repeat).sample(runs, len(runs)) if repeat else runs:
                cpu.setdefault((system, name), []).append(measure(system, name, pages_path))
                print(f"repeat {repeat}: {system} {name} {cpu[(system, name)][-1]:.2f} s", flush=True)
    chars = sum(len(page.text) for page in pages)
    lines = [f"Input: the {len(pages):,} pages of {harness.SHARED.name}/{args.crawl.name} "
             f"({chars / 1e6:.1f}M characters); {args.repeats} repeat(s), systems and filters "
             "interleaved; CPU ms per page, median (min-max); ratio per repeat.", "",
             "| filter | c4forge ms/page | datatrove ms/page | c4forge / datatrove |",
             "|---|---:|---:|---:|"]
    for name in FILTERS:
        ours, theirs = cpu[("c4forge", name)], cpu[("datatrove", name)]
        per_page = [1000 * c / len(pages) for c in ours], [1000 * c / len(pages) for c in theirs]
        lines.append(f"| {name} | {harness.spread(per_page[0], '{:.3f}')} | "
                     f"{harness.spread(per_page[1], '{:.3f}')} | "
                     f"{harness.spread(harness.ratios(ours, theirs))}x |")
    harness.publish("rulesets", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
