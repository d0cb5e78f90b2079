"""Decontamination: pages (or their lines) that share an n-gram with an evaluation set are
removed, so the evaluations that score a corpus's model are not in its training text.

As GPT-3 did it (Brown et al. 2020, appendix C): 13-grams of normalised words (lower case,
punctuation removed, ASCII digits as 0: the words of MinHash near-dedup, corpus/dedup/minhash.py), an
overlap of one n-gram is enough. ``n``, the action (drop the page, or only the lines the matched
n-grams touch) and the sets are settings. A set is ``NAME=PATH``: a file or a folder of files,
each read into text units, every n-gram of every unit indexed (a unit of fewer than ``n`` words
gives none, as in GPT-3's 13-gram filter):

- ``.jsonl`` (also ``.gz``/``.bz2``): every string value of every record is a unit (a question,
  a choice, a GLUE sentence);
- any other file (``.txt``, ``.raw``, ``.tokens``, also compressed): every non-empty line is a
  unit (WikiText's paragraphs, HellaSwag's six lines per item).

Counters (namespace ``decontaminate``): ``filtered:contaminated`` (pages dropped),
``pages:<set>`` (pages with an n-gram of that set), ``ngrams:<set>`` (their matching n-grams),
``line-filtered:<set>`` (lines removed, with ``action=drop-lines``). A contaminated page's
sample marks the lines the matches touch (``corpus inspect``).
"""
from __future__ import annotations

import bz2
import dataclasses
import gzip
import json
import os
from collections.abc import Iterator
from typing import Optional

import numpy as np

from c4forge.core.errors import C4forgeError
from c4forge.core.io import shown_path
from c4forge.corpus.chain.verdict import Count, Verdict, drop, keep, line_counts
from c4forge.corpus.dedup.minhash import shingle_hashes, word_hashes
from c4forge.corpus.document import Document

ACTIONS = ("drop-page", "drop-lines")


class EvalSetError(C4forgeError, ValueError):
    """An evaluation set that cannot be read."""


def parse_sets(entries: tuple[str, ...]) -> list[tuple[str, str]]:
    """``NAME=PATH`` entries -> (name, path) pairs; an entry of another shape is an EvalSetError."""
    pairs = []
    for entry in entries:
        name, sep, path = entry.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise EvalSetError(f"decontaminate.sets: {entry!r} is not NAME=PATH")
        pairs.append((name.strip(), path.strip()))
    return pairs


def _open_text(path: str):
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    if path.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def read_units(path: str) -> Iterator[str]:
    """The text units of a file or of every file under a folder (module doc); a file that
    cannot be read or decoded is an EvalSetError naming it."""
    if os.path.isdir(path):
        for root, _, files in sorted(os.walk(path)):
            for name in sorted(files):
                yield from read_units(os.path.join(root, name))
        return
    if not os.path.isfile(path):
        raise EvalSetError(f"decontaminate.sets: {shown_path(path)} is not a file or folder")
    try:
        yield from _file_units(path)
    except (OSError, EOFError, ValueError) as exc:  # gzip/bz2 errors, a cut archive, I/O errors
        if isinstance(exc, EvalSetError):
            raise
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise EvalSetError(f"decontaminate.sets: cannot read {shown_path(path)} ({why})") from None


def _file_units(path: str) -> Iterator[str]:
    stem = path.removesuffix(".gz").removesuffix(".bz2")
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if stem.endswith(".jsonl"):
                try:
                    yield from _strings(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise EvalSetError(f"{shown_path(path)}:{number}: not JSON ({exc.msg})") from None
            elif line.strip():
                yield line


def ngram_hashes(texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hash of every n-gram of words that lies inside one text, the text each belongs to);
    texts of fewer than ``n`` words give none."""
    words, counts = word_hashes(texts)
    hashes, per_text = shingle_hashes(words, counts, n)
    owner = np.repeat(np.arange(len(texts)), per_text)
    full = counts[owner] >= n  # a shorter text's one shingle is not an n-gram
    return hashes[full], owner[full]


@dataclasses.dataclass
class EvalIndex:
    """Every n-gram of each evaluation set (``sets``: sorted unique 64-bit hashes per name), and
    all of them merged (``keys``, each with a bit per set that holds it in ``members``), so a
    page's n-grams are looked up once whatever the number of sets (up to 64)."""

    n: int
    sets: dict[str, np.ndarray]
    keys: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, np.uint64))
    members: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, np.uint64))

    def __post_init__(self) -> None:
        if len(self.sets) > 64:
            raise EvalSetError("decontaminate.sets: at most 64 sets")
        if not self.sets:
            return
        keys = np.concatenate(list(self.sets.values()))
        bits = np.concatenate([np.full(len(v), np.uint64(1) << np.uint64(i), np.uint64)
                               for i, v in enumerate(self.sets.values())])
        self.keys, first = np.unique(keys, return_inverse=True)
        self.members = np.zeros(len(self.keys), np.uint64)
        np.bitwise_or.at(self.members, first, bits)

    @classmethod
    def build(cls, sets: tuple[str, ...], n: int, batch: int = 4096) -> EvalIndex:
        """The index of the sets ``NAME=PATH`` name, ``n`` words per n-gram."""
        found = {}
        for name, path in parse_sets(sets):
            parts, units = [], []
            for unit in read_units(path):
                units.append(unit)
                if len(units) == batch:
                    parts.append(ngram_hashes(units, n)[0])
                    units = []
            if units:
                parts.append(ngram_hashes(units, n)[0])
            found[name] = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
            if not len(found[name]):
                raise EvalSetError(f"decontaminate.sets: {name}={shown_path(path)} holds no text of "
                                   f"{n} words or more (no {n}-gram), so it would remove nothing")
        return cls(n, found)

    def matches(self, hashes: np.ndarray) -> dict[str, np.ndarray]:
        """Per set, which of ``hashes`` it holds (a boolean mask), for the sets with any."""
        if not len(self.keys) or not len(hashes):
            return {}
        at = np.minimum(np.searchsorted(self.keys, hashes), len(self.keys) - 1)
        hit = self.keys[at] == hashes
        if not hit.any():
            return {}
        held = np.where(hit, self.members[at], np.uint64(0))
        found = {}
        for i, name in enumerate(self.sets):
            mask = (held & (np.uint64(1) << np.uint64(i))) != 0
            if mask.any():
                found[name] = mask
        return found


