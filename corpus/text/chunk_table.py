"""A page's word lengths from the whitespace-separated chunks it is made of, looked up in compiled
code: what the Gopher and FineWeb rules need of datatrove's words (how many, how long, their
code points) without a Python string per chunk or per word.

Why: the word splitter (corpus/text/en_words.py) works a chunk out once per process and keeps its
tokens, but a page's words built from that cache still cost a ``str.split``, a dict lookup per
chunk and a tuple of words (one crawl copy: 7 million chunks, ~1 CPU microsecond each, most of it
waiting on memory), a third of the Gopher chain's CPU. Here a page's code points are cut at
whitespace (``str.isspace``, as ``str.split``), each chunk is hashed and found in a table of the
chunks seen (the chunk's code points compared, so a hash collision costs a comparison, never a
wrong answer), and its words' lengths are gathered; only the chunks new to the process go through
the splitter.

Why the lengths are enough: a chunk's tokens partition it (affixes and infixes are substrings in
order; spaCy refuses a special case whose pieces do not spell its key), and datatrove's strip
leaves a token without whitespace as it is; so the words' code points run together are the
page's code points without its whitespace, and the lengths say where each word ends. Each chunk
is checked at insertion (its token lengths, each above 0, sum to its length), and a chunk that
fails, or that the splitter's special-case pass could change in context (``EnglishWords.unsafe``),
sends its page to :meth:`EnglishWords.words` (None from :meth:`ChunkTable.page`).
tests/test_page_words.py compares the two paths on every shared page and on generated edge strings.
"""
from __future__ import annotations

import functools
import threading
from itertools import chain
from typing import NamedTuple, Optional

import numpy as np

from c4forge.core.jit import njit, numba_available
from c4forge.corpus.text.en_words import stripped

UNICODE = 0x110000
FNV_OFFSET, FNV_PRIME = 14695981039346656037, 1099511628211
CHUNKS = 1 << 22  # distinct chunks kept, then the table starts again between pages (16 copies of the crawl: ~3 million)
_HELPERS = ("_find",)
_FULL = object()  # :meth:`ChunkTable._lookup`: no room for the page's new chunks
_KERNELS = ("cut", "insert", "gather", "without_space", "runs", "gather_runs", "present")


class Cut(NamedTuple):
    """A page's chunks: where each starts and ends (code points), its hash, its entry or -1."""

    starts: np.ndarray
    ends: np.ndarray
    hashes: np.ndarray
    entries: np.ndarray


@functools.lru_cache(maxsize=1)
def space_table() -> np.ndarray:
    """Per code point, ``str.isspace`` (every such character lies in the Basic Multilingual Plane)."""
    table = np.zeros(UNICODE, np.bool_)
    table[[c for c in range(0x10000) if chr(c).isspace()]] = True
    return table


