"""CPU seconds per stage of a chain of generators, each second counted once.

The local chain is lazy: reading, the length limit and URL dedup run inside one another as
generators, so timing each with a stopwatch around it would count the inner stages again in the
outer ones. The clock keeps one *current* stage; entering a stage pauses the one it was called
from, so every CPU second goes to exactly one stage (what a per-stage cost table needs: the
shares add up to the whole). ``time.process_time`` costs about 0.1 us; a page crosses a handful
of stages, so the clock costs nothing measurable on pages that take milliseconds.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Optional, TypeVar

T = TypeVar("T")


class StageClock:
    """``seconds[stage]``: process CPU time spent in each stage; ``items[stage]``: what went in."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.items: dict[str, int] = {}
        self._current: Optional[str] = None
        self._since = time.process_time()

    def _switch(self, stage: Optional[str]) -> Optional[str]:
        now = time.process_time()
        if self._current is not None:
            self.seconds[self._current] = self.seconds.get(self._current, 0.0) + now - self._since
        previous, self._current, self._since = self._current, stage, now
        return previous

    def count(self, name: str, items: int) -> None:
        """``items`` more went into ``name`` (for a stage whose input is known only after it ran)."""
        self.items[name] = self.items.get(name, 0) + items

    @contextlib.contextmanager
    def stage(self, name: str, items: int = 0) -> Iterator[None]:
        previous = self._switch(name)
        self.count(name, items)
        try:
            yield
        finally:
            self._switch(previous)

    def timed(self, name: str, iterable: Iterable[T]) -> Iterator[T]:
        """``iterable``'s items; the time spent producing each is ``name``'s (less the stages
        nested inside it)."""
        iterator = iter(iterable)
        while True:
            previous = self._switch(name)
            try:
                item = next(iterator)
            except StopIteration:
                return
            finally:
                self._switch(previous)
            self.items[name] = self.items.get(name, 0) + 1
            yield item


class NoClock:
    """The clock when nobody is timing: no calls to ``process_time`` at all."""

    def count(self, name: str, items: int) -> None:
        pass

    @contextlib.contextmanager
    def stage(self, name: str, items: int = 0) -> Iterator[None]:
        yield

    def timed(self, name: str, iterable: Iterable[T]) -> Iterable[T]:
        return iterable


NO_CLOCK = NoClock()
