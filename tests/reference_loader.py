"""The test oracle for train.data: the in-memory packed loader c4forge shipped before the data
path was rebuilt for scale (issue 10), kept verbatim except for two things:

- best_fit's buffer is counted in documents of the permuted order (``best_fit_buffer``
  documents, all their pieces), as the new loader's chunks are, instead of in pieces;
- it reads documents through the new :class:`train.data.TokenDocuments`.

It materialises a whole epoch in memory (about 60 bytes per token), so it only runs on small
token directories: the tests and the 100M-token comparison row of benchmarks/bench_loader.py.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from c4forge.train.data.batch import IGNORE, Batch
from c4forge.train.data.documents import TokenDocuments


def _positions_and_ids(doc_of_token: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-token position since its run of equal document ids started, and run-local ids."""
    n = len(doc_of_token)
    starts = np.ones(n, dtype=bool)
    starts[1:] = doc_of_token[1:] != doc_of_token[:-1]
    run = np.cumsum(starts) - 1
    run_start = np.flatnonzero(starts)
    positions = np.arange(n) - run_start[run]
    return positions.astype(np.int32), run.astype(np.int32)


def rows_to_batch(tokens: np.ndarray, docs: np.ndarray) -> Batch:
    """Sequences of seq_len + 1 tokens and their document rows -> inputs, shifted targets
    (IGNORE on padding), run-local document ids and restarting positions."""
    inputs, targets = tokens[:, :-1], tokens[:, 1:].copy()
    in_docs = docs[:, :-1]
    targets[docs[:, 1:] < 0] = IGNORE
    targets[in_docs < 0] = IGNORE
    positions = np.empty(in_docs.shape, dtype=np.int32)
    doc_ids = np.empty(in_docs.shape, dtype=np.int32)
    for row in range(len(in_docs)):
        positions[row], doc_ids[row] = _positions_and_ids(in_docs[row])
    doc_ids[in_docs < 0] = -1
    return Batch(input_ids=np.ascontiguousarray(inputs), targets=targets, doc_ids=doc_ids, positions=positions)


