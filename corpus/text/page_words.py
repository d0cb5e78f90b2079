"""A page's words and what the rules ask of each word, worked out once per page for every rule
that counts words (Gopher quality and repetition, FineWeb quality): the words' code points run
together and each word's length (from the page's chunks, corpus/text/chunk_table.py; or from the
words split by corpus/text/words.py where a chunk needs the splitter's whole pass), and per word,
over its code points at once (numpy tables, not a regex and a generator per word), whether it
holds a character outside datatrove's punctuation (Gopher's "non-symbol" words) and whether it
holds a letter (``any(c.isalpha() for c in w)``). No Python string is made per word unless a
caller asks for :meth:`PageWords.words`.

What the rules share and what they do not: the three rules split the same words (datatrove's
``split_into_words(text, "eng")``), so the chain splits a page once; the n-grams of Gopher
repetition are only its own (corpus/text/ngrams.py); the lines differ between rules (Gopher quality
``str.splitlines``, Gopher repetition ``\\n+``, FineWeb quality ``\\n`` with blank lines left
out), as datatrove defines them, so each keeps its own.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from c4forge.corpus.text.chunk_table import ChunkTable, compiled
from c4forge.corpus.text.words import PUNCTUATION_SET, by_spacy, english_words, split_into_words

UNICODE = 0x110000
BMP = 0x10000


class PageWords(NamedTuple):
    points: np.ndarray  # uint32: the words' code points, one word after another
    lengths: np.ndarray  # characters (code points) per word
    non_symbol: np.ndarray  # bool per word: a character outside datatrove's punctuation
    alpha: np.ndarray  # bool per word: a letter (str.isalpha)

    @property
    def count(self) -> int:
        return int(self.lengths.shape[0])

    def words(self) -> tuple[str, ...]:
        """The words as strings (``split_into_words``'s), made from the code points."""
        joined = self.points.tobytes().decode("utf-32-le", "surrogatepass")
        ends = np.cumsum(self.lengths).tolist()
        return tuple(joined[start:end] for start, end in zip([0, *ends[:-1]], ends))

    def present(self, words: Iterable[str]) -> int:
        """How many of the distinct ``words`` are among the page's (Gopher's stop words:
        ``len(set(words) & set(page words))``)."""
        distinct = sorted(set(words))
        kernels = compiled()
        if kernels is None:
            return len(set(distinct).intersection(self.words()))
        targets = np.frombuffer("".join(distinct).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        sizes = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
        return int(kernels[6](self.points, self.lengths, targets, sizes))


_chunk_tables: list[ChunkTable] = []


def chunk_table() -> ChunkTable:
    """This process's table of the chunks seen, for the splitter ``english_words()`` gives now:
    a new one when that splitter is (its rules reloaded, or found damaged: its error, each page)."""
    splitter = english_words()
    if not _chunk_tables or _chunk_tables[0].splitter is not splitter:
        _chunk_tables[:] = [ChunkTable(splitter)]
    return _chunk_tables[0]


@functools.lru_cache(maxsize=4)
def page_words(text: str) -> PageWords:
    """The words of ``text`` and their properties (module doc); the last few pages' are kept, so
    the rules that follow one another on an unchanged page work them out once."""
    found = None if by_spacy(text) else chunk_table().page(text)
    if found is None:
        words = split_into_words(text)
        if not words:
            empty = np.zeros(0, np.bool_)
            return PageWords(np.zeros(0, np.uint32), np.zeros(0, np.int64), empty, empty)
        points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    else:
        points, lengths = found
        if not lengths.shape[0]:
            empty = np.zeros(0, np.bool_)
            return PageWords(points, lengths, empty, empty)
    starts = np.zeros(lengths.shape[0], np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    punctuation, letters = _tables()
    beyond = points[points >= BMP]
    if beyond.size:
        _learn_letters(letters, beyond)
    return PageWords(points, lengths, np.logical_or.reduceat(~punctuation[points], starts),
                     np.logical_or.reduceat(letters[points] == 1, starts))


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Per code point: in datatrove's punctuation (bool); a letter (1, 0, or -1 not yet asked).
    Letters are asked of ``str.isalpha`` for the Basic Multilingual Plane at once (20 ms) and
    above it as pages bring them."""
    punctuation = np.zeros(UNICODE, np.bool_)
    punctuation[[ord(c) for c in PUNCTUATION_SET]] = True
    letters = np.full(UNICODE, -1, np.int8)
    letters[:BMP] = np.fromiter((chr(c).isalpha() for c in range(BMP)), dtype=np.int8, count=BMP)
    return punctuation, letters


def _learn_letters(letters: np.ndarray, points: np.ndarray) -> None:
    for point in np.unique(points[letters[points] < 0]).tolist():
        letters[point] = chr(point).isalpha()
