"""A sequence classifier on top of any pretrained c4forge model, and how each model reads a
GLUE example.

- decoder (causal, prefix_lm): ``</s> text``, causal; the head reads the mean of the token
  states (``pooling="mean"``, the default) or the last token's state, the only one that has seen
  the whole text (``pooling="last"``, GPT's choice). With a short fine-tuning budget on a tiny
  model, last-token pooling learned little more than the label prior (issue 28: SST-2 at 50% vs
  61.7% with mean pooling on the same 1.2M-token model);
- encoder (mlm): ``text``, bidirectional; the head reads the mean of the token states. Our MLM
  has no [CLS] token or next-sentence objective that would give the first token a summary role,
  so mean pooling (Sentence-BERT's choice) is the pooled representation;
- encoder-decoder (span, denoise): the encoder reads ``text </s>``, the decoder one ``</s>``
  start token; the head reads that decoder state, which sees the whole input through
  cross-attention (BART's classification reads the decoder's final state the same way).

A linear head, not T5's text-to-text: the same head for every objective keeps the comparison
about the pretrained weights; T5's paper found the two comparable for GLUE at its scales.
One output for STS-B (regression, MSE), two for the classification tasks (cross-entropy).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from c4forge.train.models import Encoder, EncoderDecoder

POOLINGS = ("mean", "last")  # decoders only; encoders mean-pool, encoder-decoders read the decoder


def batch_tensors(sequences: list[list[int]], device) -> tuple[torch.Tensor, ...]:
    """Right-padded ids, document ids (-1 on padding), positions and lengths."""
    width = max(len(s) for s in sequences)
    ids = np.zeros((len(sequences), width), dtype=np.int64)
    docs = np.full((len(sequences), width), -1, dtype=np.int64)
    for r, s in enumerate(sequences):
        ids[r, :len(s)] = s
        docs[r, :len(s)] = 0
    positions = np.broadcast_to(np.arange(width), ids.shape).copy()
    lengths = np.array([len(s) for s in sequences])
    def to(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)

    return to(ids), to(docs), to(positions), to(lengths)


class Classifier(nn.Module):
    def __init__(self, backbone: nn.Module, num_labels: int, eos_id: int = 2,
                 pooling: str = "mean") -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r}: choose {', '.join(POOLINGS)}")
        self.pooling = pooling
        self.backbone = backbone
        self.eos_id = eos_id
        self.head = nn.Linear(backbone.config.d_model, num_labels)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def encode_inputs(self, token_lists: list[list[int]], max_len: int) -> list[list[int]]:
        """Each example's token ids as this model reads them, cut to ``max_len``."""
        if isinstance(self.backbone, (Encoder,)):
            return [t[:max_len] for t in token_lists]
        if isinstance(self.backbone, EncoderDecoder):
            return [t[:max_len - 1] + [self.eos_id] for t in token_lists]
        return [[self.eos_id] + t[:max_len - 1] for t in token_lists]

    def forward(self, sequences: list[list[int]]) -> torch.Tensor:
        device = self.head.weight.device
        ids, docs, positions, lengths = batch_tensors(sequences, device)
        model = self.backbone
        if isinstance(model, EncoderDecoder):
            memory = model.encode(ids, docs, positions)
            start = torch.full((len(sequences), 1), self.eos_id, dtype=torch.long, device=device)
            zeros = torch.zeros_like(start)
            pooled = model.decode(memory, docs, start, zeros, zeros)[:, 0]
        elif isinstance(model, Encoder):
            h = model.hidden(ids, docs, positions, docs >= 0)
            mask = (docs >= 0).unsqueeze(-1).to(h.dtype)
            pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1)
        else:
            h = model.hidden(ids, docs, positions)
            if self.pooling == "last":
                pooled = h[torch.arange(len(sequences), device=device), lengths - 1]
            else:
                mask = (docs >= 0).unsqueeze(-1).to(h.dtype)
                pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.head(pooled.float())
