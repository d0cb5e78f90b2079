"""fastText's supervised ``predict`` compiled by numba: the label and the probability of the
``fasttext`` module, bit for bit, for a fraction of its CPU.

Why: language ID is half of the C4 chain's CPU, and fastText spends little of it on the model.
``perf`` on fasttext-predict over one distinct copy of the crawl (5,351 pages, lid.176.ftz):
41% in ``Dictionary::pushHash`` (two ``std::unordered_map`` lookups for every character n-gram
of the pruned model), 15% in ``computeSubwords`` building a ``std::string`` per n-gram, 9% in
malloc, free and string copies, 5% in the product-quantized sums themselves.

What is kept exactly (fastText 0.9.2 as fasttext-predict builds it; each function names the
C++ it follows):

- the tokens of ``Dictionary::readWord`` over the UTF-8 bytes of the text, given as
  ``fasttext``'s ``predict`` is given it (newlines made spaces, one newline appended): the
  separators are space, ``\\n``, ``\\r``, ``\\t``, ``\\v``, ``\\f`` and NUL, and the line ends with
  ``</s>``, or at the first literal ``</s>`` token;
- the rows of ``Dictionary::getLine``, in its order: an in-vocabulary word's row then its
  character n-grams', an out-of-vocabulary word's n-grams' (FNV-1a over signed bytes, n counted
  in characters, the pruned model's index), tokens starting with ``__label__`` skipped, word
  n-grams after the last token;
- the arithmetic, on float32 in the same order: the hidden vector summed row by row (a product
  quantized row as its centroids times its quantized norm) and scaled by ``float(1.0 / n)``;
  the hierarchical softmax's depth-first search with its pruning and the k=1 heap's rule (a
  later leaf that ties the best replaces it), or the softmax; ``expf`` and ``log`` of the C
  library (numba lowers ``math.exp`` of a float32 and ``math.log`` of a float64 to them), with
  every double/float conversion where the C++ makes it.

A token met before is not worked out again (:class:`TokenCache`): its rows, found once, are
added again in the same order, so the float32 sums are the same, and the hashing of its n-grams
(most of them in no row of the pruned model) is skipped: language ID on one copy of the crawl
(5,351 raw pages, 8.4 million tokens, 670,000 distinct) took 10-12 CPU s uncached, 5-6.7 cached.
A cache of summed vectors per word would not do: it changes the order of the float additions.
The per-token loop and its helpers are compiled without numba's reference counts
(c4forge/core/jit.py: the atomic counts of the arrays passed to each helper call were a quarter of
the CPU): one copy 4.0 -> 2.2 CPU s, the same copy again (every token cached) 2.7 -> 1.6.

What it does not cover falls back to the ``fasttext`` module (:func:`load` returns None):
the negative-sampling and one-vs-all losses, a quantized output matrix, unsupervised models; a
NaN in a dot product (fastText raises) is handed back to fastText too.
tests/test_fasttext_numba.py compares the two on every page of the shared crawl and on model
files written to cover the rest (dense and quantized, pruned, both losses, word n-grams, the
version-11 format, tokens that are labels or ``</s>``).

The kernels are compiled on first use (numba's import costs 0.35-0.6 CPU s, which a process that
never predicts should not pay) and cached on disk.
"""
from __future__ import annotations

import functools
import math
import struct
import threading
from typing import NamedTuple, Optional

import numpy as np

from c4forge.core.jit import njit, numba_available

MAGIC = 793712314
MAX_VERSION = 12
HS, SOFTMAX = 1, 3  # fastText's loss_name
SUPERVISED = 3  # fastText's model_name::sup
KSUB = 256  # ProductQuantizer's 1 << nbits
EOS = b"</s>"
_EOS_BYTES = np.frombuffer(EOS, dtype=np.uint8)  # constants of the compiled kernel
_LABEL_BYTES = np.frombuffer(b"__label__", dtype=np.uint8)  # Args::label, which model files do not store
EXPANDED_LIMIT = 64 << 20  # bytes: a quantized input matrix up to this size is expanded to float32
NO_LABEL, NAN = -1, -2  # the kernel's answers besides a label index

# Positions in Model.ints.
DIM, MINN, MAXN, BUCKET, WORD_NGRAMS, LOSS, NWORDS, NLABELS, PRUNED, QUANT, QNORM, NSUBQ, DSUB, LASTDSUB = range(14)


