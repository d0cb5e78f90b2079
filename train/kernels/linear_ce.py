"""Linear projection + cross-entropy without materialising all logits at once.

Returns (sum of token losses, number of target tokens); targets == -100 are ignored. The torch
reference computes the logits chunk by chunk under activation checkpointing, so peak memory is
one chunk of logits in both passes (a single chunk is computed directly, without recomputation).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

IGNORE = -100


def _chunk_loss(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                vocab: int) -> torch.Tensor:
    logits = (h @ weight.t()).float()
    if vocab < logits.shape[-1]:  # padded vocabulary rows never win
        logits[:, vocab:] = float("-inf")
    return F.cross_entropy(logits, targets, ignore_index=IGNORE, reduction="sum")


def linear_cross_entropy_torch(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                               vocab: int, chunk_tokens: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    h = h.reshape(-1, h.shape[-1])
    targets = targets.reshape(-1)
    if h.shape[0] <= chunk_tokens:  # one chunk: the logits fit, no recomputation needed
        return _chunk_loss(h, weight, targets, vocab), (targets != IGNORE).sum()
    total = h.new_zeros((), dtype=torch.float32)
    for start in range(0, h.shape[0], chunk_tokens):
        sl = slice(start, start + chunk_tokens)
        if torch.is_grad_enabled() and h.requires_grad:
            total = total + checkpoint(_chunk_loss, h[sl], weight, targets[sl], vocab, use_reentrant=False)
        else:
            total = total + _chunk_loss(h[sl], weight, targets[sl], vocab)
    return total, (targets != IGNORE).sum()