class ChunkTable:
    """The chunks a process has seen and their words' lengths (module doc), for one splitter."""

    def __init__(self, splitter, capacity: int = CHUNKS) -> None:
        self.splitter = splitter
        self.capacity = 1 << max(1, (capacity - 1).bit_length())
        self.lock = threading.Lock()
        self.kernels = compiled()
        self._empty()

    def _empty(self) -> None:
        n = self.capacity
        self.slots = np.full(2 * n, -1, np.int64)  # at most half full: (hash >> 32) << 32 | entry
        self.hashes = np.zeros(n, np.uint64)
        self.key_starts = np.zeros(n + 1, np.int64)
        self.key_points = np.zeros(1 << 16, np.uint32)
        self.token_starts = np.zeros(n + 1, np.int64)
        self.token_lengths = np.zeros(1 << 16, np.int32)
        self.unsafe = np.zeros(n, np.bool_)
        self.used = np.zeros(1, np.int64)

    def page(self, text: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """(the words' code points run together, each word's length) of ``text``, or None where a
        chunk of it needs the splitter's whole pass (module doc) or numba is missing."""
        if self.kernels is None or not self.splitter.chunkwise:
            return None
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        with self.lock:  # a lookup and the gather after it see one table
            found = self._lookup(text, points)
            if found is _FULL:  # empty it between pages: no other page's entries are held
                self._empty()
                self.splitter.cache.clear()  # and the splitter's own (its unsafe runs' chunks)
                self.splitter.unsafe.clear()
                found = self._lookup(text, points)
        return None if found is _FULL else found

    def _lookup(self, text: str, points: np.ndarray):
        cut_, _insert, gather_, without_space_ = self.kernels[:4]
        space = space_table()
        cut = Cut(*cut_(points, space, self.slots, self.hashes, self.key_starts, self.key_points))
        missing = np.flatnonzero(cut.entries < 0)
        if missing.size and not self._learn(text, points, cut, missing):
            return _FULL
        unsafe = self.unsafe[cut.entries]
        if unsafe.any():
            lengths = self._by_runs(text, points, cut, unsafe)
            if lengths is None:
                return None
        else:
            lengths = gather_(cut.entries, self.token_starts, self.token_lengths)
        joined = without_space_(points, space)
        return (joined, lengths) if joined.shape[0] == lengths.sum() else None

    def _by_runs(self, text: str, points: np.ndarray, cut: Cut, unsafe: np.ndarray) -> Optional[np.ndarray]:
        """The word lengths of a page holding a chunk that the special-case pass may change
        in context: that pass over each run of chunks joined by single spaces that holds one
        (``EnglishWords._words_by_run``, the same runs: a lone space at the text's start or end
        belongs to its run), the table's lengths elsewhere; None where a run's words do not
        spell its text without whitespace."""
        run_of = self.kernels[4](points, cut.starts, cut.ends)
        firsts = np.flatnonzero(np.diff(run_of, prepend=-1))
        lasts = np.append(firsts[1:] - 1, run_of.shape[0] - 1)
        replaced = np.full(firsts.shape[0], -1, np.int64)
        lengths: list[int] = []
        for run in np.unique(run_of[unsafe]).tolist():
            begin, end = int(cut.starts[firsts[run]]), int(cut.ends[lasts[run]])
            if firsts[run] == 0 and text[:begin] == " ":
                begin = 0
            if lasts[run] == run_of.shape[0] - 1 and text[end:] == " ":
                end = len(text)
            piece = text[begin:end]
            words = stripped(self.splitter.tokens(piece))
            if "".join(words) != "".join(piece.split()):
                return None
            replaced[run] = len(lengths)
            lengths.extend(map(len, words))
        return self.kernels[5](cut.entries, self.token_starts, self.token_lengths, run_of, replaced,
                               np.array(lengths + [0], dtype=np.int64))

    def _learn(self, text: str, points: np.ndarray, cut: Cut, missing: np.ndarray) -> bool:
        """Work out the page's new chunks with the splitter, add them, and fill in their entries
        in ``cut``; False where the table has no room for them (nothing added then)."""
        keys = [text[start:end] for start, end in zip(cut.starts[missing].tolist(), cut.ends[missing].tolist())]
        first = dict.fromkeys(keys)  # the new chunks, in the order met
        base = int(self.used[0])
        if base + len(first) > self.capacity:
            return False
        place = {key: k for k, key in enumerate(first)}
        which = np.fromiter(map(place.__getitem__, keys), dtype=np.int64, count=len(keys))
        at = missing[np.unique(which, return_index=True)[1]]  # where each new chunk is first met
        worked = list(map(self.splitter.work_out, first))
        sizes = [list(map(len, tokens)) for tokens, _ in worked]
        counts = np.fromiter(map(len, sizes), dtype=np.int64, count=len(sizes))
        lengths = np.fromiter(chain.from_iterable(sizes), dtype=np.int32, count=int(counts.sum()))
        unsafe = np.fromiter((flag for _, flag in worked), dtype=np.bool_, count=len(worked))
        key_size = int((cut.ends[at] - cut.starts[at]).sum())
        self.key_points = _room(self.key_points, int(self.key_starts[base]) + key_size)
        self.token_lengths = _room(self.token_lengths, int(self.token_starts[base]) + lengths.shape[0])
        self.kernels[1](points, cut.starts[at], cut.ends[at], cut.hashes[at], counts, lengths, unsafe, self.slots,
                        self.hashes, self.key_starts, self.key_points, self.token_starts, self.token_lengths,
                        self.unsafe, self.used)
        cut.entries[missing] = base + which
        return True


def _room(array: np.ndarray, size: int) -> np.ndarray:
    """``array``, or a copy twice as long (or more) where it holds fewer than ``size`` items."""
    if size <= array.shape[0]:
        return array
    grown = np.zeros(max(size, 2 * array.shape[0]), array.dtype)
    grown[:array.shape[0]] = array
    return grown


# The compiled kernels: plain Python until :func:`compiled` rebinds them.

def _find(h, points, start, end, slots, hashes, key_starts, key_points):
    """The entry of ``points[start:end]`` (hash ``h``), or -(its free slot) - 1."""
    mask = np.uint64(slots.shape[0] - 1)
    slot = np.int64((h ^ (h >> np.uint64(29))) & mask)
    length = end - start
    high = np.int64(h >> np.uint64(32))
    while True:
        held = slots[slot]
        if held == -1:
            return -slot - 1
        entry = held & np.int64(0xFFFFFFFF)
        if ((held >> np.int64(32)) & np.int64(0xFFFFFFFF)) == high and hashes[entry] == h and key_starts[entry + 1] - key_starts[entry] == length:
            at = key_starts[entry]
            same = True
            for k in range(length):
                if key_points[at + k] != points[start + k]:
                    same = False
                    break
            if same:
                return np.int64(entry)
        slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)


