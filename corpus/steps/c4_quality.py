"""C4's rules as datatrove 0.10's ``C4QualityFilter`` has them, with FineWeb's setting
(``filter_no_terminal_punct`` off; namespace ``c4-quality``). Not tfds' ``clean_page``
(corpus/rules/clean.py, the ``c4`` preset): datatrove keeps lines of 3 words (tfds: 5), counts ``'`` as
terminal punctuation, counts sentences with spaCy's sentencizer (tfds: Punkt) and wants 5
(tfds: 3)."""
from __future__ import annotations

import dataclasses
import re

from c4forge.core.settings import NON_NEGATIVE_INT, OFF_OR_NON_NEGATIVE_INT, OFF_OR_POSITIVE_INT, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.text.words import count_sentences, english_words


@dataclasses.dataclass(frozen=True)
class C4Quality:
    """``c4-quality`` in the corpus config: datatrove's ``C4QualityFilter`` as FineWeb ran it."""

    on: bool = False
    remove_citations: bool = True
    filter_no_terminal_punct: bool = False
    min_num_sentences: int = setting(5, OFF_OR_NON_NEGATIVE_INT)
    min_words_per_line: int = setting(3, NON_NEGATIVE_INT)
    max_word_length: int = setting(1000, OFF_OR_POSITIVE_INT)
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True


_C4_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_C4_END_PUNCTUATION = (".", "?", "!", '"', "'")
_C4_POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
              "use cookies")
_C4_POLICY_FOUND = re.compile("|".join(map(re.escape, _C4_POLICY)))  # any of them, in one pass


def c4_quality(rules: C4Quality, page: Document) -> Verdict:
    """datatrove's ``C4QualityFilter`` (lines split on line breaks): the page with its kept
    lines, or its reason (``lorem_ipsum``, ``curly_bracket``, ``too_few_sentences``)."""
    kept: list[str] = []
    for original in page.text.splitlines():
        original = original.strip()
        cited = rules.remove_citations and "[" in original  # (each citation pattern opens with one)
        line = _C4_CITATION.sub("", original) if cited else original
        # the line-skipping tests before the first that can drop the page, cheapest first (each
        # only skips a line, so their order does not change the verdict): the words are the line's
        # before citations go, the punctuation its end after
        if rules.filter_no_terminal_punct and (not line.endswith(_C4_END_PUNCTUATION) or line.endswith("...")):
            continue
        words = original.split()
        if rules.max_word_length != -1 and max(map(len, words), default=0) > rules.max_word_length:
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
        if rules.filter_policy and _C4_POLICY_FOUND.search(lower):
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


STEP = page_step("c4-quality", c4_quality, "[C4 quality, datatrove's]", settings=C4Quality,
                 flow="c4 quality", preflight=english_words)
