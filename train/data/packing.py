"""Packing one epoch of documents into rows of seq_len + 1 tokens, lazily.

Each epoch shuffles the documents with a generator seeded by (seed, epoch); both packings work
on that order and on document lengths only, and read token ids when a row is materialised.

- ``concat``: the documents (each ending in EOS) laid end to end and cut into windows of
  seq_len + 1 tokens with stride seq_len; nothing is padded. Window k starts at token
  k * seq_len of that virtual stream and is found by a binary search in the cumulative lengths;
  the stream itself is never built. A document cut by a window edge continues in the next
  window as a fragment that cannot see its beginning ("cropped" tokens).
- ``best_fit``: documents are cut into pieces of at most seq_len + 1 tokens (only documents
  longer than a row have more than one piece; the later pieces are "cropped"), then each chunk
  of ``chunk_docs`` consecutive documents of the epoch's order is packed on its own, best-fit
  decreasing: pieces longest first (ties in epoch order), each into the fullest row it still
  fits (ties: the oldest row), else a new row. A chunk is packed only when a batch needs one of
  its rows, deterministically per (seed, epoch, chunk). Larger chunks pack tighter (more pieces
  to fill gaps with) and cost a little more memory and latency per chunk: see the README.

Memory per epoch: the order (int32, 4 bytes per document), and for concat the cumulative
lengths (int64, 8 bytes per document), beside TokenDocuments.lengths (4 bytes per document).
"""
from __future__ import annotations

import bisect

import numpy as np

from c4forge.train.data.documents import TokenDocuments

PACKINGS = ("concat", "best_fit")
DEFAULT_CHUNK_DOCS = 8192


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """The epoch's document order: a permutation seeded by (seed, epoch), int32 when it fits."""
    order = np.random.Generator(np.random.PCG64([seed, epoch])).permutation(n)
    return order.astype(np.int32) if n < 2 ** 31 else order


def concat_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """[starts[0], starts[0] + counts[0]) ++ [starts[1], ...) ... as one int64 array."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, counts) + np.arange(total)


class ConcatEpoch:
    """One epoch of concat packing: a single chunk of ``rows`` windows."""

    chunk_count = 1

    def __init__(self, docs: TokenDocuments, order: np.ndarray, seq_len: int) -> None:
        self.docs, self.order, self.seq_len = docs, order, seq_len
        self.cum = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(docs.lengths[order], out=self.cum[1:])
        total = int(self.cum[-1])
        self.rows = max(0, (total - 1) // seq_len)

    def chunk(self, index: int) -> ConcatEpoch:
        return self

    def materialize(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(token ids, epoch-order document index per token), both (len(rows), seq_len + 1)."""
        width = self.seq_len + 1
        at = np.asarray(rows, dtype=np.int64)[:, None] * self.seq_len + np.arange(width)
        doc = np.searchsorted(self.cum, at, side="right") - 1
        return self.docs.gather(self.order[doc], at - self.cum[doc]), doc

    def stats(self, block: int = 1 << 20) -> dict[str, int]:
        """Exact over the epoch: real target slots, cropped input tokens (their document started
        before the window), and slots; computed window by window in blocks, no stream."""
        cropped = 0
        for first in range(0, self.rows, block):
            start = np.arange(first, min(self.rows, first + block), dtype=np.int64) * self.seq_len
            doc = np.searchsorted(self.cum, start, side="right") - 1
            inside = self.cum[doc] < start
            end = np.minimum(self.cum[doc + 1], start + self.seq_len)
            cropped += int((end - start)[inside].sum())
        slots = self.rows * self.seq_len
        return {"real": slots, "cropped": cropped, "slots": slots, "rows": self.rows}


