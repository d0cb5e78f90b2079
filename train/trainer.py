"""The training loop: AdamW, warmup + cosine, clipping, accumulation, bf16 autocast on GPU,
optional torch.compile, DDP/FSDP2 under torchrun, atomic checkpoints, exact resume, SIGTERM
handling, NaN stop, progress bar and JSONL metrics with tokens/s and MFU.

Loss normalisation: each step's loss is the sum of token losses over every micro-batch on every
rank divided by the global number of target tokens, so N ranks with batch B give exactly the
gradients of one process with batch N x B (tested with DDP on gloo).

The host never waits for the device inside a step on CUDA: a step's loss and gradient norm stay
on the device, the fused AdamW skips the update there when either is not finite (its
``found_inf``), and the two figures are copied to pinned memory and read while the next step is
already queued, except at steps that evaluate, checkpoint or end the run, which read their own.
Waiting on each step cost a 124M model on an H100 about a tenth of its step time, the device idle
while the host launched the next step's first kernels (benchmarks/RESULTS.md). On the CPU the
figures are read at once, before the update, which they can stop.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Optional

import numpy as np
import torch
import torch.distributed as dist

from c4forge.core.errors import C4forgeError
from c4forge.core.io import atomic_write
from c4forge.core.outdir import output_path
from c4forge.core.progress import bar
from c4forge.train.checkpoint import (
    NonFiniteState,
    copy_run_tokenizer,
    latest_checkpoint,
    load_checkpoint,
    run_tokenizer_copy,
    save_checkpoint,
    start_run_dir,
    undo_unstarted_run,
)
from c4forge.train.config import TrainConfig
from c4forge.train.data import Batch, PackedLoader, TokenDocuments, mixture_entries
from c4forge.train.loggers import LoggerError, MetricLoggers
from c4forge.train.models import build_model, flops_per_token
from c4forge.train.objectives import MODEL_KIND, ObjectiveError, objective_for
from c4forge.train.profiling import StepProfiler

# Dense bf16 peak FLOP/s per device, for MFU. Unknown devices report MFU as null.
PEAK_FLOPS = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12,
              "L4": 121e12, "4090": 165e12, "3090": 71e12}


class TrainingError(C4forgeError, RuntimeError):
    """The run cannot start or had to stop (config mismatch, NaN loss)."""


class RunInterrupted(TrainingError):
    """Ctrl-C (SIGINT) stopped the run, after its checkpoint: exit 130, the shell's convention
    for an interrupted command (SIGTERM, a scheduler's preemption, exits 0: the run is resumable)."""

    exit_code = 130


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


def pinned(batch: Batch) -> dict[str, torch.Tensor]:
    """Host tensors in page-locked memory (made in the prefetch thread on CUDA), so the copy to
    the GPU is asynchronous."""
    return Batch({name: torch.as_tensor(np.asarray(a)).pin_memory() for name, a in batch.items()})


def to_device(batch: Batch, device: torch.device) -> dict[str, torch.Tensor]:
    """A batch (numpy arrays, or pinned host tensors) -> int64 tensors on ``device``, keyed by
    the model's argument names."""
    return {name: torch.as_tensor(np.asarray(a) if isinstance(a, np.ndarray) else a).to(
        device, torch.long, non_blocking=True) for name, a in batch.items()}


def model_kind(objective: str) -> str:
    return MODEL_KIND[objective]


def data_seed(config: TrainConfig) -> int:
    """The seed of the document order and the objective's masks: ``data_seed``, else ``seed``."""
    return config.seed if config.data_seed is None else config.data_seed


def make_objective(config: TrainConfig, tokenizer, seed: int):
    """The training objective's batch maker (None: causal) for this config; ``tokenizer``: the
    training data's token manifest entry (any kind), or a path."""
    return objective_for(config.objective, config.masking,
                         tokenizer or os.path.join(config.out_dir, "tokenizer"), seed, config.data.seq_len)


def describe_packing(stats: dict) -> str:
    """The loader's packing statistics for people: percentages, rounded."""
    text = (f"{stats['real_token_share']:.1%} real tokens, {stats['cropped_share']:.1%} cropped"
            + (" (estimated from the first chunks)" if stats.get("estimated") else ""))
    return text + (f", {len(stats['sources'])} sources" if "sources" in stats else "")


def with_absolute_data_paths(config: TrainConfig) -> TrainConfig:
    """The config with absolute token directories, as checkpoints store it: a run evaluates and
    exports from any working directory (its tokenizer is copied into the run as well)."""
    entries = mixture_entries(config.data.train)
    train_value = (os.path.abspath(entries[0][0]) if len(entries) == 1 else
                   [{"path": os.path.abspath(p), "weight": w} for p, w in entries])
    validation = os.path.abspath(config.data.validation) if config.data.validation else ""
    tokenizer = os.path.abspath(config.data.tokenizer) if config.data.tokenizer else ""
    return replace(config, data=replace(config.data, train=train_value, validation=validation,
                                        tokenizer=tokenizer))


def open_train_data(config: TrainConfig) -> tuple[list[TokenDocuments], list[float]]:
    """The token directories of data.train (one, or a weighted mixture) and their weights."""
    entries = mixture_entries(config.data.train)
    return ([TokenDocuments(path, config.data.train_split, config.data.tokenizer) for path, _ in entries],
            [weight for _, weight in entries])


def total_steps(config: TrainConfig, world: int) -> int:
    if config.max_tokens:
        per_step = config.data.batch_size * config.data.seq_len * config.data.grad_accum * world
        return max(1, math.ceil(config.max_tokens / per_step))
    return config.steps


class StepFigures:
    """A step's loss and gradient norm as the device computed them: read at once (CPU), or
    copied to pinned host memory behind an event and read when the host needs them (CUDA)."""

    def __init__(self, loss: torch.Tensor, grad_norm: torch.Tensor, deferred: bool) -> None:
        values = torch.stack([loss.double(), grad_norm.double()])
        self.lr, self.tokens = 0.0, 0  # the step's learning rate and tokens read so far, set after it
        self.event = None
        if deferred:
            self.host = torch.empty(2, dtype=torch.float64, pin_memory=True)
            self.host.copy_(values, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host = values

    def read(self) -> tuple[float, float]:
        if self.event is not None:
            self.event.synchronize()
        loss, grad_norm = self.host.tolist()
        return loss, grad_norm


class _Stop:
    """Set by SIGTERM/SIGINT: finish the step, checkpoint, exit cleanly."""

    def __init__(self) -> None:
        self.requested = False
        self.signum: Optional[int] = None

    def __call__(self, signum, frame) -> None:
        self.requested, self.signum = True, signum


def _all_reduce(value: torch.Tensor, world: int) -> torch.Tensor:
    if world > 1:
        dist.all_reduce(value)
    return value


def evaluate_loss(model: torch.nn.Module, loader: PackedLoader, batches: int,
                  device: torch.device, autocast) -> dict[str, float]:
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


class Trainer:
    """One training run. :meth:`run` reads top to bottom: set up, then per step train, log,
    evaluate and checkpoint. ``out_dir`` follows the run-directory rule
    (:func:`train.checkpoint.start_run_dir`): a directory holding another run is refused unless
    ``resume`` (continue it) or ``overwrite`` (remove its files first). ``meta`` is stored in the
    run manifest (the ablation records what a run was trained on)."""

    def __init__(self, config: TrainConfig, resume: bool = False, log: Callable[[str], None] = print,
                 overwrite: bool = False, meta: Optional[dict] = None) -> None:
        self.resume, self.log = resume, log
        self.rank, self.world, self.local, self.device = setup_distributed()
        self.is_main = self.rank == 0
        self.config, self.sources, self.weights = self._open_data(config, overwrite, meta)
        self.steps = total_steps(self.config, self.world)
        self.checkpoint_dir = os.path.join(self.config.out_dir, "checkpoints")
        self.tokens_per_step = (self.config.data.batch_size * self.config.data.seq_len
                                * self.config.data.grad_accum * self.world)
        self.use_bf16 = self.config.precision == "bf16" or (
            self.config.precision == "auto" and self.device.type == "cuda")
        self.deferred_reads = self.device.type == "cuda"  # the module docstring says why
        self._build()  # complete after __init__: model, loaders, optimizer and schedule

    # ------------------------------------------------------------------ set-up

    def _open_data(self, config: TrainConfig, overwrite: bool, meta: Optional[dict]):
        if not config.data.train:
            raise TrainingError("data.train is empty: give a token directory from `tokenizer encode`")
        config = with_absolute_data_paths(config)
        sources, weights = open_train_data(config)
        docs = sources[0]
        if self.is_main:  # after the data opened: a bad token directory leaves no run behind
            start_run_dir(config.out_dir, self.resume, overwrite, meta)
            copy_run_tokenizer(config.out_dir, docs.manifest["tokenizer"])
        if config.model.vocab_size != docs.vocab_size:
            config = replace(config, model=replace(config.model, vocab_size=docs.vocab_size))
        return config, sources, weights

    def _build(self) -> None:
        """Objectives, model, loaders, optimizer and schedule, in the order that fixes the RNG
        streams (a run's losses depend on it)."""
        config, device = self.config, self.device
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        # the run's copy of the tokenizer when there is one (the original may have moved)
        tokenizer = run_tokenizer_copy(config.out_dir) or self.sources[0].manifest["tokenizer"]
        try:
            objective = make_objective(config, tokenizer, data_seed(config))
            self.val_objective = make_objective(config, tokenizer, 0)
        except ObjectiveError as exc:
            raise TrainingError(str(exc)) from exc
        self.model = build_model(config.model, config.objective).to(device)
        self.kernels = self.model.use_kernels(device.type, compiled=config.compile)
        self.loader = PackedLoader(
            self.sources, config.data.seq_len, config.data.batch_size, config.data.packing,
            seed=data_seed(config), rank=self.rank, world_size=self.world,
            chunk_docs=config.data.best_fit_chunk, weights=self.weights,
            prefetch=config.data.prefetch, transform=pinned if device.type == "cuda" else None,
            objective=objective)
        self.val_docs = (TokenDocuments(config.data.validation, config.data.validation_split, config.data.tokenizer)
                         if config.data.validation else None)
        decay = [p for _, p in self.model.named_parameters() if p.dim() >= 2]
        no_decay = [p for _, p in self.model.named_parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.optim.weight_decay},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=config.optim.lr, betas=(config.optim.beta1, config.optim.beta2),
            eps=config.optim.eps, fused=device.type == "cuda")
        steps = self.steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_at(s, config, steps) / config.optim.lr)

    def _restore(self) -> int:
        """The step to start from: 0, or the newest checkpoint's with ``resume``."""
        if not self.resume:
            return 0
        path = latest_checkpoint(self.checkpoint_dir)
        if path is None:
            raise TrainingError(f"--resume: no checkpoint in {self.checkpoint_dir}")
        state = load_checkpoint(path, self.config, model=self.model, optimizer=self.optimizer,
                                scheduler=self.scheduler, loader=self.loader)
        if self.is_main:
            self.log(f"resumed from {path} at step {state['step']}")
            if self.loader.notice:
                self.log(self.loader.notice)
        return int(state["step"])

    def _wrap(self) -> torch.nn.Module:
        """The module the step runs: DDP or FSDP2 over several ranks, compiled on request."""
        model, train_model = self.model, self.model
        if self.world > 1:
            if self.config.distributed == "fsdp":
                from torch.distributed.fsdp import fully_shard  # lazy: FSDP, only for a sharded run

                for block in [*getattr(model, "encoder", []), *model.blocks]:
                    fully_shard(block)
                train_model = fully_shard(model)
            else:
                train_model = torch.nn.parallel.DistributedDataParallel(  # buffers: rope tables, the same everywhere
                    model, device_ids=[self.local] if self.device.type == "cuda" else None,
                    broadcast_buffers=False)
        if self.config.compile:
            train_model = torch.compile(train_model)
        return train_model

    def autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.use_bf16)

    def _open_logging(self, start_step: int) -> None:
        config = self.config
        os.makedirs(config.out_dir, exist_ok=True)
        self.loggers = self.progress = None
        if not self.is_main:
            return
        if self.resume:
            _truncate_metrics(os.path.join(config.out_dir, "metrics.jsonl"), start_step)
        try:
            self.loggers = MetricLoggers(config.out_dir, config.logging, config.to_dict(), self.resume)
        except LoggerError as exc:
            raise TrainingError(str(exc)) from exc
        kind = model_kind(config.objective)
        self.log(f"objective {config.objective}, {kind.replace('_', '-')} "
                 f"{self.model.num_parameters():,} parameters "
                 f"({self.model.num_parameters(True):,} non-embedding), kernels {self.kernels}, "
                 f"device {self.device}, world {self.world}, {self.steps} steps x "
                 f"{self.tokens_per_step:,} tokens; packing {describe_packing(self.loader.stats())}")
        if config.progress:

            self.progress = bar(total=self.steps, initial=start_step, unit="step", desc="training",
                                leave=True)

    # ------------------------------------------------------------------ the loop

    def run(self) -> dict[str, float]:
        """Train to the last step (or a stop signal); returns the last step's metrics."""
        step = self._restore()
        train_model = self._wrap()
        stop = _Stop()
        previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        self._open_logging(step)
        self.flops = flops_per_token(self.config.model, self.config.data.seq_len,
                                     model_kind(self.config.objective))
        self.peak = peak_flops(self.device)
        iterator = iter(self.loader)
        last: dict[str, float] = {}
        profiler = self._profiler()
        self.window_start, self.window_tokens = time.perf_counter(), 0
        pending: Optional[tuple[int, StepFigures]] = None  # a step whose figures are still on the device
        try:
            while step < self.steps:
                if profiler:
                    profiler.before_step(step + 1)
                figures = self.train_step(train_model, iterator, step)
                step += 1
                if profiler:
                    profiler.after_step(step)
                if pending is not None:  # the previous step, read now that this one is queued
                    self.report(pending[0], self.step_metrics(*pending))
                    pending = None
                stopping = _agree(stop.requested, self.world, self.device)
                evaluating = self.val_docs is not None and (step % self.config.eval_every == 0 or step == self.steps)
                checkpointing = step % self.config.checkpoint_every == 0 or step == self.steps or stopping
                if self.deferred_reads and not (evaluating or checkpointing):
                    pending = (step, figures)
                    continue
                last = self.step_metrics(step, figures)
                if evaluating:
                    last["val_loss"] = self.evaluate()["loss"]
                self.report(step, last)
                if checkpointing:
                    self.checkpoint(step)
                if stopping:
                    if stop.signum == signal.SIGINT:
                        raise RunInterrupted(f"interrupted: checkpoint saved at step {step}; resume with --resume")
                    if self.is_main:
                        self.log(f"stop requested: checkpoint saved at step {step}; resume with --resume")
                    break
        finally:
            iterator.close()  # stops the prefetch thread
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self.progress:
                self.progress.close()
            if self.loggers:
                self.loggers.close()
        return last

    def _profiler(self) -> Optional[StepProfiler]:
        """The run's last ``profile_steps`` steps profiled into RUN/profile.txt (main rank)."""
        count = min(self.config.profile_steps, self.steps)
        if not count or not self.is_main:
            return None
        return StepProfiler(self.steps - count + 1, count, os.path.join(self.config.out_dir, "profile.txt"),
                            self.device)

    # ------------------------------------------------------------------ the parts of a step

    def train_step(self, train_model: torch.nn.Module, iterator, step: int) -> StepFigures:
        """One optimizer step over ``grad_accum`` micro-batches; its loss and gradient norm. The
        loss is normalised by the global count of target tokens (see the module docstring)."""
        config, device, world = self.config, self.device, self.world
        micro = [next(iterator) for _ in range(config.data.grad_accum)]
        count = float(sum(b.target_tokens for b in micro))
        global_count = _all_reduce(torch.tensor(count, device=device), world) if world > 1 else count
        loss_total = torch.zeros((), device=device, dtype=torch.float64)
        for i, batch in enumerate(micro):
            sync = i == len(micro) - 1
            no_sync = getattr(train_model, "no_sync", None) if world > 1 and not sync else None
            with (no_sync() if no_sync else contextlib.nullcontext()), self.autocast():
                loss_sum, _ = train_model(**to_device(batch, device))
                scaled = loss_sum * (world / global_count)
            scaled.backward()
            loss_total += loss_sum.detach().double()
        loss = _all_reduce(loss_total, world) / global_count
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.optim.grad_clip)
        figures = StepFigures(loss, grad_norm, self.deferred_reads)
        if self.deferred_reads:  # the fused AdamW skips the update on the device when not finite
            # read by the fused step (torch.optim.Adam passes it on; GradScaler sets it the same way)
            self.optimizer.found_inf = (~(torch.isfinite(loss) & torch.isfinite(grad_norm))).float()  # type: ignore[attr-defined]
        else:
            self.read_figures(step + 1, figures)  # raises before the update
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        figures.lr, figures.tokens = float(self.scheduler.get_last_lr()[0]), self.loader.sequences * config.data.seq_len
        return figures

    def read_figures(self, step: int, figures: StepFigures) -> tuple[float, float]:
        """(loss, gradient norm) of step ``step``; a run whose loss or gradient norm is not finite
        stops here (its update was not applied: before it on the CPU, by the optimizer on CUDA)."""
        loss, grad_norm = figures.read()
        if not math.isfinite(loss):
            raise TrainingError(f"loss is {loss} at step {step}; stopping. "
                                f"{_last_good(self.checkpoint_dir)}; lower optim.lr or check the data")
        if not math.isfinite(grad_norm):
            raise TrainingError(
                f"gradient norm is {grad_norm} at step {step}; stopping before the update. "
                f"{_last_good(self.checkpoint_dir)}; lower optim.lr or check the data")
        return loss, grad_norm

    def step_metrics(self, step: int, figures: StepFigures) -> dict[str, float]:
        """The step's metrics; throughput and MFU over the window since the last log line."""
        loss, grad_norm = self.read_figures(step, figures)
        self.window_tokens += self.tokens_per_step
        last: dict[str, Any] = {"step": step, "loss": loss, "lr": figures.lr, "grad_norm": grad_norm,
                                "tokens": figures.tokens}
        if step % self.config.log_every == 0 or step == self.steps:
            elapsed = time.perf_counter() - self.window_start
            tps = self.window_tokens / elapsed if elapsed > 0 else 0.0
            last.update(tokens_per_second=round(tps, 1),
                        mfu=round(self.flops * tps / (self.peak * self.world), 4) if self.peak else None)
            if self.device.type == "cuda":  # since the start, this rank's tensors (not the cache)
                last["peak_memory_gb"] = round(torch.cuda.max_memory_allocated(self.device) / 1e9, 3)
            self.window_start, self.window_tokens = time.perf_counter(), 0
        return last

    def evaluate(self) -> dict[str, float]:
        """Validation loss over the first ``eval_batches`` batches of a fresh, fixed loader."""
        config = self.config
        loader = PackedLoader(self.val_docs, config.data.seq_len, config.data.batch_size, "concat",
                              seed=0, objective=self.val_objective)
        return evaluate_loss(self.model, loader, config.eval_batches, self.device, self.autocast)

    def report(self, step: int, last: dict[str, float]) -> None:
        if self.loggers is None:  # ranks other than the first log nothing
            return
        self.loggers.log(step, last)
        if self.progress:
            self.progress.update(1)
            self.progress.set_postfix(loss=f"{last['loss']:.3f}",
                                      tok_s=f"{last.get('tokens_per_second', 0):,.0f}")

    def checkpoint(self, step: int) -> None:
        try:
            save_checkpoint(self.checkpoint_dir, step, self.config, model=self.model,
                            optimizer=self.optimizer, scheduler=self.scheduler, loader=self.loader,
                            is_main=self.is_main, world=self.world)
        except NonFiniteState as exc:
            raise TrainingError(f"{exc}; stopping. {_last_good(self.checkpoint_dir)}; lower "
                                "optim.lr or check the data") from exc


def train(config: TrainConfig, resume: bool = False, log: Callable[[str], None] = print,
          overwrite: bool = False, meta: Optional[dict] = None) -> dict[str, float]:
    """Train per ``config`` (see :class:`Trainer`); returns the last step's metrics. A new run
    that fails before its first checkpoint leaves nothing behind (:func:`undo_unstarted_run`),
    so its retry is not refused as "already holds a run"."""
    out_dir = output_path(config.out_dir)
    created = not os.path.exists(out_dir)
    main_rank = int(os.environ.get("RANK", "0")) == 0
    try:
        return Trainer(config, resume=resume, log=log, overwrite=overwrite, meta=meta).run()
    except BaseException:
        if main_rank and not resume:
            undo_unstarted_run(out_dir, created)
        raise


def _truncate_metrics(path: str, step: int) -> None:
    """On resume, drop records of steps after the checkpoint (they are trained again)."""
    if not os.path.exists(path):
        return

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
