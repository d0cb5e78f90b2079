"""spaCy's suffix and infix searches asked only where a match can be (corpus/text/affix_search.py)
give the whole patterns' matches on every string."""
from __future__ import annotations

import random
import re

import pytest

from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.text import en_words
from c4forge.corpus.text.affix_search import (
    InfixSearch,
    SuffixSearch,
    first_characters,
    last_characters,
    sre_parse,
    top_level_branches,
)
from tests.conftest import shared_path
from tests.test_en_words import PIECES, edge_strings


def whole_length(pattern: re.Pattern, string: str) -> int:
    match = pattern.search(string)
    return match.end() - match.start() if match is not None else 0


def differences(search: SuffixSearch, strings) -> list:
    return [(s, search.length(s), whole_length(search.whole, s)) for s in strings
            if search.length(s) != whole_length(search.whole, s)]


def infix_differences(search: InfixSearch, strings) -> list:
    def spans(matches):
        return [m.span() for m in matches]

    return [s for s in strings if spans(search.finditer(s)) != spans(search.whole.finditer(s))]


def spacys() -> SuffixSearch:
    rules = en_words.load_rules()
    search = SuffixSearch(rules.suffix, rules.flags)
    assert search.dispatched and len(search.by_last) > 1000  # the fast path is the one tested
    return search


def spacys_infixes() -> InfixSearch:
    rules = en_words.load_rules()
    search = InfixSearch(rules.infix, rules.flags)
    assert search.starts is not None and {".", "-", "/", ","} <= search.starts
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
    assert first_characters(sre_parse.parse(r"(?<=[0-9])[+\-](?=[0-9])|\.\.+|(?:--|~)")) == frozenset("+-.~")
    assert first_characters(sre_parse.parse("a|b?")) is None


def test_spacys_suffixes_on_edge_strings():
    search = spacys()
    strings = [*PIECES, *(a + b for a in PIECES for b in PIECES[:60]), *edge_strings(20_000, seed=3)]
    found = differences(search, strings)
    assert not found, found[:5]
    infixes = spacys_infixes()
    assert not infix_differences(infixes, strings)
    assert sum(not infixes.finditer(s) for s in strings) > len(strings) // 10  # some have infixes


def test_spacys_suffixes_on_every_chunk_of_the_shared_crawl():
    search = spacys()
    chunks = set()
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for document in iter_file_documents(str(path)):
            chunks.update(document.text.split())
    assert len(chunks) > 100_000
    found = differences(search, chunks)
    assert not found, found[:5]
    infixes = spacys_infixes()
    found = infix_differences(infixes, chunks)
    assert not found, found[:5]
    assert sum(not infixes.starts.isdisjoint(c) for c in chunks) > 10_000  # both paths ran


SYNTHETIC = [
    r"(?<=[0-9])(?:km|m)$|'s$|\.\.+$|(?<=ab)c$|^x$|[.,;]$",  # lookbehinds before the window, ^, unbounded
    r"a+b$|(?:cd|e)$|(?<!a)b$|b\b$|[^a]$",  # a branch of any last character
    r"a?$|b$",  # a branch that can match nothing
    r"(?i)ab$|c$",  # flags of its own: the whole pattern
    r"x$(?#a|b)|y$",  # a comment holding '|'
]


INFIXES = [
    r"\.\.+|(?<=[0-9])[+\-](?=[0-9-])|(?<=[a-z])\.(?=[A-Z])|(?<=[a-z0-9])(?:-|--|~)(?=[a-z])|é",
    r"(?<=a)b|c+d|e(?=x)",
    r"b*|c",  # can match nothing: every string searched
    r"(?i)a|b",  # the other case starts a match too
]


def random_strings(seed: str) -> list:
    rng = random.Random(seed)
    alphabet = "abcdekmsxyABX0.,;-~'\n é"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]


@pytest.mark.parametrize("pattern", SYNTHETIC)
def test_synthetic_patterns_on_random_strings(pattern):
    search = SuffixSearch(pattern, re.UNICODE)
    found = differences(search, random_strings(pattern))
    assert not found, found[:5]


@pytest.mark.parametrize("pattern", INFIXES)
def test_synthetic_infix_patterns_on_random_strings(pattern):
    search = InfixSearch(pattern, re.UNICODE)
    assert (search.starts is None) == (pattern in INFIXES[2:])
    found = infix_differences(search, random_strings(pattern))
    assert not found, found[:5]


def test_what_cannot_be_dispatched_asks_the_whole_pattern():
    assert SuffixSearch("(?i)ab$|c$", re.UNICODE).dispatched is False  # (?i) only on its first branch
    assert SuffixSearch("ab$|c", re.UNICODE).dispatched is False  # a branch not ending in $
    assert SuffixSearch("ab$|c$", re.VERBOSE).dispatched is False
    search = SuffixSearch("ab$|c$", re.UNICODE)
    assert search.dispatched and search.length("xab") == 2 and search.length("x\nc") == 1
