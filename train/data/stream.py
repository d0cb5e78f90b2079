"""One token directory's packed rows as an endless, addressable stream.

A row is addressed by (epoch, chunk, row); a cursor is the address of the next row to hand
out. The stream holds no cursor itself (the loader's state does), only small caches: the
current epochs' orders and the chunks packed last.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from c4forge.core.errors import C4forgeError
from c4forge.train.data.documents import TokenDocuments
from c4forge.train.data.packing import BestFitEpoch, ConcatEpoch, epoch_order

Cursor = dict[str, int]  # {"epoch", "chunk", "row"}


def start_cursor(epoch: int = 0) -> Cursor:
    return {"epoch": epoch, "chunk": 0, "row": 0}


class NotEnoughData(C4forgeError, ValueError):
    """An epoch holds fewer rows than one global batch."""


class RowStream:
    """Packed rows of one split, epoch after epoch (deterministic per seed)."""

    def __init__(self, docs: TokenDocuments, packing: str, seq_len: int, seed: int,
                 chunk_docs: int, pad_id: int) -> None:
        self.docs, self.packing, self.seq_len, self.seed = docs, packing, seq_len, seed
        self.chunk_docs, self.pad_id = chunk_docs, pad_id
        self._epochs: OrderedDict[int, object] = OrderedDict()
        self._chunks: OrderedDict[tuple[int, int], object] = OrderedDict()

    @staticmethod
    def _cached(cache: OrderedDict, key, make, keep: int):
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        value = cache[key] = make()
        while len(cache) > keep:
            cache.popitem(last=False)
        return value

    def epoch(self, epoch: int):
        def make():
            order = epoch_order(len(self.docs), self.seed, epoch)
            if self.packing == "concat":
                return ConcatEpoch(self.docs, order, self.seq_len)
            return BestFitEpoch(self.docs, order, self.seq_len, self.chunk_docs, self.pad_id)
        return self._cached(self._epochs, epoch, make, keep=2)

    def chunk(self, epoch: int, chunk: int):
        e = self.epoch(epoch)
        if self.packing == "concat":
            return e
        return self._cached(self._chunks, (epoch, chunk), lambda: e.chunk(chunk), keep=4)

    def take(self, cursor: Cursor, n: int, mode: str) -> tuple[list[tuple[int, int, int, int]], Cursor]:
        """The next ``n`` rows from ``cursor`` as segments (epoch, chunk, first row, count), and
        the cursor after them. ``mode``: "batch" (all n rows from one epoch; if the epoch ends
        first, its tail is skipped and the rows come from the next epoch), "stream" (rows run on
        across epochs), "epoch" (stop at the end of the epoch: fewer rows, maybe none)."""
        e, c, r = cursor["epoch"], cursor["chunk"], cursor["row"]
        segments: list[tuple[int, int, int, int]] = []
        need = n
        fresh = (c, r) == (0, 0)  # started at the beginning of epoch e
        taken = 0  # rows taken from epoch e
        while need:
            epoch = self.epoch(e)
            if c >= epoch.chunk_count:
                if mode == "epoch":
                    break
                if fresh and (mode == "batch" or taken == 0):
                    raise NotEnoughData(
                        f"{self.docs.directory} ({self.docs.split}) packs into fewer "
                        f"sequences than one global batch of {n}; lower data.batch_size "
                        "or data.seq_len, or add data")
                if mode == "batch":
                    segments, need = [], n
                e, c, r, fresh, taken = e + 1, 0, 0, True, 0
                continue
            available = self.chunk(e, c).rows - r
            if available <= 0:
                c, r = c + 1, 0
                continue
            k = min(available, need)
            segments.append((e, c, r, k))
            r += k
            need -= k
            taken += k
        return segments, {"epoch": e, "chunk": c, "row": r}

    def materialize(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows given as an (n, 3) array of (epoch, chunk, row) -> (tokens, doc rows)."""
        width = self.seq_len + 1
        tokens = np.empty((len(rows), width), dtype=np.int64)
        docs = np.empty((len(rows), width), dtype=np.int64)
        keys = rows[:, 0] * (1 << 32) + rows[:, 1]
        for key in np.unique(keys):
            mask = keys == key
            e, c = divmod(int(key), 1 << 32)
            tokens[mask], docs[mask] = self.chunk(e, c).materialize(rows[mask, 2])
        return tokens, docs


def expand(segments: list[tuple[int, int, int, int]]) -> np.ndarray:
    """Segments -> an (n, 3) array of row addresses (epoch, chunk, row)."""
    if not segments:
        return np.zeros((0, 3), dtype=np.int64)
    seg = np.asarray(segments, dtype=np.int64)
    counts = seg[:, 3]
    out = np.empty((int(counts.sum()), 3), dtype=np.int64)
    out[:, 0] = np.repeat(seg[:, 0], counts)
    out[:, 1] = np.repeat(seg[:, 1], counts)
    offsets = np.cumsum(counts) - counts
    out[:, 2] = np.repeat(seg[:, 2] - offsets, counts) + np.arange(len(out))
    return out
