"""Fused kernels, each beside its pure-torch reference with the same signature:
rmsnorm, rope, swiglu, linear_cross_entropy. ``resolve(choice, device_type, name, compiled)``
turns "auto" into the kernel's CUDA default (``CUDA_DEFAULTS``) on CUDA when triton imports and
the model is not compiled, else "torch".

Under torch.compile, "auto" is torch for every kernel: inductor generates fused kernels from the
references itself, and the Triton kernels traced into a compiled 124M model crashed it with an
illegal memory access on torch 2.11 (H100, 2026-11-26; all four kernels in one run, RMSNorm and
cross-entropy in another, while the same kernels ran uncompiled). A kernel set to "triton" by
name in a compiled model therefore runs outside the compiled graph (``torch.compiler.disable``:
the uncompiled kernel, at the cost of a graph break around each call: correct on the GPU, but
the 124M model ran at 268.6k tokens/s with all four so named against 461.7k under "auto", H100,
2026-11-27)."""
from __future__ import annotations

import functools
import importlib

from c4forge.core.settings import ConfigError

# What "auto" picks on CUDA in an uncompiled model, per kernel. There the alternative to a Triton
# kernel is its eager torch reference, which every kernel beats (1.3-4.0x, forward + backward,
# benchmarks/bench_kernels.py), and the 124M model measured it whole: bf16 eager, all four Triton
# 260.6k tokens/s and 15.9 GB against 201.2k and 22.4 GB with RoPE and SwiGLU on torch (H100,
# 2026-11-27, one call, back to back; benchmarks/RESULTS.md "Training at 124M on one GPU"). Under
# torch.compile the alternative is inductor's own kernels, and "auto" is torch (resolve, below).
CUDA_DEFAULTS = {"rmsnorm": "triton", "rope": "triton", "swiglu": "triton", "cross_entropy": "triton"}


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
