"""The C4 page rules of tfds ``c4`` v3.1.0 (``c4_utils.clean_page``, ``is_valid_length``,
``paragraph_filter``), exact in order, constants and counter names.

Speed without changing a single output (each shortcut skips work only where the result cannot
differ from the reference loop):

- a word longer than ``max_word_length`` needs a line longer than that, so lines of at most
  1000 characters skip the word scan;
- the citation regex only runs on lines that contain ``[``;
- line counts are tallied in locals and returned once per page, in the verdict
  (corpus/chain/verdict.py; the step loop counts them);
- Punkt runs only when fewer than ``min_sentences`` lines survive: every kept line is non-empty
  and Punkt finds at least one sentence in any non-empty string, so N kept lines always hold at
  least N sentences; otherwise sentences are counted line by line and counting stops as soon as
  the threshold is reached.
"""
from __future__ import annotations

import dataclasses
import heapq
import re
from typing import Optional

from c4forge.core.settings import NON_NEGATIVE_INT, setting
from c4forge.corpus.chain.verdict import Verdict, drop, keep, line_counts
from c4forge.corpus.document import Document
from c4forge.corpus.text import sentences

END_MARKS: tuple[str, ...] = (".", "?", "!", '"')
ELLIPSIS = "..."
POLICY_SUBSTRINGS: tuple[str, ...] = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)
CITATION_PATTERN = r"\[\d*\]|\[edit\]|\[citation needed\]"
MAX_PAGE_CHARS = 1.9e5


@dataclasses.dataclass(frozen=True)
class PageRules:
    """Parameters of :func:`clean_page`. Defaults are tfds c4's; a falsy value switches a rule off.

    max_word_length: drop a line holding a whitespace-separated word longer than this (1000).
    remove_citations: delete ``[1]``, ``[edit]``, ``[citation needed]`` (no re-strip after).
    end_marks / ellipsis: keep only lines ending in one of ``end_marks`` and not in ``ellipsis``.
    min_words_per_line: drop lines with fewer words (5).
    drop_lorem_ipsum: drop the whole page on a surviving line containing "lorem ipsum".
    drop_javascript_lines: drop lines containing "javascript" (any case).
    drop_curly_bracket_pages: drop the whole page on a surviving line containing ``{``.
    policy_substrings: drop lines containing any of these (lowercased match).
    min_sentences: drop the page when its kept lines hold fewer Punkt sentences (3).
    """

    max_word_length: Optional[int] = setting(1000, NON_NEGATIVE_INT)
    remove_citations: bool = True
    end_marks: tuple[str, ...] = END_MARKS
    ellipsis: Optional[str] = ELLIPSIS
    min_words_per_line: int = setting(5, NON_NEGATIVE_INT)
    drop_lorem_ipsum: bool = True
    drop_javascript_lines: bool = True
    drop_curly_bracket_pages: bool = True
    policy_substrings: tuple[str, ...] = POLICY_SUBSTRINGS
    min_sentences: int = setting(3, NON_NEGATIVE_INT)


_CITATION_REGEX = re.compile(CITATION_PATTERN)


def is_valid_length(page: Document, max_chars: Optional[float] = MAX_PAGE_CHARS) -> bool:
    """tfds ``is_valid_length`` (namespace ``too-long-filter``): False when text > 1.9e5 chars."""
    return max_chars is None or len(page.text) <= max_chars


def too_few_words(line: str, n: int) -> bool:
    """``len(line.split()) < n`` (tfds' words-per-line rule), splitting no further than the
    n-th word: ``split(None, n - 1)`` gives min(words, n) pieces, the last holding the rest.
    Splitting every line whole was a fifth of clean_page's time (most lines pass)."""
    return len(line.split(None, n - 1)) < n


