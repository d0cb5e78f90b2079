"""Samples of what every rule did, recorded while the chain runs: for each rule (a counter such
as ``clean-page/line-filtered:no_endmark`` or ``duplicate-url-filter/filtered``), up to
``per_rule`` pages it acted on, each with the text it removed shown among the lines around it,
or, for the dedup steps, the page that was kept instead. ``corpus inspect`` shows them.

Why it costs little and agrees everywhere:

- **Which pages**: a page is traced when a seeded hash of its normalised URL falls below
  ``rate`` (:func:`page_key`): the same pages on every engine, whatever the order or the
  bundles. Only traced pages pay for the explanation (which lines, which reason), so the cost
  is about ``rate`` times a second pass over the page rules' line loops.
- **Which samples**: per rule, the ``per_rule`` samples with the smallest (key, URL, detail)
  order (:class:`Reservoir`). The smallest K of a union is the smallest K of the parts' smallest
  K, so workers keep their own reservoirs per bundle and the launcher merges them: the result
  is a function of the set of events alone, byte-identical between ``corpus clean`` and
  ``corpus build`` on any engine (tests/test_rule_samples.py). A retried bundle repeats the
  same events; equal samples merge into one.

The file (``_rule-samples.json`` beside the shards, listed in the manifest) is described in
docs/formats.md ("Rule samples").
"""
from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Optional, Protocol

from c4forge.core.settings import NON_NEGATIVE_INT, UNIT_INTERVAL, setting
from c4forge.corpus.document import Document

FILE = "_rule-samples.json"
FORMAT = "c4forge-rule-samples"
VERSION = 1
CONTEXT = 2  # lines shown either side of a removed line
LINES_PER_SAMPLE = 3  # removed lines of one rule shown per page
EXCERPT_LINES = 12  # lines shown of a page dropped as a whole
MAX_LINE_CHARS = 400
MAX_CRAWLS = 8  # crawls of one URL listed in a URL-dedup sample

KEEP, DROP, GAP = "keep", "drop", "gap"  # how a shown line is marked
PAGE, LINES, URL, NEAR = "page", "lines", "url", "near"  # what a sample shows


@dataclasses.dataclass(frozen=True)
class SampleOptions:
    """``rule_samples`` in the corpus config.

    per_rule: samples kept per rule (0 records none and writes no file).
    rate: share of pages traced, chosen by a seeded hash of the normalised URL (1.0 traces every
        page: rare rules then always get their samples; the cost grows with it).
    seed: the hash's seed (another seed, another sample).
    """

    per_rule: int = setting(20, NON_NEGATIVE_INT)
    rate: float = setting(0.125, UNIT_INTERVAL)
    seed: int = setting(0, NON_NEGATIVE_INT)

    @property
    def on(self) -> bool:
        return self.per_rule > 0 and self.rate > 0

    def check(self) -> SampleOptions:
        if self.per_rule < 0 or not 0 <= self.rate <= 1:
            raise ValueError("rule_samples: per_rule must be >= 0 and rate within [0, 1]")
        return self


def page_key(normalized_url: str, seed: int = 0) -> int:
    """A page's 64-bit sampling key: blake2b of the seed and the normalised URL."""
    digest = hashlib.blake2b(normalized_url.encode("utf-8"), digest_size=8,
                             key=seed.to_bytes(8, "big", signed=True) if seed else b"")
    return int.from_bytes(digest.digest(), "big")


def traced_key(normalized_url: str, options: SampleOptions) -> Optional[int]:
    """The page's key when it is traced, else None."""
    key = page_key(normalized_url, options.seed)
    return key if key < options.rate * 2.0 ** 64 else None


