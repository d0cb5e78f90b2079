"""GLUE tasks from local files in the layout of ../shared/data/eval/glue: ``<task>/{train,
validation}.jsonl`` with ``sentence`` or ``sentence1`` + ``sentence2`` and ``label`` (an int; a
float 0-5 for STS-B). A directory of the same layout from elsewhere works; users with the network
can write one from the HF ``glue`` dataset (README)."""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Optional

import numpy as np

from c4forge.core.errors import C4forgeError


class GlueError(C4forgeError, ValueError):
    """A GLUE task or file that cannot be used, with the reason."""


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    num_labels: int  # 1: regression (STS-B)
    pair: bool


TASKS: dict[str, Task] = {
    "sst2": Task("sst2", 2, False),
    "cola": Task("cola", 2, False),
    "mrpc": Task("mrpc", 2, True),
    "stsb": Task("stsb", 1, True),
    "rte": Task("rte", 2, True),
    "wnli": Task("wnli", 2, True),
}


def stratified_subset(labels: Sequence[float], size: int, seed: int = 0) -> list[int]:
    """Indices (in file order) of ``size`` examples whose label shares are those of the whole
    split to within one example: each label gets floor(size x share) examples, the remainder
    goes to the labels with the largest fractional parts, each label's examples are drawn at
    random (seeded). STS-B's real-valued scores are stratified by their rounded value."""

    strata: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        strata.setdefault(int(round(label)), []).append(i)
    keys = sorted(strata)
    exact = [size * len(strata[k]) / len(labels) for k in keys]
    quota = [int(e) for e in exact]
    for j in sorted(range(len(keys)), key=lambda j: (-(exact[j] - quota[j]), j))[:size - sum(quota)]:
        quota[j] += 1
    rng = np.random.default_rng(seed)
    keep = [int(i) for k, q in zip(keys, quota) for i in rng.choice(strata[k], q, replace=False)]
    return sorted(keep)


def load_split(glue_dir: str, task: str, split: str, limit: Optional[int] = None,
               seed: int = 0) -> list[tuple[str, float]]:
    """[(text, label)]: a pair's sentences joined by a newline (one document, as in pretraining).
    ``limit``: a stratified random subset (:func:`stratified_subset`, seeded), in file order."""
    if task not in TASKS:
        raise GlueError(f"unknown GLUE task {task!r}: one of {', '.join(TASKS)} (or glue)")
    path = os.path.join(glue_dir, task, f"{split}.jsonl")
    if not os.path.exists(path):
        raise GlueError(f"{task}: no {split} split at {path}")
    out: list[tuple[str, float]] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                text = (f"{row['sentence1']}\n{row['sentence2']}" if TASKS[task].pair else row["sentence"])
                label = float(row["label"]) if task == "stsb" else int(row["label"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise GlueError(f"{path}:{number}: not a {task} row ({exc})") from exc
            out.append((text, label))
    if not out:
        raise GlueError(f"{task}: {path} has no rows")
    if limit is not None and limit < len(out):
        out = [out[i] for i in stratified_subset([label for _, label in out], limit, seed)]
    return out
