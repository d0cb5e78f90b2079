"""Deterministic, resumable packed batches for one rank, from one token directory or a mixture.

Global batch g is G = batch_size x world_size consecutive rows of the stream (see
:mod:`train.data.packing` for how rows are made); rank r materialises only its slice
[r * batch_size, (r + 1) * batch_size), so N ranks see exactly the sequences one process sees
with batch N x batch_size. With one source, a global batch never straddles two epochs: an
epoch's tail too short for a global batch is skipped, as the in-memory loader did.

The loader's state is a position in the rank-independent stream (per source: epoch, chunk, row;
for a mixture also the slot counter) plus the number of sequences consumed. ``state_dict()``
is the position after the last batch *handed to the caller*, never of batches a prefetch thread
made ahead, so a checkpoint resumes exactly. Because the position does not depend on the world
size, a run resumes on any number of ranks: with the same global batch the batches are
identical; with another global batch it continues from the same sequence and says so.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Optional, Union

import numpy as np

from c4forge.core.errors import C4forgeError
from c4forge.train.data.batch import Batch, rows_to_batch
from c4forge.train.data.documents import TokenDocuments, TrainDataError, check_same_tokenizer
from c4forge.train.data.mixture import SourceSchedule
from c4forge.train.data.packing import DEFAULT_CHUNK_DOCS, PACKINGS
from c4forge.train.data.prefetch import prefetch
from c4forge.train.data.stream import RowStream, expand, start_cursor

STATE_FORMAT = "c4forge-loader"
STATE_VERSION = 2

Sources = Union[TokenDocuments, Sequence[TokenDocuments]]


class LoaderStateError(C4forgeError, ValueError):
    """A saved loader position that does not belong to this data or packing."""


class PackedLoader:
    """Packed batches of one split (or a weighted mixture of splits) for one rank."""

    def __init__(self, documents: Sources, seq_len: int, batch_size: int,
                 packing: str = "concat", seed: int = 0, rank: int = 0, world_size: int = 1,
                 pad_id: int = 0, chunk_docs: int = DEFAULT_CHUNK_DOCS,
                 weights: Optional[Sequence[float]] = None, prefetch: int = 0,
                 transform: Optional[Callable[[Batch], object]] = None,
                 objective: Optional[Callable[[np.ndarray, np.ndarray, np.ndarray], dict]] = None) -> None:
        if packing not in PACKINGS:
            raise TrainDataError(f"packing {packing!r}: choose concat or best_fit")
        sources = [documents] if isinstance(documents, TokenDocuments) else list(documents)
        if not sources:
            raise TrainDataError("no token directory to train on")
        if weights is None:
            weights = [1.0 / len(sources)] * len(sources)
        if len(weights) != len(sources):
            raise TrainDataError("one weight per token directory")
        check_same_tokenizer(sources)
        self.sources = sources
        self.weights = [float(w) for w in weights]
        self.seq_len, self.batch_size, self.packing = seq_len, batch_size, packing
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.chunk_docs, self.prefetch, self.transform = chunk_docs, prefetch, transform
        # objective(tokens, docs, sequence indices) -> the model's inputs (train.objectives);
        # None: the causal Batch
        self.objective = objective
        self.streams = [RowStream(d, packing, seq_len, seed, chunk_docs, pad_id) for d in sources]
        self.schedule = SourceSchedule(self.weights, seed) if len(sources) > 1 else None
        self.notice = ""  # set by load_state_dict when the global batch changed
        self._state = self._initial_state()

    @property
    def docs(self) -> TokenDocuments:
        return self.sources[0]

    @property
    def global_batch(self) -> int:
        return self.batch_size * self.world_size

    # ------------------------------------------------------------------ state
    def _initial_state(self) -> dict:
        return {"format": STATE_FORMAT, "version": STATE_VERSION, "seed": self.seed,
                "packing": self.packing, "seq_len": self.seq_len, "chunk_docs": self.chunk_docs,
                "global_batch": self.global_batch, "slot": 0, "sequences": 0,
                "sources": [{"directory": d.directory, "split": d.split, "documents": len(d),
                             "weight": w, **start_cursor()}
                            for d, w in zip(self.sources, self.weights)]}

    def state_dict(self) -> dict:
        """The position after the last batch handed out (a copy)."""
        return copy.deepcopy(self._state)

    @property
    def epoch(self) -> int:
        return int(self._state["sources"][0]["epoch"])

    @property
    def sequences(self) -> int:
        """Sequences (rows) consumed by all ranks together since the run started."""
        return int(self._state["sequences"])

    def load_state_dict(self, state: dict) -> None:
        """Continue from a saved position. Raises LoaderStateError if it was made for other data
        or packing; sets ``notice`` if the global batch changed (another world size or
        batch_size): the stream continues from the same sequence."""
        if state.get("format") != STATE_FORMAT:
            state = self._upgrade_v1(state)
        mine = self._initial_state()
        for key in ("packing", "seq_len", "chunk_docs"):
            if key == "chunk_docs" and self.packing == "concat":
                continue
            if state.get(key) != mine[key]:
                raise LoaderStateError(f"the checkpoint's data position was made with "
                                       f"{key}={state.get(key)!r}, now {mine[key]!r}: the "
                                       "position means other sequences; resume with the same "
                                       "setting")
        saved = [(s["directory"], s["documents"]) for s in state["sources"]]
        now = [(s["directory"], s["documents"]) for s in mine["sources"]]
        if [n for _, n in saved] != [n for _, n in now] or (
                len(saved) > 1 and [round(s["weight"], 9) for s in state["sources"]]
                != [round(s["weight"], 9) for s in mine["sources"]]):
            raise LoaderStateError(f"the checkpoint's data position is for {saved} (weights "
                                   f"{[s['weight'] for s in state['sources']]}), this run reads "
                                   f"{now}: resume with the same data.train")
        new = copy.deepcopy(state)
        new["global_batch"] = self.global_batch
        new["seed"] = int(state["seed"])
        self.seed = new["seed"]
        self.streams = [RowStream(d, self.packing, self.seq_len, self.seed, self.chunk_docs,
                                  s.pad_id) for d, s in zip(self.sources, self.streams)]
        if self.schedule:
            self.schedule = SourceSchedule(self.weights, self.seed)
        self.notice = ""
        if state["global_batch"] != self.global_batch:
            self.notice = (f"the global batch changed from {state['global_batch']} to "
                           f"{self.global_batch} sequences (batch_size x ranks); continuing from "
                           f"the same position: sequence {state['sequences']:,} of the run")
        for s, d in zip(new["sources"], self.sources):
            s["directory"] = d.directory
        self._state = new

    def _upgrade_v1(self, state: dict) -> dict:
        """The in-memory loader's state (epoch, next_batch of a fixed global batch)."""
        if not {"epoch", "next_batch", "world_size", "batch_size"} <= set(state):
            raise LoaderStateError("the checkpoint holds no data position this loader reads")
        if self.packing != "concat" or len(self.sources) > 1:
            raise LoaderStateError("the checkpoint was written by c4forge's earlier loader, whose "
                                   "best_fit packing differs; only concat runs resume from it")
        g = int(state["world_size"]) * int(state["batch_size"])
        epoch, batch = int(state["epoch"]), int(state["next_batch"])
        per_epoch = self.streams[0].epoch(epoch).rows // g  # the same in every concat epoch
        new = self._initial_state()
        new.update(seed=int(state["seed"]), global_batch=g, sequences=(epoch * per_epoch + batch) * g)
        new["sources"][0].update(epoch=epoch, chunk=0, row=batch * g)
        return new

    # ---------------------------------------------------------------- batches
    def _plan(self, state: dict) -> tuple[list[np.ndarray], dict]:
        """The next global batch as [source index per slot (G,), row address per slot (G, 3)],
        and the state after it."""
        g = self.global_batch
        new = copy.deepcopy(state)
        if self.schedule is None:
            stream, source = self.streams[0], new["sources"][0]
            segments, cursor = stream.take(source, g, "batch")
            source.update(cursor)
            slots = np.zeros(g, dtype=np.int64)
            rows = expand(segments)
        else:
            slots = self.schedule.sources(int(state["slot"]), g)
            rows = np.empty((g, 3), dtype=np.int64)
            for j, (stream, source) in enumerate(zip(self.streams, new["sources"])):
                mask = slots == j
                if mask.any():
                    segments, cursor = stream.take(source, int(mask.sum()), "stream")
                    source.update(cursor)
                    rows[mask] = expand(segments)
            new["slot"] = int(state["slot"]) + g
        new["sequences"] = int(state["sequences"]) + g
        return [slots, rows], new

    def _materialize(self, slots: np.ndarray, rows: np.ndarray, sequences: np.ndarray):
        width = self.seq_len + 1
        tokens = np.empty((len(rows), width), dtype=np.int64)
        docs = np.empty((len(rows), width), dtype=np.int64)
        for j in np.unique(slots):
            mask = slots == j
            tokens[mask], docs[mask] = self.streams[int(j)].materialize(rows[mask])
        return self._batch(tokens, docs, sequences)

    def _batch(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray):
        if self.objective is not None:
            return self.objective(tokens, docs, sequences)
        return rows_to_batch(tokens, docs)

    def _produce(self, state: dict) -> Iterator[tuple[object, dict]]:
        mine = slice(self.rank * self.batch_size, (self.rank + 1) * self.batch_size)
        while True:
            # the global index of every row: objectives draw their masks from it
            sequences = int(state["sequences"]) + np.arange(self.global_batch)
            (slots, rows), state = self._plan(state)
            batch = self._materialize(slots[mine], rows[mine], sequences[mine])
            yield (self.transform(batch) if self.transform else batch), state

    def __iter__(self) -> Iterator[Batch]:
        """Batches from the current position on, forever; each one advances ``state_dict()``."""
        for batch, state in prefetch(self._produce(self.state_dict()), self.prefetch):
            self._state = state
            yield batch

    def epoch_batches(self, epoch: int = 0) -> Iterator[Batch]:
        """Every sequence of one epoch of the first source once, in batches of batch_size (the
        last may be smaller), ignoring ranks: for evaluation."""
        stream = self.streams[0]
        cursor = start_cursor(epoch)
        done = 0
        while True:
            segments, cursor = stream.take(cursor, self.batch_size, "epoch")
            if not segments:
                return
            rows = expand(segments)
            tokens, docs = stream.materialize(rows)
            yield self._batch(tokens, docs, (epoch << 40) + done + np.arange(len(rows)))
            done += len(rows)
            if cursor["epoch"] != epoch:
                return

    # ------------------------------------------------------------------ stats
    def stats(self, max_chunks: Optional[int] = 4) -> dict[str, object]:
        """Share of real (non-pad) target slots and of cropped tokens in the current epoch of
        each source: exact for concat; for best_fit over its first ``max_chunks`` chunks
        (None: all; ``estimated`` says which)."""
        out = []
        for stream, source in zip(self.streams, self._state["sources"]):
            epoch = stream.epoch(int(source["epoch"]))
            if self.packing == "concat":
                s, estimated = epoch.stats(), False
            else:
                count = epoch.chunk_count if max_chunks is None else min(max_chunks, epoch.chunk_count)
                parts = [stream.chunk(int(source["epoch"]), c).stats() for c in range(count)]
                s = {k: sum(p[k] for p in parts) for k in ("real", "cropped", "slots", "rows")}
                estimated = count < epoch.chunk_count
            out.append({"real_token_share": s["real"] / max(1, s["slots"]),
                        "cropped_share": s["cropped"] / max(1, s["real"]),
                        "sequences": s["rows"], "estimated": estimated})
        if len(out) == 1:
            return out[0]
        share = {k: float(sum(w * o[k] for w, o in zip(self.weights, out)))
                 for k in ("real_token_share", "cropped_share")}
        return {**share, "sources": out}
