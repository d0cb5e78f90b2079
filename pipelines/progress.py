"""Progress of a running build: files and pages read, documents written, MB/s and the reading
ETA, on a bar when stderr is a terminal and as a log line every few seconds otherwise.

Beam metrics are the natural channel, but Beam 2.62's job services give them only when the job
has finished: the Python job service answers GetJobMetrics from the job's result, which exists
once it is done (``local_job_service.py``), and the Java job server that runs Flink and Spark
sets a job's metrics on completion (``JobInvocation``); the DirectRunner returns when the
pipeline is done. So the workers report for themselves, through the channel their runner
allows (:func:`progress_channel`):

- **files** (DirectRunner; its workers are this machine's processes): each worker keeps one
  small JSON file in a ``.progress`` folder inside the staging folder, rewritten atomically at
  most twice a second; the folder goes with the staging folder;
- **a sink** (the portable runner, Flink, Spark: workers that may not share the launching
  process's disk): each worker PUTs the same JSON to a small HTTP server the launching process
  runs for the build's lifetime (:class:`ProgressSink`, on 127.0.0.1, or on the address
  ``C4FORGE_PROGRESS_ADDRESS`` names for a cluster's workers to reach);
- **metrics** (Dataflow, whose metrics API answers while the job runs): the reading step's
  counters, polled from the running job (:func:`metrics_totals`).

Progress is best effort everywhere: a report that cannot be written or sent is dropped; the
build's outputs never depend on it.
"""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

from c4forge.core import progress
from c4forge.core.io import atomic_write

FOLDER = ".progress"
INTERVAL_S = 0.5
LOG_EVERY_S = 10.0  # a log line this often when no bar is shown
JOIN_S = 5.0  # the longest the build waits for a progress thread at its end
KEYS = ("files", "pages", "bytes", "written")
ADDRESS_ENV = "C4FORGE_PROGRESS_ADDRESS"
FILE_RUNNERS = ("DirectRunner", "BundleBasedDirectRunner", "SwitchingDirectRunner")
METRICS_RUNNERS = ("DataflowRunner",)


def progress_dir(staging: str) -> Optional[str]:
    """Where workers report by file, or None when the staging folder is not on this machine."""
    return None if "://" in staging else os.path.join(staging, FOLDER)


def progress_channel(runner: Optional[str]) -> str:
    """``files``, ``sink`` or ``metrics``: how the workers of ``runner`` report (module doc)."""
    name = (runner or "DirectRunner").split(".")[-1]
    if name in FILE_RUNNERS:
        return "files"
    if name in METRICS_RUNNERS:
        return "metrics"
    return "sink"


def empty_totals() -> dict[str, int]:
    return dict.fromkeys(KEYS, 0)


class ProgressReporter:
    """A worker's running totals, sent to ``target``: a folder (one file per worker) or the
    URL of a :class:`ProgressSink`, at most twice a second and when asked to flush."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.totals = empty_totals()
        self._written = 0.0

    def page(self, text_bytes: int) -> None:
        self.totals["pages"] += 1
        self.totals["bytes"] += text_bytes
        self._maybe_flush()

    def file_done(self) -> None:
        """Counted, written when due like pages (each write is an atomic rename: measured 1.5
        ms here, 0.14 s of a 64-file build when every file wrote); the reader flushes at the
        end of its bundle."""
        self.totals["files"] += 1
        self._maybe_flush()

    def documents_written(self, documents: int) -> None:
        self.totals["written"] += documents
        self.flush()

    def _maybe_flush(self) -> None:
        if time.monotonic() - self._written > INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        self._written = time.monotonic()
        body = json.dumps(self.totals)
        try:
            if "://" in self.target:
                request = urllib.request.Request(f"{self.target.rstrip('/')}/{self.name}",
                                                 data=body.encode("utf-8"), method="PUT")
                with urllib.request.urlopen(request, timeout=1.0):  # noqa: S310 - our own sink
                    pass
            else:
                with atomic_write(os.path.join(self.target, f"{self.name}.json"), durable=False) as handle:
                    handle.write(body)
        except (OSError, ValueError):  # best effort: the build's outputs do not depend on it
            pass


def _valid(found: object) -> Optional[dict[str, int]]:
    if not isinstance(found, dict):
        return None
    try:
        return {key: max(0, int(found.get(key, 0))) for key in KEYS}
    except (TypeError, ValueError):
        return None


class ProgressSink:
    """An HTTP server that keeps each worker's latest totals (PUT /<worker> with their JSON).
    Bound to 127.0.0.1 unless ``address`` ("host" or "host:port") says otherwise; runs in a
    daemon thread until ``close`` (use as a context manager)."""

    MAX_BODY = 4096

    def __init__(self, address: Optional[str] = None) -> None:
        host, _, port = (address or "127.0.0.1").partition(":")
        reports: dict[str, dict[str, int]] = {}
        self.reports = reports
        lock = self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802 - the http.server naming
                size = int(self.headers.get("Content-Length") or 0)
                found = None
                if 0 < size <= ProgressSink.MAX_BODY:
                    try:
                        found = _valid(json.loads(self.rfile.read(size)))
                    except ValueError:
                        found = None
                if found is None:
                    self.send_response(400)
                else:
                    with lock:
                        reports[self.path.strip("/")[:64]] = found
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:  # quiet: the board shows the totals
                pass

        self.server = ThreadingHTTPServer((host, int(port or 0)), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="progress-sink", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def totals(self) -> dict[str, int]:
        totals = empty_totals()
        with self.lock:
            for found in self.reports.values():
                for key in KEYS:
                    totals[key] += found[key]
        return totals

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=JOIN_S)

    def __enter__(self) -> ProgressSink:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def folder_totals(directory: Optional[str]) -> dict[str, int]:
    totals = empty_totals()
    if not directory or not os.path.isdir(directory):
        return totals
    for name in os.listdir(directory):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                found = _valid(json.load(handle))
        except (OSError, ValueError):
            continue
        for key in KEYS:
            totals[key] += found[key] if found else 0
    return totals


def metrics_totals(result) -> dict[str, int]:
    """Totals from a running job's Beam counters (the reading step's files and pages, the
    shard writer's documents): for runners whose metrics answer while the job runs."""
    totals = empty_totals()
    try:
        counters = result.metrics().query()["counters"]
    except Exception:  # noqa: BLE001 - a runner without metrics, or a failed call: no progress
        return totals
    for counter in counters:
        namespace, name = counter.key.metric.namespace, counter.key.metric.name
        value = int(counter.attempted or 0)
        if namespace == "split-wet-file" and name == "wet-file":
            totals["files"] += value
        elif namespace == "split-wet-file" and name == "passed":
            totals["pages"] += value
        elif namespace == "output" and name.endswith(":documents"):
            totals["written"] += value
    return totals


