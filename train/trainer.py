"""The training loop: AdamW, warmup + cosine, clipping, accumulation, bf16 autocast on GPU,
optional torch.compile, DDP/FSDP2 under torchrun, atomic checkpoints, exact resume, SIGTERM
handling, NaN stop, progress bar and JSONL metrics with tokens/s and MFU.

Loss normalisation: each step's loss is the sum of token losses over every micro-batch on every
rank divided by the global number of target tokens, so N ranks with batch B give exactly the
gradients of one process with batch N x B (tested with DDP on gloo).
"""
from __future__ import annotations

from c4forge.core.errors import C4forgeError
import json
import math
import os
import random
import signal
import time
from dataclasses import asdict
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist

from c4forge.train.checkpoint import (NonFiniteState, copy_run_tokenizer, latest_checkpoint,
                              load_checkpoint, save_checkpoint, start_run_dir)
from c4forge.train.config import TrainConfig
from c4forge.train.data import IGNORE, PackedLoader, TokenDocuments, mixture_entries
from c4forge.train.loggers import LoggerError, MetricLoggers
from c4forge.train.models import build_model, flops_per_token
from c4forge.train.objectives import MODEL_KIND, ObjectiveError, objective_for

# Dense bf16 peak FLOP/s per device, for MFU. Unknown devices report MFU as null.
PEAK_FLOPS = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12,
              "L4": 121e12, "4090": 165e12, "3090": 71e12}


class TrainingError(C4forgeError, RuntimeError):
    """The run cannot start or had to stop (config mismatch, NaN loss)."""


def peak_flops(device: torch.device) -> Optional[float]:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_FLOPS.items() if k in name), None)


def setup_distributed():
    """(rank, world_size, local_rank, device) from torchrun's environment."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    return rank, world, local, device


def lr_at(step: int, config: TrainConfig, total_steps: int) -> float:
    o = config.optim
    if step < o.warmup_steps:
        return o.lr * (step + 1) / o.warmup_steps
    progress = min(1.0, (step - o.warmup_steps) / max(1, total_steps - o.warmup_steps))
    return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


BATCH_FIELDS = ("input_ids", "targets", "doc_ids", "positions")


def _arrays(batch) -> Dict[str, object]:
    """A Batch or an objective's dict -> {model argument: array or tensor}."""
    if isinstance(batch, dict):
        return batch
    return {name: getattr(batch, name) for name in BATCH_FIELDS}


def pinned(batch) -> Dict[str, torch.Tensor]:
    """Host tensors in page-locked memory (made in the prefetch thread on CUDA), so the copy to
    the GPU is asynchronous."""
    return {name: torch.as_tensor(np.asarray(a)).pin_memory() for name, a in _arrays(batch).items()}


def to_device(batch, device: torch.device) -> Dict[str, torch.Tensor]:
    """A Batch or dict (numpy, or pinned host tensors) -> int64 tensors on ``device``."""
    return {name: torch.as_tensor(np.asarray(a) if isinstance(a, np.ndarray) else a).to(
        device, torch.long, non_blocking=True) for name, a in _arrays(batch).items()}


def _target_tokens(batch) -> int:
    if isinstance(batch, dict):
        return int((batch["targets"] != IGNORE).sum())
    return batch.target_tokens


def model_kind(objective: str) -> str:
    return MODEL_KIND[objective]


def make_objective(config: TrainConfig, tokenizer_dir: str, seed: int):
    """The training objective's batch maker (None: causal) for this config."""
    return objective_for(config.objective, config.masking,
                         tokenizer_dir or os.path.join(config.out_dir, "tokenizer"), seed, config.data.seq_len)


def describe_packing(stats: dict) -> str:
    """The loader's packing statistics for people: percentages, rounded."""
    text = (f"{stats['real_token_share']:.1%} real tokens, {stats['cropped_share']:.1%} cropped"
            + (" (estimated from the first chunks)" if stats.get("estimated") else ""))
    return text + (f", {len(stats['sources'])} sources" if "sources" in stats else "")


def with_absolute_data_paths(config: TrainConfig) -> TrainConfig:
    """The config with absolute token directories, as checkpoints store it: a run evaluates and
    exports from any working directory (its tokenizer is copied into the run as well)."""
    from dataclasses import replace

    entries = mixture_entries(config.data.train)
    train_value = (os.path.abspath(entries[0][0]) if len(entries) == 1 else
                   [{"path": os.path.abspath(p), "weight": w} for p, w in entries])
    validation = os.path.abspath(config.data.validation) if config.data.validation else ""
    return replace(config, data=replace(config.data, train=train_value, validation=validation))


def open_train_data(config: TrainConfig) -> Tuple[List[TokenDocuments], List[float]]:
    """The token directories of data.train (one, or a weighted mixture) and their weights."""
    entries = mixture_entries(config.data.train)
    return ([TokenDocuments(path, config.data.train_split) for path, _ in entries],
            [weight for _, weight in entries])


def total_steps(config: TrainConfig, world: int) -> int:
    if config.max_tokens:
        per_step = config.data.batch_size * config.data.seq_len * config.data.grad_accum * world
        return max(1, math.ceil(config.max_tokens / per_step))
    return config.steps