class ReferenceLoader:
    """The old loader: deterministic packed batches of one split for one rank."""

    def __init__(self, documents: TokenDocuments, seq_len: int, batch_size: int,
                 packing: str = "concat", seed: int = 0, rank: int = 0, world_size: int = 1,
                 pad_id: int = 0, best_fit_buffer: int = 2048) -> None:
        if packing not in ("concat", "best_fit"):
            raise ValueError(f"packing {packing!r}: choose concat or best_fit")
        self.docs = documents
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.packing = packing
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.pad_id = pad_id
        self.best_fit_buffer = best_fit_buffer
        self.epoch = 0
        self.next_batch = 0
        self._cache: dict[int, dict] = {}

    # ---------------------------------------------------------------- epochs
    def _order(self, epoch: int) -> np.ndarray:
        rng = np.random.Generator(np.random.PCG64([self.seed, epoch]))
        return rng.permutation(len(self.docs))

    def _epoch(self, epoch: int) -> dict:
        """Sequences of one epoch: token rows, doc-of-token rows, and packing statistics."""
        if epoch not in self._cache:
            self._cache = {epoch: (self._concat if self.packing == "concat" else self._best_fit)(epoch)}
        return self._cache[epoch]

    def _concat(self, epoch: int) -> dict:
        order = self._order(epoch)
        parts = [np.asarray(self.docs.document(int(k)), dtype=np.int64) for k in order]
        lengths = np.array([len(p) for p in parts], dtype=np.int64)
        stream = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        doc_of = np.repeat(np.arange(len(parts)), lengths)
        width = self.seq_len + 1
        windows = (len(stream) - 1) // self.seq_len
        if windows <= 0:
            raise ValueError(f"split has {len(stream)} tokens, fewer than one sequence of {width}")
        idx = np.arange(windows)[:, None] * self.seq_len + np.arange(width)[None, :]
        tokens, doc_rows = stream[idx], doc_of[idx]
        # A token is cropped when its document started before this window.
        doc_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        cropped = int((doc_start[doc_rows[:, :-1]] < idx[:, :1]).sum())
        return {"tokens": tokens, "docs": doc_rows, "real": windows * self.seq_len,
                "cropped": cropped, "slots": windows * self.seq_len}

    def _best_fit(self, epoch: int) -> dict:
        order = self._order(epoch)
        width = self.seq_len + 1
        rows: list[list[tuple[int, np.ndarray]]] = []
        free: list[int] = []
        cropped = 0
        for b in range(0, len(order), self.best_fit_buffer):
            pieces: list[tuple[int, np.ndarray, bool]] = []  # (doc, tokens, cropped piece?)
            for k in order[b:b + self.best_fit_buffer]:
                doc = np.asarray(self.docs.document(int(k)), dtype=np.int64)
                for start in range(0, len(doc), width):
                    pieces.append((int(k), doc[start:start + width], start > 0))
            buffer = sorted(pieces, key=lambda p: -len(p[1]))
            open_rows: list[int] = []
            for doc, toks, was_cut in buffer:
                need = len(toks)
                best = -1
                for r in open_rows:
                    if need <= free[r] and (best < 0 or free[r] < free[best]):
                        best = r
                if best < 0:
                    rows.append([])
                    free.append(width)
                    best = len(rows) - 1
                    open_rows.append(best)
                rows[best].append((doc, toks))
                free[best] -= need
                if was_cut:
                    cropped += need
        tokens = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        docs = np.full((len(rows), width), -1, dtype=np.int64)
        for r, row in enumerate(rows):
            position = 0
            for i, (_doc, toks) in enumerate(row):
                tokens[r, position:position + len(toks)] = toks
                docs[r, position:position + len(toks)] = i
                position += len(toks)
        real = int((docs[:, 1:] >= 0).sum())
        return {"tokens": tokens, "docs": docs, "real": real, "cropped": cropped,
                "slots": len(rows) * self.seq_len}

    # ---------------------------------------------------------------- batches
    def batches_per_epoch(self) -> int:
        return len(self._epoch(self.epoch)["tokens"]) // (self.batch_size * self.world_size)

    def stats(self) -> dict[str, float]:
        """Share of real (non-pad) target slots and of cropped tokens in the current epoch."""
        e = self._epoch(self.epoch)
        return {"real_token_share": e["real"] / e["slots"], "cropped_share": e["cropped"] / max(1, e["real"]),
                "sequences": len(e["tokens"])}

    def _make_batch(self, epoch: int, batch: int) -> Batch:
        e = self._epoch(epoch)
        first = (batch * self.world_size + self.rank) * self.batch_size
        rows = slice(first, first + self.batch_size)
        return rows_to_batch(e["tokens"][rows], e["docs"][rows])

    def epoch_batches(self, epoch: int = 0) -> Iterator[Batch]:
        """Every sequence of an epoch once, in batches (the last may be smaller); for
        evaluation, ignoring rank slicing."""
        e = self._epoch(epoch)
        for first in range(0, len(e["tokens"]), self.batch_size):
            rows = slice(first, first + self.batch_size)
            yield rows_to_batch(e["tokens"][rows], e["docs"][rows])

    def __iter__(self) -> Iterator[Batch]:
        while True:
            if self.next_batch >= self.batches_per_epoch():
                self.epoch += 1
                self.next_batch = 0
                if self.batches_per_epoch() == 0:
                    raise ValueError("not enough sequences for one global batch; lower "
                                     "data.batch_size or seq_len")
            batch = self._make_batch(self.epoch, self.next_batch)
            self.next_batch += 1
            yield batch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "next_batch": self.next_batch, "seed": self.seed,
                "world_size": self.world_size, "batch_size": self.batch_size}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if (state["world_size"] * state["batch_size"]) != (self.world_size * self.batch_size):
            raise ValueError("the checkpoint was made with another global batch size; resume "
                             "with the same data.batch_size x processes")
        self.epoch = int(state["epoch"])
        self.next_batch = int(state["next_batch"])
        self.seed = int(state["seed"])
