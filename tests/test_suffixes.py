"""spaCy's suffix search from the branches that can end with the last character
(corpus/text/suffixes.py) gives the whole pattern's match length on every string."""
from __future__ import annotations

import random
import re

import pytest

from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.text import words
from c4forge.corpus.text.suffixes import SuffixSearch, last_characters, sre_parse, top_level_branches
from tests.conftest import shared_path
from tests.test_en_words import PIECES, edge_strings


def whole_length(pattern: re.Pattern, string: str) -> int:
    match = pattern.search(string)
    return match.end() - match.start() if match is not None else 0


def differences(search: SuffixSearch, strings) -> list:
    return [(s, search.length(s), whole_length(search.whole, s)) for s in strings
            if search.length(s) != whole_length(search.whole, s)]


def spacys() -> SuffixSearch:
    pattern = words.english_words().suffix_search.__self__
    search = SuffixSearch(pattern.pattern, pattern.flags)
    assert search.dispatched and len(search.by_last) > 1000  # the fast path is the one tested
    return search


def test_branches_are_cut_outside_classes_groups_and_escapes():
    assert top_level_branches(r"a$|[|]$|(b|c)$|\|$|[]|]$|[^]|]x$") == \
        ["a$", "[|]$", "(b|c)$", r"\|$", "[]|]$", "[^]|]x$"]
    assert top_level_branches("abc") == ["abc"]


def test_last_characters_read_from_each_branch():
    def ends(text):
        return last_characters(sre_parse.parse(text))

    assert ends("'s$") == frozenset("s")
    assert ends(r"(?<=[0-9])(?:km|kg|m/s)$") == frozenset("mgs")
    assert ends(r"\.\.+$") == frozenset(".")
    assert ends("[a-c]$") == frozenset("abc")
    assert ends(r"(?<=x)a(?=$)$") == frozenset("a")
    assert ends(r"\d$") is None and ends("[^a]$") is None and ends(".$") is None  # any character
    assert ends("a?$") is None and ends("(?:a|)$") is None and ends("$") is None  # may end before


def test_spacys_suffixes_on_edge_strings():
    search = spacys()
    strings = [*PIECES, *(a + b for a in PIECES for b in PIECES[:60]), *edge_strings(20_000, seed=3)]
    found = differences(search, strings)
    assert not found, found[:5]


def test_spacys_suffixes_on_every_chunk_of_the_shared_crawl():
    search = spacys()
    chunks = set()
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for document in iter_file_documents(str(path)):
            chunks.update(document.text.split())
    assert len(chunks) > 100_000
    found = differences(search, chunks)
    assert not found, found[:5]


SYNTHETIC = [
    r"(?<=[0-9])(?:km|m)$|'s$|\.\.+$|(?<=ab)c$|^x$|[.,;]$",  # lookbehinds before the window, ^, unbounded
    r"a+b$|(?:cd|e)$|(?<!a)b$|b\b$|[^a]$",  # a branch of any last character
    r"a?$|b$",  # a branch that can match nothing
    r"(?i)ab$|c$",  # flags of its own: the whole pattern
    r"x$(?#a|b)|y$",  # a comment holding '|'
]


@pytest.mark.parametrize("pattern", SYNTHETIC)
def test_synthetic_patterns_on_random_strings(pattern):
    search = SuffixSearch(pattern, re.UNICODE)
    rng = random.Random(pattern)
    alphabet = "abcdekmsxy0.,;'\n é"
    strings = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    found = differences(search, strings)
    assert not found, found[:5]


def test_what_cannot_be_dispatched_asks_the_whole_pattern():
    assert SuffixSearch("(?i)ab$|c$", re.UNICODE).dispatched is False  # (?i) only on its first branch
    assert SuffixSearch("ab$|c", re.UNICODE).dispatched is False  # a branch not ending in $
    assert SuffixSearch("ab$|c$", re.VERBOSE).dispatched is False
    search = SuffixSearch("ab$|c$", re.UNICODE)
    assert search.dispatched and search.length("xab") == 2 and search.length("x\nc") == 1
