"""RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight, computed in fp32."""
from __future__ import annotations

import torch


def rmsnorm_torch(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weight.float()).to(x.dtype)
