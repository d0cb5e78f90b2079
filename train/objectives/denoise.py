"""BART's denoising (Lewis et al. 2020, the text infilling + sentence permutation row): the
encoder reads a corrupted document, the decoder reconstructs the original.

Per document: its sentences (ending after a piece that ends in . ! ? or a newline) are shuffled,
then 30% of the tokens are masked in spans whose lengths are drawn from Poisson(3) until the
budget is reached (the last span is cut to fit). Each span becomes one ``<mask>``; a span of
length 0 inserts a ``<mask>`` (the model must learn that nothing is missing there). Spans do
not overlap. The decoder target is the original document and its EOS; the decoder input is that
shifted right behind an EOS (a document cut by the row boundary has no EOS in this row). Packed like T5's span corruption (see train.objectives.span).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from c4forge.train.data.batch import Batch
from c4forge.train.objectives.common import ObjectiveError, Vocabulary, row_rng, segments, split_eos
from c4forge.train.objectives.span import encoder_decoder_rows

SALT = 4


@dataclasses.dataclass(frozen=True)
class DenoiseConfig:
    mask_ratio: float = 0.3
    poisson_lambda: float = 3.0
    permute_sentences: bool = True


def permute_sentences(content: np.ndarray, sentence_end: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    ends = np.flatnonzero(sentence_end[content]) + 1
    bounds = np.concatenate([[0], ends[ends < len(content)], [len(content)]])
    sentences = [content[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    if len(sentences) < 2:
        return content.copy()
    return np.concatenate([sentences[i] for i in rng.permutation(len(sentences))])


def infill_spans(length: int, config: DenoiseConfig, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Non-overlapping (start, length) spans, sorted, covering round(ratio x length) tokens."""
    budget = int(round(length * config.mask_ratio))
    lengths: list[int] = []
    while sum(lengths) < budget:
        lengths.append(int(rng.poisson(config.poisson_lambda)))
    if lengths and sum(lengths) > budget:
        lengths[-1] -= sum(lengths) - budget
    taken = np.zeros(length + 1, dtype=bool)  # a position may also be the end (insertion)
    spans = []
    for span in lengths:
        for _ in range(20):  # a few tries to find free room; a span that finds none is dropped
            start = int(rng.integers(0, length - span + 1)) if length - span >= 0 else 0
            if not taken[start:start + max(span, 1)].any():
                taken[start:start + max(span, 1)] = True
                spans.append((start, span))
                break
    return sorted(spans)


def apply_infilling(content: np.ndarray, spans: list[tuple[int, int]], mask_id: int) -> np.ndarray:
    out: list[np.ndarray] = []
    cursor = 0
    for start, span in spans:
        out += [content[cursor:start], np.array([mask_id], dtype=np.int64)]
        cursor = start + span
    out.append(content[cursor:])
    return np.concatenate(out).astype(np.int64)


class Denoising:
    name = "denoise"
    model_kind = "encoder_decoder"
    needs_vocabulary = True

    @classmethod
    def from_settings(cls, masking, vocab: Vocabulary, seed: int, seq_len: int) -> Denoising:
        return cls(vocab, DenoiseConfig(masking.denoise_ratio, masking.poisson_lambda,
                                        masking.permute_sentences), seed)

    def __init__(self, vocab: Vocabulary, config: DenoiseConfig = DenoiseConfig(), seed: int = 0) -> None:
        if vocab.mask_id < 0:
            raise ObjectiveError("objective denoise needs a mask token: the tokenizer has neither "
                                 "<mask> nor [MASK] (tokenizer train adds <mask>)")
        self.vocab, self.config, self.seed = vocab, config, seed

    def document(self, piece: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        content, ended = split_eos(piece, self.vocab.eos_id)
        eos = np.array([self.vocab.eos_id] if ended else [], dtype=np.int64)
        shuffled = (permute_sentences(content, self.vocab.sentence_end, rng)
                    if self.config.permute_sentences else content)
        spans = infill_spans(len(shuffled), self.config, rng) if len(shuffled) else []
        inputs = apply_infilling(shuffled, spans, self.vocab.mask_id)
        return np.concatenate([inputs, eos]), np.concatenate([content, eos]).astype(np.int64)

    def __call__(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray) -> Batch:
        rows = []
        for r in range(len(tokens)):
            rng = row_rng(self.seed, sequences[r], SALT)
            rows.append([self.document(tokens[r, s:e], rng) for s, e in segments(docs[r])])
        # zero-length spans add a token each: the encoder row may exceed the raw row slightly
        return encoder_decoder_rows(rows, self.vocab.eos_id, self.vocab.pad_id, None, tokens.shape[1])


def reference_infill(content: list[int], spans: list[tuple[int, int]], mask_id: int) -> list[int]:
    """Pure-python oracle of the infilling: walk the document, one <mask> per span."""
    out, i = [], 0
    starts = dict(spans)
    while i <= len(content):
        if i in starts:
            out.append(mask_id)
            span = starts.pop(i)
            if span:
                i += span
                continue
        if i < len(content):
            out.append(content[i])
        i += 1
    return out
