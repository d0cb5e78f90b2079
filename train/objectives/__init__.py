"""Pretraining objectives: each turns packed rows of documents (tokens and document ids, from
train.data) into one model's inputs and targets.

| name | follows | model | what is predicted |
|---|---|---|---|
| causal | GPT | decoder | every next token |
| prefix_lm | T5's "Prefix LM" | decoder, bidirectional prefix | the tokens after a random prefix |
| mlm | BERT / RoBERTa / SpanBERT | encoder | 15% selected tokens (80/10/10) |
| span | T5 span corruption | encoder-decoder | dropped spans, behind sentinels |
| denoise | BART | encoder-decoder | the original document |

Every module beside its objective holds a pure-python reference of its masking, the oracle of
tests/test_objectives.py.
"""
from __future__ import annotations

from typing import Optional

from c4forge.train.objectives.causal import Causal
from c4forge.train.objectives.common import ObjectiveError, Vocabulary, load_vocabulary
from c4forge.train.objectives.denoise import DenoiseConfig, Denoising
from c4forge.train.objectives.mlm import MLM, MLMConfig
from c4forge.train.objectives.prefix_lm import PrefixLM
from c4forge.train.objectives.span import SpanConfig, SpanCorruption

# Registering an objective is one line here: its class says what it needs (needs_vocabulary)
# and builds itself from the masking settings (from_settings).
OBJECTIVES = {cls.name: cls for cls in (Causal, PrefixLM, MLM, SpanCorruption, Denoising)}
MODEL_KIND = {name: cls.model_kind for name, cls in OBJECTIVES.items()}
# Objectives whose model scores text left to right (bits per byte, zero-shot tasks, export).
LEFT_TO_RIGHT = ("causal", "prefix_lm")


def build_objective(name: str, masking, vocab: Optional[Vocabulary], seed: int, seq_len: int = 0):
    """The objective ``name`` with the settings of ``masking`` (train.config.MaskingConfig)."""
    if name not in OBJECTIVES:
        raise ObjectiveError(f"objective {name!r}: choose from {', '.join(OBJECTIVES)}")
    objective = OBJECTIVES[name]
    if objective.needs_vocabulary and vocab is None:
        raise ObjectiveError(f"objective {name} needs the tokenizer's vocabulary")
    return objective.from_settings(masking, vocab, seed, seq_len)


def objective_for(name: str, masking, tokenizer, seed: int, seq_len: int = 0):
    """The batch maker of objective ``name`` (None for causal: the loader's own Batch, the fast
    path); objectives that write masks and sentinels read the tokenizer's vocabulary (``tokenizer``:
    an opened Tokenizer, a token manifest's tokenizer entry, or a path)."""
    if name == "causal":
        return None
    vocab = None
    if name in OBJECTIVES and OBJECTIVES[name].needs_vocabulary:
        try:
            vocab = load_vocabulary(tokenizer)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            where = tokenizer.get("path") if isinstance(tokenizer, dict) else getattr(tokenizer, "file", tokenizer)
            raise ObjectiveError(f"objective {name}: cannot read the tokenizer {where}: {exc}") from exc
    return build_objective(name, masking, vocab, seed, seq_len)


__all__ = ["objective_for", "OBJECTIVES", "MODEL_KIND", "LEFT_TO_RIGHT", "ObjectiveError", "Vocabulary", "load_vocabulary",
           "build_objective", "MLMConfig", "SpanConfig", "DenoiseConfig"]
