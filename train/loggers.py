"""Where a run's metrics go: ``metrics.jsonl`` (always; the record the ablation and tests read),
TensorBoard event files (``logging.tensorboard``, on by default, when tensorboard is installed),
and Weights & Biases (``logging.wandb=true``; ``logging.wandb_mode=offline`` writes the run
under RUN/wandb without a network, to ``wandb sync`` later). Only the main process logs."""
from __future__ import annotations

import dataclasses
import json
import os
import uuid
from typing import Any, Optional

from c4forge.core.errors import C4forgeError
from c4forge.core.io import atomic_write


@dataclasses.dataclass(frozen=True)
class LoggingConfig:
    """tensorboard: write RUN/tensorboard event files when tensorboard is installed.
    wandb: also log to Weights & Biases (needs ``pip install wandb``).
    wandb_project / wandb_name: where (default name: the run directory's name).
    wandb_mode: "online", "offline" or "" (wandb's own default, e.g. from WANDB_MODE)."""

    tensorboard: bool = True
    wandb: bool = False
    wandb_project: str = "c4forge"
    wandb_name: str = ""
    wandb_mode: str = ""


class LoggerError(C4forgeError, RuntimeError):
    """A logger that was asked for and cannot start (e.g. wandb not installed)."""


class MetricLoggers:
    """One call per logged step fans a record out to every configured sink."""

    def __init__(self, out_dir: str, settings: LoggingConfig, run_config: dict[str, Any],
                 resume: bool = False) -> None:
        self.metrics = open(os.path.join(out_dir, "metrics.jsonl"), "a", encoding="utf-8")
        self.tensorboard = None
        self.wandb_run = None
        if settings.tensorboard:
            try:
                from torch.utils.tensorboard import (
                    SummaryWriter,  # lazy: TensorBoard's writer (1.2 s to import), only where logging.tensorboard is on
                )

                self.tensorboard = SummaryWriter(os.path.join(out_dir, "tensorboard"))
            except Exception:  # noqa: BLE001 - tensorboard is optional (the [train] extra has it)
                self.tensorboard = None
        if settings.wandb:
            self.wandb_run = _start_wandb(out_dir, settings, run_config, resume)

    def log(self, step: int, record: dict[str, Any]) -> None:
        record = {k: v for k, v in record.items() if v is not None}
        self.metrics.write(json.dumps(record) + "\n")
        self.metrics.flush()
        scalars = {k: v for k, v in record.items() if k != "step" and isinstance(v, (int, float))}
        if self.tensorboard:
            for key, value in scalars.items():
                self.tensorboard.add_scalar(key, value, step)
        if self.wandb_run is not None:
            self.wandb_run.log(scalars, step=step)

    def close(self) -> None:
        self.metrics.close()
        if self.tensorboard:
            self.tensorboard.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()


def _start_wandb(out_dir: str, settings: LoggingConfig, run_config: dict[str, Any],
                 resume: bool) -> Optional[Any]:
    try:
        import wandb  # lazy: wandb is optional (logging.wandb=true)
    except ImportError as exc:
        raise LoggerError("logging.wandb=true needs the wandb package: pip install wandb") from exc
    name = settings.wandb_name or os.path.basename(os.path.abspath(out_dir))
    kwargs: dict[str, Any] = {"project": settings.wandb_project, "name": name,
                              "dir": out_dir, "config": run_config}
    if settings.wandb_mode:
        kwargs["mode"] = settings.wandb_mode
    if resume:
        kwargs["resume"] = "allow"
        kwargs["id"] = _wandb_id(out_dir)
    else:
        kwargs["id"] = _wandb_id(out_dir, new=True)
    return wandb.init(**kwargs)


def _wandb_id(out_dir: str, new: bool = False) -> str:
    """A run keeps one wandb id across resumes (stored in RUN/wandb-id)."""

    path = os.path.join(out_dir, "wandb-id")
    if not new and os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    run_id = uuid.uuid4().hex[:12]

    with atomic_write(path) as handle:
        handle.write(run_id + "\n")
    return run_id
