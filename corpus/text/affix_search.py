"""spaCy's suffix and infix searches, exact and faster: asked only where a match can be.

**Suffixes.** spaCy's English suffix pattern is one alternation of 82 branches, each ending in
``$``, and ``re.search`` tries every branch at every position of the string (5.2 us a chunk on
the shared crawl's chunks that reach the regexes). In a string without a newline ``$`` matches
only at its end, so every match ends there: its last character is the string's, and its length
is ``len(string) - start`` whichever branch matched. So, exactly:

- a branch whose match must end with a character from a set (read from its parsed form:
  ``'s$`` ends with ``s``, ``(?<=[0-9])(?:km|kg)$`` with ``m`` or ``g``, ``\\.\\.+$`` with
  ``.``) can match only a string ending with one of them; a branch this cannot tell of, or
  that can match nothing, is kept for every string. The branches kept for a last character
  are compiled together, in their order;
- where those branches match at most ``width`` characters, a match starts at or after
  ``len(string) - width``; ``pattern.search(string, pos)`` lets lookbehinds (``(?<=[0-9])``)
  and ``^`` see the whole string, so the search starts there and finds the same leftmost match.

A string holding a newline, or a pattern this cannot cut into branches ending in ``$`` (its
own flags, a verbose pattern), is asked of the whole pattern.

**Infixes.** Every match of spaCy's infix pattern starts with one of a few characters
(``.`` ``…`` ``-`` ``,`` ``:`` ``/``, symbols...): a string holding none of them has no infix,
and most chunks between their affixes are such (3.4 us a search). Where the pattern could
match nothing or start with any character, every string is searched.

tests/test_affix_search.py compares both with the whole patterns on every chunk of the shared
crawl, on edge strings and on synthetic patterns.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple, Optional

try:  # the standard library's regex parser, to read each branch's last character and width
    from re import _parser as sre_parse  # type: ignore[attr-defined]  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

MOST_CHARACTERS = 1 << 16  # a character class larger than this counts as "any character"
ANY = None  # a branch whose last character is not known


def top_level_branches(pattern: str) -> list[str]:
    """``pattern`` cut at each ``|`` outside groups, character classes and escapes."""
    branches, depth, start, at, in_class = [], 0, 0, 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            at += 1
            at += pattern.startswith("^", at)
            at += pattern.startswith("]", at)  # a ']' first in a class is itself
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:at])
            start = at + 1
        at += 1
    branches.append(pattern[start:])
    return branches


ZERO_WIDTH = {sre_parse.AT, sre_parse.ASSERT, sre_parse.ASSERT_NOT}
REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)}


def last_characters(items) -> Optional[frozenset]:
    """The characters a match of the parsed ``items`` can end with, or ANY where not known."""
    return edge_characters(items, last=True)


def first_characters(items) -> Optional[frozenset]:
    """The characters a match of the parsed ``items`` can start with, or ANY where not known."""
    return edge_characters(items, last=False)


def edge_characters(items, last: bool) -> Optional[frozenset]:
    """The characters a match of ``items`` can end (``last``) or start with, or ANY."""
    for op, av in (reversed(list(items)) if last else items):
        if op in ZERO_WIDTH:
            continue  # consumes nothing: the next item inwards gives the edge character
        if op is sre_parse.LITERAL:
            return frozenset(chr(av))
        if op is sre_parse.IN:
            return _class_characters(av)
        if op is sre_parse.SUBPATTERN:
            _, add_flags, del_flags, inner = av
            return edge_characters(inner, last) if not (add_flags or del_flags) and inner.getwidth()[0] else ANY
        if op is sre_parse.BRANCH:
            found: set = set()
            for branch in av[1]:
                ends = edge_characters(branch, last) if branch.getwidth()[0] else ANY
                if ends is ANY:
                    return ANY
                found |= ends
            return frozenset(found)
        if op in REPEATS:
            low, _, inner = av
            return edge_characters(inner, last) if low >= 1 and inner.getwidth()[0] else ANY
        return ANY
    return ANY  # matches nothing, or only zero-width items


def _class_characters(items) -> Optional[frozenset]:
    found: set = set()
    for op, av in items:
        if op is sre_parse.LITERAL:
            found.add(chr(av))
        elif op is sre_parse.RANGE and av[1] - av[0] < MOST_CHARACTERS - len(found):
            found.update(map(chr, range(av[0], av[1] + 1)))
        else:  # NEGATE, CATEGORY (\d, \w), a huge range
            return ANY
    return frozenset(found)


class Group(NamedTuple):
    search: Callable[[str, int], Optional[re.Match]]  # the compiled branches' ``search``
    width: int  # the most characters they match (unbounded: huge, so the search starts at 0)


class SuffixSearch:
    """``length(s)``: the length of ``re.compile(pattern, flags).search(s)``'s match, 0 if none."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.whole = re.compile(pattern, flags)
        self.by_last: dict[str, Optional[Group]] = {}
        self.other: Optional[Group] = None  # the branches for a last character none ends with
        branches = self._branches(pattern, flags)
        self.dispatched = branches is not None
        if branches is None:
            return
        groups: dict[tuple, Optional[Group]] = {}
        members: dict[str, list[int]] = {}
        for index, (_, _, ends) in enumerate(branches):
            for char in ends or ():
                members.setdefault(char, []).append(index)
        anywhere = [i for i, (_, _, ends) in enumerate(branches) if ends is ANY]
        self.other = self._group(branches, anywhere, flags, groups)
        for char, indices in members.items():
            self.by_last[char] = self._group(branches, sorted({*indices, *anywhere}), flags, groups)

    @staticmethod
    def _group(branches, indices: list[int], flags: int, groups: dict) -> Optional[Group]:
        key = tuple(indices)
        if key not in groups:
            chosen = [branches[i] for i in indices]
            groups[key] = Group(re.compile("|".join(text for text, _, _ in chosen), flags).search,
                                max(width for _, width, _ in chosen)) if chosen else None
        return groups[key]

    @staticmethod
    def _branches(pattern: str, flags: int) -> Optional[list[tuple[str, int, Optional[frozenset]]]]:
        """Each branch's text, most characters matched and last characters; None unless every
        branch parses alone, ends in ``$`` and sets no flags of its own."""
        if flags & (re.VERBOSE | re.IGNORECASE | re.MULTILINE):
            return None  # a comment's '|' would be cut; a letter's other case; '$' before '\n'
        try:
            whole_flags = sre_parse.parse(pattern, flags).state.flags
            found = []
            for text in top_level_branches(pattern):
                parsed = sre_parse.parse(text, flags)
                if parsed.state.flags != whole_flags or not len(parsed) or \
                        parsed[-1] != (sre_parse.AT, sre_parse.AT_END):
                    return None
                found.append((text, parsed.getwidth()[1], last_characters(parsed)))
        except (re.error, AttributeError, TypeError, IndexError, RecursionError):
            return None
        return found

    def length(self, string: str) -> int:
        if not string or not self.dispatched or "\n" in string:
            match = self.whole.search(string)
            return match.end() - match.start() if match is not None else 0
        group = self.by_last.get(string[-1], self.other)
        if group is None:
            return 0
        match = group.search(string, max(0, len(string) - group.width))
        return len(string) - match.start() if match is not None else 0


class InfixSearch:
    """``finditer(s)``: ``list(re.compile(pattern, flags).finditer(s))``; at once ``[]`` for a
    string holding no character a match can start with."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.whole = re.compile(pattern, flags)
        try:
            parsed = sre_parse.parse(pattern, flags)
            cased = parsed.state.flags & re.IGNORECASE  # a letter's other case starts a match too
            self.starts = None if cased else first_characters(parsed)
        except (re.error, AttributeError, TypeError, IndexError, RecursionError):
            self.starts = None

    def finditer(self, string: str) -> list:
        if self.starts is not None and self.starts.isdisjoint(string):
            return []
        return list(self.whole.finditer(string))
