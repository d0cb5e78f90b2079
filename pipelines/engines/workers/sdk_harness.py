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

pipelines/engines/workers/worker_boot.py starts this module where Beam's boot starts ``sdk_worker_main``.

The cap changes private defaults of Beam's, so it applies only to the releases it was measured
on (``MEASURED_RELEASES``) and only where those names still mean what it assumes
(``internals_problem``; tests/test_sdk_harness.py fails loudly when they do not). On any other
release the harness stands aside and says so in the worker's log (``-v``).
"""
from __future__ import annotations

import inspect
import logging
import sys

import apache_beam
from apache_beam.runners.worker import data_plane, sdk_worker_main

OUTBOUND_MESSAGE_BYTES = 1 << 20
MEASURED_RELEASES = ("2.62.0",)
STREAMS = (data_plane.SizeBasedBufferingClosableOutputStream,
           data_plane.TimeBasedBufferingClosableOutputStream)


def internals_problem() -> str | None:
    """What no longer holds of the private names the cap changes (None: all of it): the module
    default ``_DEFAULT_SIZE_FLUSH_THRESHOLD`` (10 MB in 2.62), and each output stream taking a
    ``size_flush_threshold`` argument whose default is that value."""
    default = getattr(data_plane, "_DEFAULT_SIZE_FLUSH_THRESHOLD", None)
    if not isinstance(default, int) or default <= 0:
        return "apache_beam.runners.worker.data_plane._DEFAULT_SIZE_FLUSH_THRESHOLD is gone"
    for stream in STREAMS:
        parameter = inspect.signature(stream.__init__).parameters.get("size_flush_threshold")
        if parameter is None or parameter.default != default:
            return f"{stream.__name__}.__init__ has no size_flush_threshold defaulting to it"
    return None


def applies(release: str = apache_beam.__version__) -> str | None:
    """Why the cap stands aside on ``release`` (None: it applies)."""
    if release not in MEASURED_RELEASES:
        return f"apache-beam {release} is not a release it was measured on ({', '.join(MEASURED_RELEASES)})"
    return internals_problem()


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
    why_not = applies()
    if why_not is None:
        cap_outbound_messages()
    else:
        logging.getLogger(__name__).info("outbound data messages not capped: %s", why_not)
    sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
    main()
