"""The models every objective trains, from one set of blocks (train.models.decoder):

- :class:`LM` (decoder-only: causal, prefix LM), exported as transformers' Llama;
- :class:`Encoder` (BERT-style, for mlm);
- :class:`EncoderDecoder` (T5/BART-style, for span and denoise).
"""
from __future__ import annotations

from c4forge.train.config import ModelConfig
from c4forge.train.models.decoder import LM, Encoder, attention_mask, flops_per_token
from c4forge.train.models.encoder_decoder import EncoderDecoder
from c4forge.train.objectives import MODEL_KIND, ObjectiveError

MODEL_CLASSES = {"decoder": LM, "encoder": Encoder, "encoder_decoder": EncoderDecoder}


def build_model(config: ModelConfig, objective: str = "causal"):
    """The model an objective trains (train.objectives.MODEL_KIND names its kind)."""
    if objective not in MODEL_KIND:
        raise ObjectiveError(f"objective {objective!r}: choose from {', '.join(MODEL_KIND)}")
    return MODEL_CLASSES[MODEL_KIND[objective]](config)


__all__ = ["LM", "Encoder", "EncoderDecoder", "MODEL_CLASSES", "build_model", "attention_mask",
           "flops_per_token"]
