"""MinHash signatures and LSH band keys for near-duplicate detection, vectorised in numpy.

Shingles are word n-grams (default 5) of a normalised text: lowercased, every digit folded to
``0``, punctuation removed, whitespace collapsed (FineWeb/datatrove's normalisation). The
values are defined in numpy over whole batches of documents, with no Python loop per word:

- word hashes: each byte b_i of the batch's normalised text gets b_i * P^i (mod 2^64); a prefix
  sum turns any word's polynomial hash into (C[end] - C[start]) * P^-start, using the inverse of
  the odd base P modulo 2^64; a splitmix64 finaliser mixes the result;
- shingle hashes combine n consecutive word hashes with fixed odd multipliers, only inside a
  document (a document shorter than n words is one shingle);
- signatures: each shingle hash is cut to 32 bits x; permutation k maps it to
  (a_k * x + b_k) mod 2^32 with a_k odd (a bijection of the 32-bit space; x is already a mixed
  hash, so these behave as random permutations - the precision/recall benchmark checks it).

Every step also has a numba-compiled loop that computes the same values in one pass without
the numpy path's temporaries (the separators, :func:`_separator_loop`; the word hashes, Horner's
rule per word, :func:`_word_hash_loop`; the shingles, :func:`_shingle_loop`; the minima,
:func:`_min_hash_loop`, the 112 running minima in registers). They run wherever numba is
installed (a dependency): the signature step went from 3.4 to about 1 CPU s on the 13,541 pages
of the 4x stage benchmark, the numpy word hashes and shingles having been two thirds of it. The
numpy path stays as the definition and the fallback; both give identical values (tested on
every separator and on the shared crawl), so the choice never changes a dedup decision.

Band keys: the signature is cut into ``bands`` bands of ``rows`` values; two documents become
candidates when any band is equal. With 14 x 8 (FineWeb's setting) the chance that a pair is
caught is 1 - (1 - s^8)^14 for Jaccard similarity s; see :func:`match_probability`.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable, Sequence
from typing import Optional

import numpy as np

from c4forge.core.jit import njit, numba_available
from c4forge.core.settings import NON_NEGATIVE_INT, POSITIVE_INT, UNIT_INTERVAL, setting

_MASK64 = (1 << 64) - 1
_BASE = 0x100000001B3  # odd: invertible modulo 2^64
_BASE_INV = pow(_BASE, -1, 1 << 64)
# One translate table does the whole normalisation after lowercasing: ASCII punctuation and
# whitespace and common Unicode punctuation/spaces become a space, ASCII digits become "0".
# (Other Unicode digits and punctuation stay inside words.)
_UNICODE_SEPARATORS = ("\u00a0\u2009\u200a\u200b\u202f\u3000\u2028\u2029\u0085"
                       "\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a\u2013\u2014\u2026"
                       "\u2022\u00b7\u00a1\u00bf\u3001\u3002\uff0c\uff01\uff1f\uff1a\uff1b"
                       "\uff08\uff09\u3010\u3011\u300a\u300b\u300c\u300d\u300e\u300f")
_ASCII_MAP = np.arange(256, dtype=np.uint8)
for _c in range(128):
    if not (chr(_c).isalnum() or chr(_c) == "_"):
        _ASCII_MAP[_c] = 32
_ASCII_MAP[ord("0"):ord("9") + 1] = ord("0")
_SEP_CODES = {2: [], 3: []}
for _c in _UNICODE_SEPARATORS:
    _b = _c.encode("utf-8")
    _SEP_CODES[len(_b)].append(int.from_bytes(_b, "big"))
_SEP2 = np.array(sorted(_SEP_CODES[2]), dtype=np.uint32)
_SEP3 = np.array(sorted(_SEP_CODES[3]), dtype=np.uint32)
_LEAD = np.zeros(256, dtype=bool)
for _code in _SEP_CODES[2]:
    _LEAD[_code >> 8] = True
for _code in _SEP_CODES[3]:
    _LEAD[_code >> 16] = True


@dataclasses.dataclass(frozen=True)
class MinHashConfig:
    """num_perm = bands x rows hash functions; ngram-word shingles; seed fixes the functions.

    Defaults are FineWeb's: 14 bands x 8 rows = 112 permutations, 5-gram shingles.
    threshold: candidates that share a band are linked only when their signatures agree on at
    least this share of permutations (estimated Jaccard); None links every candidate pair (pure
    LSH, as FineWeb does), which catches more pairs below the threshold.
    """

    bands: int = setting(14, POSITIVE_INT)
    rows: int = setting(8, POSITIVE_INT)
    ngram: int = setting(5, POSITIVE_INT)
    seed: int = setting(1, NON_NEGATIVE_INT)
    threshold: Optional[float] = setting(0.8, UNIT_INTERVAL)

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows


def match_probability(similarity: float, bands: int = 14, rows: int = 8) -> float:
    """Probability that LSH makes two documents of Jaccard ``similarity`` candidates."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def _separated(texts: Sequence[str], use_numba: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, start offsets): the texts lowercased, UTF-8 encoded and joined by spaces, with
    every separator turned into spaces and ASCII digits into "0"; runs of spaces remain."""
    encoded = [t.lower().encode("utf-8") for t in texts]
    starts = np.cumsum([0] + [len(e) + 1 for e in encoded[:-1]]) if encoded else np.zeros(0, np.int64)
    raw = np.frombuffer(b" ".join(encoded), dtype=np.uint8)
    kernel = separator_kernel() if use_numba else None
    if kernel is not None:
        data = np.empty_like(raw)
        kernel(raw, _ASCII_MAP, _LEAD, _SEP2, _SEP3, data)
        return data, starts
    data = _ASCII_MAP[raw]
    lead = np.flatnonzero(_LEAD[data])
    if len(lead):
        padded = np.concatenate((data, np.zeros(2, dtype=np.uint8))).astype(np.uint32)
        code2 = (padded[lead] << 8) | padded[lead + 1]
        code3 = (code2 << 8) | padded[lead + 2]
        hit2 = lead[np.isin(code2, _SEP2)]
        hit3 = lead[np.isin(code3, _SEP3)]
        for offset in range(2):
            data[hit2 + offset] = 32
        for offset in range(3):
            data[hit3 + offset] = 32
    return data, starts


def _separator_loop(raw: np.ndarray, ascii_map: np.ndarray, lead: np.ndarray, sep2: np.ndarray,
                    sep3: np.ndarray, out: np.ndarray) -> None:
    """:func:`_separated`'s bytes in two passes without temporaries: the ASCII table, then
    every 2- and 3-byte separator (read from ``raw``: the table leaves bytes >= 128 alone) to
    spaces."""
    n = len(raw)
    for i in range(n):
        out[i] = ascii_map[raw[i]]
    for i in range(n):
        if not lead[raw[i]]:
            continue
        code2 = (np.uint32(raw[i]) << np.uint32(8)) | (np.uint32(raw[i + 1]) if i + 1 < n else np.uint32(0))
        code3 = (code2 << np.uint32(8)) | (np.uint32(raw[i + 2]) if i + 2 < n else np.uint32(0))
        for code in sep2:
            if code == code2:
                out[i] = 32
                out[i + 1] = 32
        for code in sep3:
            if code == code3:
                out[i] = 32
                out[i + 1] = 32
                out[i + 2] = 32


@functools.lru_cache(maxsize=1)
def separator_kernel():
    """:func:`_separator_loop` compiled by numba (cached on disk), or None without numba."""
    return _compiled(_separator_loop)


def _compiled(function):
    """``function`` compiled by numba (cached on disk), or None where numba is missing (the
    identical numpy path runs). numba is imported on first use (c4forge/core/jit.py), not with
    this module: every process reading ``corpus.config`` (every CLI command, every engine
    worker) would pay its import whether or not it computed a signature."""
    return njit(function, nogil=True) if numba_available() else None


def normalize(text: str) -> str:
    """Lowercase, digits -> 0, punctuation removed, words joined by single spaces."""
    return " ".join(w for w in _separated([text])[0].tobytes().decode("utf-8").split(" ") if w)


# The constants of the word hash (P, then splitmix64's three) as one uint64 array, shared by
# the numpy path and the compiled loops (numba would type a Python int above 2^63 as signed).
_HASH_CONSTANTS = np.array([_BASE, 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB],
                           dtype=np.uint64)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    _, add, mul1, mul2 = _HASH_CONSTANTS
    x = x + add
    x = (x ^ (x >> np.uint64(30))) * mul1
    x = (x ^ (x >> np.uint64(27))) * mul2
    return x ^ (x >> np.uint64(31))


def _powers(base: int, n: int) -> np.ndarray:
    """base^0 .. base^(n-1) modulo 2^64, by repeated doubling of a block (no Python loop per i)."""
    out = np.empty(max(n, 1), dtype=np.uint64)
    out[0] = 1
    filled = 1
    block = np.uint64(base)
    while filled < n:
        take = min(filled, n - filled)
        np.multiply(out[:take], block, out=out[filled:filled + take])
        filled += take
        block = np.uint64((int(block) * int(block)) & _MASK64) if filled < n else block
    return out[:n]


class _PowerCache:
    """base^i and base^-i for i < n, grown on demand and shared by the threads of a process (a
    Beam SDK worker runs several bundles at once). The two arrays are swapped in as one tuple,
    and a caller slices the pair it read: a concurrent growth can never hand it an array
    shorter than it asked for (with three separate attributes, one thread's smaller arrays
    could land under another's larger count)."""

    def __init__(self) -> None:
        self.arrays: tuple[np.ndarray, np.ndarray] = (np.empty(0, dtype=np.uint64),
                                                      np.empty(0, dtype=np.uint64))

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        pw, inv = self.arrays
        if len(pw) < n:
            size = max(n, 2 * len(pw), 1 << 16)
            pw, inv = _powers(_BASE, size), _powers(_BASE_INV, size)
            self.arrays = (pw, inv)
        return pw[:n], inv[:n]


_POWERS = _PowerCache()


def word_hashes(texts: Sequence[str], use_numba: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every word of the normalised texts, number of words per text).

    Words are the maximal runs of non-space bytes of ``_separated(text)``, exactly the words of
    :func:`normalize`; their hashes are computed for the whole batch at once, in one compiled
    pass over the bytes (:func:`_word_hash_loop`) or, without numba, by the prefix sums of the
    module doc: the same values (tested).
    """
    n_texts = len(texts)
    data, text_starts = _separated(texts, use_numba)
    kernel = word_hash_kernel() if use_numba else None
    if kernel is not None:
        hashes = np.empty(len(data) // 2 + 1, dtype=np.uint64)
        counts = np.zeros(n_texts, dtype=np.int64)
        found = kernel(data, np.asarray(text_starts, dtype=np.int64), _HASH_CONSTANTS, hashes, counts)
        return hashes[:found], counts
    n = len(data)
    is_word = data != 32
    if n == 0 or not is_word.any():
        return np.empty(0, dtype=np.uint64), np.zeros(n_texts, dtype=np.int64)
    edges = np.diff(np.concatenate(([False], is_word, [False])).view(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    counts = np.bincount(np.searchsorted(text_starts, starts, side="right") - 1,
                         minlength=n_texts).astype(np.int64)
    pw, inv = _POWERS.get(n + 1)
    prefix = np.empty(n + 1, dtype=np.uint64)
    prefix[0] = 0
    np.cumsum(data.astype(np.uint64) * pw[:n], out=prefix[1:])
    raw = (prefix[ends] - prefix[starts]) * inv[starts]
    # Mix in the length so words that differ only by trailing zero bytes differ.
    return _splitmix64(raw ^ (ends - starts).astype(np.uint64)), counts


def _word_hash_loop(data: np.ndarray, text_starts: np.ndarray, constants: np.ndarray,
                    hashes: np.ndarray, counts: np.ndarray) -> int:
    """:func:`word_hashes`' values in one pass: for every word (a maximal run of bytes other
    than 32) sum_i b_i * P^(i - start) modulo 2^64, its length mixed in, through splitmix64;
    each word counted for the text it starts in. Returns the number of words written. The
    numpy path builds a uint64 prefix sum and a power table over every byte of the batch: five
    8-byte temporaries per text byte, 70% of the signature step."""
    base = constants[0]
    n = len(data)
    n_texts = len(text_starts)
    text = 0
    found = 0
    i = 0
    while i < n:
        if data[i] == 32:
            i += 1
            continue
        start = i
        h = np.uint64(0)
        power = np.uint64(1)
        while i < n and data[i] != 32:
            h += np.uint64(data[i]) * power
            power *= base
            i += 1
        x = h ^ np.uint64(i - start)
        x = x + constants[1]
        x = (x ^ (x >> np.uint64(30))) * constants[2]
        x = (x ^ (x >> np.uint64(27))) * constants[3]
        hashes[found] = x ^ (x >> np.uint64(31))
        found += 1
        while text + 1 < n_texts and text_starts[text + 1] <= start:
            text += 1
        counts[text] += 1
    return found


@functools.lru_cache(maxsize=1)
def word_hash_kernel():
    """:func:`_word_hash_loop` compiled by numba (cached on disk), or None without numba."""
    return _compiled(_word_hash_loop)


_SHINGLE_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                          0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
                          0x27D4EB2F165667C5, 0x94D049BB133111EB], dtype=np.uint64)


def shingle_hashes(words: np.ndarray, counts: np.ndarray, ngram: int,
                   use_numba: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(hash of every word n-gram inside each document, shingle count per document); compiled
    (:func:`_shingle_loop`) or in numpy, the same values."""
    n_docs = len(counts)
    doc_start = np.concatenate(([0], np.cumsum(counts)[:-1])) if n_docs else np.empty(0, np.int64)
    per_doc = np.where(counts >= ngram, counts - ngram + 1, np.minimum(counts, 1))
    total = int(per_doc.sum())
    if total == 0:
        return np.empty(0, dtype=np.uint64), per_doc
    kernel = shingle_kernel() if use_numba else None
    if kernel is not None:
        out = np.empty(total, dtype=np.uint64)
        kernel(words, np.asarray(counts, dtype=np.int64), np.asarray(per_doc, dtype=np.int64), ngram,
               _SHINGLE_MULT, _HASH_CONSTANTS, out)
        return out, per_doc
    # Start index (into `words`) of every shingle.
    offsets = np.repeat(doc_start - np.concatenate(([0], np.cumsum(per_doc)[:-1])), per_doc)
    starts = np.arange(total, dtype=np.int64) + offsets
    width = np.repeat(np.minimum(counts, ngram), per_doc)
    acc = np.zeros(total, dtype=np.uint64)
    for j in range(ngram):
        inside = width > j
        idx = np.minimum(starts + j, len(words) - 1)
        acc += np.where(inside, words[idx] * _SHINGLE_MULT[j % len(_SHINGLE_MULT)], np.uint64(0))
    return _splitmix64(acc), per_doc


