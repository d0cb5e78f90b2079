"""The prefix LM (T5's table 2 "Prefix LM" row; Raffel et al. 2020, section 3.2.1): a decoder
in which a random prefix of each document attends bidirectionally (every prefix token sees the
whole prefix) and only the rest is predicted, left to right.

Per document segment of n tokens the prefix length is uniform in [1, n - 1]; the loss is on the
tokens after the prefix. Each document keeps its own mask: nothing attends across documents.
"""
from __future__ import annotations

import numpy as np

from c4forge.train.data.batch import Batch, rows_to_batch
from c4forge.train.objectives.common import IGNORE, row_rng, segments

SALT = 3


class PrefixLM:
    name = "prefix_lm"
    model_kind = "decoder"
    needs_vocabulary = False

    @classmethod
    def from_settings(cls, masking, vocab, seed: int, seq_len: int) -> PrefixLM:
        return cls(seed=seed)

    def __init__(self, vocab=None, config=None, seed: int = 0) -> None:
        self.seed = seed

    def __call__(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray) -> Batch:
        batch = rows_to_batch(tokens, docs)
        targets = batch.targets.copy()
        bidirectional = np.zeros(targets.shape, dtype=np.int64)
        in_docs = docs[:, :-1]
        for r in range(len(tokens)):
            rng = row_rng(self.seed, sequences[r], SALT)
            for start, end in segments(in_docs[r]):
                n = end - start
                if n < 2:
                    continue
                prefix = int(rng.integers(1, n))
                bidirectional[r, start:start + prefix] = 1
                # input position start+prefix-1 predicts the first token after the prefix
                targets[r, start:start + prefix - 1] = IGNORE
        return Batch({"input_ids": batch.input_ids, "targets": targets, "doc_ids": batch.doc_ids.astype(np.int64),
                "positions": batch.positions.astype(np.int64), "bidirectional": bidirectional})


def reference_prefix_targets(tokens: list[int], prefix: int) -> tuple[list[int], list[bool]]:
    """Pure-python oracle for one whole document (its tokens, EOS last) and a prefix length:
    the targets at each input position (IGNORE inside the prefix but for its last position, which
    predicts the first token after it) and which input positions attend bidirectionally."""
    targets = [IGNORE if i < prefix - 1 else tokens[i + 1] for i in range(len(tokens) - 1)]
    return targets, [i < prefix for i in range(len(tokens) - 1)]
