"""HTML main-text extraction on the WCXB development pages, side by side in one run: c4forge's
WARC path (as `corpus build --input-format warc` calls it: HTTP checks, charset decoding,
extraction, the WET-style line cleanup) with each of its extractors, against trafilatura with
its defaults and with FineWeb's settings (datatrove: favor_precision, no comments, dedup),
resiliparse `extract_plain_text(main_content=True)`, readability-lxml and jusText.

Metrics as WCXB defines them: word-level precision / recall / F1 over the bag of lowercased
`\\w+` tokens of the extracted text against the human-reviewed main content (averaged over
pages; an empty extraction scores 0), the share of `with` snippets found and of `without`
snippets (boilerplate) avoided (lowercased, whitespace-normalised substring match), overall and
per page type, and pages per second on one core (extraction only for the peers, which get the
HTML as c4forge decodes it; the whole record path for c4forge).

The cascade's router is fitted on the *tune* half of the pages (a fixed hash of ``file_id``:
:func:`is_tune_page`) by scripts/train_extract_router.py; this benchmark reports on the other,
*held-out* half by default, with a paired bootstrap 95% CI of each system's F1 difference to
c4forge's trafilatura path. Pages/s ratios come from interleaved repeats (harness.py).

Run: .venv/bin/python benchmarks/bench_extract.py [--repeats 3] [--split heldout|tune|all]
[--peers] [--write] (``--write`` regenerates its section of RESULTS.md; ``--quick``: 20 pages,
one repeat, nothing written - the smoke test in make test)
Published WCXB dev F1: trafilatura 0.791, readability 0.675, best rule-based system 0.859.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness

from c4forge.core.counters import Counters, null_inc
from c4forge.corpus.extract.html import OPTIONAL, decode_html, html_bytes, missing_extractor, response_text
from c4forge.corpus.read.records import iter_records
from c4forge.corpus.read.wet import page_text

SHARED = harness.SHARED
WORD = re.compile(r"\w+")
SPACE = re.compile(r"\s+")


def words(text: str) -> Counter:
    return Counter(WORD.findall(text.lower()))


def prf(predicted: str, truth: str):
    p, t = words(predicted), words(truth)
    overlap = sum((p & t).values())
    if not p or not t or not overlap:
        return 0.0, 0.0, 0.0
    precision, recall = overlap / sum(p.values()), overlap / sum(t.values())
    return precision, recall, 2 * precision * recall / (precision + recall)


def norm(text: str) -> str:
    return SPACE.sub(" ", text.lower()).strip()


def peers() -> dict[str, Callable[[str, str], str]]:
    out: dict[str, Callable[[str, str], str]] = {}
    import trafilatura

    out["trafilatura (defaults)"] = lambda html, url: trafilatura.extract(html, url=url) or ""
    out["trafilatura (FineWeb: datatrove settings)"] = lambda html, url: trafilatura.extract(
        html, url=url, favor_precision=True, include_comments=False, deduplicate=True,
        include_images=False) or ""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    out["resiliparse (main_content=True)"] = lambda html, url: extract_plain_text(
        HTMLTree.parse(html), main_content=True)
    try:
        import lxml.html
        from readability import Document as Readability

        def readability(html, url):
            summary = Readability(html).summary(html_partial=True)
            return lxml.html.fromstring(summary).text_content() if summary else ""

        out["readability-lxml"] = readability
    except ImportError:
        print("readability-lxml not installed: row skipped (pip install readability-lxml)")
    try:
        import justext

        def jus(html, url):
            paragraphs = justext.justext(html.encode("utf-8"), justext.get_stoplist("English"))
            return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)

        out["jusText (English stoplist)"] = jus
    except ImportError:
        print("jusText not installed: row skipped")
    return out


def evaluate(outputs: list[str], truth: list[dict]) -> dict[str, object]:
    scores = [prf(o, t["main_content"]) for o, t in zip(outputs, truth)]
    by_type = defaultdict(list)
    with_found, with_total, without_avoided, without_total = 0, 0, 0, 0
    for (_, _, f), o, t in zip(scores, outputs, truth):
        by_type[t["page_type"]].append(f)
        text = norm(o)
        for snippet in t.get("with") or []:
            with_total += 1
            with_found += norm(snippet) in text
        for snippet in t.get("without") or []:
            without_total += 1
            without_avoided += norm(snippet) not in text
    n = max(1, len(scores))
    return {"page_f1": [s[2] for s in scores], "precision": sum(s[0] for s in scores) / n, "recall": sum(s[1] for s in scores) / n,
            "f1": sum(s[2] for s in scores) / n, "with": with_found / max(1, with_total),
            "without": without_avoided / max(1, without_total),
            "types": {k: sum(v) / len(v) for k, v in by_type.items()}}


def is_tune_page(file_id: str) -> bool:
    """The router's training half: a fixed hash of the WCXB file id (about half the pages)."""
    return hashlib.sha1(file_id.encode("utf-8")).digest()[0] % 2 == 0


def load_dev_pages(warc: str, truth_path: str, split: str = "heldout", limit: Optional[int] = None):
    """(records, truth rows, decoded HTML) of the WCXB dev pages in ``split`` (heldout, tune,
    all). HTML is decoded as c4forge's record path decodes it."""
    with gzip.open(truth_path, "rt", encoding="utf-8") as handle:
        truth = {row["url"]: row for row in map(json.loads, handle)}
    keep = {"all": lambda row: True, "tune": lambda row: is_tune_page(row["file_id"]),
            "heldout": lambda row: not is_tune_page(row["file_id"])}[split]
    records = [r for r in iter_records(warc) if r.type == "response"]
    records = [r for r in records if r.header("WARC-Target-URI") in truth
               and keep(truth[r.header("WARC-Target-URI")])][:limit]
    rows = [truth[r.header("WARC-Target-URI")] for r in records]
    html = []
    for r in records:
        payload, charset = html_bytes(r.body, r.header, 64 << 20)
        html.append(decode_html(payload, charset)[0])
    return records, rows, html


