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

Run: .venv/bin/python benchmarks/bench_extract.py [--limit N] [--types]
Published WCXB dev F1: trafilatura 0.791, readability 0.675, best rule-based system 0.859.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c4forge.corpus.extract import decode_html, html_bytes, response_text
from c4forge.corpus.wet import iter_records, page_text

SHARED = ROOT.parent / "shared" / "data"
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
    return {"precision": sum(s[0] for s in scores) / n, "recall": sum(s[1] for s in scores) / n,
            "f1": sum(s[2] for s in scores) / n, "with": with_found / max(1, with_total),
            "without": without_avoided / max(1, without_total),
            "types": {k: sum(v) / len(v) for k, v in by_type.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warc", default=str(SHARED / "crawl-extra" / "wcxb-dev.warc.gz"))
    parser.add_argument("--truth", default=str(SHARED / "extraction" / "wcxb-dev.jsonl.gz"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--types", action="store_true", help="Also print F1 per page type.")
    args = parser.parse_args()
    with gzip.open(args.truth, "rt", encoding="utf-8") as handle:
        truth = {row["url"]: row for row in map(json.loads, handle)}
    records = [r for r in iter_records(args.warc) if r.type == "response"]
    records = [r for r in records if r.header("WARC-Target-URI") in truth][: args.limit]
    rows = [truth[r.header("WARC-Target-URI")] for r in records]
    html: list[Optional[str]] = []
    for r in records:  # the peers get the HTML as c4forge decodes it (decoding not timed)
        payload, charset = html_bytes(r.body, r.header, 64 << 20)
        html.append(decode_html(payload, charset)[0])
    print(f"{len(records)} WCXB dev pages ({Counter(t['page_type'] for t in rows).most_common()})")
    systems: dict[str, Callable[[int], str]] = {}
    for extractor in ("trafilatura", "resiliparse"):
        def ours(i: int, extractor=extractor) -> str:
            r = records[i]
            text = response_text(r.body, r.header("WARC-Target-URI"), r.header, extractor, 10.0, 4 << 20)
            return page_text(text or "", keep_metadata_like_lines=True)
        systems[f"c4forge --extractor {extractor} (record path)"] = ours
    for name, fn in peers().items():
        systems[name] = lambda i, fn=fn: fn(html[i], records[i].header("WARC-Target-URI"))
    results = {}
    for name, fn in systems.items():
        outputs, started = [], time.process_time()
        for i in range(len(records)):
            try:
                outputs.append(fn(i) or "")
            except Exception:  # noqa: BLE001 (a peer's crash on a page scores 0 there)
                outputs.append("")
        seconds = time.process_time() - started
        results[name] = evaluate(outputs, rows) | {"pages_per_s": len(records) / seconds}
        r = results[name]
        print(f"{name}: F1 {r['f1']:.3f}, {r['pages_per_s']:.1f} pages/s", flush=True)
    print()
    print("| system | F1 | precision | recall | `with` found | `without` avoided | pages/s (1 core) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['f1']:.3f} | {r['precision']:.3f} | {r['recall']:.3f} | {r['with']:.3f} | "
              f"{r['without']:.3f} | {r['pages_per_s']:.1f} |")
    if args.types:
        types = sorted({t for r in results.values() for t in r["types"]})
        print()
        print("| system | " + " | ".join(types) + " |")
        print("|---|" + "---:|" * len(types))
        for name, r in results.items():
            print(f"| {name} | " + " | ".join(f"{r['types'].get(t, 0):.3f}" for t in types) + " |")


if __name__ == "__main__":
    main()
