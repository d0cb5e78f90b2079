"""Progress bars for long jobs: tqdm on stderr, shown only when stderr is a terminal, and never
after the command line said ``-q``. The command-line layer switches them (:func:`configure`);
stages only ask for a bar, so library callers and tests get none unless they opt in."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # imported where a bar is made: tqdm's import (~0.1 s) is start-up every
    from tqdm import tqdm  # worker and CLI command paid, bars or not

_ENABLED: Optional[bool] = None


def configure(enabled: Optional[bool]) -> None:
    """True/False forces bars on/off; None: on when stderr is a terminal."""
    global _ENABLED
    _ENABLED = enabled


def enabled() -> bool:
    """Forced by :func:`configure` (``-q``), else ``C4FORGE_PROGRESS=1``/``0``, else: is stderr
    a terminal."""
    if _ENABLED is not None:
        return _ENABLED
    forced = os.environ.get("C4FORGE_PROGRESS", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def bar(iterable: Optional[Iterable] = None, **options: Any) -> tqdm:
    """A tqdm bar (a plain pass-through when bars are off)."""
    from tqdm import tqdm  # lazy: tqdm, only when a bar is shown (stderr a terminal)

    options.setdefault("dynamic_ncols", True)
    options.setdefault("leave", False)
    return tqdm(iterable, disable=not enabled(), file=sys.stderr, **options)


class Throughput:
    """Pages and MB/s as a bar's postfix, updated at most a few times a second."""

    def __init__(self, progress: tqdm, items: str = "pages") -> None:
        self.progress = progress
        self.items_name = items
        self.started = time.perf_counter()
        self.items = 0
        self.bytes = 0
        self._shown = 0.0

    def add(self, text_bytes: int, items: int = 1) -> None:
        self.items += items
        self.bytes += text_bytes
        now = time.perf_counter()
        if now - self._shown > 0.25 and not self.progress.disable:
            self._shown = now
            seconds = max(now - self.started, 1e-9)
            self.progress.set_postfix_str(
                f"{self.items:,} {self.items_name}, {self.bytes / 1e6:,.1f} MB, "
                f"{self.bytes / 1e6 / seconds:,.2f} MB/s")