def best_fit_rows(lengths: np.ndarray, width: int) -> tuple[np.ndarray, int]:
    """Row of each piece (given longest first) under best fit: the row with the least free room
    that still holds it, the oldest on ties, else a new row. Open rows are kept as a sorted
    list of (free, row), so each piece costs one binary search. Returns (rows, row count)."""
    open_rows: list = []
    row_of = np.empty(len(lengths), dtype=np.int64)
    count = 0
    for i, need in enumerate(lengths.tolist()):
        j = bisect.bisect_left(open_rows, (need, -1))
        if j == len(open_rows):
            row, free = count, width
            count += 1
        else:
            free, row = open_rows.pop(j)
        if free > need:
            bisect.insort(open_rows, (free - need, row))
        row_of[i] = row
    return row_of, count


class PackedChunk:
    """The rows best-fit packing makes of one chunk of documents, as pieces grouped by row
    (compressed rows: row r holds pieces ``row_ptr[r]:row_ptr[r + 1]`` in placement order)."""

    def __init__(self, docs: TokenDocuments, doc_ids: np.ndarray, seq_len: int,
                 pad_id: int) -> None:
        self.docs, self.seq_len, self.pad_id = docs, seq_len, pad_id
        width = seq_len + 1
        lengths = docs.lengths[doc_ids].astype(np.int64)
        pieces = -(-lengths // width)
        first_piece = np.cumsum(pieces) - pieces
        piece_doc = np.repeat(np.asarray(doc_ids, dtype=np.int64), pieces)
        piece_start = (np.arange(int(pieces.sum())) - np.repeat(first_piece, pieces)) * width
        piece_len = np.minimum(width, np.repeat(lengths, pieces) - piece_start)
        longest_first = np.argsort(-piece_len, kind="stable")
        row_of, self.rows = best_fit_rows(piece_len[longest_first], width)
        by_row = longest_first[np.argsort(row_of, kind="stable")]
        self.piece_doc = piece_doc[by_row]
        self.piece_start = piece_start[by_row]
        self.piece_len = piece_len[by_row]
        self.row_ptr = np.zeros(self.rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(row_of, minlength=self.rows), out=self.row_ptr[1:])
        fill = np.bincount(row_of, weights=piece_len[longest_first], minlength=self.rows)
        self._stats = {"real": int(fill.sum()) - self.rows,
                       "cropped": int(piece_len[piece_start > 0].sum()),
                       "slots": self.rows * seq_len, "rows": self.rows}

    def stats(self) -> dict[str, int]:
        return dict(self._stats)

    def materialize(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(token ids padded with pad_id, piece index within the row or -1), (len(rows), width)."""
        rows = np.asarray(rows, dtype=np.int64)
        width = self.seq_len + 1
        first = self.row_ptr[rows]
        count = self.row_ptr[rows + 1] - first
        pieces = concat_ranges(first, count)
        piece_row = np.repeat(np.arange(len(rows)), count)
        plen = self.piece_len[pieces]
        before = np.cumsum(plen) - plen  # tokens of earlier pieces of this batch
        row_base = np.repeat(before[np.cumsum(count) - count], count)
        column = before - row_base
        token_piece = np.repeat(np.arange(len(pieces)), plen)
        offset = np.arange(int(plen.sum())) - np.repeat(before, plen)
        tokens = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        doc_rows = np.full((len(rows), width), -1, dtype=np.int64)
        at_row, at_column = piece_row[token_piece], column[token_piece] + offset
        tokens[at_row, at_column] = self.docs.gather(
            self.piece_doc[pieces][token_piece], self.piece_start[pieces][token_piece] + offset)
        doc_rows[at_row, at_column] = (pieces - first[piece_row])[token_piece]
        return tokens, doc_rows


class BestFitEpoch:
    """One epoch of best-fit packing: ``chunk_count`` chunks, each packed on demand."""

    def __init__(self, docs: TokenDocuments, order: np.ndarray, seq_len: int, chunk_docs: int,
                 pad_id: int) -> None:
        self.docs, self.order, self.seq_len = docs, order, seq_len
        self.chunk_docs, self.pad_id = chunk_docs, pad_id
        self.chunk_count = -(-len(order) // chunk_docs)

    def chunk(self, index: int) -> PackedChunk:
        ids = self.order[index * self.chunk_docs:(index + 1) * self.chunk_docs]
        return PackedChunk(self.docs, ids, self.seq_len, self.pad_id)