def eta_text(done: int, total: int, seconds: float) -> str:
    """The reading phase's ETA from its rate so far (files done of all)."""
    if done <= 0 or total <= 0:
        return "ETA unknown"
    if done >= total:
        return "reading done"
    left = seconds * (total - done) / done
    return f"reading ETA {int(left // 3600)}:{int(left % 3600 // 60):02d}:{int(left % 60):02d}"


class ProgressBoard:
    """Shows the workers' totals while the pipeline runs: a bar (files done of all, pages, MB,
    MB/s, documents written, ETA) on a terminal, else a ``log`` line every ``log_every``
    seconds. ``source``: a function giving the totals now; use as a context manager around
    ``pipeline.run()`` (``watch(result)`` gives a metrics source the running job)."""

    AFTER = "read; rules, dedup and shards"

    def __init__(self, source: Callable[[], dict[str, int]], files: int,
                 log: Optional[Callable[[str], None]] = None, log_every: float = LOG_EVERY_S) -> None:
        self.source = source
        self.files = files
        self.log = log
        self.log_every = log_every
        self.read_seconds: Optional[float] = None
        self.bar = progress.bar(total=files, desc="reading crawl files", unit=" files")
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._logged = 0.0
        self.started = time.perf_counter()
        self.lines: list[str] = []

    def totals(self) -> dict[str, int]:
        try:
            return self.source()
        except Exception:  # noqa: BLE001 - progress is best effort
            return empty_totals()

    def line(self, totals: dict[str, int]) -> str:
        seconds = self.read_seconds
        if seconds is None:
            seconds = time.perf_counter() - self.started
            if totals["files"] >= self.files:  # reading done: the rate stays put
                self.read_seconds = seconds
        seconds = max(seconds, 1e-9)
        return (f"{min(totals['files'], self.files)}/{self.files} files, {totals['pages']:,} pages read, "
                f"{totals['bytes'] / 1e6:,.1f} MB ({totals['bytes'] / 1e6 / seconds:,.2f} MB/s), "
                f"{totals['written']:,} documents written; "
                f"{eta_text(totals['files'], self.files, time.perf_counter() - self.started)}")

    def show(self) -> None:
        totals = self.totals()
        text = self.line(totals)
        if not self.bar.disable:
            if self.read_seconds is not None:
                self.bar.set_description_str(self.AFTER, refresh=False)
            self.bar.n = min(totals["files"], self.files)
            self.bar.set_postfix_str(text.split(", ", 1)[1])
        elif self.log and time.perf_counter() - self._logged >= self.log_every:
            self._logged = time.perf_counter()
            self.lines.append(text)
            self.log(f"progress: {text}")

    def _poll(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self.show()

    def __enter__(self) -> ProgressBoard:
        if not self.bar.disable or self.log:
            self._logged = time.perf_counter()  # the first line after log_every, not at once
            self._thread = threading.Thread(target=self._poll, name="build-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            # bounded: a poll may sit in a runner's metrics call (gRPC, no deadline) to a job
            # server that is busy cancelling the job after a Ctrl-C; the thread is a daemon
            self._thread.join(timeout=JOIN_S)
        self.bar.close()
