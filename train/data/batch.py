"""One micro-batch as the model takes it, and how packed rows become one.

A packed row holds seq_len + 1 token ids and, per token, the id of the document (or document
piece) it belongs to (-1 on padding). Inputs are the first seq_len tokens, targets the last
seq_len; every token also gets a run-local document id and a position that restarts at 0 where
its document starts, so attention is masked per document and rotary embeddings restart.
"""
from __future__ import annotations

import numpy as np

IGNORE = -100


class Batch(dict):
    """One micro-batch: the model's argument names -> arrays of shape (B, T) (numpy, or host
    tensors after pinning). The one batch type from the loader to the model: the causal fast path
    builds ``input_ids``/``targets``/``doc_ids``/``positions`` (int64 ids, int32 documents and
    positions); every objective returns its own fields (``bidirectional``; ``enc_ids``,
    ``dec_ids``, ... for encoder-decoders). Fields read as attributes too (``batch.input_ids``)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def target_tokens(self) -> int:
        """Tokens that carry a loss (targets other than IGNORE)."""
        return int((self["targets"] != IGNORE).sum())


def rows_to_batch(tokens: np.ndarray, docs: np.ndarray) -> Batch:
    """Rows of seq_len + 1 tokens and their document rows -> inputs, shifted targets (IGNORE
    where the input or the target is padding), run-local document ids (-1 on padding) and
    positions restarting at every change of document. Vectorised over the whole batch."""
    tokens = np.asarray(tokens, dtype=np.int64)
    inputs = np.ascontiguousarray(tokens[:, :-1])
    targets = tokens[:, 1:].copy()
    in_docs = docs[:, :-1]
    targets[(docs[:, 1:] < 0) | (in_docs < 0)] = IGNORE
    rows, width = in_docs.shape
    starts = np.ones(in_docs.shape, dtype=bool)
    starts[:, 1:] = in_docs[:, 1:] != in_docs[:, :-1]
    columns = np.broadcast_to(np.arange(width, dtype=np.int64), in_docs.shape)
    run_start = np.maximum.accumulate(np.where(starts, columns, 0), axis=1)
    positions = (columns - run_start).astype(np.int32)
    doc_ids = (np.cumsum(starts, axis=1) - 1).astype(np.int32)
    doc_ids[in_docs < 0] = -1
    return Batch(input_ids=inputs, targets=targets, doc_ids=doc_ids, positions=positions)
