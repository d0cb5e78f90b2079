"""Rotary position embedding (rotate-half form) at explicit per-token positions."""
from __future__ import annotations

import torch


def rope_tables(positions: torch.Tensor, head_dim: int, theta: float):
    """cos, sin of shape (B, T, head_dim/2) for integer positions (B, T)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    angles = positions.float()[..., None] * inv
    return angles.cos(), angles.sin()


def rope_torch(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: (B, H, T, D); cos/sin: (B, T, D/2). Rotates the two halves of each head."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos[:, None].float(), sin[:, None].float()
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)
