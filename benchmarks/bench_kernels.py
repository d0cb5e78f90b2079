"""Kernel benchmark (GPU): each Triton kernel vs eager torch and torch.compile of the torch
reference, forward + backward, time and peak memory. Targets: every kernel faster than eager;
fused linear + cross-entropy peak memory <= 40% of eager at vocabulary 32k+.

Prints "no GPU" and exits 0 on a machine without CUDA (the kernels are tested for correctness on
CPU under TRITON_INTERPRET=1 in tests/test_kernels.py; speed needs a GPU).

Run: .venv/bin/python benchmarks/bench_kernels.py [--dtype bf16]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(fn, make_inputs, repeat=20):
    """(ms per forward+backward, peak MiB above the inputs)."""
    inputs = make_inputs()
    for _ in range(3):
        out = fn(*inputs)
        loss = out[0] if isinstance(out, tuple) else out
        loss.float().sum().backward()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        out = fn(*inputs)
        loss = out[0] if isinstance(out, tuple) else out
        loss.float().sum().backward()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeat, (torch.cuda.max_memory_allocated() - base) / 2 ** 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--tokens", type=int, default=8192, help="batch x sequence")
    parser.add_argument("--d-model", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=32768)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: kernel speed and memory need CUDA (correctness is tested on CPU in tests/test_kernels.py)")
        return 0
    from train.kernels.elementwise_triton import rmsnorm_triton, rope_triton, swiglu_triton
    from train.kernels.linear_ce import linear_cross_entropy_torch
    from train.kernels.linear_ce_triton import linear_cross_entropy_triton
    from train.kernels.rmsnorm import rmsnorm_torch
    from train.kernels.rope import rope_tables, rope_torch
    from train.kernels.swiglu import swiglu_torch

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    dev, n, d, heads = "cuda", args.tokens, args.d_model, 16
    batch, seq = 8, n // 8
    hd = d // heads
    cos, sin = rope_tables(torch.arange(seq, device=dev).repeat(batch, 1), hd, 10000.0)

    def param(*shape, scale=1.0):
        return (torch.randn(*shape, device=dev, dtype=dtype) * scale).requires_grad_()

    def full_ce(h, w, t):
        logits = (h @ w.t()).float()
        return torch.nn.functional.cross_entropy(logits, t, reduction="sum"), None

    cases = {
        "rmsnorm": (lambda: (param(n, d), param(d)), rmsnorm_torch, rmsnorm_triton, (1e-5,)),
        "rope": (lambda: (param(batch, heads, seq, hd), cos, sin), rope_torch, rope_triton, ()),
        "swiglu": (lambda: (param(n, 4 * d), param(n, 4 * d)), swiglu_torch, swiglu_triton, ()),
        "linear+cross-entropy": (
            lambda: (param(n, d, scale=0.5), param(args.vocab, d, scale=0.02),
                     torch.randint(0, args.vocab, (n,), device=dev)),
            full_ce, lambda h, w, t: linear_cross_entropy_triton(h, w, t, args.vocab, 4096), ()),
    }
    print(f"{torch.cuda.get_device_name()}, {args.dtype}, {n:,} tokens, d_model {d}, vocab {args.vocab:,}; "
          "forward+backward, mean of 20\n")
    print("| kernel | eager ms | compile ms | triton ms | triton vs eager | eager MiB | triton MiB | triton/eager memory |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (make, ref, tri, extra) in cases.items():
        eager = lambda *x, f=ref: f(*x, *extra)  # noqa: E731
        compiled_fn = torch.compile(ref)
        compiled = lambda *x, f=compiled_fn: f(*x, *extra)  # noqa: E731
        fused = lambda *x, f=tri: f(*x, *extra)  # noqa: E731
        e_ms, e_mem = measure(eager, make)
        c_ms, _ = measure(compiled, make)
        t_ms, t_mem = measure(fused, make)
        print(f"| {name} | {e_ms:.3f} | {c_ms:.3f} | {t_ms:.3f} | {e_ms / t_ms:.2f}x | {e_mem:,.0f} | "
              f"{t_mem:,.0f} | {t_mem / max(e_mem, 1e-9):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
