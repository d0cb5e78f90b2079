"""Run an iterator in a background thread, a few items ahead, so batch assembly overlaps the
model's step (numpy's gathers and copies release the GIL; the GPU step waits in CUDA calls).

The consumer sees exactly the items, in order, that the iterator yields; an exception in the
producer is raised in the consumer at the point it would have been; closing the consumer (or
dropping it) stops the thread after at most one more item.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetch(source: Iterator[T], depth: int) -> Iterator[T]:
    """Items of ``source``, produced up to ``depth`` ahead by a daemon thread."""
    if depth <= 0:
        yield from source
        return
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in source:
                if not put(item):
                    return
            put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(_Failure(exc))

    thread = threading.Thread(target=produce, name="c4forge-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