def paired_bootstrap(a: list[float], b: list[float], rounds: int = 10_000, seed: int = 0) \
        -> tuple[float, float, float]:
    """Mean of ``a - b`` over pages and its percentile-bootstrap 95% CI (pages resampled with
    replacement, both systems scored on the same resampled pages)."""
    import numpy as np

    diff = np.asarray(a, float) - np.asarray(b, float)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(rounds, len(diff)))].mean(axis=1)
    return float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def record_path(records, extractor: str, counters: Optional[Counters] = None) -> Callable[[], list[str]]:
    """All pages through c4forge's record path with one extractor."""
    inc = counters.inc_fn("split-wet-file") if counters is not None else null_inc

    def run() -> list[str]:
        out = []
        for r in records:
            text = response_text(r.body, r.header("WARC-Target-URI"), r.header, extractor, 10.0,
                                 4 << 20, inc)
            out.append(page_text(text or "", keep_metadata_like_lines=True))
        return out
    return run


def peer_pass(fn, html, records) -> Callable[[], list[str]]:
    def run() -> list[str]:
        out = []
        for page, r in zip(html, records):
            try:
                out.append(fn(page, r.header("WARC-Target-URI")) or "")
            except Exception:  # noqa: BLE001 (a peer's crash on a page scores 0 there)
                out.append("")
        return out
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warc", default=str(SHARED / "crawl-extra" / "wcxb-dev.warc.gz"))
    parser.add_argument("--truth", default=str(SHARED / "extraction" / "wcxb-dev.jsonl.gz"))
    parser.add_argument("--split", choices=("heldout", "tune", "all"), default="heldout")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peers", action="store_true", help="Also the peers (one pass each).")
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="20 pages, 1 repeat, nothing written.")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.repeats, args.write = 20, 1, False
    if not Path(args.warc).exists():
        sys.exit(f"bench_extract: {args.warc} not found (../shared/data is needed)")
    machine = harness.machine()
    records, rows, html = load_dev_pages(args.warc, args.truth, args.split, args.limit)
    print(f"{len(records)} WCXB dev pages, {args.split} half "
          f"({Counter(t['page_type'] for t in rows).most_common()})", flush=True)
    names = ["trafilatura", "resiliparse", "cascade"]
    names += [name for name in OPTIONAL if missing_extractor(name) is None]  # rs-trafilatura, if built
    counters = {name: Counters() for name in names}
    ours = {name: record_path(records, name, counters[name]) for name in names}
    outputs, cpu, _ = harness.interleave(ours, args.repeats)
    routed = counters["cascade"]["split-wet-file/extract:routed_slow"] / args.repeats
    routed_rs = (counters["cascade-rs"]["split-wet-file/extract:routed_slow"] / args.repeats
                 if "cascade-rs" in counters else None)
    results = {f"c4forge --extractor {name}": evaluate(outputs[name], rows) | {
        "pages_per_s": [len(records) / s for s in cpu[name]],
        "failed": sum(counters[name][f"split-wet-file/skipped:{reason}"]
                      for reason in ("extract_error", "extract_timeout")) / args.repeats,
        "speedup": harness.ratios(cpu["trafilatura"], cpu[name])} for name in ours}
    if args.peers:
        for name, fn in peers().items():
            out, seconds, _ = harness.timed(peer_pass(fn, html, records))
            results[name] = evaluate(out, rows) | {"pages_per_s": [len(records) / seconds]}
    reference = results["c4forge --extractor trafilatura"]["page_f1"]
    lines = [f"{len(records)} pages ({args.split} half{'' if args.split != 'heldout' else ': the router never saw them'}); "
             f"{args.repeats} interleaved repeats, one core, CPU time. The cascade sent "
             f"{routed:.0f} pages ({routed / max(1, len(records)):.1%}) to trafilatura"
             + (f"; cascade-rs (resiliparse, rs-trafilatura on the pages its own router picks, fitted on "
                f"the tune half) sent {routed_rs:.0f} ({routed_rs / max(1, len(records)):.1%}) to "
                "rs-trafilatura" if routed_rs is not None else "") + ".", "",
             "| system | F1 | F1 - trafilatura [95% CI] | precision | recall | `with` found | "
             "`without` avoided | pages/s | x trafilatura's speed | failed or timed out (10 s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        diff, lo, hi = paired_bootstrap(r["page_f1"], reference)
        ci = "-" if r["page_f1"] is reference else f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"
        speed = harness.spread(r["speedup"]) + "x" if "speedup" in r else "-"
        failed = f"{r['failed']:.0f}" if "failed" in r else "-"
        lines.append(f"| {name} | {r['f1']:.4f} | {ci} | {r['precision']:.3f} | {r['recall']:.3f} | "
                     f"{r['with']:.3f} | {r['without']:.3f} | {harness.spread(r['pages_per_s'], '{:.1f}')} | "
                     f"{speed} | {failed} |")
    types = sorted({t for r in results.values() for t in r["types"]})
    counts = Counter(t["page_type"] for t in rows)
    lines += ["", "F1 per page type (pages in the split):", "",
              "| system | " + " | ".join(f"{t} ({counts[t]})" for t in types) + " |",
              "|---|" + "---:|" * len(types)]
    for name, r in results.items():
        lines.append(f"| {name} | " + " | ".join(f"{r['types'].get(t, 0):.3f}" for t in types) + " |")
    harness.publish(f"extract-{args.split}", lines, args.write, machine)


if __name__ == "__main__":
    main()
