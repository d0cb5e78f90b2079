"""Checkpoints: a directory per step, written atomically, loadable with weights_only=True.

    OUT/checkpoints/step-000100/model.pt      model state_dict (full, unsharded)
    OUT/checkpoints/step-000100/optimizer.pt  optimizer state_dict
    OUT/checkpoints/step-000100/trainer.pt    step, config, scheduler, loader position, RNG states
    OUT/checkpoints/latest                    name of the newest complete checkpoint

A checkpoint is written into ``step-N.tmp-*`` and renamed when complete; ``latest`` is replaced
atomically afterwards, so a crash never leaves a half checkpoint that --resume would pick.
Only tensors and plain Python values are stored, so ``torch.load(..., weights_only=True)`` loads
every file.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shutil
from typing import Optional

import torch

from c4forge.core.errors import C4forgeError
from c4forge.core.io import atomic_write, restore_set_aside, set_aside_copies, staging_beside, swap_in
from c4forge.core.outdir import (
    LOCAL,
    OutputError,
    OutputKind,
    claim,
    hook_from_env,
    manifest_text,
    output_path,
    read_manifest_json,
)
from c4forge.tokenizer.formats import read_token_manifest
from c4forge.tokenizer.kinds import Tokenizer, TokenizerSpec, copy_plan, open_tokenizer, tokenizer_of_manifest
from c4forge.tokenizer.load import CONFIG_FILE, TokenizerError
from c4forge.train.config import ModelConfig, TrainConfig, apply_settings
from c4forge.train.data import mixture_entries
from c4forge.train.models import build_model


class CheckpointError(C4forgeError, RuntimeError):
    """A checkpoint that is missing, incomplete, or from another configuration."""


def _state_dicts(model, optimizer, world: int):
    """Full (unsharded) model and optimizer state dicts, on CPU."""
    if world > 1:
        from torch.distributed.checkpoint.state_dict import (  # lazy: torch.distributed.checkpoint, only for a sharded (FSDP) run
            StateDictOptions,
            get_state_dict,
        )

        return get_state_dict(model, optimizer,
                              options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return model.state_dict(), optimizer.state_dict()


def _rng_state() -> dict[str, object]:
    version, state, gauss = random.getstate()
    rng = {"torch": torch.get_rng_state(), "python": [version, list(state), gauss]}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    return rng


def _set_rng_state(rng: dict[str, object]) -> None:
    torch.set_rng_state(rng["torch"])
    version, state, gauss = rng["python"]
    random.setstate((version, tuple(state), gauss))
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])


def save_checkpoint(directory: str, step: int, config: TrainConfig, model, optimizer, scheduler,
                    loader, is_main: bool = True, world: int = 1) -> Optional[str]:
    model_state, optim_state = _state_dicts(model, optimizer, world)
    if not is_main:
        return None
    if not (_finite(model_state) and _finite(optim_state)):
        raise NonFiniteState(f"the model or optimizer state at step {step} is not finite (NaN or "
                             "inf); no checkpoint written")
    hook = hook_from_env("C4FORGE_CHECKPOINT_CRASH_AT") or (lambda step_name: None)
    os.makedirs(directory, exist_ok=True)
    name = f"step-{step:06d}"
    final = os.path.join(directory, name)
    tmp = staging_beside(final)  # step-N.tmp-XXXXXXXX
    try:
        torch.save(model_state, os.path.join(tmp, "model.pt"))
        torch.save(optim_state, os.path.join(tmp, "optimizer.pt"))
        torch.save({"step": step, "config": config.to_dict(), "scheduler": scheduler.state_dict(),
                    "loader": loader.state_dict(), "rng": _rng_state()},
                   os.path.join(tmp, "trainer.pt"))
        hook("written")
        # the same step again: its complete copy is set aside (step-N.tmp-*) until the new one
        # is in, and latest_checkpoint() finds it there after a kill in between
        swap_in(tmp, final, hook)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    hook("placed")
    with atomic_write(os.path.join(directory, "latest")) as handle:
        handle.write(name + "\n")
    hook("pointed")
    return final


def latest_checkpoint(directory: str) -> Optional[str]:
    pointer = os.path.join(directory, "latest")
    if not os.path.exists(pointer):
        return None
    with open(pointer, encoding="utf-8") as handle:
        name = handle.read().strip()
    if not re.fullmatch(r"step-\d{6,}", name):
        raise CheckpointError(f"{pointer} names {name!r}, not a checkpoint of this run")
    path = os.path.join(directory, name)
    if os.path.isdir(path):
        return path
    # Killed while the same step was being written again: its complete earlier copy was set
    # aside (step-N.tmp-*, with every file); that is the latest checkpoint.
    for candidate in set_aside_copies(path):
        if all(os.path.isfile(os.path.join(candidate, f)) for f in ("model.pt", "optimizer.pt", "trainer.pt")):
            restore_set_aside(candidate, path)
            return path
    return None


def checkpoint_step(path: str) -> int:
    """The training step a checkpoint directory (``step-NNNNNN``) holds."""
    match = re.fullmatch(r"step-(\d{6,})", os.path.basename(os.path.normpath(path)))
    if not match:
        raise CheckpointError(f"{path} is not a checkpoint directory (step-NNNNNN)")
    return int(match.group(1))


def finished_steps(run_dir: str) -> int:
    """Steps of a run's latest checkpoint; 0 when it has none."""
    latest = latest_checkpoint(os.path.join(run_dir, "checkpoints"))
    return checkpoint_step(latest) if latest else 0


