"""T5's span corruption (Raffel et al. 2020, section 3.1.4; t5.data.preprocessors
``random_spans_noise_mask`` / ``noise_span_to_unique_sentinel``).

Per document: round(length x 0.15) noise tokens in round(noise / 3) spans, span and gap lengths
drawn by T5's random segmentation (a random partition of the tokens into that many non-empty
parts), the mask always starting with a kept span. The encoder input keeps the other tokens and
puts ``<extra_id_k>`` where the k-th span was; the decoder target is ``<extra_id_k>`` followed by
the k-th span's tokens, for every span, then EOS (the input also ends with EOS). Interleaving the
two by sentinel gives the document back.

Several documents' inputs are packed into one encoder row and their targets into one decoder
row (the same documents, in the same order): encoder self-attention, decoder self-attention and
cross-attention are all masked per document. The decoder reads the target shifted right, each
document's starting with EOS (the document start the decoder-only model also sees).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from c4forge.train.data.batch import Batch
from c4forge.train.objectives.common import (
    IGNORE,
    ObjectiveError,
    Vocabulary,
    pad_rows,
    positions_of,
    row_rng,
    segments,
    split_eos,
)

SALT = 2


@dataclasses.dataclass(frozen=True)
class SpanConfig:
    noise_density: float = 0.15
    mean_span_length: float = 3.0


def random_segmentation(num_items: int, num_segments: int, rng: np.random.Generator) -> np.ndarray:
    """T5's ``_random_segmentation``: lengths of ``num_segments`` non-empty parts of
    ``num_items``, uniformly over such partitions."""
    first = np.zeros(num_items, dtype=bool)
    first[1:] = rng.permutation(np.arange(num_items - 1) < num_segments - 1)
    segment_id = np.cumsum(first)
    return np.bincount(segment_id, minlength=num_segments)


def random_spans_noise_mask(length: int, config: SpanConfig, rng: np.random.Generator) -> np.ndarray:
    """T5's ``random_spans_noise_mask``: boolean (length,), True on noise tokens."""
    original = length
    length = max(length, 2)
    num_noise = int(round(length * config.noise_density))
    num_noise = min(max(num_noise, 1), length - 1)
    num_spans = max(int(round(num_noise / config.mean_span_length)), 1)
    noise_lengths = random_segmentation(num_noise, num_spans, rng)
    keep_lengths = random_segmentation(length - num_noise, num_spans, rng)
    interleaved = np.stack([keep_lengths, noise_lengths], axis=1).reshape(-1)
    starts = np.cumsum(interleaved)[:-1]
    indicator = np.zeros(length, dtype=np.int64)
    indicator[starts] = 1
    is_noise = np.cumsum(indicator) % 2 == 1
    return is_noise[:original]


def spans_needed(length: int, config: SpanConfig) -> int:
    length = max(length, 2)
    num_noise = min(max(int(round(length * config.noise_density)), 1), length - 1)
    return max(int(round(num_noise / config.mean_span_length)), 1)


def corrupt(content: np.ndarray, noise: np.ndarray, sentinels) -> tuple[np.ndarray, np.ndarray]:
    """(input, target) without EOS: spans -> sentinels in the input, kept runs -> sentinels in
    the target (T5's ``noise_span_to_unique_sentinel`` on the mask and on its inverse)."""
    starts = noise & ~np.concatenate([[False], noise[:-1]])
    span_index = np.cumsum(starts) - 1
    if span_index.max(initial=-1) >= len(sentinels):
        raise ObjectiveError(f"a document needs {span_index.max() + 1} sentinels; the tokenizer has "
                             f"{len(sentinels)} (tokenizer train --t5-sentinels)")
    sentinel_ids = np.asarray(sentinels, dtype=np.int64)
    inputs = np.where(starts, sentinel_ids[np.maximum(span_index, 0)], content)[~noise | starts]
    target_parts: list[np.ndarray] = []
    for k, start in enumerate(np.flatnonzero(starts)):
        end = start
        while end < len(noise) and noise[end]:
            end += 1
        target_parts += [np.array([sentinels[k]], dtype=np.int64), content[start:end]]
    targets = np.concatenate(target_parts) if target_parts else np.zeros(0, dtype=np.int64)
    return inputs.astype(np.int64), targets.astype(np.int64)