def _shingle_loop(words: np.ndarray, counts: np.ndarray, per_doc: np.ndarray, ngram: int,
                  mult: np.ndarray, constants: np.ndarray, out: np.ndarray) -> None:
    """:func:`shingle_hashes`' values document by document: shingle s of a document is
    splitmix64(sum_j words[s + j] * mult[j mod 8]) over its min(count, ngram) words."""
    word = 0
    found = 0
    for d in range(len(counts)):
        width = min(counts[d], ngram)
        for s in range(per_doc[d]):
            acc = np.uint64(0)
            for j in range(width):
                acc += words[word + s + j] * mult[j % len(mult)]
            x = acc + constants[1]
            x = (x ^ (x >> np.uint64(30))) * constants[2]
            x = (x ^ (x >> np.uint64(27))) * constants[3]
            out[found] = x ^ (x >> np.uint64(31))
            found += 1
        word += counts[d]


@functools.lru_cache(maxsize=1)
def shingle_kernel():
    """:func:`_shingle_loop` compiled by numba (cached on disk), or None without numba."""
    return _compiled(_shingle_loop)


def _min_hash_loop(shingles: np.ndarray, bounds: np.ndarray, rows: np.ndarray, a: np.ndarray,
                   b: np.ndarray, out: np.ndarray) -> None:
    """out[rows[d], k] = min over document d's shingles s (x = the top 32 bits of s) of
    (a[k] * x + b[k]) mod 2^32. Takes the 64-bit shingle hashes and writes the output rows in
    place: no 32-bit copy of the shingles and no staging array (each was a few % of the step)."""
    for d in range(len(bounds) - 1):
        row = out[rows[d]]
        for s in range(bounds[d], bounds[d + 1]):
            x = np.uint32(shingles[s] >> 32)
            for k in range(len(a)):
                row[k] = min(row[k], np.uint32((a[k] * x + b[k]) & 0xFFFFFFFF))