def resolve_checkpoint(path: str) -> str:
    """A checkpoint directory from a run dir, its checkpoints/ dir, or a step directory."""
    for candidate in (path, os.path.join(path, "checkpoints")):
        if os.path.exists(os.path.join(candidate, "trainer.pt")):
            return candidate
        latest = latest_checkpoint(candidate)
        if latest:
            return latest
    raise CheckpointError(f"no checkpoint found at {path}")


def _load(path: str, name: str):
    """One checkpoint file, weights only. A missing, truncated or foreign file is a
    CheckpointError with one clear line (never a hint to unpickle arbitrary code)."""
    try:
        return torch.load(os.path.join(path, name), map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path} is incomplete: no {name}") from exc
    except IsADirectoryError as exc:
        raise CheckpointError(f"{os.path.join(path, name)} is a directory, not a checkpoint file") from exc
    except Exception as exc:  # UnpicklingError, RuntimeError, EOFError, ...
        raise CheckpointError(
            f"{os.path.join(path, name)} is not a readable checkpoint file (truncated, corrupt, or "
            f"not written by c4forge: {type(exc).__name__})") from exc


def _finite(state) -> bool:
    """True when every floating-point tensor in a (nested) state dict is finite."""
    if isinstance(state, torch.Tensor):
        return not state.is_floating_point() or bool(torch.isfinite(state).all())
    if isinstance(state, dict):
        return all(_finite(v) for v in state.values())
    if isinstance(state, (list, tuple)):
        return all(_finite(v) for v in state)
    return True


class NonFiniteState(CheckpointError):
    """The model or optimizer holds NaN/inf: such a state is never written as a checkpoint."""


def config_differences(saved: dict, current: dict, prefix: str = "") -> list:
    out = []
    for key in sorted(set(saved) | set(current)):
        a, b = saved.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += config_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: checkpoint {a!r}, now {b!r}")
    return out


# Settings that change the computation but not the shapes; a resume may change them.
_RESUMABLE_MODEL_KEYS = {"attention", "rmsnorm", "rope", "swiglu", "cross_entropy", "ce_chunk_tokens"}


def load_checkpoint(path: str, config: TrainConfig, model, optimizer, scheduler, loader) -> dict:
    trainer = _load(path, "trainer.pt")
    saved_model = {k: v for k, v in trainer["config"]["model"].items() if k not in _RESUMABLE_MODEL_KEYS}
    now_model = {k: v for k, v in dataclasses.asdict(config.model).items() if k not in _RESUMABLE_MODEL_KEYS}
    diffs = config_differences(saved_model, now_model, "model.")
    if diffs:
        raise CheckpointError(f"checkpoint {path} was made with another model config: " + "; ".join(diffs))
    model.load_state_dict(_load(path, "model.pt"))
    optimizer.load_state_dict(_load(path, "optimizer.pt"))
    scheduler.load_state_dict(trainer["scheduler"])
    loader.load_state_dict(trainer["loader"])
    _set_rng_state(trainer["rng"])
    return trainer


RUN_FORMAT = "c4forge-run"
RUN_MANIFEST = "c4forge-run.json"
RUN_FILES = ["checkpoints", "metrics.jsonl", "tensorboard", "tokenizer", "wandb", "wandb-id"]
RUN_TOKENIZER = "tokenizer"  # a copy of the tokenizer the run's data was encoded with


