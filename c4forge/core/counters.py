"""Counters named like tfds' Beam metrics: ``namespace/name`` (e.g. ``clean-page/passed``).

Pure functions take an ``inc(name, amount=1)`` callable, as tfds' ``counter_inc_fn``; the Beam
wiring passes one backed by ``Metrics.counter`` and local runs pass a :class:`Counters` view.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

IncFn = Callable[..., None]


def null_inc(name: str, amount: int = 1) -> None:
    """An ``inc`` that counts nothing, for callers that only want the result."""


class Counters:
    """A flat ``namespace/name -> int`` map with per-namespace ``inc`` views."""

    def __init__(self) -> None:
        self.values: Counter = Counter()

    def inc_fn(self, namespace: str) -> IncFn:
        values = self.values

        def inc(name: str, amount: int = 1) -> None:
            values[f"{namespace}/{name}"] += amount

        return inc

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.values.items()))

    def __getitem__(self, key: str) -> int:
        return self.values.get(key, 0)
