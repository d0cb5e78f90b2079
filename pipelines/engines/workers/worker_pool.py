"""An external SDK worker pool for portable runners, whose workers boot as Beam's container does
(pipelines/engines/workers/worker_boot.py: staged packages fetched and installed per worker).

    python -m c4forge.pipelines.engines.workers.worker_pool --port 50000

then submit with ``--runner PortableRunner --job_endpoint HOST:PORT --environment_type EXTERNAL
--environment_config localhost:50000 --setup_file ./setup.py`` (README, "Runners"). It is
Beam's own ``worker_pool_main`` servicer, run with ``--container_executable`` pointing at a
two-line launcher of the boot module for this Python.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Optional

from c4forge.core.io import atomic_write
from c4forge.pipelines.engines.workers.worker_boot import ROOT_ENV

# The project to stage: Beam builds its sdist (`python setup.py sdist`; setup.py defers to
# pyproject.toml) and workers install it.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SETUP_FILE = os.path.join(REPO_ROOT, "setup.py")


def boot_launcher(folder: str) -> str:
    """An executable that runs c4forge.pipelines.engines.workers.worker_boot with this interpreter (the pool runs the
    container executable directly, with the container's flags)."""
    path = os.path.join(folder, "c4forge-worker-boot")
    with open(path, "w") as handle:
        handle.write(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m c4forge.pipelines.engines.workers.worker_boot \"$@\"\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=50000, help="gRPC port the runner connects to")
    parser.add_argument("--port-file", help="write the port here once listening (for --port 0)")
    args = parser.parse_args(argv)
    from apache_beam.runners.worker.worker_pool_main import (
        BeamFnExternalWorkerPoolServicer,  # lazy: Beam's worker pool and gRPC, only in the pool's own process
    )

    folder = tempfile.mkdtemp(prefix="c4forge-pool-")
    address, server = BeamFnExternalWorkerPoolServicer.start(
        use_process=True, port=args.port, container_executable=boot_launcher(folder))
    serve_until_stopped("worker pool", int(address.rsplit(":", 1)[1]), args.port_file)
    server.stop(5)
    return 0


def serve_until_stopped(what: str, port: int, port_file: Optional[str]) -> None:
    """Announce the port (and write it, atomically, to ``port_file``), then block until SIGTERM
    or SIGINT: the main loop of the job service and of the worker pool."""
    if port_file:
        with atomic_write(port_file) as handle:
            handle.write(str(port))
    print(f"{what} listening on localhost:{port}", file=sys.stderr, flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()


if __name__ == "__main__":
    sys.exit(main())


def _wait_for_port(path: str, process, what: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as handle:
                port = handle.read().strip()
            if port:
                return port
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}")
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


@contextlib.contextmanager
def local_portable_services(folder: str, workers: int = 2) -> Iterator[list[str]]:
    """The job service (pipelines/engines/workers/job_service.py) and this worker pool as two processes on this machine; yields the
    Beam arguments that submit a job to them (PortableRunner, EXTERNAL environment, the project
    staged from its setup.py). Both are stopped on exit. Used by the tests and
    benchmarks/bench_build.py; README, "Runners", gives the same as shell commands."""
    os.makedirs(folder, exist_ok=True)
    job_port, pool_port = os.path.join(folder, "job.port"), os.path.join(folder, "pool.port")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.setdefault(ROOT_ENV, folder)
    logs = [open(os.path.join(folder, name), "wb") for name in ("job-service.log", "pool.log")]
    processes = []
    try:
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "c4forge.pipelines.engines.workers.job_service", "--port", "0", "--port-file",
             job_port], stdout=logs[0], stderr=subprocess.STDOUT,
            env=env, cwd=folder))
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "c4forge.pipelines.engines.workers.worker_pool", "--port", "0", "--port-file",
             pool_port], stdout=logs[1], stderr=subprocess.STDOUT, env=env, cwd=folder))
        job = _wait_for_port(job_port, processes[0], "the Beam job service")
        pool = _wait_for_port(pool_port, processes[1], "the worker pool")
        yield ["--runner=PortableRunner", f"--job_endpoint=localhost:{job}",
               "--environment_type=EXTERNAL", f"--environment_config=localhost:{pool}",
               # the local job service's FnApiRunner starts this many workers (pipelines/
               # job_service.py); a cluster's runner decides its own
               f"--direct_num_workers={workers}", f"--setup_file={SETUP_FILE}"]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in logs:
            log.close()