class Model(NamedTuple):
    """A supervised fastText model as arrays: the compiled predict's arguments after the text."""

    ints: np.ndarray  # int64, at the positions above; PRUNED: -1 not pruned, else the entries
    word_bytes: np.ndarray  # uint8: every dictionary entry's bytes, one after another
    word_starts: np.ndarray  # int64[size + 1]
    word_types: np.ndarray  # int8: 0 word, 1 label
    word_table: np.ndarray  # int32: fastText's word2int_ (FNV hash, linear probing)
    prune_keys: np.ndarray  # int32: n-gram bucket -> row, open addressing (-1: empty slot)
    prune_rows: np.ndarray  # int32
    dense_input: np.ndarray  # float32[rows, dim] (no rows when quantized)
    codes: np.ndarray  # uint8[rows * nsubq]
    centroids: np.ndarray  # float32[dim * 256]
    norm_codes: np.ndarray  # uint8[rows]
    norm_centroids: np.ndarray  # float32[256]
    output: np.ndarray  # float32[nlabels - 1 (hs) or nlabels (softmax), dim]
    tree_left: np.ndarray  # int32[2 * nlabels - 1] (hs: Huffman tree's children, -1 at leaves)
    tree_right: np.ndarray  # int32


class TokenCache(NamedTuple):
    """The input rows of the tokens seen before, in the order ``getLine`` adds them (the word's
    row, then its character n-grams' found in the pruned index), so that a token met again is
    its rows added again: no FNV over each n-gram, no bucket modulo, no pruned-index probe. The
    hidden vector gets the same rows in the same order, so the same float32 sums: bit for bit.
    Open addressing on the token's FNV hash (``Dictionary::hash``), at most half full; once an
    array is full no token is added, and the cache is emptied before the next text (the common
    tokens come back within a page or two; a cache that kept its first tokens would serve a
    stream of new pages less and less)."""

    table: np.ndarray  # int32[2 * entries]: entry, or -1
    hashes: np.ndarray  # uint32[entries]: the token's FNV hash
    byte_starts: np.ndarray  # int32[entries + 1]: the token's bytes in token_bytes
    token_bytes: np.ndarray  # uint8
    row_starts: np.ndarray  # int32[entries + 1]: the token's rows in rows
    rows: np.ndarray  # int32
    labels: np.ndarray  # bool[entries]: the token is a label (getLine skips it)
    used: np.ndarray  # int64[2]: entries held; 1 once a token found no room (then emptied)


CACHE_ENTRIES = 1 << 21  # distinct tokens a thread keeps (~90 MB; one copy of the crawl has 670,000)
CACHE_TOKEN_BYTES = 64  # longer tokens are rarely met twice: worked out each time


def token_cache(entries: int = CACHE_ENTRIES) -> TokenCache:
    """An empty cache for ``entries`` tokens (0: none kept; rounded up to a power of two), its
    pools sized for tokens of 12 bytes and 4 rows on average (lid.176 on the crawl: 10 and 3; a
    pool that fills counts as a full cache, as ``entries`` does)."""
    entries = 1 << (entries - 1).bit_length() if entries > 0 else 0  # a power of two: the table's mask
    return TokenCache(np.full(max(2 * entries, 1), -1, np.int32), np.zeros(entries, np.uint32),
                      np.zeros(entries + 1, np.int32), np.zeros(12 * entries, np.uint8),
                      np.zeros(entries + 1, np.int32), np.zeros(4 * entries, np.int32),
                      np.zeros(entries, np.bool_), np.zeros(2, np.int64))


class Predictor:
    """``predict(text)`` as the ``fasttext`` module's ``predict(text.replace("\\n", " "), k=1)``.
    Each thread has its own :class:`TokenCache` (the kernel fills it without the GIL)."""

    def __init__(self, model: Model, labels: list[str], cache_entries: int = CACHE_ENTRIES) -> None:
        self.model = model
        self.labels = labels
        self.kernel = kernel()
        self.cache_entries = cache_entries
        self._local = threading.local()

    def cache(self) -> TokenCache:
        """This thread's token cache (made on its first prediction)."""
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = token_cache(self.cache_entries)
        return cache

    def predict(self, text: str) -> Optional[tuple[Optional[str], float]]:
        """(label with its ``__label__`` prefix, probability); (None, 0.0) where fastText gives no
        label; None where fastText raises (a NaN score, a text UTF-8 cannot encode): ask it."""
        try:
            data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        except UnicodeEncodeError:
            return None
        cache = self.cache()
        label, probability = self.kernel(data, *self.model, *cache)
        if cache.used[1]:  # full: emptied between texts
            cache.table.fill(-1)
            cache.used[:] = 0
        if label == NAN:
            return None
        if label == NO_LABEL:
            return None, 0.0
        return self.labels[label], float(probability)


def load(path: str) -> Optional[Predictor]:
    """The compiled predictor of the model file at ``path``, or None where this module does not
    cover it (see the module docstring), the file is not a readable fastText model, or numba is
    missing: the caller then uses the ``fasttext`` module, which reports a broken file."""
    try:
        with open(path, "rb") as handle:
            parsed = parse(handle.read())
    except (OSError, ValueError, struct.error):
        return None
    if parsed is None or kernel() is None:
        return None
    return Predictor(*parsed)


