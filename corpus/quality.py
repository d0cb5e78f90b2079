"""Today's heuristic rule sets, exact to datatrove 0.10's filters with the same settings:

- **Gopher quality** (Rae et al. 2021, MassiveWeb; ``GopherQualityFilter``): document length in
  words, mean word length, hash and ellipsis symbols per word, bullet and ellipsis lines, words
  with a letter, stop words;
- **Gopher repetition** (``GopherRepetitionFilter``): duplicate paragraphs and lines (their share
  and the characters they hold), the top 2-4-gram's characters, duplicated 5-10-grams' characters;
- **FineWeb quality** (Penedo et al. 2024; ``FineWebQualityFilter``): lines ending in terminal
  punctuation, short lines, characters in duplicated lines, newlines per word;
- **C4 as FineWeb ran it** (``C4QualityFilter(filter_no_terminal_punct=False)``).

Each rule is its own reason (datatrove's reason names: ``gopher_short_doc``, ``dup_line_frac``,
``line_punct_ratio``...), counted as ``filtered:<reason>`` in the step's namespace; each threshold
is a setting (None switches a rule off, as in datatrove). Words are datatrove's
(corpus/words.py). tests/test_quality.py checks every verdict against datatrove itself on every
real page; where datatrove would divide by zero (an empty text, a text of no words with
``min_doc_words`` off) these return a verdict instead, named in docs/corpus.md.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence
from typing import Optional

from c4forge.corpus.document import Document
from c4forge.corpus.verdict import Verdict, drop, keep
from c4forge.corpus.words import PUNCTUATION_SET, TERMINAL_PUNCTUATION, count_sentences, split_into_words

GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")
_NOT_PUNCTUATION = re.compile("[^" + "".join(re.escape(c) for c in sorted(PUNCTUATION_SET)) + "]")


@dataclasses.dataclass(frozen=True)
class GopherQuality:
    """``gopher_quality`` in the corpus config: datatrove's ``GopherQualityFilter`` defaults."""

    on: bool = False
    min_doc_words: Optional[int] = 50
    max_doc_words: Optional[int] = 100_000
    min_avg_word_length: Optional[float] = 3
    max_avg_word_length: Optional[float] = 10
    max_symbol_word_ratio: Optional[float] = 0.1
    max_bullet_lines_ratio: Optional[float] = 0.9
    max_ellipsis_lines_ratio: Optional[float] = 0.3
    max_non_alpha_words_ratio: Optional[float] = 0.8  # datatrove's name: the least share of words with a letter
    min_stop_words: Optional[int] = 2
    stop_words: tuple[str, ...] = GOPHER_STOP_WORDS


@dataclasses.dataclass(frozen=True)
class GopherRepetition:
    """``gopher_repetition`` in the corpus config: datatrove's ``GopherRepetitionFilter``
    defaults (Gopher's Table A1). ``top_n_grams``/``dup_n_grams``: (n, largest share) pairs."""

    on: bool = False
    dup_line_frac: Optional[float] = 0.3
    dup_para_frac: Optional[float] = 0.3
    dup_line_char_frac: Optional[float] = 0.2
    dup_para_char_frac: Optional[float] = 0.2
    top_n_grams: tuple[tuple[int, float], ...] = ((2, 0.2), (3, 0.18), (4, 0.16))
    dup_n_grams: tuple[tuple[int, float], ...] = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12),
                                                  (9, 0.11), (10, 0.10))


@dataclasses.dataclass(frozen=True)
class FineWebQuality:
    """``fineweb_quality`` in the corpus config: datatrove's ``FineWebQualityFilter`` defaults
    (``stop_chars`` empty: datatrove's terminal punctuation)."""

    on: bool = False
    line_punct_thr: float = 0.12
    line_punct_exclude_zero: bool = False
    stop_chars: tuple[str, ...] = ()
    short_line_thr: float = 0.67
    short_line_length: int = 30
    char_duplicates_ratio: float = 0.01
    new_line_ratio: float = 0.3


def gopher_quality(page: Document, rules: GopherQuality) -> Verdict:
    reason = gopher_quality_reason(page.text, rules)
    return keep(page) if reason is None else drop(reason)


def gopher_quality_reason(text: str, rules: GopherQuality) -> Optional[str]:
    """Why ``GopherQualityFilter`` drops ``text``, or None (kept); its tests in its order."""
    words = split_into_words(text)
    n_words = len(words)
    non_symbol = [w for w in words if _NOT_PUNCTUATION.search(w)]  # a character outside the set
    if rules.min_doc_words and len(non_symbol) < rules.min_doc_words:
        return "gopher_short_doc"
    if rules.max_doc_words and len(non_symbol) > rules.max_doc_words:
        return "gopher_long_doc"
    if not n_words:  # datatrove divides by zero here (only reached with min_doc_words off)
        return "gopher_short_doc"
    if non_symbol:  # datatrove: np.mean of nothing is nan, and nan fails no comparison
        mean_length = sum(len(w) for w in non_symbol) / len(non_symbol)
        if rules.min_avg_word_length and mean_length < rules.min_avg_word_length:
            return "gopher_below_avg_threshold"
        if rules.max_avg_word_length and mean_length > rules.max_avg_word_length:
            return "gopher_above_avg_threshold"
    ratio = rules.max_symbol_word_ratio
    if ratio and text.count("#") / n_words > ratio:
        return "gopher_too_many_hashes"
    if ratio and (text.count("...") + text.count("…")) / n_words > ratio:
        return "gopher_too_many_ellipsis"
    lines = text.splitlines()
    if rules.max_bullet_lines_ratio and sum(
            s.lstrip().startswith("•") or s.lstrip().startswith("-") for s in lines) / len(lines) \
            > rules.max_bullet_lines_ratio:
        return "gopher_too_many_bullets"
    if rules.max_ellipsis_lines_ratio and sum(
            s.rstrip().endswith("...") or s.rstrip().endswith("…") for s in lines) / len(lines) \
            > rules.max_ellipsis_lines_ratio:
        return "gopher_too_many_end_ellipsis"
    if rules.max_non_alpha_words_ratio and sum(
            any(c.isalpha() for c in w) for w in words) / n_words < rules.max_non_alpha_words_ratio:
        return "gopher_below_alpha_threshold"
    if rules.min_stop_words and len(set(rules.stop_words).intersection(words)) < rules.min_stop_words:
        return "gopher_enough_stop_words"  # datatrove's name for too few stop words
    return None


