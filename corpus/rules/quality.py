"""What today's rule sets measure on a page and share (corpus/steps/gopher_repetition.py,
fineweb_quality.py): duplicated items and the characters they hold, n-gram counts over words.
Exact to datatrove 0.10's helpers (``find_duplicates``, ``find_top_duplicate``,
``find_all_duplicate``); tests/test_quality.py checks the steps that use them against datatrove
on every real page.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def duplicates(items: list[str]) -> tuple[int, int]:
    """(how many items repeat an earlier one, the characters those repeats hold)."""
    seen: set[str] = set()
    repeats = chars = 0
    for item in items:
        if item in seen:
            repeats += 1
            chars += len(item)
        else:
            seen.add(item)
    return repeats, chars


def top_ngram_chars(words: Sequence[str], n: int) -> int:
    """Characters of the most frequent n-gram (words joined by a space) times its count; the
    first seen wins a tie, as Counter.most_common's."""
    counts = Counter(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    gram, count = counts.most_common(1)[0]
    return len(gram) * count


def duplicated_ngram_chars(words: Sequence[str], n: int) -> int:
    """Characters in n-grams (words joined without a space) that repeat an earlier one, a
    repeat's words not counted again (datatrove's ``find_all_duplicate``)."""
    seen: set[str] = set()
    repeated, i, last = 0, 0, len(words) - n + 1
    while i < last:
        gram = "".join(words[i:i + n])
        if gram in seen:
            repeated += len(gram)
            i += n
        else:
            seen.add(gram)
            i += 1
    return repeated