class _Reader:
    """Little-endian reads at a moving offset (fastText writes its host's order)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def unpack(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.offset)
        self.offset += out.nbytes
        return out


class _Dictionary(NamedTuple):
    nwords: int
    words: list[bytes]
    counts: list[int]
    types: np.ndarray
    prune: Optional[dict]  # None: not pruned


class _Input(NamedTuple):
    dense: np.ndarray
    codes: np.ndarray
    centroids: np.ndarray
    norm_codes: np.ndarray
    norm_centroids: np.ndarray
    layout: tuple  # quant, qnorm, nsubq, dsub, lastdsub


def parse(data: bytes) -> Optional[tuple[Model, list[str]]]:
    """``FastText::loadModel``: (model, labels), or None for a model this module does not cover;
    ValueError for a file that is not a fastText model."""
    read = _Reader(data)
    version, args = _read_head(read)
    dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model_name, bucket, minn, maxn, _lr = args
    if version == 11 and model_name == SUPERVISED:  # as FastText::loadModel: no subwords then
        maxn = 0
    dictionary = _read_dictionary(read)
    matrix = _read_input(read, dim, dictionary.prune is not None)
    if model_name != SUPERVISED or loss not in (HS, SOFTMAX) or read.unpack("?"):  # last: qout
        return None
    out_rows, out_cols = read.unpack("qq")
    output = read.array(np.float32, out_rows * out_cols).reshape(out_rows, out_cols)
    nwords = dictionary.nwords
    label_counts = dictionary.counts[nwords:]  # getTargetCounts: the label entries, in order
    left, right = _hs_tree(label_counts) if loss == HS else (np.zeros(0, np.int32), np.zeros(0, np.int32))
    words = dictionary.words
    pruned = -1 if dictionary.prune is None else len(dictionary.prune)
    ints = np.array([dim, minn, maxn, bucket, word_ngrams, loss, nwords, len(words) - nwords, pruned,
                     *matrix.layout], dtype=np.int64)
    word_bytes, word_starts = _packed(words)
    keys, rows = _prune_table(dictionary.prune)
    model = Model(ints, word_bytes, word_starts, dictionary.types, _word_table(words), keys, rows,
                  matrix.dense, matrix.codes, matrix.centroids, matrix.norm_codes, matrix.norm_centroids,
                  output, left, right)
    return model, [w.decode("utf-8", "replace") for w in words[nwords:]]


def labels_of(data: bytes) -> list[str]:
    """The labels (prefix included) in the dictionary at the head of a fastText model file,
    whatever its loss or layout; ValueError where it is not one."""
    read = _Reader(data)
    _read_head(read)
    dictionary = _read_dictionary(read, with_prune=False)
    return [w.decode("utf-8", "replace") for w, t in zip(dictionary.words, dictionary.types.tolist()) if t == 1]


def check_layout(data) -> None:
    """``FastText::loadModel``'s reads, by size only: a ValueError saying what does not fit
    where ``data`` (bytes, or an mmap of the file) is not one whole fastText model, so that
    fastText is never handed it (it allocates what a cut or foreign file's numbers say: a
    truncated .ftz took 7-12 GB in under a minute). Reads nothing it does not need."""
    read = _Reader(data)
    try:
        _version, args = _read_head(read)
        dim = args[0]
        if not 0 < dim <= 1 << 16:
            raise ValueError(f"dimension {dim}")
        size, nwords, nlabels = read.unpack("iii")
        _ntokens, pruneidx_size = read.unpack("qq")
        if min(size, nwords, nlabels) < 0 or nwords + nlabels != size:
            raise ValueError(f"a dictionary of {size} entries, {nwords} words and {nlabels} labels")
        offset = read.offset
        for _ in range(size):
            end = data.find(b"\0", offset)
            if end < 0:
                raise ValueError("the dictionary ends early")
            offset = end + 10
        read.offset = offset
        _skip(read, 8 * max(pruneidx_size, 0))
        _skip_matrix(read)  # the input matrix
        _skip_matrix(read)  # the output matrix
    except struct.error:
        raise ValueError("the file ends early") from None
    if read.offset != len(data):
        raise ValueError("the file ends early" if read.offset > len(data)
                         else f"{len(data) - read.offset:,} bytes follow the model")


def _skip(read: _Reader, nbytes: int) -> None:
    if nbytes < 0 or read.offset + nbytes > len(read.data):
        raise ValueError("the file ends early" if nbytes >= 0 else "a negative size")
    read.offset += nbytes


def _skip_matrix(read: _Reader) -> None:
    """A ``DenseMatrix`` or ``QuantMatrix`` (with its product quantizers), skipped."""
    if not read.unpack("?"):
        rows, cols = read.unpack("qq")
        if rows < 0 or cols < 0:
            raise ValueError(f"a {rows} x {cols} matrix")
        _skip(read, rows * cols * 4)
        return
    qnorm = read.unpack("?")
    rows, _cols, codesize = read.unpack("qqi")
    _skip(read, codesize)
    pq_dim = read.unpack("4i")[0]
    _skip(read, pq_dim * KSUB * 4)
    if qnorm:
        _skip(read, rows)
        norm_dim = read.unpack("4i")[0]
        _skip(read, norm_dim * KSUB * 4)


def _read_head(read: _Reader) -> tuple[int, tuple]:
    """``FastText::checkModel`` and ``Args::load``: (version, the twelve int args); t skipped."""
    magic, version = read.unpack("ii")
    if magic != MAGIC or version > MAX_VERSION:
        raise ValueError("not a fastText model")
    args = read.unpack("12i")
    read.unpack("d")  # t
    return version, args


def _read_dictionary(read: _Reader, with_prune: bool = True) -> _Dictionary:
    """``Dictionary::load``: entries (bytes, count, type), then the pruned n-gram index."""
    size, nwords, _nlabels = read.unpack("iii")
    _ntokens, pruneidx_size = read.unpack("qq")
    words, counts, types = [], [], []
    data, offset = read.data, read.offset
    for _ in range(size):
        end = data.index(b"\0", offset)
        count, kind = struct.unpack_from("<qb", data, end + 1)
        words.append(data[offset:end])
        counts.append(count)
        types.append(kind)
        offset = end + 10
    read.offset = offset
    prune = None
    if pruneidx_size >= 0 and with_prune:
        pairs = read.array(np.int32, 2 * pruneidx_size).reshape(-1, 2)
        prune = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))  # a later pair wins, as in the map
    return _Dictionary(nwords, words, counts, np.array(types, dtype=np.int8), prune)


def _read_input(read: _Reader, dim: int, pruned: bool) -> _Input:
    """The input matrix: ``QuantMatrix::load`` (codes, product quantizer, norms) or dense."""
    no_floats, no_bytes = np.zeros(0, np.float32), np.zeros(0, np.uint8)
    if not read.unpack("?"):
        if pruned:
            raise ValueError("a pruned fastText model must be quantized")
        rows, cols = read.unpack("qq")
        dense = read.array(np.float32, rows * cols).reshape(rows, cols)
        if cols != dim:
            raise ValueError("the input matrix's width is not dim")
        return _Input(dense, no_bytes, no_floats, no_bytes, no_floats, (0, 0, 0, 0, 0))
    qnorm = int(read.unpack("?"))
    rows, cols, codesize = read.unpack("qqi")
    codes = read.array(np.uint8, codesize)
    pq_dim, nsubq, dsub, lastdsub = read.unpack("4i")
    if cols != dim or pq_dim != dim or codesize != rows * nsubq:
        raise ValueError("the quantized input matrix does not match dim")
    centroids = read.array(np.float32, dim * KSUB)
    norm_codes, norm_centroids = no_bytes, no_floats
    if qnorm:
        norm_codes = read.array(np.uint8, rows)
        read.unpack("4i")  # the norm quantizer: dim 1, one subquantizer of width 1
        norm_centroids = read.array(np.float32, KSUB)
    quantized = _Input(np.zeros((0, dim), np.float32), codes, centroids, norm_codes, norm_centroids,
                       (1, qnorm, nsubq, dsub, lastdsub))
    if rows * dim * 4 > EXPANDED_LIMIT:
        return quantized
    return _Input(_expanded(quantized, rows, dim), no_bytes, no_floats, no_bytes, no_floats, (0, 0, 0, 0, 0))


def _expanded(matrix: _Input, rows: int, dim: int) -> np.ndarray:
    """Every quantized row as the float32 vector ``addcode`` adds, ``norm * c[n]`` product by
    product: the same float32 products, so adding a row of this matrix gives the same sums,
    from one 64-byte read instead of eight code and centroid lookups (lid.176: 3.2 MB)."""
    _, qnorm, nsubq, dsub, lastdsub = matrix.layout
    codes = matrix.codes.reshape(rows, nsubq).astype(np.int64)
    norm = matrix.norm_centroids[matrix.norm_codes] if qnorm else np.ones(rows, np.float32)
    out = np.empty((rows, dim), np.float32)
    for m in range(nsubq):
        if m == nsubq - 1:
            base, width = m * KSUB * dsub + codes[:, m] * lastdsub, lastdsub
        else:
            base, width = (m * KSUB + codes[:, m]) * dsub, dsub
        for n in range(width):
            out[:, m * dsub + n] = norm * matrix.centroids[base + n]
    return out


def _packed(words: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum([len(w) for w in words], out=starts[1:])
    return np.frombuffer(b"".join(words), dtype=np.uint8).copy(), starts


def fnv(data: bytes) -> int:
    """``Dictionary::hash``: FNV-1a over the bytes taken as signed chars."""
    h = 2166136261
    for byte in data:
        h = ((h ^ (byte | 0xFFFFFF00 if byte >= 128 else byte)) * 16777619) & 0xFFFFFFFF
    return h


def _word_table(words: list[bytes]) -> np.ndarray:
    """``word2int_`` as ``Dictionary::load`` fills it: ceil(size / 0.7) slots, linear probing."""
    size = max(1, math.ceil(len(words) / 0.7))
    table = [-1] * size
    for index, word in enumerate(words):
        slot = fnv(word) % size
        while table[slot] != -1 and words[table[slot]] != word:
            slot = (slot + 1) % size
        table[slot] = index
    return np.array(table, dtype=np.int32)


def _prune_table(prune: Optional[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The pruned index (n-gram bucket -> row) as open addressing, at most half full, so that a
    lookup reads one or two slots of a table that stays in cache (lid.176: 42,765 entries)."""
    if not prune:
        return np.full(1, -1, dtype=np.int32), np.full(1, -1, dtype=np.int32)
    slots = 1 << max(4, (2 * len(prune) - 1).bit_length())
    keys, rows = [-1] * slots, [-1] * slots
    for key, row in prune.items():
        slot = ((key * 2654435761) & 0xFFFFFFFF) & (slots - 1)
        while keys[slot] != -1:
            slot = (slot + 1) & (slots - 1)
        keys[slot], rows[slot] = key, row
    return np.array(keys, dtype=np.int32), np.array(rows, dtype=np.int32)