@dataclasses.dataclass
class PageMatches:
    """A page's lines, and for each set that matched: its n-grams and the lines they touch."""

    lines: list[str]
    ngrams: dict[str, int]
    touched: dict[str, set[int]]

    def first_line(self) -> Optional[int]:
        touched = set().union(*self.touched.values()) if self.touched else set()
        return min(touched) if touched else None


def page_matches(text: str, index: EvalIndex) -> PageMatches:
    """Where ``text`` shares n-grams with the evaluation sets (n-grams may cross lines)."""
    lines = text.split("\n")
    words, counts = word_hashes(lines)
    total = int(counts.sum())
    if total < index.n:
        return PageMatches(lines, {}, {})
    hashes, _ = shingle_hashes(words, np.array([total]), index.n)
    line_of_word = np.repeat(np.arange(len(lines)), counts)
    ngrams, touched = {}, {}
    for name, hit in index.matches(hashes).items():
        starts = np.flatnonzero(hit)
        ngrams[name] = len(starts)
        spans = (starts[:, None] + np.arange(index.n)[None, :]).ravel()
        touched[name] = set(np.unique(line_of_word[spans]).tolist())
    return PageMatches(lines, ngrams, touched)


def decontaminate(page: Document, index: EvalIndex, action: str = "drop-page") -> Verdict:
    """Keep a clean page; drop a contaminated one, or (``drop-lines``) keep its other lines."""
    found = page_matches(page.text, index)
    if not found.ngrams:
        return keep(page)
    counts = [Count("", f"pages:{name}") for name in sorted(found.ngrams)]
    counts += [Count("", f"ngrams:{name}", n) for name, n in sorted(found.ngrams.items())]
    if action == "drop-page":
        return drop("contaminated", counts)
    removed = _line_owners(found)
    kept = [line for i, line in enumerate(found.lines) if i not in removed]
    per_set = {}
    for name in removed.values():
        per_set[name] = per_set.get(name, 0) + 1
    counts += line_counts(0, sorted(per_set.items()))
    if not any(line.strip() for line in kept):
        return drop("contaminated", counts)
    return keep(page.replace(text="\n".join(kept)), counts=counts)


def _line_owners(found: PageMatches) -> dict[int, str]:
    """Each touched line, with the first set (by name) whose n-grams touch it."""
    owners: dict[int, str] = {}
    for name in sorted(found.touched):
        for line in found.touched[name]:
            owners.setdefault(line, name)
    return owners


def line_fates(text: str, index: EvalIndex, action: str) -> tuple[list[str], list[Optional[str]], Optional[int]]:
    """For the rule samples: the page's lines, each touched line's fate (the set it matches) and,
    for ``drop-page``, the first touched line (what dropped the page)."""
    found = page_matches(text, index)
    owners = _line_owners(found)
    fates = [f"line-filtered:{owners[i]}" if i in owners else None for i in range(len(found.lines))]
    return [line.strip() for line in found.lines], fates, found.first_line() if action == "drop-page" else None


def overlapping_words(text: str, index: EvalIndex) -> tuple[int, dict[str, int]]:
    """(the text's normalised words, per set the words inside an n-gram that set holds): how much
    of a training text an evaluation set overlaps (the ablation report's table)."""
    words, counts = word_hashes([text])
    total = int(counts.sum())
    if total < index.n:
        return total, {}
    hashes, _ = shingle_hashes(words, counts, index.n)
    covered = {}
    for name, hit in index.matches(hashes).items():
        starts = np.flatnonzero(hit)
        covered[name] = int(len(np.unique((starts[:, None] + np.arange(index.n)[None, :]).ravel())))
    return total, covered