def copy_run_tokenizer(run_dir: str, tokenizer: dict) -> Optional[str]:
    """Copy the tokenizer of a token manifest (its ``tokenizer`` entry: any kind) into
    RUN/tokenizer (once; atomically: a temporary folder renamed into place), so a run exports
    and evaluates after being moved or copied to another machine; the copy opens by its path
    alone (a user's file gets a c4forge description of how it was used: EOS, BOS, pattern).
    Returns the copy's path, or None if the tokenizer is gone."""

    target = os.path.join(run_dir, RUN_TOKENIZER)
    if os.path.exists(os.path.join(target, CONFIG_FILE)):
        return target
    try:
        pairs, description = copy_plan(tokenizer_of_manifest(tokenizer))
    except TokenizerError:
        return None

    def fill(folder: str, place) -> None:
        for source, name in pairs:
            place(source, os.path.join(folder, name))
        if description is not None:
            with atomic_write(os.path.join(folder, CONFIG_FILE)) as handle:
                handle.write(json.dumps(description, indent=2) + "\n")

    if os.path.isdir(target):  # a folder of the user's: add our files beside theirs, each atomically
        fill(target, LOCAL.place)
        return target
    tmp = staging_beside(target)
    try:
        fill(tmp, shutil.copyfile)
        swap_in(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def run_tokenizer_copy(run_dir: str) -> Optional[str]:
    """RUN/tokenizer when the run holds its copy of the tokenizer (copy_run_tokenizer), else None."""
    copy = os.path.join(run_dir, RUN_TOKENIZER)
    return copy if os.path.exists(os.path.join(copy, CONFIG_FILE)) else None


def run_tokenizer(checkpoint: str, config: dict, path: Optional[str] = None) -> Tokenizer:
    """The tokenizer a run trained with, opened (any kind): ``path`` when given, else the run's
    copy, else what its first training source's token manifest names (with the EOS, BOS and
    options it was encoded with)."""
    if path:
        return open_tokenizer(TokenizerSpec(path))
    copy = run_tokenizer_copy(os.path.dirname(os.path.dirname(os.path.abspath(resolve_checkpoint(checkpoint)))))
    if copy:
        return open_tokenizer(TokenizerSpec(copy))
    first = mixture_entries(config["data"]["train"])[0][0]
    return tokenizer_of_manifest(read_token_manifest(first)["tokenizer"])


def _run_files(manifest: dict) -> list:
    return list(manifest.get("files") or RUN_FILES)


# What a run writes inside its folders (c4forge itself, TensorBoard, wandb): the only names
# ``--overwrite`` removes there, so a user's file in RUN/checkpoints/ or RUN/tensorboard/ stays.
_RUN_WRITES = {
    # latest.tmp: the pointer's temp name before core.io.atomic_write (.latest.XXXXXXXX.tmp)
    "checkpoints": re.compile(r"^(step-\d{6,}(\.tmp-[0-9a-f]{8})?|latest(\.tmp)?|\.latest\.\w+\.tmp)$"),
    "tensorboard": re.compile(r"^events\.out\.tfevents\..+$"),
    "wandb": re.compile(r"^(latest-run|(offline-)?run-\d{8}_\d{6}-\w+|debug(-internal|-cli\.\w+)?\.log)$"),
}
_RUN_TOP_FILES = ("metrics.jsonl", "wandb-id")


def run_written_paths(directory: str) -> list[str]:
    """Every path (relative to the run directory) that a run wrote: its top-level files, the
    entries of its folders that match what c4forge, TensorBoard and wandb write, and the files of
    its tokenizer copy (those the copy's own manifest lists). Nothing else."""
    found = [name for name in _RUN_TOP_FILES if os.path.isfile(os.path.join(directory, name))]
    for folder, pattern in _RUN_WRITES.items():
        path = os.path.join(directory, folder)
        if os.path.isdir(path) and not os.path.islink(path):
            found += [f"{folder}/{name}" for name in sorted(os.listdir(path)) if pattern.match(name)]
    copy = os.path.join(directory, RUN_TOKENIZER)
    try:
        with open(os.path.join(copy, "c4forge-tokenizer.json"), encoding="utf-8") as handle:
            listed = json.load(handle).get("files") or []
    except (OSError, ValueError, AttributeError):
        listed = None
    if listed is not None:
        names = [*listed, "c4forge-tokenizer.json"]
        found += [f"{RUN_TOKENIZER}/{n}" for n in names
                  if isinstance(n, str) and "/" not in n and os.path.isfile(os.path.join(copy, n))]
    return found


def remove_run_files(directory: str) -> None:
    """Remove what a run wrote (:func:`run_written_paths`) and then its folders where they are
    empty; a user's own files, in the run directory or inside its folders, stay."""
    for rel in run_written_paths(directory):
        LOCAL.remove(os.path.join(directory, rel))
    for folder in (*_RUN_WRITES, RUN_TOKENIZER):
        path = os.path.join(directory, folder)
        if os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path):
            os.rmdir(path)


