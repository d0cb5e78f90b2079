"""Fine-tune a pretrained checkpoint (any objective) on GLUE tasks: per task several seeds and
optionally a small learning-rate sweep, every run deterministic given its seed; the report gives
each task's official metrics, mean and spread over seeds at the chosen learning rate (the best
mean validation score, as the GLUE papers report dev results), and T5's GLUE average."""
from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from c4forge.core import progress as bars
from c4forge.core.settings import apply_settings
from c4forge.train.checkpoint import load_model, run_tokenizer
from c4forge.train.config import ModelConfig
from c4forge.train.evaluation.finetune.classifier import Classifier
from c4forge.train.evaluation.finetune.glue import TASKS, load_split
from c4forge.train.evaluation.finetune.metrics import glue_average, task_metrics, task_score
from c4forge.train.models import build_model


@dataclasses.dataclass(frozen=True)
class FinetuneConfig:
    """One task's fine-tuning settings.

    lr: AdamW peak learning rate (linear warmup over warmup_share of the steps, then linear
        decay to 0). epochs, batch_size: passes over the training split, examples per step.
    min_steps: at least this many optimizer steps (more epochs over a small subset): 32 steps
        only fit the head's label prior (issue 28), so a budget is in steps, not just epochs.
    max_len: tokens per example (longer ones are cut at the end). weight_decay, grad_clip.
    max_train / max_eval: a fixed stratified random subset of the split (None: all of it).
    pooling: "mean" or "last" token state for decoders (classifier.py).
    init: "pretrained" (the checkpoint's weights) or "random" (the same architecture freshly
        initialised as the pretraining run initialised it: the reference a pretraining gain is
        measured against).
    """

    lr: float = 3e-4
    epochs: int = 3
    batch_size: int = 32
    min_steps: int = 150
    max_len: int = 128
    weight_decay: float = 0.01
    warmup_share: float = 0.1
    grad_clip: float = 1.0
    max_train: Optional[int] = None
    max_eval: Optional[int] = None
    pooling: str = "mean"
    init: str = "pretrained"


# Small data sets get more epochs (BERT/RoBERTa practice); see configs/glue.yaml.
TASK_DEFAULTS: dict[str, dict[str, object]] = {
    "sst2": {"epochs": 2}, "cola": {"epochs": 5}, "mrpc": {"epochs": 5}, "stsb": {"epochs": 5},
    "rte": {"epochs": 10}, "wnli": {"epochs": 5},
}


def task_configs(tasks: Iterable[str], settings: dict[str, object]) -> dict[str, FinetuneConfig]:
    """Per task: the defaults, then the settings' top-level keys (every task), then the task's
    own block (``{lr: 1e-3, sst2: {epochs: 3}}``)."""

    shared = {k: v for k, v in settings.items() if k not in TASKS}
    return {t: apply_settings(apply_settings(FinetuneConfig(), {**TASK_DEFAULTS.get(t, {}), **shared}),
                              settings.get(t) or {}) for t in tasks}


def _predict(clf: Classifier, sequences: list[list[int]], regression: bool, batch: int = 64) -> list[float]:
    out: list[float] = []
    clf.eval()
    with torch.no_grad():
        for b in range(0, len(sequences), batch):
            logits = clf(sequences[b:b + batch])
            out += (logits[:, 0].tolist() if regression else logits.argmax(-1).tolist())
    clf.train()
    return out


