"""Fused kernels, each beside its pure-torch reference with the same signature:
rmsnorm, rope, swiglu, linear_cross_entropy. ``resolve(choice)`` turns "auto" into "triton" on
CUDA when triton imports, else "torch"."""
from __future__ import annotations

import functools
import importlib

from c4forge.core.settings import ConfigError


@functools.cache
def triton_available() -> bool:
    try:
        importlib.import_module("triton")
    except ImportError:
        return False
    return True


def resolve(choice: str, device_type: str) -> str:
    if choice == "auto":
        return "triton" if device_type == "cuda" and triton_available() else "torch"
    if choice == "triton" and not triton_available():
        raise ConfigError("a kernel is set to triton but triton is not installed: pip install 'c4forge[train]' on Linux, or set model.kernels=torch")
    return choice