RUN_KIND = OutputKind("training run", RUN_MANIFEST, RUN_FORMAT, _run_files,
                      flag="--overwrite (or --resume to continue it)")


def start_run_dir(directory: str, resume: bool, overwrite: bool, meta: Optional[dict] = None) -> dict:
    """The output-directory rule for a run (written in place, not swapped): a new or empty
    directory starts a run; one holding a run is continued with ``resume`` or wiped of its own
    files with ``overwrite``; anything else is refused. Returns the run manifest."""

    directory = output_path(directory)
    existing = read_manifest_json(directory, RUN_KIND)
    if resume:
        if existing is None and not os.path.exists(os.path.join(directory, "checkpoints", "latest")):
            raise CheckpointError(f"--resume: {directory} holds no c4forge training run")
        manifest = existing or {"format": RUN_FORMAT, "version": 1, "files": RUN_FILES}
    else:
        try:
            claim(directory, RUN_KIND, overwrite)
        except OutputError as exc:
            raise CheckpointError(str(exc)) from exc
        if existing is not None:
            remove_run_files(directory)
        manifest = {"format": RUN_FORMAT, "version": 1, "files": RUN_FILES}
    if RUN_TOKENIZER not in _run_files(manifest):  # a run from before runs kept a tokenizer copy
        manifest["files"] = [*_run_files(manifest), RUN_TOKENIZER]
    if meta is not None:
        manifest["meta"] = meta
    LOCAL.write_text(os.path.join(directory, RUN_MANIFEST), manifest_text(manifest))
    return manifest


def copy_run(source: str, target: str, meta: dict) -> None:
    """Make ``target`` a run identical to the finished run in ``source``: every file that run
    wrote (checkpoints, metrics, TensorBoard, its tokenizer copy), with ``meta`` in the
    manifest. For two runs that would train the same steps on the same tokens with the same
    seed (the ablation's byte budget trains its reference variant on exactly the token-matched
    run's tokens). ``target`` follows the run rule (only an earlier run's own files are
    replaced); ``meta`` is written last, so an interrupted copy is never taken for a finished run."""

    manifest = start_run_dir(target, resume=False, overwrite=True)
    target = output_path(target)
    for rel in run_written_paths(source):
        src, dst = os.path.join(source, rel), os.path.join(target, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    manifest["meta"] = meta
    LOCAL.write_text(os.path.join(target, RUN_MANIFEST), manifest_text(manifest))


def undo_unstarted_run(directory: str, created: bool) -> bool:
    """After a run failed: when it saved no checkpoint, remove what it wrote (its files, its
    manifest; the directory itself when the run created it), so the same command can be
    retried as it was. A run with a checkpoint stays (``--resume`` continues it). True when
    something was undone."""

    directory = output_path(directory)
    checkpoints = os.path.join(directory, "checkpoints")
    if not os.path.isdir(directory) or (os.path.isdir(checkpoints) and any(
            name == "latest" or name.startswith("step-") for name in os.listdir(checkpoints))):
        return False
    remove_run_files(directory)
    manifest = os.path.join(directory, RUN_MANIFEST)
    if os.path.isfile(manifest):
        os.unlink(manifest)
    if created and not os.listdir(directory):
        os.rmdir(directory)
    return True


def run_manifest(directory: str) -> Optional[dict]:
    """The run manifest of ``directory`` (None if it holds no run)."""

    return read_manifest_json(directory, RUN_KIND)


def load_model(path: str, device: str = "cpu") -> tuple[torch.nn.Module, dict]:
    """(LM in eval mode, saved config dict) from a checkpoint, run or checkpoints directory."""

    path = resolve_checkpoint(path)
    trainer = _load(path, "trainer.pt")
    model_config = apply_settings(ModelConfig(), trainer["config"]["model"])
    model = build_model(model_config, trainer["config"].get("objective", "causal"))
    try:
        model.load_state_dict(_load(path, "model.pt"))
    except (RuntimeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}/model.pt does not match its trainer.pt config: "
                              f"{str(exc).strip().splitlines()[0]}") from exc
    model.use_kernels(torch.device(device).type)
    return model.to(device).eval(), trainer["config"]