def _hs_tree(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``HierarchicalSoftmaxLoss::buildTree`` (Huffman over the label counts): the children."""
    osz = len(counts)
    n = max(0, 2 * osz - 1)
    count = list(counts) + [10 ** 15] * (n - osz)
    left, right = [-1] * n, [-1] * n
    leaf, node = osz - 1, osz
    for i in range(osz, n):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return np.array(left, dtype=np.int32), np.array(right, dtype=np.int32)


# The compiled kernels. Each is plain Python until :func:`kernel` rebinds its name to its
# compiled self, callees first, so that numba finds compiled callees among this module's globals.

def _sign_extended(byte) -> np.uint64:
    """``uint32_t(int8_t(c))`` as a uint64 (the hash arithmetic stays in uint64 in numba)."""
    value = np.uint64(byte)
    if value >= np.uint64(128):
        value |= np.uint64(0xFFFFFF00)
    return value


def _fnv_step(h, byte):
    return ((h ^ _sign_extended(byte)) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)


def _lookup_word(token, length, h, word_bytes, word_starts, word_table):
    """``Dictionary::getId``: the entry of ``token[:length]``, or -1."""
    size = np.uint64(word_table.shape[0])
    slot = np.int64(h % size)
    while True:
        wid = word_table[slot]
        if wid == -1:
            return -1
        if _same_bytes(token, length, word_bytes, word_starts, wid):
            return wid
        slot = np.int64((np.uint64(slot) + np.uint64(1)) % size)


def _same_bytes(token, length, stored, starts, entry):
    """Whether the bytes ``stored[starts[entry]:starts[entry + 1]]`` are ``token[:length]``."""
    start = starts[entry]
    if starts[entry + 1] - start != length:
        return False
    for k in range(length):
        if stored[start + k] != token[k]:
            return False
    return True


def _pruned_row(bucket_id, prune_keys, prune_rows):
    """``pruneidx_.at(id)`` or -1 where ``pruneidx_.count(id)`` is 0."""
    mask = np.uint64(prune_keys.shape[0] - 1)
    slot = np.int64((np.uint64(bucket_id) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF) & mask)
    while True:
        key = prune_keys[slot]
        if key == bucket_id:
            return np.int64(prune_rows[slot])
        if key == -1:
            return np.int64(-1)
        slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)


def _push_hash(bucket_id, ints, prune_keys, prune_rows):
    """``Dictionary::pushHash``: the input row of an n-gram bucket, or -1 where it has none."""
    pruned = ints[PRUNED]
    if pruned == 0 or bucket_id < 0:
        return np.int64(-1)
    if pruned > 0:
        bucket_id = _pruned_row(bucket_id, prune_keys, prune_rows)
        if bucket_id < 0:
            return np.int64(-1)
    return ints[NWORDS] + bucket_id


def _add_row(hidden, row, ints, dense_input, codes, centroids, norm_codes, norm_centroids):
    """``hidden.addRow(*wi_, row)``: a dense row, or ``QuantMatrix::addRowToVector`` (the
    product quantizer's ``addcode`` with the row's norm as alpha)."""
    if ints[QUANT] == 0:
        for j in range(hidden.shape[0]):
            hidden[j] += dense_input[row, j]
        return
    norm = np.float32(1.0)
    if ints[QNORM] != 0:
        norm = norm_centroids[norm_codes[row]]
    nsubq, dsub, lastdsub = ints[NSUBQ], ints[DSUB], ints[LASTDSUB]
    for m in range(nsubq):
        code = np.int64(codes[nsubq * row + m])
        if m == nsubq - 1:
            base, width = m * KSUB * dsub + code * lastdsub, lastdsub
        else:
            base, width = (m * KSUB + code) * dsub, dsub
        for n in range(width):
            hidden[m * dsub + n] += norm * centroids[base + n]


def _subword_rows(word, length, ints, prune_keys, prune_rows, out, at):
    """``Dictionary::computeSubwords`` of ``word[:length]`` (``<token>``): the rows found, in
    order, written to ``out`` from ``at``; returns where they end."""
    minn, maxn, bucket = ints[MINN], ints[MAXN], np.uint64(ints[BUCKET])
    for i in range(length):
        if (word[i] & 0xC0) == 0x80:
            continue
        h = np.uint64(2166136261)
        j, n = i, 1
        while j < length and n <= maxn:
            h = _fnv_step(h, word[j])
            j += 1
            while j < length and (word[j] & 0xC0) == 0x80:
                h = _fnv_step(h, word[j])
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == length)):
                row = _push_hash(np.int64(h % bucket), ints, prune_keys, prune_rows)
                if row >= 0:
                    out[at] = row
                    at += 1
            n += 1
    return at


def _cached_entry(h, token, length, table, hashes, byte_starts, token_bytes):
    """The cache's entry of ``token[:length]`` (hash ``h``), or -(its free slot) - 1."""
    mask = np.uint64(table.shape[0] - 1)
    slot = np.int64((h * np.uint64(2654435761)) & mask)
    while True:
        entry = table[slot]
        if entry == -1:
            return -slot - 1
        if hashes[entry] == h and _same_bytes(token, length, token_bytes, byte_starts, entry):
            return np.int64(entry)
        slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)


