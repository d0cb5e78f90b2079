"""What every objective shares: the vocabulary facts masking needs, per-row random generators
(deterministic per (seed, sequence), so a new mask every epoch and the same one on resume), and
the document segments of a packed row."""
from __future__ import annotations

import dataclasses
import os
from typing import Optional, Protocol, runtime_checkable

import numpy as np

from c4forge.core.errors import C4forgeError
from c4forge.tokenizer.kinds import Tokenizer, TokenizerSpec, open_tokenizer, tokenizer_of_manifest
from c4forge.train.data.batch import IGNORE, Batch

__all__ = ["IGNORE", "Batch", "Objective", "ObjectiveError", "Vocabulary"]


class ObjectiveError(C4forgeError, ValueError):
    """An objective cannot run with this tokenizer or these settings."""


@runtime_checkable
class Objective(Protocol):
    """What every pretraining objective is: a batch maker the loader calls on packed rows.

    ``tokens`` and ``docs`` are (B, seq_len + 1) arrays of token ids and per-token document ids
    (-1 on padding), ``sequences`` the rows' global indices (the seed of their masking, so a
    row is corrupted the same way on any number of ranks and after a resume). The result is the
    model's keyword arguments, ``targets`` (IGNORE where there is no loss) among them."""

    name: str
    model_kind: str  # "decoder", "encoder" or "encoder_decoder" (train.models.build_model)
    needs_vocabulary: bool  # reads the tokenizer's vocabulary (masks, sentinels, word starts)

    @classmethod
    def from_settings(cls, masking, vocab: Optional[Vocabulary], seed: int, seq_len: int) -> Objective:
        """The objective built from train.config.MaskingConfig: what it needs, it reads."""
        ...

    def __call__(self, tokens: np.ndarray, docs: np.ndarray, sequences: np.ndarray) -> Batch:
        ...


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """Per-id facts: ``special`` (never masked, never a random replacement), ``word_start``
    (a SentencePiece piece beginning with ``▁``, or a newline), ``sentence_end`` (a piece ending
    in . ! ? or a newline), plus the ids masking writes."""

    size: int
    eos_id: int
    pad_id: int
    mask_id: int
    sentinels: tuple[int, ...]
    special: np.ndarray
    word_start: np.ndarray
    sentence_end: np.ndarray

    @property
    def ordinary_ids(self) -> np.ndarray:
        return np.flatnonzero(~self.special)


MASK_PIECES = ("<mask>", "[MASK]")
PAD_PIECES = ("<pad>", "[PAD]")


def vocabulary_from_pieces(pieces: list[str], special_ids: dict[str, int], eos_id: int,
                           word_start: Optional[np.ndarray] = None) -> Vocabulary:
    """The Vocabulary of pieces in id order. Word starts: SentencePiece's ``▁`` (and a line
    break), unless ``word_start`` is given."""
    size = len(pieces)
    special = np.zeros(size, dtype=bool)
    for piece, i in special_ids.items():
        if piece != "\n" and 0 <= i < size:
            special[i] = True
    sentinels = tuple(sorted((i for p, i in special_ids.items() if p.startswith("<extra_id_") and p[10:-1].isdigit()),
                             key=lambda i: int(pieces[i][len("<extra_id_"):-1])))
    if word_start is None:
        word_start = np.array([p.startswith("\u2581") or p == "\n" for p in pieces], dtype=bool)
    sentence_end = np.array([p == "\n" or p.rstrip("\u2581")[-1:] in (".", "!", "?") for p in pieces], dtype=bool)
    mask = next((special_ids[p] for p in MASK_PIECES if p in special_ids), -1)
    pad = next((special_ids[p] for p in PAD_PIECES if p in special_ids), eos_id)
    return Vocabulary(size=size, eos_id=eos_id, pad_id=pad, mask_id=mask, sentinels=sentinels,
                      special=special, word_start=word_start, sentence_end=sentence_end)


def vocabulary_of(tok: Tokenizer) -> Vocabulary:
    """The Vocabulary of an opened tokenizer, any kind. Word starts as each library marks them:
    SentencePiece ``▁``; Hugging Face BPE/Unigram ``▁`` or byte-level ``Ġ``; WordPiece marks the
    continuations (``##``); tiktoken's pieces are bytes, a word starts with a space."""
    pieces = tok.pieces()
    if tok.model_type == "WordPiece":
        word_start = np.array([not p.startswith("##") for p in pieces], dtype=bool)
    elif tok.file.endswith(".model"):  # SentencePiece
        word_start = None
    else:
        starts = ("\u2581", "\u0120", " ") if not tok.file.endswith(".json") else ("\u2581", "\u0120")
        word_start = np.array([p.startswith(starts) or p == "\n" for p in pieces], dtype=bool)
    return vocabulary_from_pieces(pieces, dict(tok.special_ids), tok.eos_id, word_start)


def load_vocabulary(tokenizer) -> Vocabulary:
    """The Vocabulary of a tokenizer: an opened one, a token manifest's ``tokenizer`` entry, or a
    path (a c4forge tokenizer directory, or any file tokenizer/kinds.py opens)."""
    if isinstance(tokenizer, dict):
        tokenizer = tokenizer_of_manifest(tokenizer)
    elif isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = open_tokenizer(TokenizerSpec(str(tokenizer)))
    return vocabulary_of(tokenizer)


def row_rng(seed: int, sequence: int, salt: int) -> np.random.Generator:
    """The generator of one packed row: a function of (seed, global sequence index, objective),
    so every epoch (new sequence indices) draws new masks and a resumed run draws the same."""
    return np.random.default_rng([seed, int(sequence), salt])


def segments(doc_row: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of one document id (>= 0) in a packed row; padding skipped."""
    n = len(doc_row)
    if n == 0:
        return []
    change = np.flatnonzero(doc_row[1:] != doc_row[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [n]])
    return [(int(s), int(e)) for s, e in zip(starts, ends) if doc_row[s] >= 0]


def split_eos(tokens: np.ndarray, eos_id: int) -> tuple[np.ndarray, bool]:
    """A segment's content and whether it ended with its document's EOS."""
    if len(tokens) and tokens[-1] == eos_id:
        return tokens[:-1], True
    return tokens, False


def pad_rows(rows: list[np.ndarray], width: Optional[int], fill: int, multiple: int = 8) -> np.ndarray:
    """Rows of different lengths -> (n, width) filled with ``fill``; width defaults to the
    longest row rounded up to ``multiple`` (few distinct shapes, for compiled models)."""
    longest = max((len(r) for r in rows), default=1)
    if width is None:
        width = max(multiple, -(-longest // multiple) * multiple)
    if longest > width:
        raise ObjectiveError(f"a row of {longest} tokens does not fit in {width}")
    out = np.full((len(rows), width), fill, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def positions_of(doc_ids: np.ndarray) -> np.ndarray:
    """Positions restarting at 0 at every change of document id (per row)."""
    starts = np.ones(doc_ids.shape, dtype=bool)
    starts[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    columns = np.broadcast_to(np.arange(doc_ids.shape[1], dtype=np.int64), doc_ids.shape)
    run_start = np.maximum.accumulate(np.where(starts, columns, 0), axis=1)
    return columns - run_start
