"""GPT's objective: every token predicted from the tokens before it in its document."""
from __future__ import annotations

import numpy as np

from c4forge.train.data.batch import Batch, rows_to_batch


class Causal:
    name = "causal"
    model_kind = "decoder"
    needs_vocabulary = False

    @classmethod
    def from_settings(cls, masking, vocab, seed: int, seq_len: int) -> Causal:
        return cls(seed=seed)

    def __init__(self, vocab=None, config=None, seed: int = 0) -> None:
        self.seed = seed

    def __call__(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray) -> Batch:
        batch = rows_to_batch(tokens, docs)
        return Batch({"input_ids": batch.input_ids, "targets": batch.targets,
                "doc_ids": batch.doc_ids.astype(np.int64), "positions": batch.positions.astype(np.int64)})