def _optimizer(clf: torch.nn.Module, config: FinetuneConfig, total: int, warmup: int):
    """AdamW with weight decay on matrices only, and a linear warmup then linear decay to 0."""
    decay = [p for p in clf.parameters() if p.dim() >= 2]
    rest = [p for p in clf.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": rest, "weight_decay": 0.0}], lr=config.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    return optimizer, schedule


def finetune_task(checkpoint: str, task: str, glue_dir: str, config: FinetuneConfig, seed: int,
                  device: str = "cpu", progress: Optional[Callable[[], None]] = None) -> dict:
    """Fine-tune a fresh copy of ``checkpoint`` on one task with one seed; validation metrics."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model, saved = load_model(checkpoint, device)
    if config.init == "random":
        model = random_init(saved).to(device)
        torch.manual_seed(seed)
    elif config.init != "pretrained":
        raise ValueError(f"init {config.init!r}: choose pretrained or random")
    sp = run_tokenizer(checkpoint, saved)
    eos = sp.eos_id
    spec = TASKS[task]
    train_rows = load_split(glue_dir, task, "train", config.max_train)
    val_rows = load_split(glue_dir, task, "validation", config.max_eval)
    clf = Classifier(model, spec.num_labels, eos, config.pooling).to(device).train()
    train_x = clf.encode_inputs(sp.encode_batch([t for t, _ in train_rows]), config.max_len)
    val_x = clf.encode_inputs(sp.encode_batch([t for t, _ in val_rows]), config.max_len)
    train_y = [y for _, y in train_rows]
    regression = spec.num_labels == 1
    per_epoch = math.ceil(len(train_x) / config.batch_size)
    total = max(1, per_epoch * config.epochs, config.min_steps)
    warmup = max(1, int(total * config.warmup_share))
    optimizer, schedule = _optimizer(clf, config, total, warmup)
    losses: list[float] = []
    while len(losses) < total:
        order = rng.permutation(len(train_x))
        for b in range(0, len(order), config.batch_size):
            if len(losses) == total:
                break
            index = order[b:b + config.batch_size]
            logits = clf([train_x[i] for i in index])
            target = torch.tensor([train_y[i] for i in index], device=device)
            loss = F.mse_loss(logits[:, 0], target.float()) if regression else F.cross_entropy(logits, target)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(clf.parameters(), config.grad_clip)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
        if progress:
            progress()
    predictions = _predict(clf, val_x, regression)
    labels = [y for _, y in val_rows]
    metrics = task_metrics(task, labels, predictions)
    # how much of the validation split got the most predicted label: near 100% is a model that
    # learned the label prior, not the task
    majority_share = None if regression else max(np.bincount(np.asarray(predictions, int))) / len(predictions)
    return {"task": task, "seed": seed, "lr": config.lr, "metrics": metrics, "score": task_score(metrics),
            "majority_share": None if majority_share is None else float(majority_share),
            "train_examples": len(train_x), "validation_examples": len(val_x), "steps": total,
            "final_train_loss": float(np.mean(losses[-max(1, per_epoch // 4):])),
            "seconds": round(time.perf_counter() - started, 1)}


def random_init(saved: dict) -> torch.nn.Module:
    """The pretraining run's model as it was before its first step: built from the saved model
    config after seeding torch with the run's seed, as the trainer builds it (train/trainer.py
    ``_build``; the objectives built before the model draw nothing from torch's generator)."""

    torch.manual_seed(int(saved.get("seed", 0)))
    model = build_model(apply_settings(ModelConfig(), saved["model"]), saved.get("objective", "causal"))
    return model.train()


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def run_glue(checkpoint: str, tasks: Iterable[str], glue_dir: str, configs: dict[str, FinetuneConfig],
             seeds: Sequence[int], lrs: Optional[Sequence[float]] = None, device: str = "cpu",
             log: Callable[[str], None] = print) -> dict:
    """Every (task, lr, seed) run, then per task the lr with the best mean score and its spread
    over seeds, and T5's GLUE average of those means."""

    tasks = list(tasks)
    runs: list[dict] = []
    # epochs are at least configs' epochs (more when min_steps asks for more): no fixed total
    with bars.bar(desc="finetune", unit=" epoch") as bar:
        for task in tasks:
            for lr in (lrs or [configs[task].lr]):
                config = dataclasses.replace(configs[task], lr=lr)
                for seed in seeds:
                    bar.set_postfix_str(f"{task} lr {lr:g} seed {seed}")
                    result = finetune_task(checkpoint, task, glue_dir, config, seed=seed,
                                           device=device, progress=lambda: bar.update(1))
                    runs.append(result)
                    log(f"{task} lr {lr:g} seed {seed}: " + ", ".join(
                        f"{k} {v:.2f}" for k, v in result["metrics"].items()) + f" ({result['seconds']}s)")
    summary: dict[str, dict] = {}
    for task in tasks:
        by_lr: dict[float, list[dict]] = {}
        for r in runs:
            if r["task"] == task:
                by_lr.setdefault(r["lr"], []).append(r)
        best_lr = max(by_lr, key=lambda lr: statistics.fmean(r["score"] for r in by_lr[lr]))
        chosen = by_lr[best_lr]
        summary[task] = {"lr": best_lr, "score": _spread([r["score"] for r in chosen]),
                         "metrics": {m: _spread([r["metrics"][m] for r in chosen]) for m in chosen[0]["metrics"]},
                         "lr_sweep": {str(lr): statistics.fmean(r["score"] for r in rs) for lr, rs in by_lr.items()}}
    average = glue_average({t: s["score"]["mean"] for t, s in summary.items()})
    return {"checkpoint": checkpoint, "seeds": list(seeds), "tasks": summary, "glue_average": average,
            "runs": runs, "configs": {t: dataclasses.asdict(configs[t]) for t in tasks}}
