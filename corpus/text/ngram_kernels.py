"""The loops of corpus/text/ngrams.py, compiled by numba on first use (cached on disk): spans of a
page's code points grouped by a polynomial hash mod 2^64, every span that meets a kept one of
the same hash checked character by character (a collision costs a comparison, never a wrong
count). Plain Python until :func:`compiled` runs (numba's import is a third of a CPU second,
paid only where n-grams are counted)."""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from c4forge.core.jit import njit, numba_available

_BASE = 1_000_003
_HELPERS = ("_prefix_hashes", "_first_seen", "_same", "_top", "_repeated")
_UNCOUNTED = ("_same",)  # allocates nothing


@functools.lru_cache(maxsize=1)
def compiled() -> Optional[object]:
    """:func:`counts` compiled, with the helpers it calls (compiled first: numba resolves them
    as this module's globals), or None where numba is missing."""
    if not numba_available():
        return None
    for name in _HELPERS:  # _same, called per repeated hash, without reference counts (c4forge/core/jit.py)
        globals()[name] = njit(globals()[name], counted=name not in _UNCOUNTED, nogil=True)
    return njit(counts, nogil=True)


def counts(joined, lengths, ns, kinds):
    """For each (n, kind): kind 1, the top n-gram's characters times its count over the words
    with one space between them; kind 0, the repeated n-grams' characters over ``joined`` (the
    words' code points run together)."""
    words = lengths.shape[0]
    spaced = np.empty(joined.shape[0] + max(words - 1, 0), joined.dtype)
    starts_spaced = np.zeros(words + 1, np.int64)
    starts_joined = np.zeros(words + 1, np.int64)
    for i in range(words):
        starts_joined[i + 1] = starts_joined[i] + lengths[i]
        starts_spaced[i + 1] = starts_spaced[i] + lengths[i] + 1
        spaced[starts_spaced[i]:starts_spaced[i] + lengths[i]] = joined[starts_joined[i]:starts_joined[i + 1]]
        if i + 1 < words:
            spaced[starts_spaced[i + 1] - 1] = 32
    hashes_spaced, powers_spaced = _prefix_hashes(spaced)
    hashes_joined, powers_joined = _prefix_hashes(joined)
    out = np.zeros(ns.shape[0], np.int64)
    for k in range(ns.shape[0]):
        n = ns[k]
        grams = words - n + 1
        if grams <= 0:
            continue
        begin = np.empty(grams, np.int64)
        end = np.empty(grams, np.int64)
        for i in range(grams):
            if kinds[k] == 1:
                begin[i] = starts_spaced[i]
                end[i] = starts_spaced[i + n] - 1
            else:
                begin[i] = starts_joined[i]
                end[i] = starts_joined[i + n]
        if kinds[k] == 1:
            ids = _first_seen(spaced, hashes_spaced, powers_spaced, begin, end)
            out[k] = _top(ids, begin, end)
        else:
            ids = _first_seen(joined, hashes_joined, powers_joined, begin, end)
            out[k] = _repeated(ids, begin, end, n)
    return out


def _prefix_hashes(points):
    """Polynomial prefix hashes of the code points, mod 2^64 (uint64 arithmetic wraps)."""
    size = points.shape[0]
    hashes = np.zeros(size + 1, np.uint64)
    powers = np.ones(size + 1, np.uint64)
    for i in range(size):
        hashes[i + 1] = hashes[i] * np.uint64(_BASE) + np.uint64(points[i]) + np.uint64(1)
        powers[i + 1] = powers[i] * np.uint64(_BASE)
    return hashes, powers


def _first_seen(points, hashes, powers, begin, end):
    """For every span, the index of the first span with the same characters: an open-addressing
    table of first spans by hash, every hit checked character by character."""
    grams = begin.shape[0]
    size = 1
    while size < 2 * grams:
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.full(size, -1, np.int64)
    slot_keys = np.zeros(size, np.uint64)
    ids = np.empty(grams, np.int64)
    for i in range(grams):
        key = hashes[end[i]] - hashes[begin[i]] * powers[end[i] - begin[i]]
        at = (key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20) & mask
        while True:
            first = slots[at]
            if first < 0:
                slots[at] = i
                slot_keys[at] = key
                ids[i] = i
                break
            if slot_keys[at] == key and _same(points, begin[i], end[i], begin[first], end[first]):
                ids[i] = first
                break
            at = (at + np.uint64(1)) & mask
    return ids


def _same(points, a, a_end, b, b_end):
    if a_end - a != b_end - b:
        return False
    for k in range(a_end - a):
        if points[a + k] != points[b + k]:
            return False
    return True


def _top(ids, begin, end):
    """Counter(grams).most_common(1): the largest count, the first seen on a tie; its characters
    times its count."""
    grams = ids.shape[0]
    tally = np.zeros(grams, np.int64)
    for i in range(grams):
        tally[ids[i]] += 1
    best = 0
    for i in range(grams):
        if tally[i] > tally[best]:
            best = i
    return (end[best] - begin[best]) * tally[best]


def _repeated(ids, begin, end, n):
    """find_all_duplicate: a repeat's characters counted, and its words skipped."""
    grams = ids.shape[0]
    seen = np.zeros(grams, np.bool_)
    repeated = 0
    i = 0
    while i < grams:
        if seen[ids[i]]:
            repeated += end[i] - begin[i]
            i += n
        else:
            seen[ids[i]] = True
            i += 1
    return repeated