class _Stop:
    """Set by SIGTERM/SIGINT: finish the step, checkpoint, exit cleanly."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum, frame) -> None:
        self.requested = True


def _all_reduce(value: torch.Tensor, world: int) -> torch.Tensor:
    if world > 1:
        dist.all_reduce(value)
    return value


def evaluate_loss(model: torch.nn.Module, loader: PackedLoader, batches: int,
                  device: torch.device, autocast) -> Dict[str, float]:
    """Mean token loss over the loader's first ``batches`` batches (a fresh, fixed sequence)."""
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=device)
    count = torch.zeros((), dtype=torch.float64, device=device)
    with torch.no_grad(), autocast():
        for i, batch in enumerate(loader):
            if i >= batches:
                break
            loss_sum, n = model(**to_device(batch, device))
            total += loss_sum.double()
            count += n.double()
    model.train()
    return {"loss": float(total / count), "tokens": int(count)}


def train(config: TrainConfig, resume: bool = False, log=print, overwrite: bool = False,
          meta: Optional[dict] = None) -> Dict[str, float]:
    """Train per ``config``. ``out_dir`` follows the run-directory rule
    (:func:`train.checkpoint.start_run_dir`): a directory holding another run is refused unless
    ``resume`` (continue it) or ``overwrite`` (remove its files first). ``meta`` is stored in the
    run manifest (the ablation records what a run was trained on)."""
    rank, world, local, device = setup_distributed()
    is_main = rank == 0
    if not config.data.train:
        raise TrainingError("data.train is empty: give a token directory from `tokenizer encode`")
    config = with_absolute_data_paths(config)
    sources, weights = open_train_data(config)
    docs = sources[0]
    if is_main:  # after the data opened: a bad token directory leaves no run behind
        start_run_dir(config.out_dir, resume, overwrite, meta)
        copy_run_tokenizer(config.out_dir, docs.manifest["tokenizer"].get("path", ""))
    if config.model.vocab_size != docs.vocab_size:
        from dataclasses import replace

        config = replace(config, model=replace(config.model, vocab_size=docs.vocab_size))
    steps = total_steps(config, world)

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    try:
        objective = make_objective(config, docs.manifest["tokenizer"].get("path", ""), config.seed)
        val_objective = make_objective(config, docs.manifest["tokenizer"].get("path", ""), 0)
    except ObjectiveError as exc:
        raise TrainingError(str(exc)) from exc
    model = build_model(config.model, config.objective).to(device)
    kernels = model.use_kernels(device.type)
    loader = PackedLoader(sources, config.data.seq_len, config.data.batch_size, config.data.packing,
                          seed=config.seed, rank=rank, world_size=world,
                          chunk_docs=config.data.best_fit_chunk, weights=weights,
                          prefetch=config.data.prefetch,
                          transform=pinned if device.type == "cuda" else None, objective=objective)
    val_loader_args = None
    if config.data.validation:
        val_docs = TokenDocuments(config.data.validation, config.data.validation_split)
        val_loader_args = (val_docs, config.data.seq_len, config.data.batch_size, "concat")
        val_loader_kwargs = {"objective": val_objective}

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.optim.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=config.optim.lr, betas=(config.optim.beta1, config.optim.beta2), eps=config.optim.eps,
        fused=device.type == "cuda")
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_at(s, config, steps) / config.optim.lr)

    start_step = 0
    checkpoint_dir = os.path.join(config.out_dir, "checkpoints")
    if resume:
        path = latest_checkpoint(checkpoint_dir)
        if path is None:
            raise TrainingError(f"--resume: no checkpoint in {checkpoint_dir}")
        state = load_checkpoint(path, config, model, optimizer, scheduler, loader)
        start_step = state["step"]
        if is_main:
            log(f"resumed from {path} at step {start_step}")
            if loader.notice:
                log(loader.notice)

    train_model = model
    if world > 1:
        if config.distributed == "fsdp":
            from torch.distributed.fsdp import fully_shard

            for block in [*getattr(model, "encoder", []), *model.blocks]:
                fully_shard(block)
            train_model = fully_shard(model)
        else:
            train_model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[local] if device.type == "cuda" else None)
    if config.compile:
        train_model = torch.compile(train_model)

    use_bf16 = config.precision == "bf16" or (config.precision == "auto" and device.type == "cuda")

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16)

    stop = _Stop()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    os.makedirs(config.out_dir, exist_ok=True)
    metrics_path = os.path.join(config.out_dir, "metrics.jsonl")
    if is_main and resume:
        _truncate_metrics(metrics_path, start_step)
    loggers = None
    if is_main:
        try:
            loggers = MetricLoggers(config.out_dir, config.logging, config.to_dict(), resume)
        except LoggerError as exc:
            raise TrainingError(str(exc)) from exc
    flops = flops_per_token(config.model, config.data.seq_len, model_kind(config.objective))
    peak = peak_flops(device)
    tokens_per_step = config.data.batch_size * config.data.seq_len * config.data.grad_accum * world
    if is_main:
        log(f"objective {config.objective}, {model_kind(config.objective).replace('_', '-')} "
            f"{model.num_parameters():,} parameters ({model.num_parameters(True):,} non-embedding), "
            f"kernels {kernels}, device {device}, world {world}, {steps} steps x "
            f"{tokens_per_step:,} tokens; packing {describe_packing(loader.stats())}")

    progress = None
    if is_main and config.progress:
        from c4forge.core.progress import bar

        progress = bar(total=steps, initial=start_step, unit="step", desc="training", leave=True)

    iterator = iter(loader)
    last: Dict[str, float] = {}
    step = start_step
    window_start, window_tokens = time.perf_counter(), 0
    try:
        while step < steps:
            micro = [next(iterator) for _ in range(config.data.grad_accum)]
            count = torch.tensor(float(sum(_target_tokens(b) for b in micro)), device=device)
            global_count = _all_reduce(count.clone(), world)
            loss_total = torch.zeros((), device=device, dtype=torch.float64)
            for i, batch in enumerate(micro):
                t = to_device(batch, device)
                sync = i == len(micro) - 1
                context = (train_model.no_sync() if (world > 1 and not sync and hasattr(train_model, "no_sync"))
                           else _nullcontext())
                with context, autocast():
                    loss_sum, _ = train_model(**t)
                    scaled = loss_sum * (world / global_count)
                scaled.backward()
                loss_total += loss_sum.detach().double()
            loss_value = float(_all_reduce(loss_total, world) / global_count)
            if not math.isfinite(loss_value):
                raise TrainingError(
                    f"loss is {loss_value} at step {step + 1}; stopping. "
                    f"{_last_good(checkpoint_dir)}; lower optim.lr or check the data")
            grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip))
            if not math.isfinite(grad_norm):
                raise TrainingError(
                    f"gradient norm is {grad_norm} at step {step + 1}; stopping before the update. "
                    f"{_last_good(checkpoint_dir)}; lower optim.lr or check the data")
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            window_tokens += tokens_per_step
            last = {"step": step, "loss": loss_value, "lr": scheduler.get_last_lr()[0], "grad_norm": grad_norm,
                    "tokens": loader.sequences * config.data.seq_len}

            if step % config.log_every == 0 or step == steps:
                elapsed = time.perf_counter() - window_start
                tps = window_tokens / elapsed if elapsed > 0 else 0.0
                last.update(tokens_per_second=round(tps, 1),
                            mfu=round(flops * tps / (peak * world), 4) if peak else None)
                if device.type == "cuda":  # since the start, this rank's tensors (not the cache)
                    last["peak_memory_gb"] = round(torch.cuda.max_memory_allocated(device) / 1e9, 3)
                window_start, window_tokens = time.perf_counter(), 0
            if val_loader_args and (step % config.eval_every == 0 or step == steps):
                val = evaluate_loss(model, PackedLoader(*val_loader_args, seed=0, **val_loader_kwargs),
                                    config.eval_batches,
                                    device, autocast)
                last["val_loss"] = val["loss"]
            if is_main:
                loggers.log(step, last)
                if progress:
                    progress.update(1)
                    progress.set_postfix(loss=f"{loss_value:.3f}",
                                         tok_s=f"{last.get('tokens_per_second', 0):,.0f}")
            stopping = _agree(stop.requested, world, device)
            if step % config.checkpoint_every == 0 or step == steps or stopping:
                try:
                    save_checkpoint(checkpoint_dir, step, config, model, optimizer, scheduler, loader,
                                    is_main=is_main, world=world)
                except NonFiniteState as exc:
                    raise TrainingError(f"{exc}; stopping. {_last_good(checkpoint_dir)}; lower "
                                        "optim.lr or check the data") from exc
            if stopping:
                if is_main:
                    log(f"stop requested: checkpoint saved at step {step}; resume with --resume")
                break
    finally:
        iterator.close()  # stops the prefetch thread
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if progress:
            progress.close()
        if loggers:
            loggers.close()
    return last


def _truncate_metrics(path: str, step: int) -> None:
    """On resume, drop records of steps after the checkpoint (they are trained again)."""
    if not os.path.exists(path):
        return
    from c4forge.core.io import atomic_write

    with open(path, encoding="utf-8") as handle:
        lines = handle.readlines()
    kept = []
    for line in lines:
        try:
            if json.loads(line).get("step", 0) <= step:
                kept.append(line)
        except ValueError:
            continue
    with atomic_write(path) as handle:
        handle.writelines(kept)


def _last_good(checkpoint_dir: str) -> str:
    """Names the last checkpoint on disk (every one written is finite: save_checkpoint refuses
    non-finite states)."""
    latest = latest_checkpoint(checkpoint_dir)
    return (f"The last good checkpoint is {latest} (resume with --resume)" if latest
            else "No checkpoint was written before this step")


def _agree(flag: bool, world: int, device: torch.device) -> bool:
    """Every rank stops if any rank got the signal."""
    if world == 1:
        return flag
    value = torch.tensor(1.0 if flag else 0.0, device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def describe(config: TrainConfig) -> str:
    return json.dumps(asdict(config), indent=2)
