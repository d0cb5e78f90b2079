"""The 124M preset on one GPU through `train run`: tokens/s, MFU, peak memory for bf16 with
torch.compile on and off and the fused Triton kernels on and off, and each bf16 run's early loss
curve against the eager fp32 path on the same batches.

Every variant is a real `train run` (same seed, so the same initial weights and batch order) on
the same token directory, best_fit packing, AdamW at lr 6e-4 with 50 warm-up steps and then a
constant rate (min_lr_ratio 1), so that runs of different lengths share their schedule and their
loss curves compare step for step. Figures come from each run's metrics.jsonl: tokens/s and MFU
are the median of the logged windows after the first quarter of the steps (compilation and
warm-up excluded), peak memory is torch.cuda.max_memory_allocated. MFU uses the trainer's peak
table (H100/H200: 989 TFLOP/s, dense bf16 without sparsity) and its FLOPs per token (6 x
parameters + attention). ``--profile-steps N`` profiles each compiled run's last N steps
(RUN/profile.txt: device busy share, launches, synchronisations, top kernels).

Run: python benchmarks/bench_gpu_train.py --tokens DIR [--steps 300] [--eager-steps 100]
     [--fp32-steps 100] [--batch-size 32] [--profile-steps 5] [--set KEY=VALUE ...] [--out DIR]
     [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("rmsnorm", "rope", "swiglu", "cross_entropy")

VARIANTS = {  # name: (precision, compile, kernels: every one on triton or torch, or each at auto)
    "bf16 compile default": ("bf16", True, "auto"),
    "bf16 compile fused": ("bf16", True, "triton"),
    "bf16 compile torch": ("bf16", True, "torch"),
    "bf16 eager default": ("bf16", False, "auto"),
    "bf16 eager fused": ("bf16", False, "triton"),
    "bf16 eager torch": ("bf16", False, "torch"),
    "fp32 eager torch": ("fp32", False, "torch"),
}


def run_variant(name: str, tokens: str, out: Path, steps: int, batch_size: int,
                profile_steps: int = 0, extra: tuple[str, ...] = ()) -> dict:
    precision, compiled, kernels = VARIANTS[name]
    run_dir = out / name.replace(" ", "-")
    settings = ["model_preset=124M", f"data.train={tokens}", "data.seq_len=1024",
                f"data.batch_size={batch_size}", "data.grad_accum=1", "data.packing=best_fit",
                f"steps={steps}", f"precision={precision}", f"compile={str(compiled).lower()}",
                "log_every=10", f"checkpoint_every={steps * 10}", f"eval_every={steps * 10}",
                "progress=false", "logging.tensorboard=false", "optim.lr=6e-4",
                "optim.warmup_steps=50", "optim.min_lr_ratio=1.0",
                f"profile_steps={profile_steps if compiled else 0}",
                *[f"model.{k}={kernels}" for k in KERNELS], *extra]
    cmd = [sys.executable, "-m", "c4forge.cli.train", "run", "-o", str(run_dir), "--overwrite",
           *[x for s in settings for x in ("--set", s)]]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:  # the error, not the C++ stack torch prints under it
        stderr = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("frame #"))
        print(f"{name}: failed ({proc.returncode})\n{proc.stdout[-2000:]}\n{stderr[-6000:]}",
              file=sys.stderr, flush=True)
        return {"variant": name, "failed": True, "stderr": stderr[-20000:]}
    rows = [json.loads(line) for line in open(run_dir / "metrics.jsonl")]
    timed = [r for r in rows if "tokens_per_second" in r and r["step"] > steps // 4]
    profile = run_dir / "profile.txt"
    result = {"variant": name, "steps": steps, "wall_s": round(wall, 1), "settings": settings,
              "kernels": next((line for line in proc.stdout.splitlines() if "kernels {" in line), ""),
              "profile": profile.read_text() if profile.exists() else None,
              "losses": [r["loss"] for r in rows],
              "tokens_per_second": statistics.median(r["tokens_per_second"] for r in timed),
              "mfu": statistics.median(r["mfu"] for r in timed) if timed[0].get("mfu") is not None else None,
              "peak_memory_gb": max(r.get("peak_memory_gb", 0) for r in rows),
              "log_head": proc.stdout.splitlines()[:3] + proc.stderr.splitlines()[-3:]}
    print(f"{name}: {result['tokens_per_second']:,.0f} tokens/s, mfu {result['mfu']}, "
          f"peak {result['peak_memory_gb']} GB, wall {wall:.0f} s, final loss {result['losses'][-1]:.3f}",
          file=sys.stderr, flush=True)
    return result


def curve_gap(a: list[float], b: list[float], n: int) -> dict[str, float]:
    n = min(n, len(a), len(b))
    gaps = [abs(x - y) for x, y in zip(a[:n], b[:n])]
    tail = gaps[n // 2:]
    return {"steps": n, "max": max(gaps), "mean": statistics.fmean(gaps),
            "mean_second_half": statistics.fmean(tail)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", required=True, help="token directory (tokenizer encode)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eager-steps", type=int, default=100, help="steps of the bf16 eager variants")
    parser.add_argument("--fp32-steps", type=int, default=100)
    parser.add_argument("--profile-steps", type=int, default=0, help="profile each compiled run's last N steps")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a further `train run` setting for every variant (repeatable)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", help="run directories (default: a temporary folder)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no GPU: this benchmark measures the CUDA path")
        return 0
    import triton

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gpu-train-"))
    results = {}
    for name in args.variants.split(","):
        steps = (args.fp32_steps if name.startswith("fp32") else
                 args.steps if VARIANTS[name][1] else args.eager_steps)
        results[name] = run_variant(name, args.tokens, out, steps, args.batch_size, args.profile_steps,
                                    tuple(args.set))
        if args.json:  # after every variant: a run cut short by a time limit keeps what it measured
            Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"\n{torch.cuda.get_device_name()}, driver {torch.cuda.driver_version() if hasattr(torch.cuda, 'driver_version') else 'n/a'}, "
          f"torch {torch.__version__} (CUDA {torch.version.cuda}), triton {triton.__version__}; "
          f"124M preset, seq 1024, batch {args.batch_size} x 1024 tokens per step, AdamW; "
          f"{', '.join(args.set) or 'no further settings'}\n")
    print("| variant | steps | tokens/s | MFU | peak GB | final loss | vs fp32: max / mean |loss gap| over the first steps |")
    print("|---|---:|---:|---:|---:|---:|---|")
    reference = results.get("fp32 eager torch")
    for name, r in results.items():
        if r.get("failed"):
            print(f"| {name} | failed | | | | | |")
            continue
        gap = ""
        if reference and not reference.get("failed") and name != "fp32 eager torch":
            g = curve_gap(r["losses"], reference["losses"], args.fp32_steps)
            r["gap_vs_fp32"] = g
            gap = f"{g['max']:.3f} / {g['mean']:.3f} (steps 1-{g['steps']})"
        mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "n/a"
        print(f"| {name} | {r['steps']} | {r['tokens_per_second']:,.0f} | {mfu} | {r['peak_memory_gb']:.1f} "
              f"| {r['losses'][-1]:.3f} | {gap} |")
    for name, r in results.items():
        if r.get("profile"):
            print(f"\n{name}, profile of the last {args.profile_steps} steps:\n"
                  + "\n".join(r["profile"].splitlines()[:3]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
