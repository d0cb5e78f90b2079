"""Where the cascades' routers send pages (issue 39): the share each router sends to its slow
extractor, per WCXB page type on the dev pages (the tune half its coefficients were fitted on
and the held-out half they never saw), and on web pages from other sources that neither
router nor its signal choice ever saw: the HTML behind crawl-extra's WET pages (Dragnet,
L3S-GN1 news, CleanPortalEval) and the CleanEval sets, from the public merge
j-szulc/html-cleaning-dataset-merged (``--unfamiliar DIR``: a checkout of it, e.g.
``git clone https://github.com/j-szulc/html-cleaning-dataset-merged``; not in the repository
and not in ../shared/data; those rows are left out, and the table says so, without it).

A cascade's speed is set by that share: each page pays the fast pass and the router, and the
routed pages pay the slow extractor too. Beside each share, the speed it implies against
trafilatura, from the per-page CPU of the held-out extraction benchmark (RESULTS.md section
extract-heldout, given below as ``--ms``), and the share with ``read.max_slow_share`` at 0.10
(corpus/extract/html.py SlowBudget: by the n-th page of a file, at most ceil(0.1 n) sent slow; here
each source is one file in name order).

The shares need only the routers (resiliparse's parse and the page signals). What the budget
costs in accuracy is measured too: each cascade's F1 on the held-out WCXB pages with and without
it (c4forge's record path, one budget over the WCXB WARC in file order, as `corpus build` reads
it), beside trafilatura's, overall and for the page type furthest below trafilatura. About
five minutes.

Run: .venv/bin/python benchmarks/bench_route.py [--unfamiliar DIR] [--write] (``--quick``: the
first 40 WCXB pages, nothing written; make bench passes ``--unfamiliar
../html-cleaning-dataset-merged``, a checkout beside the repository)
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402
from bench_extract import evaluate, is_tune_page, load_dev_pages, paired_bootstrap  # noqa: E402

from c4forge.corpus.extract.html import (  # noqa: E402
    SLOW_OF,
    SlowBudget,
    decode_html,
    extract_response,
    fast_pass,
    router,  # noqa: E402
)
from c4forge.corpus.read.wet import page_text  # noqa: E402

SOURCES = {"dragnet_data": "Dragnet", "page-signal-master": "L3S-GN1 (Google News)",
           "CleanPortalEval-master": "CleanPortalEval", "cleaneval-final": "CleanEval final",
           "cleaneval-dev": "CleanEval dev"}
# per-page CPU milliseconds on one core, held-out WCXB pages (RESULTS.md extract-heldout, 2026-11-26)
DEFAULT_MS = {"trafilatura": 1000 / 9.5, "resiliparse": 1000 / 133.1, "rs-trafilatura": 1000 / 18.9}
BUDGET = 0.10


def decisions(pages: list[tuple[str, str]]) -> dict[str, list[bool]]:
    """Per cascade, whether its router sends each (html, url) page slow."""
    out: dict[str, list[bool]] = {name: [] for name in SLOW_OF}
    for html, url in pages:
        fast, full, title = fast_pass(html)
        signals = router.page_signals(html, url, title, fast, full)
        for name, slow in SLOW_OF.items():
            out[name].append(router.load_router(slow).sends_slow(signals))
    return out


def with_budget(sent: list[bool], share: float = BUDGET) -> list[bool]:
    """Which pages go slow when a SlowBudget of ``share`` sees these decisions in file order."""
    budget, out = SlowBudget(share), []
    for wants in sent:
        budget.seen()
        out.append(wants and budget.allows())
    return out


def implied_speed(share: float, slow: str, ms: dict[str, float]) -> float:
    """trafilatura's per-page time over the cascade's: fast pass on every page, slow on ``share``."""
    return ms["trafilatura"] / (ms["resiliparse"] + share * ms[slow])


def extracted(records, extractor: str, share: float | None) -> list[str]:
    """Every record through c4forge's record path (as bench_extract's), one budget of ``share``
    over them in order (None: no budget)."""
    budget = SlowBudget(share) if share is not None else None
    out = []
    for r in records:
        got = extract_response(r.body, r.header("WARC-Target-URI"), r.header, extractor, 10.0, 4 << 20,
                               budget=budget)
        out.append(page_text(got.text if got else "", keep_metadata_like_lines=True))
    return out


def accuracy_lines(records, rows) -> list[str]:
    """F1 on the held-out half: trafilatura, each cascade without and with the budget."""
    held = [i for i, row in enumerate(rows) if not is_tune_page(row["file_id"])]
    truth = [rows[i] for i in held]

    def score(extractor: str, share: float | None) -> dict:
        outputs = extracted(records, extractor, share)
        return evaluate([outputs[i] for i in held], truth)

    base = score("trafilatura", None)
    lines = ["", f"F1 on the {len(held)} held-out WCXB pages (c4forge's record path; paired bootstrap 95% CI "
             "of the difference to trafilatura):", "",
             "| system | F1 | - trafilatura [95% CI] | page type furthest below trafilatura |",
             "|---|---:|---:|---|", f"| trafilatura | {base['f1']:.4f} | - | - |"]
    for name in SLOW_OF:
        for share in (None, BUDGET):
            got = score(name, share)
            diff, low, high = paired_bootstrap(got["page_f1"], base["page_f1"])
            worst = min(got["types"], key=lambda t: got["types"][t] - base["types"][t])
            label = f"{name}" + (f", max_slow_share={share}" if share is not None else "")
            lines.append(f"| {label} | {got['f1']:.4f} | {diff:+.4f} [{low:+.4f}, {high:+.4f}] | "
                         f"{worst} {got['types'][worst] - base['types'][worst]:+.3f} |")
    return lines


def unfamiliar_pages(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """HTML pages per source of the merged cleaning data sets (file order), URLs as crawl-extra's
    WET file names them (``https://<set>.invalid/<file>``)."""
    out = {}
    for source in SOURCES:
        files = sorted((folder / source / "input").glob("*"))
        pages = []
        for path in files:
            if path.is_file() and not path.name.startswith("."):
                html, _ = decode_html(path.read_bytes(), "")
                pages.append((html, f"https://{source}.invalid/{path.name}"))
        if pages:
            out[source] = pages
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unfamiliar", type=Path, default=None,
                        help="a checkout of j-szulc/html-cleaning-dataset-merged")
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="40 WCXB pages, nothing written.")
    args = parser.parse_args()
    if args.quick:
        args.write, args.unfamiliar = False, None
    machine = harness.machine()
    records, rows, html = load_dev_pages(str(harness.SHARED / "crawl-extra" / "wcxb-dev.warc.gz"),
                                         str(harness.SHARED / "extraction" / "wcxb-dev.jsonl.gz"), "all",
                                         limit=40 if args.quick else None)
    urls = [r.header("WARC-Target-URI") for r in records]
    sent = decisions(list(zip(html, urls)))  # the WCXB WARC is one file: one budget over it
    budgeted = {name: with_budget(flags) for name, flags in sent.items()}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        half = "tune" if is_tune_page(row["file_id"]) else "held-out"
        groups[f"WCXB dev {half}: all"].append(i)
        groups[f"WCXB dev {half}: {row['page_type']}"].append(i)
    table = [(name, {c: ([sent[c][i] for i in groups[name]], [budgeted[c][i] for i in groups[name]])
                     for c in SLOW_OF}) for name in sorted(groups)]
    note = ""
    if args.unfamiliar and (args.unfamiliar / "dragnet_data").is_dir():
        for source, pages in unfamiliar_pages(args.unfamiliar).items():
            flags = decisions(pages)
            table.append((f"{SOURCES[source]} (unseen)",
                          {c: (flags[c], with_budget(flags[c])) for c in SLOW_OF}))
    else:
        note = ("Pages from other sources left out: no checkout of j-szulc/html-cleaning-dataset-merged "
                "given (--unfamiliar).")
    ms = DEFAULT_MS
    lines = ["Share of pages each router sends to its slow extractor (cascade: trafilatura; cascade-rs: "
             "rs-trafilatura); implied speed = trafilatura's per-page CPU over the cascade's (resiliparse "
             f"{ms['resiliparse']:.1f} ms on every page, the slow extractor on the share sent: "
             f"trafilatura {ms['trafilatura']:.0f} ms, rs-trafilatura {ms['rs-trafilatura']:.0f} ms; "
             f"held-out WCXB, RESULTS.md extract-heldout); budget: `read.max_slow_share={BUDGET}`.", "",
             "| pages | n | cascade slow | implied speed | with budget | cascade-rs slow | implied speed | with budget |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, by_cascade in table:
        cells = []
        for cascade_name, slow in SLOW_OF.items():
            flags, allowed = by_cascade[cascade_name]
            share, kept = sum(flags) / len(flags), sum(allowed) / len(allowed)
            cells += [f"{100 * share:.1f}%", f"{implied_speed(share, slow, ms):.1f}x",
                      f"{100 * kept:.1f}% ({implied_speed(kept, slow, ms):.1f}x)"]
        lines.append(f"| {name} | {len(by_cascade['cascade'][0]):,} | " + " | ".join(cells) + " |")
    if note:
        lines += ["", note]
    if not args.quick:
        lines += accuracy_lines(records, rows)
    harness.publish("route", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