_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")


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


def gopher_repetition(page: Document, rules: GopherRepetition) -> Verdict:
    reason = gopher_repetition_reason(page.text, rules)
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
    lines = _LINES.split(text)
    repeats, chars = duplicates(lines)
    if rules.dup_line_frac and repeats / len(lines) > rules.dup_line_frac:
        return "dup_line_frac"
    if rules.dup_line_char_frac and chars / len(text) > rules.dup_line_char_frac:
        return "dup_line_char_frac"
    words = split_into_words(text)
    for n, largest in rules.top_n_grams:
        if len(words) >= n and top_ngram_chars(words, n) / len(text) > largest:
            return f"top_{n}_gram"
    for n, largest in rules.dup_n_grams:
        if duplicated_ngram_chars(words, n) / len(text) > largest:
            return f"duplicated_{n}_n_grams"
    return None


def fineweb_quality(page: Document, rules: FineWebQuality) -> Verdict:
    reason = fineweb_quality_reason(page.text, rules)
    return keep(page) if reason is None else drop(reason)


def fineweb_quality_reason(text: str, rules: FineWebQuality) -> Optional[str]:
    """Why ``FineWebQualityFilter`` drops ``text``, or None (kept); its tests in its order."""
    lines = [line for line in text.split("\n") if line.strip() != ""]
    if not lines:
        return "empty"
    stop_chars = rules.stop_chars or tuple(TERMINAL_PUNCTUATION)
    ratio = sum(1 for line in lines if line.endswith(stop_chars)) / len(lines)
    if ratio < rules.line_punct_thr and not (ratio == 0 and rules.line_punct_exclude_zero):
        return "line_punct_ratio"
    ratio = sum(1 for line in lines if len(line) <= rules.short_line_length) / len(lines)
    if ratio > rules.short_line_thr:
        return "short_line_ratio"
    if duplicates(lines)[1] / len(text.replace("\n", "")) > rules.char_duplicates_ratio:
        return "char_dup_ratio"
    words = split_into_words(text)
    if text.count("\n") / len(words) > rules.new_line_ratio:
        return "list_ratio"
    return None


@dataclasses.dataclass(frozen=True)
class C4Quality:
    """``c4_quality`` in the corpus config: C4's rules as datatrove's ``C4QualityFilter`` has
    them, with FineWeb's setting (``filter_no_terminal_punct`` off). Not tfds' ``clean_page``
    (corpus/clean.py, the ``c4`` preset): datatrove keeps lines of 3 words (tfds: 5), counts
    ``'`` as terminal punctuation, counts sentences with spaCy's sentencizer (tfds: Punkt) and
    wants 5 (tfds: 3)."""

    on: bool = False
    remove_citations: bool = True
    filter_no_terminal_punct: bool = False
    min_num_sentences: int = 5
    min_words_per_line: int = 3
    max_word_length: int = 1000
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True


_C4_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_C4_END_PUNCTUATION = (".", "?", "!", '"', "'")
_C4_POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
              "use cookies")


def c4_quality(page: Document, rules: C4Quality) -> Verdict:
    """datatrove's ``C4QualityFilter`` (lines split on line breaks): the page with its kept
    lines, or its reason (``lorem_ipsum``, ``curly_bracket``, ``too_few_sentences``)."""
    kept: list[str] = []
    for line in page.text.splitlines():
        line = line.strip()
        words = line.split()
        if rules.max_word_length != -1 and any(len(word) > rules.max_word_length for word in words):
            continue
        if rules.remove_citations:
            line = _C4_CITATION.sub("", line)
        if rules.filter_no_terminal_punct and (not line.endswith(_C4_END_PUNCTUATION) or line.endswith("...")):
            continue
        if len(words) < rules.min_words_per_line:
            continue
        lower = line.lower()
        if rules.filter_lorem_ipsum and "lorem ipsum" in lower:
            return drop("lorem_ipsum")
        if rules.filter_javascript and "javascript" in lower:
            continue
        if rules.filter_curly_bracket and "{" in line:
            return drop("curly_bracket")
        if rules.filter_policy and any(p in lower for p in _C4_POLICY):
            continue
        kept.append(line)
    if rules.min_num_sentences != -1 and not _holds_sentences(kept, rules.min_num_sentences):
        return drop("too_few_sentences")
    return keep(page.replace(text="\n".join(kept).strip()))


def _holds_sentences(lines: list[str], needed: int) -> bool:
    """Whether ``lines`` hold ``needed`` sentences as datatrove counts them (spaCy's sentencizer
    per line), with as little spaCy as possible: a kept line is never empty, and datatrove counts
    at least one sentence in any line, so N lines hold at least N sentences."""
    if len(lines) >= needed:
        return True
    found = 0
    for line in lines:
        found += count_sentences(line)
        if found >= needed:
            return True
    return False