def encoder_decoder_rows(pairs_per_row: list[list[tuple[np.ndarray, np.ndarray]]], eos_id: int,
                         pad_id: int, encoder_width: int, decoder_width=None) -> Batch:
    """Rows of (input, target) pairs (EOS included) -> packed encoder and decoder arrays with
    run-local document ids (the same id for a document's input and target), positions, the
    decoder input (each target shifted right behind an EOS) and targets (IGNORE on padding)."""
    enc_rows, enc_docs, dec_rows, dec_docs, tgt_rows = [], [], [], [], []
    for pairs in pairs_per_row:
        enc = [p[0] for p in pairs] or [np.zeros(0, dtype=np.int64)]
        tgt = [p[1] for p in pairs] or [np.zeros(0, dtype=np.int64)]
        enc_rows.append(np.concatenate(enc))
        enc_docs.append(np.concatenate([np.full(len(e), d) for d, e in enumerate(enc)]))
        tgt_rows.append(np.concatenate(tgt))
        dec_rows.append(np.concatenate([np.concatenate([[eos_id], t[:-1]]) if len(t) else t for t in tgt]))
        dec_docs.append(np.concatenate([np.full(len(t), d) for d, t in enumerate(tgt)]))
    enc_ids = pad_rows(enc_rows, encoder_width, pad_id)
    enc_doc = pad_rows(enc_docs, encoder_width, -1)
    dec_ids = pad_rows(dec_rows, decoder_width, pad_id)
    width = dec_ids.shape[1]
    dec_doc = pad_rows(dec_docs, width, -1)
    targets = pad_rows(tgt_rows, width, IGNORE)
    return Batch({"enc_ids": enc_ids, "enc_doc": enc_doc, "enc_pos": positions_of(enc_doc),
            "dec_ids": dec_ids, "dec_doc": dec_doc, "dec_pos": positions_of(dec_doc), "targets": targets})


class SpanCorruption:
    """Rows of packed documents -> T5 encoder inputs and decoder targets."""

    name = "span"
    model_kind = "encoder_decoder"
    needs_vocabulary = True

    @classmethod
    def from_settings(cls, masking, vocab: Vocabulary, seed: int, seq_len: int) -> SpanCorruption:
        return cls(vocab, SpanConfig(masking.noise_density, masking.mean_span_length), seed, seq_len)

    def __init__(self, vocab: Vocabulary, config: SpanConfig = SpanConfig(), seed: int = 0,
                 seq_len: int = 0) -> None:
        if not vocab.sentinels:
            raise ObjectiveError("objective span needs T5 sentinels <extra_id_N> in the tokenizer: "
                                 "tokenizer train --t5-sentinels 100")
        if seq_len and spans_needed(seq_len + 1, config) > len(vocab.sentinels):
            raise ObjectiveError(f"seq_len {seq_len} needs up to {spans_needed(seq_len + 1, config)} "
                                 f"sentinels per document; the tokenizer has {len(vocab.sentinels)}")
        self.vocab, self.config, self.seed = vocab, config, seed

    def document(self, piece: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(input, target) of one document segment; both end with EOS when the segment holds
        the document's end (a document cut by the row boundary goes on in the next row)."""
        content, ended = split_eos(piece, self.vocab.eos_id)
        eos = np.array([self.vocab.eos_id] if ended else [], dtype=np.int64)
        if len(content) == 0:
            return eos, eos
        noise = random_spans_noise_mask(len(content), self.config, rng)
        inputs, targets = corrupt(content, noise, self.vocab.sentinels)
        return np.concatenate([inputs, eos]), np.concatenate([targets, eos])

    def __call__(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray) -> Batch:
        rows = []
        for r in range(len(tokens)):
            rng = row_rng(self.seed, sequences[r], SALT)
            rows.append([self.document(tokens[r, s:e], rng) for s, e in segments(docs[r])])
        # inputs are never longer than the raw row (a span of >= 1 token becomes one sentinel)
        return encoder_decoder_rows(rows, self.vocab.eos_id, self.vocab.pad_id, tokens.shape[1])


def reference_noise_mask(length: int, noise_density: float, mean_span_length: float,
                         noise_firsts: list[bool], keep_firsts: list[bool]) -> list[bool]:
    """T5's ``random_spans_noise_mask`` line by line in plain python, given the two shuffled
    "first item of a segment" vectors (``tf.random.shuffle`` there, ``rng.permutation`` here)."""
    original = length
    length = max(length, 2)
    num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
    num_spans = max(int(round(num_noise / mean_span_length)), 1)

    def segmentation(num_items, firsts):
        lengths = [0] * num_spans
        segment = 0
        for i in range(num_items):
            if i > 0 and firsts[i - 1]:
                segment += 1
            lengths[segment] += 1
        return lengths

    noise_lengths = segmentation(num_noise, noise_firsts)
    keep_lengths = segmentation(length - num_noise, keep_firsts)
    mask: list[bool] = []
    for keep, noise in zip(keep_lengths, noise_lengths):
        mask += [False] * keep + [True] * noise
    return mask[:original]


def reference_reconstruct(inputs: list[int], targets: list[int], sentinels, eos_id: int) -> list[int]:
    """Pure-python oracle: interleave input and target by sentinel (a final EOS dropped)."""
    if inputs and inputs[-1] == eos_id:
        inputs, targets = inputs[:-1], targets[:-1]
    spans, current = {}, None
    for t in targets:
        if t in sentinels:
            current = t
            spans[current] = []
        else:
            spans[current].append(t)
    out = []
    for t in inputs:
        out.extend(spans[t] if t in sentinels else [t])
    return out
