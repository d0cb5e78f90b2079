"""A page's word n-gram counts for today's rule sets, all of them in one compiled pass: what
Gopher repetition asks of its words (the most frequent 2-4-gram's characters, the characters in
repeated 5-10-grams), computed once per page for every n, exact to the definitions in
corpus/rules/quality.py (datatrove's ``find_top_duplicate`` / ``find_all_duplicate``), which stay the
reference and the path where numba is missing.

Why not strings: those definitions build one string per n-gram (``" ".join`` for the top n-gram,
``"".join`` for the repeated ones), nine passes over a page's words, ~50 million joins on the
5,351 shared pages: the largest cost of the Gopher chain once words are cheap. Here the words'
code points lie in one array; an n-gram is a span of it; spans are grouped by a polynomial hash
of their code points and every group is then checked character by character, so two n-grams
are one exactly when their strings are equal (a hash collision costs a comparison, never a
wrong count). ``"".join`` n-grams are compared on the words run together (``"a"+"bc"`` equals
``"ab"+"c"``, as datatrove's strings do); ``" ".join`` n-grams on the words with one space
between them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from c4forge.corpus.rules.quality import duplicated_ngram_chars, top_ngram_chars
from c4forge.corpus.text.ngram_kernels import compiled
from c4forge.corpus.text.page_words import PageWords


class NgramCounts(NamedTuple):
    """What Gopher repetition measures, by n: ``top[n]`` (n-grams joined by a space: the most
    frequent one's characters times its count) and ``duplicated[n]`` (joined without a space:
    the characters of repeats, a repeat's words not counted again)."""

    top: dict[int, int]
    duplicated: dict[int, int]


def ngram_counts(words: Sequence[str], top: Sequence[int], duplicated: Sequence[int],
                 use_numba: bool = True) -> NgramCounts:
    """The counts for every n asked, in one compiled call (module doc); the reference functions
    where numba is missing or ``use_numba`` is false. ``top`` n larger than the page's words
    are left out, as the rule skips them."""
    if not words or not use_numba or compiled() is None:
        top = [n for n in top if len(words) >= n]
        return NgramCounts({n: top_ngram_chars(words, n) for n in top},
                           {n: duplicated_ngram_chars(words, n) for n in duplicated})
    joined = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    return _compiled_counts(joined, lengths, top, duplicated)


def page_ngram_counts(page: PageWords, top: Sequence[int], duplicated: Sequence[int]) -> NgramCounts:
    """:func:`ngram_counts` of a page's words, from their code points and lengths as
    corpus/text/page_words.py holds them (no string per word)."""
    if not page.count or compiled() is None:
        return ngram_counts(page.words(), top, duplicated, use_numba=False)
    return _compiled_counts(page.points, page.lengths, top, duplicated)


def _compiled_counts(joined: np.ndarray, lengths: np.ndarray, top: Sequence[int],
                     duplicated: Sequence[int]) -> NgramCounts:
    top = [n for n in top if lengths.shape[0] >= n]
    ns = np.array([*top, *duplicated], dtype=np.int64)
    kinds = np.array([1] * len(top) + [0] * len(duplicated), dtype=np.int64)
    found = compiled()(joined, lengths, ns, kinds)
    return NgramCounts(dict(zip(top, found[:len(top)].tolist())),
                       dict(zip(duplicated, found[len(top):].tolist())))
