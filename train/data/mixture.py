"""Training on several token directories at once, each with a weight.

``data.train`` is one directory, or a mixture written any of these ways::

    train: tokens/c4                                  # one directory
    train: tokens/c4@0.8,tokens/wiki@0.2             # (also on the command line)
    train:                                            # YAML list
      - {path: tokens/c4, weight: 0.8}
      - tokens/wiki@0.2

Sampling is per sequence: sequence slot i of the training stream (counted over the whole run,
all ranks together) comes from source j with probability weight_j, drawn by a generator seeded
by (seed, block of 4,096 slots), so any slot's source is known without replaying the run. Each
source's rows run on through its own epochs. With concat packing every sequence is seq_len real
tokens, so token shares equal the weights; with best_fit they equal them up to each source's
padding share.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from c4forge.core.errors import C4forgeError

BLOCK = 4096
_STREAM_TAG = 0x6D6978  # "mix": keeps these draws apart from the epochs' permutations


class MixtureError(C4forgeError, ValueError):
    """A data.train value that is not a directory or a list of weighted directories."""


def _entry(item: Any) -> tuple[str, float]:
    if isinstance(item, dict):
        unknown = set(item) - {"path", "weight"}
        if unknown or "path" not in item:
            raise MixtureError(f"data.train entry {item!r}: give path and weight")
        path, weight = item["path"], item.get("weight", 1.0)
    else:
        text = str(item).strip()
        path, sep, weight = text.rpartition("@")
        if not sep:
            path, weight = text, 1.0
    try:
        weight = float(weight)
    except (TypeError, ValueError) as exc:
        raise MixtureError(f"data.train entry {item!r}: weight {weight!r} is not a number") from exc
    if not weight > 0 or weight == float("inf"):
        raise MixtureError(f"data.train entry {item!r}: weight must be > 0")
    if not str(path).strip():
        raise MixtureError(f"data.train entry {item!r} has no directory")
    return str(path).strip(), weight


def mixture_entries(train: Any) -> list[tuple[str, float]]:
    """(directory, weight normalised to sum 1) for every source of ``data.train``."""
    if isinstance(train, str):
        items = [part for part in train.split(",") if part.strip()] if "@" in train else [train]
    elif isinstance(train, (list, tuple)):
        items = list(train)
    else:
        raise MixtureError(f"data.train={train!r}: give a token directory or a list of them")
    if not items or (len(items) == 1 and not str(items[0]).strip()):
        raise MixtureError("data.train is empty: give a token directory from `tokenizer encode`")
    entries = [_entry(item) for item in items]
    paths = [p for p, _ in entries]
    if len(set(paths)) != len(paths):
        raise MixtureError(f"data.train names a directory twice: {', '.join(paths)}")
    total = sum(w for _, w in entries)
    return [(p, w / total) for p, w in entries]


class SourceSchedule:
    """Which source each sequence slot comes from (deterministic, random access)."""

    def __init__(self, weights: list[float], seed: int) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)
        self.seed = seed
        self._block = (-1, None)

    def _draws(self, block: int) -> np.ndarray:
        if self._block[0] != block:
            rng = np.random.Generator(np.random.PCG64([self.seed, _STREAM_TAG, block]))
            self._block = (block, rng.choice(len(self.weights), size=BLOCK, p=self.weights))
        return self._block[1]

    def sources(self, first: int, count: int) -> np.ndarray:
        """Source index of slots first .. first + count - 1."""
        out = np.empty(count, dtype=np.int64)
        done = 0
        while done < count:
            slot = first + done
            block, offset = divmod(slot, BLOCK)
            k = min(count - done, BLOCK - offset)
            out[done:done + k] = self._draws(block)[offset:offset + k]
            done += k
        return out
