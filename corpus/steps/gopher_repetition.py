"""Gopher's repetition rules (datatrove 0.10's ``GopherRepetitionFilter``, Gopher's Table A1,
exact with the same settings; namespace ``gopher-repetition``): duplicate paragraphs and lines
(their share and the characters they hold), the top 2-4-gram's characters, duplicated
5-10-grams' characters. Each rule is its own reason; None switches a rule off."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional

from c4forge.core.settings import SHARE, ConfigError, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.rules.quality import duplicates
from c4forge.corpus.text.ngrams import page_ngram_counts
from c4forge.corpus.text.page_words import page_words
from c4forge.corpus.text.words import english_words

_PARAGRAPHS = re.compile(r"\n{2,}")


@dataclasses.dataclass(frozen=True)
class GopherRepetition:
    """``gopher-repetition`` in the corpus config: datatrove's ``GopherRepetitionFilter`` defaults
    (Gopher's Table A1). ``top_n_grams``/``dup_n_grams``: (n, largest share) pairs."""

    on: bool = False
    dup_line_frac: Optional[float] = setting(0.3, SHARE)
    dup_para_frac: Optional[float] = setting(0.3, SHARE)
    dup_line_char_frac: Optional[float] = setting(0.2, SHARE)
    dup_para_char_frac: Optional[float] = setting(0.2, SHARE)
    top_n_grams: tuple[tuple[int, float], ...] = ((2, 0.2), (3, 0.18), (4, 0.16))
    dup_n_grams: tuple[tuple[int, float], ...] = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12),
                                                  (9, 0.11), (10, 0.10))


def check(settings: GopherRepetition, config: Any) -> None:
    """Each (n, share) pair: n a whole number >= 1, the share in (0, 1]."""
    for field in ("top_n_grams", "dup_n_grams"):
        for n, share in getattr(settings, field):
            if not (isinstance(n, int) and n >= 1) or not (isinstance(share, float) and 0 < share <= 1):
                raise ConfigError(f"gopher-repetition.{field}: ({n!r}, {share!r}) must be (n, share) "
                                  "with n >= 1 and the share in (0, 1], e.g. [[2, 0.2], [3, 0.18]]")


def gopher_repetition(settings: GopherRepetition, page: Document) -> Verdict:
    reason = gopher_repetition_reason(page.text, settings)
    return keep(page) if reason is None else drop(reason)


def gopher_repetition_reason(text: str, rules: GopherRepetition) -> Optional[str]:
    """Why ``GopherRepetitionFilter`` drops ``text``, or None (kept); its tests in its order."""
    if not text:  # datatrove divides by zero here
        return "empty"
    paragraphs = _PARAGRAPHS.split(text.strip())
    repeats, chars = duplicates(paragraphs)
    if rules.dup_para_frac and repeats / len(paragraphs) > rules.dup_para_frac:
        return "dup_para_frac"
    if rules.dup_para_char_frac and chars / len(text) > rules.dup_para_char_frac:
        return "dup_para_char_frac"
    lines = _line_runs(text)
    repeats, chars = duplicates(lines)
    if rules.dup_line_frac and repeats / len(lines) > rules.dup_line_frac:
        return "dup_line_frac"
    if rules.dup_line_char_frac and chars / len(text) > rules.dup_line_char_frac:
        return "dup_line_char_frac"
    page = page_words(text)
    counts = page_ngram_counts(page, [n for n, _ in rules.top_n_grams], [n for n, _ in rules.dup_n_grams])
    for n, largest in rules.top_n_grams:
        if page.count >= n and counts.top[n] / len(text) > largest:
            return f"top_{n}_gram"
    for n, largest in rules.dup_n_grams:
        if counts.duplicated[n] / len(text) > largest:
            return f"duplicated_{n}_n_grams"
    return None


def _line_runs(text: str) -> list[str]:
    """``re.split("\\n+", text)`` (datatrove's lines) by ``str.split``: the empty pieces between
    newlines left out, a leading and a trailing one kept."""
    pieces = text.split("\n")
    if len(pieces) < 3:
        return pieces
    return [pieces[0], *filter(None, pieces[1:-1]), pieces[-1]]


STEP = page_step("gopher-repetition", gopher_repetition, "[Gopher repetition]",
                 settings=GopherRepetition, check=check, flow="gopher repetition", preflight=english_words)