def _remember(slot, h, token, length, found, count, is_label, table, hashes, byte_starts, token_bytes,
              row_starts, rows, labels, used):
    """Keep a token's rows in the cache where every array has room (else say it is full)."""
    entry = used[0]
    if length > CACHE_TOKEN_BYTES:
        return
    if entry >= hashes.shape[0]:
        used[1] = 1
        return
    byte_at, row_at = byte_starts[entry], row_starts[entry]
    if byte_at + length > token_bytes.shape[0] or row_at + count > rows.shape[0]:
        used[1] = 1
        return
    for k in range(length):
        token_bytes[byte_at + k] = token[k]
    for k in range(count):
        rows[row_at + k] = found[k]
    byte_starts[entry + 1], row_starts[entry + 1] = byte_at + length, row_at + count
    hashes[entry], labels[entry], table[slot] = h, is_label, entry
    used[0] = entry + 1


def _add_word_ngrams(hidden, hashes, count, ints, prune_keys, prune_rows, dense_input, codes, centroids,
                     norm_codes, norm_centroids):
    """``Dictionary::addWordNgrams``: ``uint64_t h = hashes[i]`` (int32, sign-extended), then
    ``h * 116049371 + hashes[j]`` for the next n - 1 words; returns the rows added."""
    n, bucket = ints[WORD_NGRAMS], np.uint64(ints[BUCKET])
    added = 0
    for i in range(count):
        h = hashes[i]
        for j in range(i + 1, min(count, i + n)):
            h = h * np.uint64(116049371) + hashes[j]
            row = _push_hash(np.int64(h % bucket), ints, prune_keys, prune_rows)
            if row >= 0:
                _add_row(hidden, row, ints, dense_input, codes, centroids, norm_codes, norm_centroids)
                added += 1
    return added