def cut(points, space, slots, hashes, key_starts, key_points):
    """The chunks of a page's code points (maximal runs of non-whitespace), each found or not."""
    n = points.shape[0]
    most = n // 2 + 1
    starts = np.empty(most, np.int64)
    ends = np.empty(most, np.int64)
    found_hashes = np.empty(most, np.uint64)
    entries = np.empty(most, np.int64)
    count, i = 0, 0
    while i < n:
        while i < n and space[points[i]]:
            i += 1
        if i >= n:
            break
        start = i
        h = np.uint64(FNV_OFFSET)
        while i < n and not space[points[i]]:
            h = (h ^ np.uint64(points[i])) * np.uint64(FNV_PRIME)
            i += 1
        starts[count], ends[count], found_hashes[count] = start, i, h
        entry = _find(h, points, start, i, slots, hashes, key_starts, key_points)
        entries[count] = entry if entry >= 0 else -1
        count += 1
    return starts[:count], ends[:count], found_hashes[:count], entries[:count]


def insert(points, starts, ends, found_hashes, counts, lengths, flags, slots, hashes, key_starts, key_points,
           token_starts, token_lengths, unsafe, used):
    """Add new chunks (distinct, none in the table; the arrays have room): their code points,
    their tokens' lengths, whether their page needs the splitter's whole pass (``flags``, or
    tokens that do not spell the chunk)."""
    taken = 0
    for k in range(starts.shape[0]):
        entry = used[0]
        slot = _find(found_hashes[k], points, starts[k], ends[k], slots, hashes, key_starts, key_points)
        key_at = key_starts[entry]
        for j in range(starts[k], ends[k]):
            key_points[key_at + j - starts[k]] = points[j]
        key_starts[entry + 1] = key_at + ends[k] - starts[k]
        token_at = token_starts[entry]
        spelled, empty = 0, False  # the tokens partition the chunk (module doc), or its page goes elsewhere
        for j in range(counts[k]):
            token_lengths[token_at + j] = lengths[taken + j]
            spelled += lengths[taken + j]
            empty |= lengths[taken + j] == 0
        taken += counts[k]
        token_starts[entry + 1] = token_at + counts[k]
        hashes[entry] = found_hashes[k]
        unsafe[entry] = flags[k] or empty or spelled != ends[k] - starts[k]
        slots[-slot - 1] = (np.int64(found_hashes[k] >> np.uint64(32)) << np.int64(32)) | entry
        used[0] = entry + 1


