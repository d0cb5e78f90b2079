"""BERT's masked language modelling (Devlin et al. 2019; RoBERTa's dynamic masking).

Of the ordinary (non-special) tokens of each document, ``probability`` (15%) are selected; of
those 80% become ``<mask>``, 10% a random ordinary token, 10% stay; the loss is on the selected
tokens only, predicted at their own position by a bidirectional encoder that never attends
across documents. Units of selection (``unit``):

- ``token``: each token independently (BERT), exactly round(15%) of a document's tokens;
- ``word``: whole words (a SentencePiece ``▁`` piece and its continuation pieces), words drawn
  in random order until 15% of the tokens are covered (BERT's whole-word masking);
- ``span``: SpanBERT (Joshi et al. 2020): span lengths in words ~ Geometric(0.2) clipped at 10,
  each span starting at a random word, until 15% of the tokens are covered.

A new mask every epoch: the generator is a function of (seed, sequence index).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from c4forge.train.data.batch import Batch
from c4forge.train.objectives.common import (
    IGNORE,
    ObjectiveError,
    Vocabulary,
    positions_of,
    row_rng,
    segments,
)

SALT = 1


@dataclasses.dataclass(frozen=True)
class MLMConfig:
    probability: float = 0.15
    mask_share: float = 0.8
    random_share: float = 0.1
    unit: str = "token"
    span_p: float = 0.2
    span_max: int = 10


def word_groups(tokens: np.ndarray, positions: np.ndarray, vocab: Vocabulary) -> list[np.ndarray]:
    """Maskable positions grouped into words: a word starts at a ``▁`` piece (or the first
    maskable token) and runs over the continuation pieces after it."""
    groups: list[list[int]] = []
    previous = -2
    for p in positions:
        if not groups or vocab.word_start[tokens[p]] or p != previous + 1:
            groups.append([])
        groups[-1].append(int(p))
        previous = p
    return [np.array(g, dtype=np.int64) for g in groups]


def select(tokens: np.ndarray, vocab: Vocabulary, config: MLMConfig, rng: np.random.Generator) -> np.ndarray:
    """Positions (sorted) selected for prediction in one document's tokens."""
    maskable = np.flatnonzero(~vocab.special[tokens])
    budget = int(round(len(maskable) * config.probability))
    if budget == 0:
        return np.zeros(0, dtype=np.int64)
    if config.unit == "token":
        return np.sort(rng.choice(maskable, budget, replace=False))
    words = word_groups(tokens, maskable, vocab)
    chosen: list[np.ndarray] = []
    covered = 0
    if config.unit == "word":
        for w in rng.permutation(len(words)):
            if covered >= budget:
                break
            chosen.append(words[w])
            covered += len(words[w])
    else:  # SpanBERT spans of whole words
        taken = np.zeros(len(words), dtype=bool)
        attempts = 0
        while covered < budget and attempts < 10 * len(words):
            attempts += 1
            length = min(int(rng.geometric(config.span_p)), config.span_max)
            start = int(rng.integers(len(words)))
            span = range(start, min(start + length, len(words)))
            if taken[span.start:span.stop].any():
                continue
            for w in span:
                taken[w] = True
                chosen.append(words[w])
                covered += len(words[w])
    if not chosen:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate(chosen))


def corrupt(tokens: np.ndarray, selected: np.ndarray, vocab: Vocabulary, config: MLMConfig,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets): 80/10/10 over the selected positions; targets IGNORE elsewhere."""
    inputs = tokens.copy()
    targets = np.full(len(tokens), IGNORE, dtype=np.int64)
    targets[selected] = tokens[selected]
    draw = rng.random(len(selected))
    to_mask = selected[draw < config.mask_share]
    to_random = selected[(draw >= config.mask_share) & (draw < config.mask_share + config.random_share)]
    inputs[to_mask] = vocab.mask_id
    ordinary = vocab.ordinary_ids
    inputs[to_random] = ordinary[rng.integers(len(ordinary), size=len(to_random))]
    return inputs, targets


class MLM:
    """Rows of packed documents -> encoder inputs with masked tokens and their targets."""

    name = "mlm"
    model_kind = "encoder"
    needs_vocabulary = True

    @classmethod
    def from_settings(cls, masking, vocab: Vocabulary, seed: int, seq_len: int) -> MLM:
        """BERT's 80/10/10 split of the selected tokens is MLMConfig's default."""
        return cls(vocab, MLMConfig(probability=masking.mlm_probability, unit=masking.mlm_unit), seed)

    def __init__(self, vocab: Vocabulary, config: MLMConfig = MLMConfig(), seed: int = 0) -> None:
        if vocab.mask_id < 0:
            raise ObjectiveError("objective mlm needs a mask token: the tokenizer has neither <mask> "
                                 "nor [MASK] (tokenizer train adds <mask>)")
        if config.unit not in ("token", "word", "span"):
            raise ObjectiveError(f"mlm unit {config.unit!r}: token, word or span")
        self.vocab, self.config, self.seed = vocab, config, seed

    def __call__(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray) -> Batch:
        tokens, docs = tokens[:, :-1], docs[:, :-1]  # the same width as the causal objective's inputs
        inputs = tokens.copy()
        targets = np.full(tokens.shape, IGNORE, dtype=np.int64)
        for r in range(len(tokens)):
            rng = row_rng(self.seed, sequences[r], SALT)
            for start, end in segments(docs[r]):
                piece = tokens[r, start:end]
                chosen = select(piece, self.vocab, self.config, rng)
                inputs[r, start:end], targets[r, start:end] = corrupt(piece, chosen, self.vocab, self.config, rng)
        doc_ids = _run_ids(docs)
        return Batch({"input_ids": inputs, "targets": targets, "doc_ids": doc_ids,
                "positions": positions_of(doc_ids), "bidirectional": (doc_ids >= 0).astype(np.int64)})


def _run_ids(docs: np.ndarray) -> np.ndarray:
    """Run-local document ids (0, 1, ... per row), -1 on padding."""
    starts = np.ones(docs.shape, dtype=bool)
    starts[:, 1:] = docs[:, 1:] != docs[:, :-1]
    ids = np.cumsum(starts, axis=1) - 1
    ids[docs < 0] = -1
    return ids


def reference_corrupt(tokens, special, mask_id, ordinary, selected, draws, random_picks):
    """Pure-python oracle of :func:`corrupt` given its random draws: the 80/10/10 rule."""
    inputs, targets = list(tokens), [IGNORE] * len(tokens)
    k = 0
    for j, p in enumerate(selected):
        assert not special[tokens[p]], "a special token was selected"
        targets[p] = tokens[p]
        if draws[j] < 0.8:
            inputs[p] = mask_id
        elif draws[j] < 0.9:
            inputs[p] = ordinary[random_picks[k]]
            k += 1
    return inputs, targets