def _starts_with(token, length, prefix) -> bool:
    if length < prefix.shape[0]:
        return False
    for k in range(prefix.shape[0]):
        if token[k] != prefix[k]:
            return False
    return True


def _is_separator(byte) -> bool:
    """``Dictionary::readWord``'s separators."""
    return byte == 32 or byte == 10 or byte == 13 or byte == 9 or byte == 11 or byte == 12 or byte == 0


def _std_log(x) -> np.float32:
    """``real std_log(real x) { return std::log(x + 1e-5); }``"""
    return np.float32(math.log(np.float64(np.float32(x)) + 1e-5))


def _dot_row(output, row, hidden):
    """``DenseMatrix::dotRow``: float32 sum in order."""
    d = np.float32(0.0)
    for j in range(hidden.shape[0]):
        d += output[row, j] * hidden[j]
    return d


def _best_hs(hidden, output, tree_left, tree_right, nlabels, threshold):
    """``HierarchicalSoftmaxLoss::dfs`` for k=1, left subtree first: (leaf, log score), leaf -1
    where every leaf was pruned, NAN where a dot product was NaN."""
    stack_node = np.empty(2 * nlabels + 2, np.int64)
    stack_score = np.empty(2 * nlabels + 2, np.float32)
    stack_node[0], stack_score[0], top = 2 * nlabels - 2, np.float32(0.0), 1
    best, best_score = np.int64(NO_LABEL), np.float32(0.0)
    floor = _std_log(threshold)
    while top > 0:
        top -= 1
        node, score = stack_node[top], stack_score[top]
        if score < floor or (best >= 0 and score < best_score):
            continue
        if tree_left[node] == -1 and tree_right[node] == -1:
            best, best_score = node, score  # k=1: a leaf that was not pruned ties or beats the best
            continue
        f = _dot_row(output, node - nlabels, hidden)
        if f != f:
            return np.int64(NAN), np.float32(0.0)
        f = np.float32(1.0 / np.float64(np.float32(1.0) + math.exp(-f)))
        stack_node[top], stack_score[top] = tree_right[node], score + _std_log(f)
        stack_node[top + 1], stack_score[top + 1] = tree_left[node], score + _std_log(np.float32(1.0 - np.float64(f)))
        top += 2
    return best, best_score


