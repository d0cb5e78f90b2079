"""What a page step decides, as data: keep the page (perhaps changed) or drop it with a reason,
and any detail counts (how many lines each rule removed, the language found). A filter is only
its decision, as datatrove's ``BaseFilter.filter`` returning ``True`` or ``(False, reason)``:
the step loop (corpus/chain/loop.py) turns verdicts into the counters reports read (``passed``,
``filtered[:reason]``, ``bytes-in``/``bytes-out``), the rule samples and the stage clock, the same
way for every step, in ``corpus clean`` and in the Beam graph.

A line-level rule reports its lines as counts here (``line-filtered:<reason>``, ``line-passed``);
which line each reason removed is worked out only for the pages the rule samples trace
(the step's ``explain``, corpus/output/samples.py), so the common path pays for no per-line record.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple, Optional

from c4forge.core.counters import IncFn
from c4forge.corpus.document import Document

PASSED = "passed"
FILTERED = "filtered"


class Count(NamedTuple):
    """One counter increment. ``namespace`` "" is the step's own."""

    namespace: str
    name: str
    n: int = 1


class Verdict(NamedTuple):
    """``page``: the page kept (perhaps changed), None when dropped. ``outcome``: the counter the
    decision counts once (``passed``, ``soft-passed``, ``filtered`` or ``filtered:<reason>``).
    ``counts``: further counts the step reports (line counters, the language found)."""

    page: Optional[Document]
    outcome: str
    counts: tuple[Count, ...] = ()

    @property
    def kept(self) -> bool:
        return self.page is not None

    def __bool__(self) -> bool:
        raise TypeError("a Verdict is not a bool (a tuple is always true): ask .kept")


def keep(page: Document, outcome: str = PASSED, counts: Iterable[Count] = ()) -> Verdict:
    """Keep ``page`` (the step's output: the page as it came, or a changed copy)."""
    return Verdict(page, outcome, tuple(counts))


def drop(reason: str = "", counts: Iterable[Count] = ()) -> Verdict:
    """Drop the page; counted as ``filtered:<reason>`` (``filtered`` with no reason)."""
    return Verdict(None, f"{FILTERED}:{reason}" if reason else FILTERED, tuple(counts))


def line_counts(kept: int, removed: Iterable[tuple[str, int]]) -> tuple[Count, ...]:
    """A line-level rule's counts: ``line-filtered:<reason>`` per reason that removed lines and
    ``line-passed`` for the lines kept (zeros left out, as tfds counts them)."""
    counts = [Count("", f"line-filtered:{reason}", n) for reason, n in removed if n]
    if kept:
        counts.append(Count("", "line-passed", kept))
    return tuple(counts)


def count_verdict(inc: IncFn, inc_for: Callable[[str], IncFn], size_in: int, verdict: Verdict) -> None:
    """A step's counters for one page of ``size_in`` UTF-8 bytes: ``bytes-in``, ``bytes-out``
    (so reports say how much text each step removed), the outcome and the detail counts
    (``inc_for`` names the other namespaces a count may go to). The step loop calls it for every
    page step; a corpus-wide step that decides page by page (line dedup) calls it too."""
    inc("bytes-in", size_in)
    if verdict.page is not None:
        inc("bytes-out", verdict.page.text_size())
    inc(verdict.outcome)
    for count in verdict.counts:
        (inc_for(count.namespace) if count.namespace else inc)(count.name, count.n)


def count_group_member(inc: IncFn, size: int, kept: bool, group_size: int, groups: str) -> None:
    """A dedup step's counters for one page of ``size`` text bytes, dropped or kept as its
    group's survivor; a group of several pages counts ``groups`` once, at the page kept (near-dedup's
    clusters, exact-text dedup's groups)."""
    inc("bytes-in", size)
    if not kept:
        inc("filtered")
        return
    inc("bytes-out", size)
    inc("passed")
    if group_size > 1:
        inc(groups)