@dataclasses.dataclass(frozen=True)
class Sample:
    """One page a rule acted on. ``rule``: ``namespace/counter``, as the manifest's counters
    name it; ``kind``: what ``detail`` holds (PAGE, LINES, URL or NEAR; docs/formats.md)."""

    rule: str
    key: int
    url: str
    kind: str
    detail: dict

    def order(self) -> tuple:
        return self.key, self.url, json.dumps(self.detail, sort_keys=True, ensure_ascii=False)

    def to_json(self) -> dict:
        return {"url": self.url, "key": f"{self.key:016x}", "kind": self.kind, **self.detail}

    def to_wire(self) -> tuple:
        return self.rule, self.key, self.url, self.kind, json.dumps(self.detail, sort_keys=True)

    @classmethod
    def from_wire(cls, wire: Sequence) -> Sample:
        rule, key, url, kind, detail = wire
        return cls(rule, int(key), url, kind, json.loads(detail))


class Reservoir:
    """Per rule, the ``per_rule`` samples of smallest order; mergeable (see the module doc)."""

    def __init__(self, per_rule: int) -> None:
        self.per_rule = per_rule
        self.rules: dict[str, list[tuple[tuple, Sample]]] = {}

    def __len__(self) -> int:
        return sum(len(kept) for kept in self.rules.values())

    def wants(self, rule: str, key: int) -> bool:
        """Whether a sample of ``rule`` with this key could be kept (cheap; before building it)."""
        kept = self.rules.get(rule)
        return kept is None or len(kept) < self.per_rule or key <= kept[-1][0][0]

    def add(self, sample: Sample) -> None:
        kept = self.rules.setdefault(sample.rule, [])
        entry = (sample.order(), sample)
        at = bisect.bisect_left(kept, entry[0], key=lambda e: e[0])
        if at < len(kept) and kept[at][0] == entry[0]:
            return  # the same event again (a retried bundle)
        if at >= self.per_rule:
            return
        kept.insert(at, entry)
        del kept[self.per_rule:]

    def extend(self, samples: Iterable[Sample]) -> Reservoir:
        for sample in samples:
            self.add(sample)
        return self

    def samples(self) -> list[Sample]:
        return [sample for rule in sorted(self.rules) for _, sample in self.rules[rule]]

    def to_wire(self) -> list[tuple]:
        return [sample.to_wire() for sample in self.samples()]

    def document(self, options: SampleOptions) -> dict:
        """The file's content (docs/formats.md): rules in name order, samples in key order."""
        return {"format": FORMAT, "version": VERSION, "per_rule": options.per_rule,
                "rate": options.rate, "seed": options.seed,
                "rules": [{"rule": rule, "samples": [s.to_json() for _, s in self.rules[rule]]}
                          for rule in sorted(self.rules)]}


def dumps(document: dict) -> str:
    """The file's bytes: sorted keys, one rule per line block, UTF-8 as is."""
    return json.dumps(document, sort_keys=True, ensure_ascii=False, indent=1) + "\n"


def read_samples(text: str) -> dict:
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a c4forge rule-samples file")
    if document.get("version") != VERSION:
        raise ValueError(f"rule-samples version {document.get('version')!r}; this c4forge reads {VERSION}")
    return document


# ------------------------------------------------------------------ what a sample shows


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS - 1] + "…"


def shown_lines(lines: Sequence[str], marked: Sequence[bool], show: Iterable[int]) -> list[list[str]]:
    """``lines[i]`` for each ``i`` in ``show`` (sorted), marked DROP or KEEP, a GAP between runs."""
    out: list[list[str]] = []
    previous = None
    for i in sorted(set(show)):
        if previous is not None and i != previous + 1:
            out.append(["", GAP])
        out.append([_clip(lines[i]), DROP if marked[i] else KEEP])
        previous = i
    return out


def around(indices: Iterable[int], n: int, context: int = CONTEXT) -> set[int]:
    return {j for i in indices for j in range(max(0, i - context), min(n, i + context + 1))}


def page_lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n")]


def dropped_page(rule: str, key: int, page: Document, trigger: Optional[int] = None,
                 lines: Optional[list[str]] = None) -> Sample:
    """A page a rule dropped whole: its first lines, or the line that decided (``trigger``, an
    index into ``lines``) among its neighbours."""
    lines = page_lines(page.text) if lines is None else lines
    if trigger is None:
        shown = shown_lines(lines, [False] * len(lines), range(min(EXCERPT_LINES, len(lines))))
    else:
        marked = [i == trigger for i in range(len(lines))]
        shown = shown_lines(lines, marked, around([trigger], len(lines)))
    return Sample(rule, key, page.url, PAGE, {"chars": len(page.text), "lines": shown})