def _best_softmax(hidden, output, nlabels, threshold):
    """``SoftmaxLoss::computeOutput`` then ``Loss::findKBest`` for k=1: (label, log score)."""
    scores = np.empty(nlabels, np.float32)
    for i in range(nlabels):
        scores[i] = _dot_row(output, i, hidden)
        if scores[i] != scores[i]:
            return np.int64(NAN), np.float32(0.0)
    top = scores[0]
    for i in range(nlabels):
        top = max(scores[i], top)
    z = np.float32(0.0)
    for i in range(nlabels):
        scores[i] = np.float32(math.exp(np.float64(scores[i] - top)))
        z += scores[i]
    best, best_score = np.int64(NO_LABEL), np.float32(0.0)
    for i in range(nlabels):
        scores[i] /= z
        if scores[i] < threshold:
            continue
        score = _std_log(scores[i])
        if best >= 0 and score < best_score:
            continue
        best, best_score = np.int64(i), score
    return best, best_score


def _token_rows(word, token, length, h, is_eos, ints, word_bytes, word_starts, word_types, word_table,
                prune_keys, prune_rows, found):
    """A token not in the cache: whether it is a label, and its rows written to ``found`` in
    getLine's order (its word's row, then its n-grams'); returns (is_label, how many)."""
    wid = _lookup_word(token, length, h, word_bytes, word_starts, word_table)
    is_label = word_types[wid] == 1 if wid >= 0 else _starts_with(token, length, _LABEL_BYTES)
    count = 0
    if not is_label:
        if wid >= 0:
            found[0] = wid
            count = 1
        if not is_eos:  # initNgrams gives </s> no n-grams; addSubwords none to an unknown </s>
            word[0], word[1 + length] = 60, 62
            count = _subword_rows(word, length + 2, ints, prune_keys, prune_rows, found, count)
    return is_label, count


def _rows_buffer(data, maxn):
    """Room for one token's rows (its word's, its n-grams'), sized by the longest token."""
    longest, run = 0, 0
    for k in range(data.shape[0]):
        run = 0 if _is_separator(data[k]) else run + 1
        longest = max(longest, run)
    return np.empty((max(longest, 4) + 2) * max(maxn, 1) + 1, np.int64)


def _answer(hidden, rows, ints, output, tree_left, tree_right):
    """The hidden vector scaled by ``float(1.0 / rows)``, then the loss's best label and its
    probability (NO_LABEL where no row was added)."""
    if rows == 0:
        return np.int64(NO_LABEL), np.float32(0.0)
    scale = np.float32(1.0 / rows)
    for j in range(hidden.shape[0]):
        hidden[j] *= scale
    if ints[LOSS] == HS:
        best, score = _best_hs(hidden, output, tree_left, tree_right, ints[NLABELS], np.float32(0.0))
    else:
        best, score = _best_softmax(hidden, output, ints[NLABELS], np.float32(0.0))
    if best < 0:
        return best, np.float32(0.0)
    return best, np.float32(math.exp(score))