def gather(entries, token_starts, token_lengths):
    """The page's words' lengths: each chunk's tokens' in turn."""
    total = 0
    for e in entries:
        total += token_starts[e + 1] - token_starts[e]
    out = np.empty(total, np.int64)
    at = 0
    for e in entries:
        for j in range(token_starts[e], token_starts[e + 1]):
            out[at] = token_lengths[j]
            at += 1
    return out


def without_space(points, space):
    """The page's code points but its whitespace."""
    out = np.empty(points.shape[0], np.uint32)
    at = 0
    for p in points:
        if not space[p]:
            out[at] = p
            at += 1
    return out[:at]


def runs(points, starts, ends):
    """Each chunk's run: a new run after any whitespace but one single space."""
    out = np.zeros(starts.shape[0], np.int64)
    for k in range(1, starts.shape[0]):
        joined = starts[k] - ends[k - 1] == 1 and points[ends[k - 1]] == 32
        out[k] = out[k - 1] if joined else out[k - 1] + 1
    return out


def gather_runs(entries, token_starts, token_lengths, run_of, replaced, lengths):
    """:func:`gather`, but a run with ``replaced[run] >= 0`` gives ``lengths`` from there (up to
    the next replaced run's, or the end) in place of its chunks' tokens."""
    ends = np.full(replaced.shape[0], lengths.shape[0] - 1, np.int64)  # the last length is padding
    following = lengths.shape[0] - 1
    for r in range(replaced.shape[0] - 1, -1, -1):
        if replaced[r] >= 0:
            ends[r] = following
            following = replaced[r]
    total = 0
    for k in range(entries.shape[0]):
        r = run_of[k]
        if replaced[r] < 0:
            total += token_starts[entries[k] + 1] - token_starts[entries[k]]
        elif k == 0 or run_of[k - 1] != r:
            total += ends[r] - replaced[r]
    out = np.empty(total, np.int64)
    at = 0
    for k in range(entries.shape[0]):
        r = run_of[k]
        if replaced[r] < 0:
            for j in range(token_starts[entries[k]], token_starts[entries[k] + 1]):
                out[at] = token_lengths[j]
                at += 1
        elif k == 0 or run_of[k - 1] != r:
            for j in range(replaced[r], ends[r]):
                out[at] = lengths[j]
                at += 1
    return out


def present(points, lengths, targets, target_lengths):
    """How many of the targets (distinct; their code points run together) are among the words."""
    seen = np.zeros(target_lengths.shape[0], np.bool_)
    target_starts = np.zeros(target_lengths.shape[0], np.int64)
    for t in range(1, target_lengths.shape[0]):
        target_starts[t] = target_starts[t - 1] + target_lengths[t - 1]
    at = 0
    for w in range(lengths.shape[0]):
        for t in range(target_lengths.shape[0]):
            if seen[t] or target_lengths[t] != lengths[w]:
                continue
            same = True
            for k in range(lengths[w]):
                if points[at + k] != targets[target_starts[t] + k]:
                    same = False
                    break
            if same:
                seen[t] = True
        at += lengths[w]
    return seen.sum()


@functools.lru_cache(maxsize=1)
def compiled() -> Optional[tuple]:
    """The kernels (``_KERNELS``, in that order) compiled (cached on disk), or None without numba."""
    if not numba_available():
        return None
    for name in _HELPERS:  # called per chunk: without reference counts (c4forge/core/jit.py)
        globals()[name] = njit(globals()[name], counted=False)
    return tuple(njit(globals()[name]) for name in _KERNELS)
