"""FineWeb's quality rules (Penedo et al. 2024; datatrove 0.10's ``FineWebQualityFilter``, exact
with the same settings; namespace ``fineweb-quality``): lines ending in terminal punctuation,
short lines, characters in duplicated lines, newlines per word."""
from __future__ import annotations

import dataclasses
from typing import Optional

from c4forge.core.settings import NON_NEGATIVE_INT, POSITIVE, UNIT_INTERVAL, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.rules.quality import duplicates
from c4forge.corpus.text.page_words import page_words
from c4forge.corpus.text.words import TERMINAL_PUNCTUATION, english_words


@dataclasses.dataclass(frozen=True)
class FineWebQuality:
    """``fineweb-quality`` in the corpus config: datatrove's ``FineWebQualityFilter`` defaults
    (``stop_chars`` empty: datatrove's terminal punctuation)."""

    on: bool = False
    line_punct_thr: float = setting(0.12, UNIT_INTERVAL)
    line_punct_exclude_zero: bool = False
    stop_chars: tuple[str, ...] = ()
    short_line_thr: float = setting(0.67, UNIT_INTERVAL)
    short_line_length: int = setting(30, NON_NEGATIVE_INT)
    char_duplicates_ratio: float = setting(0.01, UNIT_INTERVAL)
    new_line_ratio: float = setting(0.3, POSITIVE)


def fineweb_quality(settings: FineWebQuality, page: Document) -> Verdict:
    reason = fineweb_quality_reason(page.text, settings)
    return keep(page) if reason is None else drop(reason)


def fineweb_quality_reason(text: str, rules: FineWebQuality) -> Optional[str]:
    """Why ``FineWebQualityFilter`` drops ``text``, or None (kept); its tests in its order."""
    lines = [line for line in text.split("\n") if line.strip() != ""]
    if not lines:
        return "empty"
    if all(len(stop) == 1 for stop in rules.stop_chars):  # one character each: the last one's set
        ends = frozenset(rules.stop_chars) or TERMINAL_PUNCTUATION
        ratio = sum(1 for line in lines if line[-1] in ends) / len(lines)  # (no line is empty)
    else:
        ratio = sum(1 for line in lines if line.endswith(rules.stop_chars)) / len(lines)
    if ratio < rules.line_punct_thr and not (ratio == 0 and rules.line_punct_exclude_zero):
        return "line_punct_ratio"
    ratio = sum(len(line) <= rules.short_line_length for line in lines) / len(lines)
    if ratio > rules.short_line_thr:
        return "short_line_ratio"
    if duplicates(lines)[1] / len(text.replace("\n", "")) > rules.char_duplicates_ratio:
        return "char_dup_ratio"
    if text.count("\n") / page_words(text).count > rules.new_line_ratio:
        return "list_ratio"
    return None


STEP = page_step("fineweb-quality", fineweb_quality, "[FineWeb quality]", settings=FineWebQuality,
                 flow="fineweb quality", preflight=english_words)