def _predict(data, ints, word_bytes, word_starts, word_types, word_table, prune_keys, prune_rows,
             dense_input, codes, centroids, norm_codes, norm_centroids, output, tree_left, tree_right,
             table, hashes_seen, byte_starts, token_bytes, row_starts, cached_rows, labels, used):
    """``FastText::predictLine`` for k=1 and threshold 0 on ``data + b"\\n"`` (newlines in ``data``
    taken as spaces): (label index or NO_LABEL or NAN, ``expf`` of its log score). A token's
    rows come from the :class:`TokenCache` (the arguments after the model) where it is there,
    and go into it where it is not."""
    hidden = np.zeros(ints[DIM], np.float32)
    word = np.empty(data.shape[0] + 6, np.uint8)  # "<" + token + ">", or "</s>"
    hashes = np.empty(data.shape[0] // 2 + 2, np.uint64)
    found = _rows_buffer(data, ints[MAXN])
    rows = _sum_rows(data, ints, word_bytes, word_starts, word_types, word_table, prune_keys, prune_rows,
                     dense_input, codes, centroids, norm_codes, norm_centroids, table, hashes_seen, byte_starts,
                     token_bytes, row_starts, cached_rows, labels, used, hidden, word, hashes, found)
    return _answer(hidden, rows, ints, output, tree_left, tree_right)


def _sum_rows(data, ints, word_bytes, word_starts, word_types, word_table, prune_keys, prune_rows, dense_input,
              codes, centroids, norm_codes, norm_centroids, table, hashes_seen, byte_starts, token_bytes, row_starts,
              cached_rows, labels, used, hidden, word, hashes, found):
    """``getLine`` and the rows' sum into ``hidden`` (:func:`_predict`'s buffers: ``word``,
    ``hashes``, ``found``): returns how many rows were added. Compiled without reference counts
    (c4forge/core/jit.py), as every helper it calls per token."""
    rows = np.int64(0)
    nhashes = 0
    i, end = 0, data.shape[0]
    while True:
        while i < end and _is_separator(data[i]):
            i += 1
        start = i
        while i < end and not _is_separator(data[i]):
            word[1 + i - start] = data[i]
            i += 1
        length = i - start
        if length == 0:  # the appended newline: readWord's "</s>"
            for k in range(4):  # a loop, not a slice assignment: no reference counts here
                word[1 + k] = _EOS_BYTES[k]
            length = 4
        token = word[1:1 + length]
        h = np.uint64(2166136261)
        for k in range(length):
            h = _fnv_step(h, token[k])
        is_eos = length == 4 and _starts_with(token, length, _EOS_BYTES)
        entry = np.int64(-1)
        if not is_eos:
            entry = _cached_entry(h, token, length, table, hashes_seen, byte_starts, token_bytes)
        if entry >= 0:
            is_label = labels[entry]
            for k in range(row_starts[entry], row_starts[entry + 1]):
                _add_row(hidden, cached_rows[k], ints, dense_input, codes, centroids, norm_codes, norm_centroids)
            rows += row_starts[entry + 1] - row_starts[entry]
        else:
            is_label, count = _token_rows(word, token, length, h, is_eos, ints, word_bytes, word_starts, word_types,
                                          word_table, prune_keys, prune_rows, found)
            if not is_label:
                for k in range(count):
                    _add_row(hidden, found[k], ints, dense_input, codes, centroids, norm_codes, norm_centroids)
                rows += count
            if not is_eos:
                _remember(-entry - 1, h, token, length, found, count, is_label, table, hashes_seen, byte_starts,
                          token_bytes, row_starts, cached_rows, labels, used)
        if not is_label:
            hashes[nhashes] = h | np.uint64(0xFFFFFFFF00000000) if h >= np.uint64(0x80000000) else h
            nhashes += 1
        if is_eos:
            break
    if ints[WORD_NGRAMS] > 1:
        rows += _add_word_ngrams(hidden, hashes, nhashes, ints, prune_keys, prune_rows, dense_input, codes,
                                 centroids, norm_codes, norm_centroids)
    return rows


_KERNELS = ("_sign_extended", "_fnv_step", "_same_bytes", "_lookup_word", "_pruned_row", "_push_hash", "_add_row",
            "_subword_rows", "_cached_entry", "_remember", "_add_word_ngrams", "_starts_with", "_is_separator",
            "_token_rows", "_sum_rows", "_std_log", "_dot_row", "_best_hs", "_best_softmax", "_rows_buffer", "_answer",
            "_predict")
# Those that allocate keep numba's reference counts; the per-token ones go without (c4forge/core/jit.py:
# with them, a quarter of language ID's CPU was the atomic counts of the arrays each call passes).
_COUNTED = ("_best_hs", "_best_softmax", "_rows_buffer", "_answer", "_predict")


@functools.lru_cache(maxsize=1)
def kernel():
    """The compiled ``_predict`` (cached on disk), or None without numba."""
    if not numba_available():
        return None
    compiled = globals()
    for name in _KERNELS:
        compiled[name] = njit(compiled[name], counted=name in _COUNTED, nogil=True)
    return compiled["_predict"]