def clean_page(page: Document, rules: PageRules = PageRules()) -> Verdict:
    """tfds ``clean_page`` (namespace ``clean-page``): keep the cleaned page, or drop it
    (``filtered:loremipsum``, ``filtered:squigglybracket``, ``filtered:too_few_sentences``),
    with tfds' line counters (``line-filtered:<reason>``, ``line-passed``)."""
    max_word = rules.max_word_length
    end_marks = rules.end_marks
    ellipsis = rules.ellipsis
    min_words = rules.min_words_per_line
    policy = rules.policy_substrings
    cite = rules.remove_citations
    valid_lines: list[str] = []
    n_long = n_endmark = n_short = n_js = n_policy = 0

    def lines():
        return line_counts(len(valid_lines), (("too_long_word", n_long), ("no_endmark", n_endmark),
                                              ("too_short", n_short), ("javascript", n_js),
                                              ("policy", n_policy)))

    for line in page.text.splitlines():
        line = line.strip()
        if max_word and len(line) > max_word and any(len(w) > max_word for w in line.split()):
            n_long += 1
            continue
        if cite and "[" in line:
            line = _CITATION_REGEX.sub("", line)
        if end_marks and (not line.endswith(end_marks) or (ellipsis and line.endswith(ellipsis))):
            n_endmark += 1
            continue
        if min_words and too_few_words(line, min_words):
            n_short += 1
            continue
        line_lower = line.lower()
        if rules.drop_lorem_ipsum and "lorem ipsum" in line_lower:
            return drop("loremipsum", lines())
        if rules.drop_javascript_lines and "javascript" in line_lower:
            n_js += 1
            continue
        if rules.drop_curly_bracket_pages and "{" in line:
            return drop("squigglybracket", lines())
        if policy and any(p in line_lower for p in policy):
            n_policy += 1
            continue
        valid_lines.append(line)

    if rules.min_sentences and not lines_hold_sentences(valid_lines, rules.min_sentences):
        return drop("too_few_sentences", lines())
    return keep(page.replace(text="\n".join(valid_lines).strip()), counts=lines())


def line_fates(text: str, rules: PageRules = PageRules()) -> tuple[list[str], list[Optional[str]], Optional[int]]:
    """What :func:`clean_page` does to each line of ``text``, for the rule samples
    (corpus/output/samples.py): the stripped lines, each line's fate (None: kept; else the counter
    that removed it, e.g. ``line-filtered:no_endmark``) and the index of the line that dropped
    the page (lorem ipsum, a curly bracket), if one did. The same tests in the same order as
    clean_page (tests/test_rule_samples.py checks the counts agree on every real page); run
    only on traced pages, so clean_page's loop stays as it is."""
    max_word = rules.max_word_length
    end_marks, ellipsis = rules.end_marks, rules.ellipsis
    lines = [line.strip() for line in text.splitlines()]
    fates: list[Optional[str]] = [None] * len(lines)
    for i, line in enumerate(lines):
        if max_word and len(line) > max_word and any(len(w) > max_word for w in line.split()):
            fates[i] = "line-filtered:too_long_word"
            continue
        if rules.remove_citations and "[" in line:
            line = _CITATION_REGEX.sub("", line)
        if end_marks and (not line.endswith(end_marks) or (ellipsis and line.endswith(ellipsis))):
            fates[i] = "line-filtered:no_endmark"
            continue
        if rules.min_words_per_line and too_few_words(line, rules.min_words_per_line):
            fates[i] = "line-filtered:too_short"
            continue
        line_lower = line.lower()
        if rules.drop_lorem_ipsum and "lorem ipsum" in line_lower:
            return lines, fates, i
        if rules.drop_javascript_lines and "javascript" in line_lower:
            fates[i] = "line-filtered:javascript"
            continue
        if rules.drop_curly_bracket_pages and "{" in line:
            return lines, fates, i
        if rules.policy_substrings and any(p in line_lower for p in rules.policy_substrings):
            fates[i] = "line-filtered:policy"
    return lines, fates, None


def lines_hold_sentences(lines: list, n: int) -> bool:
    """``sum(len(get_sentences(l)) for l in lines) >= n``, computed with as little Punkt as
    possible: each line with a non-space character holds at least one sentence."""
    nonempty = sum(1 for line in lines if line.strip())
    if nonempty >= n:
        return True
    found = 0
    for line in lines:
        if line:
            found += sentences.count_sentences(line, at_most=n - found)
            if found >= n:
                return True
    return False


def paragraph_filter(page: Document, min_paragraphs: int = 3, min_paragraph_len: int = 200) -> bool:
    """mC4's ``paragraph_filter`` (namespace ``paragraph-filter``): keep pages with at least
    ``min_paragraphs`` lines, whose 3 longest lines have >= ``min_paragraph_len`` characters.

    The reference takes ``heapq.nlargest(3, ...)`` whatever ``min_paragraphs`` is; we keep that.
    """
    lines = page.text.split("\n")
    return not (len(lines) < min_paragraphs
                or min(heapq.nlargest(3, [len(line) for line in lines])) < min_paragraph_len)
