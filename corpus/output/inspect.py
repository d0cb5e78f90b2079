"""`corpus inspect`: what a corpus's rules did, to look at rather than read - one self-contained
HTML file (inline SVG charts and CSS, no script, no network) or text for a terminal.

One corpus: the page flow (pages and text bytes in and out of every step, from the manifest's
counters), every rule's removals, the kept documents per language and per domain, their length
histogram and near-duplicate cluster sizes. Two corpora (``corpus inspect A B``, e.g. C4 and
C4-unfiltered, or two extractors): the URLs one kept and the other did not, and, for the pages
both kept, the lines one removed shown in their page (a deterministic, hash-chosen sample),
which is what a rule does to real text.
"""
from __future__ import annotations

import dataclasses
import hashlib
import html
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Optional
from urllib.parse import urlsplit

from c4forge.corpus.dedup.near_dedup import doc_id
from c4forge.corpus.output.report import manifest_stats, rule_order
from c4forge.corpus.output.samples import DROP, GAP, NEAR, URL
from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest, read_rule_samples
from c4forge.corpus.text.urls import normalize_url

SPLITS = ("train", "validation")
LENGTH_BINS = (0, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
EXAMPLES = 12  # pages shown per comparison list
CONTEXT = 2  # kept lines shown around a removed run
SHOWN_SAMPLES = 3  # rule samples shown open per rule (the rest behind "more")


@dataclasses.dataclass
class CorpusView:
    """One corpus as the report shows it."""

    name: str
    stats: dict
    documents: int
    languages: Counter
    domains: Counter
    lengths: list[int]  # documents per LENGTH_BINS bin
    clusters: Counter  # near-duplicate cluster size -> documents
    samples: Optional[dict] = None  # the rule samples (corpus/output/samples.py), if the corpus has them
    kept_urls: dict = dataclasses.field(default_factory=dict)  # near samples' kept id -> url
    counters: dict = dataclasses.field(default_factory=dict)  # the manifest's

    @property
    def flow(self) -> dict[str, int]:
        return self.stats["page_flow"]


@dataclasses.dataclass
class RemovedLines:
    """A page both corpora kept, and the runs of lines the first removed from the second's text."""

    url: str
    lines: list[tuple[str, bool]]  # (line, removed) in the second corpus's order, with context


@dataclasses.dataclass
class Comparison:
    a: str
    b: str
    only_a: int
    only_b: int
    both: int
    only_a_examples: list[tuple[str, str]]  # (url, first line)
    only_b_examples: list[tuple[str, str]]
    changed: int  # pages both kept whose text differs
    removed_examples: list[RemovedLines]


def _documents(directory: str, columns: Iterable[str]) -> Iterator[dict]:
    for split in SPLITS:
        yield from iter_corpus_documents(directory, split, columns)


def _bin(length: int) -> int:
    for i, edge in enumerate(LENGTH_BINS[1:]):
        if length < edge:
            return i
    return len(LENGTH_BINS) - 1


def view(directory: str) -> CorpusView:
    """The manifest's statistics and one pass over the documents (language, URL, length)."""
    manifest = read_manifest(directory)
    samples = read_rule_samples(directory, manifest)
    wanted = {int(s["kept_id"]) for rule in (samples or {}).get("rules", ()) for s in rule["samples"]
              if s.get("kind") == NEAR}
    kept_urls: dict[int, str] = {}
    languages: Counter = Counter()
    domains: Counter = Counter()
    clusters: Counter = Counter()
    lengths = [0] * len(LENGTH_BINS)
    n = 0
    for doc in _documents(directory, ("url", "text", "language", "near_dup_cluster_size")):
        n += 1
        languages[doc.get("language") or "-"] += 1
        domains[(urlsplit(doc["url"]).hostname or "-").removeprefix("www.")] += 1
        lengths[_bin(len(doc["text"]))] += 1
        clusters[doc.get("near_dup_cluster_size") or 1] += 1
        if wanted and (doc.get("near_dup_cluster_size") or 1) > 1:
            node = doc_id(normalize_url(doc["url"]))
            if node in wanted:
                kept_urls[node] = doc["url"]
    return CorpusView(os.path.basename(os.path.normpath(directory)), manifest_stats(manifest), n,
                      languages, domains, lengths, clusters, samples, kept_urls,
                      manifest.get("counters") or {})


def sample_rules(v: CorpusView) -> list[dict]:
    """The sampled rules in chain order, each with its counter's total."""
    rules = [dict(rule, total=v.counters.get(rule["rule"], 0)) for rule in (v.samples or {}).get("rules", ())]
    chain = v.stats.get("chain") or ()
    return sorted(rules, key=lambda r: rule_order(r["rule"], chain))


def sample_note(sample: dict, kept_urls: dict) -> str:
    """One line on what a sample shows beyond its lines (the crawl or page kept instead)."""
    if sample["kind"] == URL:
        dropped = ", ".join(d["timestamp"] for d in sample["dropped"])
        return f"{sample['crawls']} crawls: kept the one of {sample['kept']['timestamp']}; dropped {dropped}"
    if sample["kind"] == NEAR:
        kept = kept_urls.get(int(sample["kept_id"]), f"document id {sample['kept_id']}")
        return f"a near-duplicate of {kept}, which was kept"
    if sample["kind"] == "lines":
        return f"{sample['removed']} line(s) of this page removed by this rule"
    return f"page of {sample['chars']:,} characters dropped"


def _rank(url: str) -> str:
    """The deterministic order examples are drawn in: a hash, not the crawl's order."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def _first_line(text: str, width: int = 120) -> str:
    line = text.split("\n", 1)[0]
    return line if len(line) <= width else line[:width - 1] + "…"


def _removed_runs(kept: list[str], full: list[str]) -> Optional[list[tuple[str, bool]]]:
    """``full``'s lines marked removed where ``kept`` lacks them, trimmed to the removed runs and
    CONTEXT lines around each (None when nothing was removed)."""
    remaining = Counter(kept)
    marks = []
    for line in full:
        if remaining[line] > 0:
            remaining[line] -= 1
            marks.append((line, False))
        else:
            marks.append((line, True))
    removed = [i for i, (_, gone) in enumerate(marks) if gone]
    if not removed:
        return None
    show = sorted({j for i in removed for j in range(max(0, i - CONTEXT), min(len(marks), i + CONTEXT + 1))})
    out: list[tuple[str, bool]] = []
    for prev, i in zip([None, *show], show):
        if prev is not None and i != prev + 1:
            out.append(("…", False))
        out.append(marks[i])
    return out


def compare(a_dir: str, b_dir: str) -> Comparison:
    """What ``a`` kept that ``b`` did not and the reverse (by normalised URL as stored), and for
    pages both kept, the lines ``a``'s rules removed from ``b``'s text."""
    a_docs = {d["url"]: d["text"] for d in _documents(a_dir, ("url", "text"))}
    only_b, both, changed, removed = [], 0, 0, []
    b_urls = set()
    for doc in _documents(b_dir, ("url", "text")):
        url, text = doc["url"], doc["text"]
        b_urls.add(url)
        if url not in a_docs:
            only_b.append((url, _first_line(text)))
            continue
        both += 1
        if a_docs[url] != text:
            changed += 1
            runs = _removed_runs(a_docs[url].split("\n"), text.split("\n"))
            if runs:
                removed.append(RemovedLines(url, runs))
    only_a = [(url, _first_line(text)) for url, text in a_docs.items() if url not in b_urls]
    pick = sorted(removed, key=lambda r: _rank(r.url))[:EXAMPLES]
    return Comparison(os.path.basename(os.path.normpath(a_dir)), os.path.basename(os.path.normpath(b_dir)),
                      len(only_a), len(only_b), both, sorted(only_a, key=lambda e: _rank(e[0]))[:EXAMPLES],
                      sorted(only_b, key=lambda e: _rank(e[0]))[:EXAMPLES], changed, pick)


# ------------------------------------------------------------------ text


def text_report(views: list[CorpusView], comparison: Optional[Comparison] = None) -> str:
    out = []
    for v in views:
        out += [f"== {v.name}: {v.documents:,} documents (preset {v.stats['preset']})",
                "pages: " + " -> ".join(f"{k} {n:,}" for k, n in v.flow.items())]
        out += [f"  {r['step']} {r['rule']}: {r['count']:,} {r['unit']}" for r in v.stats["removed"]]
        for rule in sample_rules(v):
            first = rule["samples"][0]
            out.append(f"  e.g. {rule['rule']}: {first['url']} ({sample_note(first, v.kept_urls)})")
            out += [("    - " if mark == DROP else "      ") + (line if mark != GAP else "…")
                    for line, mark in first.get("lines", [])[:8]]
        out.append("languages: " + ", ".join(f"{k} {n:,}" for k, n in v.languages.most_common(8)))
        out.append("domains: " + ", ".join(f"{k} {n:,}" for k, n in v.domains.most_common(8)))
        out.append("")
    if comparison:
        c = comparison
        out += [f"== {c.a} vs {c.b}: both kept {c.both:,} pages ({c.changed:,} with different text); "
                f"only {c.a} {c.only_a:,}; only {c.b} {c.only_b:,}"]
        for r in c.removed_examples[:4]:
            out.append(f"-- {r.url}")
            out += [("  - " if gone else "    ") + line for line, gone in r.lines]
    return "\n".join(out)


# ------------------------------------------------------------------ HTML

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.page{background:#fafafa;border:1px solid #e4e4e4;padding:.5em .8em;margin:.6em 0;font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap}
.gone{background:#ffd7d5;text-decoration:line-through;color:#7a1712}.url{color:#555;font-size:12px}
.sample{background:#fafafa;border:1px solid #e4e4e4;padding:.5em .8em;margin:.6em 0;font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap}
.note{color:#555;font:12px system-ui,sans-serif}h4{margin:1.2em 0 .2em}
.cols{display:flex;gap:2em;flex-wrap:wrap}.cols>div{flex:1;min-width:320px}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def bar_chart(rows: list[tuple[str, float]], title: str, unit: str = "", width: int = 640) -> str:
    """A horizontal bar chart as inline SVG (one bar per row, the value written beside it)."""
    if not rows:
        return ""
    top = max((v for _, v in rows), default=0) or 1
    label_w, bar_h, gap = 190, 18, 6
    height = len(rows) * (bar_h + gap) + 28
    parts = [f'<svg class="chart" role="img" aria-label="{_e(title)}" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg"><text x="0" y="14" font-size="13" font-weight="600">{_e(title)}</text>']
    for i, (label, value) in enumerate(rows):
        y = 24 + i * (bar_h + gap)
        w = max(1.0, (width - label_w - 90) * value / top) if value else 0
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" font-size="12" text-anchor="end">{_e(label)}</text>'
                     f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#4a7fb5"/>'
                     f'<text x="{label_w + w + 4:.1f}" y="{y + 13}" font-size="12">{value:,.0f}{_e(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(header: list[str], rows: list[list[object]], numeric: Iterable[int] = ()) -> str:
    numeric = set(numeric)
    head = "".join(f'<th class="{"n" if i in numeric else ""}">{_e(h)}</th>' for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td class="{"n" if i in numeric else ""}">'
                                    f'{_e(f"{c:,}" if isinstance(c, int) else c)}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _sample_html(sample: dict, kept_urls: dict) -> str:
    lines = "\n".join("…" if mark == GAP else (f'<span class="gone">{_e(line)}</span>' if mark == DROP else _e(line))
                      for line, mark in sample.get("lines", []))
    return (f'<div class="sample"><div class="url">{_e(sample["url"])}</div>'
            f'<div class="note">{_e(sample_note(sample, kept_urls))}</div>{lines}</div>')


def _samples_section(v: CorpusView) -> str:
    if not v.samples:
        return (f'<h3 id="samples-{_e(v.name)}">Examples of what each rule did</h3><p>This corpus has no rule '
                "samples (built with rule_samples.per_rule=0, or by a c4forge before them).</p>")
    parts = [f'<h3 id="samples-{_e(v.name)}">Examples of what each rule did</h3><p class="note">Up to {v.samples["per_rule"]} pages per '
             f'rule, from the {100 * v.samples["rate"]:g}% of pages chosen by a hash of their URL '
             f'(seed {v.samples["seed"]}; the corpus config\'s rule_samples). Struck out: what the rule removed.</p>']
    for rule in sample_rules(v):
        shown = "".join(_sample_html(s, v.kept_urls) for s in rule["samples"][:SHOWN_SAMPLES])
        more = rule["samples"][SHOWN_SAMPLES:]
        if more:
            shown += (f"<details><summary>{len(more)} more</summary>"
                      + "".join(_sample_html(s, v.kept_urls) for s in more) + "</details>")
        parts.append(f'<h4>{_e(rule["rule"])}: {rule["total"]:,} in all, {len(rule["samples"])} sampled</h4>{shown}')
    return "".join(parts)


def _corpus_section(v: CorpusView) -> str:
    stats = v.stats
    flow = bar_chart(list(v.flow.items()), "Pages into each step")
    text_mb = bar_chart([(s["step"], s["bytes_out"] / 1e6) for s in stats["bytes_per_step"]],
                        "Text kept by each step (MB)", " MB")
    removed = sorted(stats["removed"], key=lambda r: -r["count"])
    rules = _table(["step", "rule", "removed", "unit"], [[r["step"], r["rule"], r["count"], r["unit"]] for r in removed],
                   numeric=[2])
    shares = _table(["step", "text MB in", "text MB out", "removed"],
                    [[s["step"], f"{s['bytes_in'] / 1e6:.2f}", f"{s['bytes_out'] / 1e6:.2f}",
                      f"{100 * s['removed_share']:.1f}%"] for s in stats["bytes_per_step"]], numeric=[1, 2, 3])
    labels = [f"< {LENGTH_BINS[i + 1]:,}" if i + 1 < len(LENGTH_BINS) else f">= {LENGTH_BINS[-1]:,}"
              for i in range(len(LENGTH_BINS))]
    lengths = bar_chart([(f"{lab} chars", n) for lab, n in zip(labels, v.lengths)], "Kept documents by length")
    clusters = _table(["near-duplicate cluster size", "documents"], [[k, n] for k, n in sorted(v.clusters.items())],
                      numeric=[0, 1])
    return (f'<section class="corpus"><h2>{_e(v.name)}: {v.documents:,} documents, preset {_e(stats["preset"])}</h2>'
            f"{flow}{text_mb}<h3>What each rule removed</h3>{rules}{shares}{_samples_section(v)}"
            f'<div class="cols"><div><h3>Languages</h3>'
            f'{_table(["language", "documents"], [[k, n] for k, n in v.languages.most_common(15)], numeric=[1])}</div>'
            f'<div><h3>Domains</h3>'
            f'{_table(["domain", "documents"], [[k, n] for k, n in v.domains.most_common(20)], numeric=[1])}</div></div>'
            f"{lengths}<h3>Near-duplicate clusters</h3>{clusters}</section>")


def _comparison_section(c: Comparison) -> str:
    def listing(rows: list[tuple[str, str]]) -> str:
        if not rows:
            return "<p>none</p>"
        return "".join(f'<div class="page"><div class="url">{_e(u)}</div>{_e(line)}</div>' for u, line in rows)

    pages = "".join(
        f'<div class="page"><div class="url">{_e(r.url)}</div>'
        + "\n".join(f'<span class="gone">{_e(line)}</span>' if gone else _e(line) for line, gone in r.lines)
        + "</div>" for r in c.removed_examples)
    overlap = bar_chart([(f"only {c.a}", c.only_a), ("both", c.both), (f"only {c.b}", c.only_b)],
                        f"Pages kept: {c.a} vs {c.b}")
    return (f'<section class="comparison"><h2>{_e(c.a)} vs {_e(c.b)}</h2>{overlap}'
            f"<p>Both kept {c.both:,} pages; {c.changed:,} of them with different text. Lines "
            f"<span class=\"gone\">struck out</span> are in {_e(c.b)}'s page and not in {_e(c.a)}'s: "
            f"what {_e(c.a)}'s rules removed, in context ({len(c.removed_examples)} pages chosen by a hash of the URL).</p>"
            f"{pages}<div class=\"cols\"><div><h3>Only in {_e(c.a)} ({c.only_a:,})</h3>{listing(c.only_a_examples)}</div>"
            f"<div><h3>Only in {_e(c.b)} ({c.only_b:,})</h3>{listing(c.only_b_examples)}</div></div></section>")


def html_report(views: list[CorpusView], comparison: Optional[Comparison] = None) -> str:
    title = " vs ".join(v.name for v in views)
    body = "".join(_corpus_section(v) for v in views)
    if comparison:
        body = _comparison_section(comparison) + body
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>corpus inspect: {_e(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>corpus inspect: {_e(title)}</h1>{body}</body></html>\n")


def inspect(directories: list[str]) -> tuple[list[CorpusView], Optional[Comparison]]:
    if not 1 <= len(directories) <= 2:
        raise ValueError("corpus inspect takes one corpus, or two to compare")
    views = [view(d) for d in directories]
    return views, (compare(*directories) if len(directories) == 2 else None)

