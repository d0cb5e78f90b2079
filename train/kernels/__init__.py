"""Fused kernels, each beside its pure-torch reference with the same signature:
rmsnorm, rope, swiglu, linear_cross_entropy. ``resolve(choice, device_type, name, compiled)``
turns "auto" into the kernel's CUDA default (``CUDA_DEFAULTS``) on CUDA when triton imports and
the model is not compiled, else "torch".

Under torch.compile, "auto" is torch for every kernel: inductor generates fused kernels from the
references itself, and the Triton kernels traced into a compiled 124M model crashed it with an
illegal memory access on torch 2.11 (H100, 2026-11-26; all four kernels in one run, RMSNorm and
cross-entropy in another, while the same kernels ran uncompiled). A kernel set to "triton" by
name in a compiled model therefore runs outside the compiled graph (``torch.compiler.disable``:
the uncompiled kernel, at the cost of a graph break around each call)."""
from __future__ import annotations

import functools
import importlib

from c4forge.core.settings import ConfigError

# What "auto" picks on CUDA, per kernel: "triton" only where the Triton kernel was at least as
# fast as torch.compile of its torch reference on a GPU at every shape measured
# (benchmarks/RESULTS.md, "Fused kernels on GPU"; benchmarks/bench_kernels.py measures it; H100,
# 2026-11-26): RoPE's was 0.58-0.74x and SwiGLU's 0.98-1.00x, so both stay on torch (the Triton
# kernels remain selectable by name).
CUDA_DEFAULTS = {"rmsnorm": "triton", "rope": "torch", "swiglu": "torch", "cross_entropy": "triton"}


@functools.cache
def triton_available() -> bool:
    try:
        importlib.import_module("triton")
    except ImportError:
        return False
    return True


def resolve(choice: str, device_type: str, name: str, compiled: bool = False) -> str:
    """The implementation kernel ``name`` runs with on ``device_type`` for the setting ``choice``
    (``compiled``: the model runs under torch.compile)."""
    if choice == "auto":
        use_triton = device_type == "cuda" and triton_available() and not compiled
        return CUDA_DEFAULTS[name] if use_triton else "torch"
    if choice == "triton" and not triton_available():
        raise ConfigError("a kernel is set to triton but triton is not installed: pip install 'c4forge[train]' on Linux, or set model.kernels=torch")
    return choice
