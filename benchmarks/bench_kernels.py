"""Kernel benchmark (GPU): each Triton kernel vs eager torch and vs torch.compile of its torch
reference, forward + backward, at realistic shapes: time and peak memory.

Shapes (the default sweep): fused linear + cross-entropy at 32k tokens x hidden 768 / vocabulary
32k (the 124M model's step) and hidden 4096 / vocabulary 128k (Liger-Kernel's published case:
about 5.8 GB fused vs 27.6 GB eager); RMSNorm at 32k tokens x 768 (the 124M model's step) and 8k
x 4096 (a 7B model's micro-batch), SwiGLU at the same tokens x the MLP width (8/3 of those);
RoPE on 32 x 1024 tokens x 12 heads x 64 (the 124M step) and 2 x 4096 x 32 x 128. Targets: every kernel at
least as fast as torch.compile of its reference (or off by default where it is not); the fused
cross-entropy's peak memory far below eager's.

Time: CUDA events around 20 forward+backward passes after 3 warm-ups, mean per pass. Memory:
peak allocated during those passes above what the inputs hold. "-" where a variant ran out of
memory.

Prints "no GPU" and exits 0 on a machine without CUDA (the kernels are tested for correctness
on CPU under TRITON_INTERPRET=1 in tests/test_kernels.py; speed needs a GPU).

Run: python benchmarks/bench_kernels.py [--dtype bf16] [--only rmsnorm,swiglu,rope,ce] [--json F]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(fn, inputs, repeat=20):
    """(ms per forward+backward, peak MiB above the inputs), or (None, None) when out of memory
    or when the variant fails (its error is printed: a compile failure loses one cell, not the
    table)."""
    try:
        for _ in range(3):
            out = fn(*inputs)
            loss = out[0] if isinstance(out, tuple) else out
            loss.float().sum().backward()
        for x in inputs:
            if isinstance(x, torch.Tensor):
                x.grad = None
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            out = fn(*inputs)
            loss = out[0] if isinstance(out, tuple) else out
            loss.float().sum().backward()
            del out, loss
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / repeat, (torch.cuda.max_memory_allocated() - base) / 2 ** 20
    except torch.OutOfMemoryError:
        return None, None
    except Exception as exc:  # noqa: BLE001 - reported, and the sweep goes on
        print(f"<!-- failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} -->",
              flush=True)
        return None, None
    finally:
        for x in inputs:
            if isinstance(x, torch.Tensor):
                x.grad = None
        torch.cuda.empty_cache()


def cases(dtype, only):
    """(kernel, shape label, make_inputs, torch reference, triton kernel, extra args)."""
    from c4forge.train.kernels.elementwise_triton import rmsnorm_triton, rope_triton, swiglu_triton
    from c4forge.train.kernels.linear_ce import linear_cross_entropy_torch
    from c4forge.train.kernels.linear_ce_triton import linear_cross_entropy_triton
    from c4forge.train.kernels.rmsnorm import rmsnorm_torch
    from c4forge.train.kernels.rope import rope_tables, rope_torch
    from c4forge.train.kernels.swiglu import swiglu_torch

    dev = "cuda"

    def param(*shape, scale=1.0):
        return (torch.randn(*shape, device=dev, dtype=dtype) * scale).requires_grad_()

    if "ce" in only:  # first: the case the memory target is about
        for n, d, vocab in ((32768, 768, 32768), (32768, 4096, 131072)):
            yield ("linear+cross-entropy", f"{n:,} x {d}, vocab {vocab:,}",
                   lambda n=n, d=d, vocab=vocab: (param(n, d, scale=0.5), param(vocab, d, scale=0.02),
                                                  torch.randint(0, vocab, (n,), device=dev)),
                   lambda h, w, t, v=vocab: linear_cross_entropy_torch(h, w, t, v, 10 ** 9),
                   lambda h, w, t, v=vocab: linear_cross_entropy_triton(h, w, t, v, 8192), ())
    if "ce-chunked" in only:  # the reference as the trainer runs it: chunks of 8,192 rows, recomputed
        for n, d, vocab in ((32768, 768, 32768), (32768, 4096, 131072)):
            yield ("linear+cross-entropy, reference chunked", f"{n:,} x {d}, vocab {vocab:,}",
                   lambda n=n, d=d, vocab=vocab: (param(n, d, scale=0.5), param(vocab, d, scale=0.02),
                                                  torch.randint(0, vocab, (n,), device=dev)),
                   lambda h, w, t, v=vocab: linear_cross_entropy_torch(h, w, t, v, 8192),
                   lambda h, w, t, v=vocab: linear_cross_entropy_triton(h, w, t, v, 8192), ())
    for n, d in ((32768, 768), (8192, 4096)):  # a 124M step's tokens; a 7B model's micro-batch
        if "rmsnorm" in only:
            yield ("rmsnorm", f"{n:,} x {d}", lambda n=n, d=d: (param(n, d), param(d)),
                   rmsnorm_torch, rmsnorm_triton, (1e-5,))
        if "swiglu" in only:
            f = -(-(8 * d // 3) // 64) * 64  # the model's MLP width (ModelConfig.ffn_dim)
            yield ("swiglu", f"{n:,} x {f}", lambda n=n, f=f: (param(n, f), param(n, f)),
                   swiglu_torch, swiglu_triton, ())
    if "rope" in only:
        for b, t, h, hd in ((32, 1024, 12, 64), (2, 4096, 32, 128)):
            cos, sin = rope_tables(torch.arange(t, device=dev).repeat(b, 1), hd, 10000.0)
            # the model hands RoPE a transposed (B, H, T, D) view of the projection
            yield ("rope", f"{b} x {t} x {h} x {hd}",
                   lambda b=b, t=t, h=h, hd=hd: (param(b, t, h, hd).transpose(1, 2),),
                   lambda x, c=cos, s=sin: rope_torch(x, c, s),
                   lambda x, c=cos, s=sin: rope_triton(x, c, s), ())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--only", default="rmsnorm,swiglu,rope,ce,ce-chunked",
                        help="ce: the reference unchunked (all logits at once); ce-chunked: the "
                             "reference in the trainer's chunks of 8,192 rows under checkpointing")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: kernel speed and memory need CUDA (correctness is tested on CPU in tests/test_kernels.py)")
        return 0
    import triton

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    torch._dynamo.config.cache_size_limit = 64  # one compiled graph per shape
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{args.dtype}; forward+backward, mean of 20 after 3 warm-ups; memory: peak above the inputs\n")
    print("| kernel | shape | eager ms | compile ms | triton ms | triton vs eager | triton vs compile "
          "| eager MiB | compile MiB | triton MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for name, label, make, ref, tri, extra in cases(dtype, set(args.only.split(","))):
        compiled_ref = torch.compile(ref, dynamic=False)  # one graph per shape, as in a model
        inputs = make()
        row = {"kernel": name, "shape": label}
        for variant, fn in (("eager", ref), ("compile", compiled_ref), ("triton", tri)):
            ms, mem = measure(lambda *x, f=fn, extra=extra: f(*x, *extra), inputs)
            row[f"{variant}_ms"], row[f"{variant}_mib"] = ms, mem
        del inputs
        rows.append(row)

        def cell(v, fmt):
            return "-" if v is None else format(v, fmt)

        def ratio(a, b):
            return "-" if a is None or b is None else f"{a / b:.2f}x"

        print(f"| {name} | {label} | {cell(row['eager_ms'], '.3f')} | {cell(row['compile_ms'], '.3f')} "
              f"| {cell(row['triton_ms'], '.3f')} | {ratio(row['eager_ms'], row['triton_ms'])} "
              f"| {ratio(row['compile_ms'], row['triton_ms'])} | {cell(row['eager_mib'], ',.0f')} "
              f"| {cell(row['compile_mib'], ',.0f')} | {cell(row['triton_mib'], ',.0f')} |", flush=True)
        if args.json:  # after every row: a sweep cut short by a time limit keeps what it measured
            Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
