"""Beam's Python SDK harness (``apache_beam.runners.worker.sdk_worker_main``) with its data
plane's outbound messages capped at OUTBOUND_MESSAGE_BYTES instead of Beam's 10 MB.

Why: on Flink's batch path Beam runs a stage's whole partition as one bundle, and its runner
reads that bundle's outputs only once the bundle has ended (``SdkHarnessClient.ActiveBundle.close``
in Beam 2.62 waits for the bundle's response, then drains the outputs). Until then the runner's
gRPC thread parks up to 100 messages in a queue in the JVM's heap (``BeamFnDataInboundObserver``),
and the worker keeps the rest in its own send queue. With 10 MB messages that is up to 1 GB of
heap per running bundle: flink-local at 2 slots on 64x distinct input (342,464 pages) died on
``OutOfMemoryError: Java heap space`` (heap 1,792 MB) in the stage after the line-dedup join.
With 1 MB messages the heap holds at most about 100 MB per bundle and the same build completes.

pipelines/worker_boot.py starts this module where Beam's boot starts ``sdk_worker_main``.
"""
from __future__ import annotations

import sys

from apache_beam.runners.worker import data_plane, sdk_worker_main

OUTBOUND_MESSAGE_BYTES = 1 << 20


def cap_outbound_messages(limit: int = OUTBOUND_MESSAGE_BYTES) -> None:
    """Make ``limit`` the size at which the worker's output streams flush a message. Beam binds
    its threshold as a default argument, so the defaults themselves are replaced (a message
    still holds at least one whole element)."""
    data_plane._DEFAULT_SIZE_FLUSH_THRESHOLD = limit
    for stream in (data_plane.SizeBasedBufferingClosableOutputStream,
                   data_plane.TimeBasedBufferingClosableOutputStream):
        init = stream.__init__
        names = init.__code__.co_varnames[:init.__code__.co_argcount]
        defaults = list(init.__defaults__)
        index = names.index("size_flush_threshold") - (len(names) - len(defaults))
        defaults[index] = limit
        init.__defaults__ = tuple(defaults)


def main() -> None:
    cap_outbound_messages()
    sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
    main()