def removed_lines(rule: str, key: int, page: Document, lines: list[str],
                  fates: list[Optional[str]], reason: str) -> Sample:
    """The first LINES_PER_SAMPLE lines ``reason`` removed, among the kept lines around them
    (lines other rules removed are left out of the view)."""
    visible = [i for i, fate in enumerate(fates) if fate is None or fate == reason]
    marked = [fates[i] == reason for i in visible]
    removed = [pos for pos, m in enumerate(marked) if m]
    view = [lines[i] for i in visible]
    return Sample(rule, key, page.url, LINES,
                  {"removed": len(removed), "lines": shown_lines(view, marked, around(removed[:LINES_PER_SAMPLE], len(view)))})


def url_duplicates(rule: str, key: int, url: str, kept: tuple[str, bytes],
                   dropped: Iterable[tuple[str, bytes]]) -> Sample:
    """One normalised URL crawled more than once: the crawl kept (the newest) and the others,
    each as (crawl time, record id)."""
    others = sorted(dropped)
    return Sample(rule, key, url, URL, {
        "kept": {"timestamp": kept[0], "record": kept[1].hex()},
        "dropped": [{"timestamp": t, "record": r.hex()} for t, r in others[:MAX_CRAWLS]],
        "crawls": len(others) + 1})


def near_duplicate(rule: str, key: int, page: Document, kept_id: int) -> Sample:
    """A page near-dedup dropped: its first lines, and the id of the page its cluster kept
    (``near_dedup.doc_id`` of that page's normalised URL; ``corpus inspect`` names it, and the
    kept document records its cluster's size)."""
    lines = page_lines(page.text)
    shown = shown_lines(lines, [False] * len(lines), range(min(EXCERPT_LINES, len(lines))))
    return Sample(rule, key, page.url, NEAR, {"chars": len(page.text), "lines": shown,
                                              "kept_id": str(kept_id)})


# ------------------------------------------------------------------ tracing the page steps

Explain = Callable[[object, Document], tuple[list[str], list[Optional[str]], Optional[int]]]


def wanted_by_all(rule: str, key: int) -> bool:
    return True


def step_samples(namespace: str, outcome: str, key: int, before: Document,
                 after: Optional[Document], explain: Optional[Explain] = None,
                 machinery: object = None,
                 wants: Callable[[str, int], bool] = wanted_by_all) -> list[Sample]:
    """What one step did to a traced page, as samples: the page dropped (its verdict's
    ``outcome``, ``filtered[:reason]``, names the rule), or for steps that remove lines
    (``explain``: the page's lines, each line's fate, the line that dropped the page if one did),
    the lines each reason removed. ``wants`` (a :meth:`Reservoir.wants` where the samples go
    straight into one) skips building samples the reservoir would not keep; the result is the
    same, only cheaper."""
    if after is None:
        rule = f"{namespace}/{outcome}"
        if not wants(rule, key):
            return []
        lines, trigger = None, None
        if explain is not None:
            lines, _, trigger = explain(machinery, before)
        return [dropped_page(rule, key, before, trigger, lines)]
    if explain is None or after.text == before.text:
        return []
    lines, fates, _ = explain(machinery, before)
    rules = {reason: f"{namespace}/{reason}" for reason in sorted({fate for fate in fates if fate is not None})}
    return [removed_lines(rule, key, before, lines, fates, reason)
            for reason, rule in rules.items() if wants(rule, key)]


class SampleSink(Protocol):
    """Where a traced page's samples go: a Reservoir, or a SampleList a URL candidate carries."""

    def wants(self, rule: str, key: int) -> bool: ...

    def extend(self, samples: Iterable[Sample]) -> object: ...


class SampleList(list):
    """Samples collected for elsewhere (a URL candidate carries its crawl's): every one wanted."""

    def wants(self, rule: str, key: int) -> bool:
        return True