@functools.lru_cache(maxsize=1)
def min_hash_kernel():
    """:func:`_min_hash_loop` compiled by numba (cached on disk), or None without numba."""
    return _compiled(_min_hash_loop)


class MinHasher:
    """Signatures for batches of texts under one :class:`MinHashConfig`."""

    def __init__(self, config: MinHashConfig = MinHashConfig(), chunk_elements: int = 1 << 21,
                 use_numba: bool = True) -> None:
        self.config = config
        self.use_numba = use_numba
        rng = np.random.Generator(np.random.PCG64(config.seed))
        # h_k(x) = (a_k * x + b_k) mod 2^32, a_k odd: a permutation of the 32-bit hash space.
        self.a = (rng.integers(0, 1 << 31, size=config.num_perm, dtype=np.uint32) << np.uint32(1)) | np.uint32(1)
        self.b = rng.integers(0, 1 << 32, size=config.num_perm, dtype=np.uint64).astype(np.uint32)
        self.chunk_elements = chunk_elements

    def signatures(self, texts: Sequence[str]) -> np.ndarray:
        """uint32 array (len(texts), num_perm). Empty texts get all-0xFFFFFFFF signatures."""
        words, counts = word_hashes(texts, self.use_numba)
        shingles, per_doc = shingle_hashes(words, counts, self.config.ngram, self.use_numba)
        num_perm = self.config.num_perm
        out = np.full((len(texts), num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
        present = np.flatnonzero(per_doc > 0)
        if len(present) == 0:
            return out
        bounds = np.concatenate(([0], np.cumsum(per_doc[present]))).astype(np.int64)
        kernel = min_hash_kernel() if self.use_numba else None
        if kernel is not None:
            kernel(shingles, bounds, present, self.a, self.b, out)
            return out
        shingles32 = (shingles >> np.uint64(32)).astype(np.uint32)
        # Process documents in chunks so the (shingles x permutations) block stays small.
        step = max(1, self.chunk_elements // num_perm)
        d0 = 0
        while d0 < len(present):
            d1 = d0 + 1
            while d1 < len(present) and bounds[d1 + 1] - bounds[d0] <= step:
                d1 += 1
            s0, s1 = bounds[d0], bounds[d1]
            block = np.multiply.outer(shingles32[s0:s1], self.a)
            block += self.b
            out[present[d0:d1]] = np.minimum.reduceat(block, bounds[d0:d1] - s0, axis=0)
            d0 = d1
        return out

    def band_keys(self, signature: np.ndarray) -> list[bytes]:
        """One key per band: band index + the band's rows, hashed to 16 bytes."""
        rows = self.config.rows
        keys = []
        for band in range(self.config.bands):
            chunk = signature[band * rows:(band + 1) * rows].tobytes()
            keys.append(band.to_bytes(2, "big") + hashlib.blake2b(chunk, digest_size=14).digest())
        return keys


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    return float(np.mean(sig_a == sig_b))


def shingle_set(text: str, ngram: int = 5) -> set:
    """Exact shingle set of one text (for measuring true Jaccard in tests and benchmarks)."""
    words = normalize(text).split()
    if len(words) < ngram:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + ngram]) for i in range(len(words) - ngram + 1)}


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def batched(items: Iterable, size: int) -> Iterable[list]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
