"""The processes of one engine run (job server, JobManager, TaskManagers, Spark master and
workers): started on 127.0.0.1 with their logs in the run's folder, stopped together, and never
outliving the process that started them (Linux: each gets SIGTERM when its parent dies)."""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional

import requests

from c4forge.core.io import shown_place
from c4forge.pipelines.engines.jvm.jars import EngineError

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Get ``sig`` when the parent process ends (Linux; elsewhere nothing). Runs in a child
    between fork and exec, and in the forked SDK workers' server (pipelines/engines/workers/worker_fork.py)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
        except OSError:
            pass


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the service binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Service:
    name: str
    process: subprocess.Popen
    log: str

    def tail(self, lines: int = 5) -> str:
        try:
            with open(self.log, errors="replace") as handle:
                text = [t for t in handle.read().splitlines() if t.strip()][-lines:]
        except OSError:
            return ""
        return " | ".join(t.strip()[:200] for t in text)


@dataclass
class Services:
    """Processes started for one run; ``stop()`` (or leaving the ``with``) ends them all."""

    folder: str
    started: list[Service] = field(default_factory=list)
    after_stop: list[Callable[[], None]] = field(default_factory=list)

    def on_stop(self, action: Callable[[], None]) -> None:
        """Run ``action`` once every service has exited (``stop``)."""
        self.after_stop.append(action)

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, name: str, command: Sequence[str], env: Optional[dict] = None,
              cwd: Optional[str] = None) -> Service:
        os.makedirs(self.folder, exist_ok=True)
        if command and os.path.basename(command[0]) == "java":  # what the JVM starts finds its Java
            env = dict(os.environ if env is None else env)
            env.setdefault("JAVA_HOME", os.path.dirname(os.path.dirname(command[0])))
        log = os.path.join(self.folder, f"{name}.log")
        with open(log, "ab") as handle:
            process = subprocess.Popen(list(command), stdout=handle, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env, cwd=cwd or self.folder,
                                       preexec_fn=die_with_parent, start_new_session=True)
        service = Service(name, process, log)
        self.started.append(service)
        return service

    def check(self) -> None:
        """An EngineError naming the first service that has exited, with its log's last lines."""
        for service in self.started:
            code = service.process.poll()
            if code is not None:
                raise EngineError(f"{service.name} exited with status {code}: {service.tail()} "
                                  f"(log: {shown_place(service.log)})")

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            try:
                if ready():
                    return
            except (requests.RequestException, OSError, ValueError):
                pass
            time.sleep(0.25)
        raise EngineError(f"{what} did not come up within {timeout:.0f} s (logs in "
                          f"{shown_place(self.folder)})")

    def kill(self, service: Service) -> None:
        """SIGKILL one service (a lost worker, in tests); the others keep running."""
        _signal(service.process, signal.SIGKILL)
        service.process.wait()
        self.started.remove(service)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to every service's process group, SIGKILL to what is left after ``timeout``."""
        for service in reversed(self.started):
            _signal(service.process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for service in self.started:
            try:
                service.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(service.process, signal.SIGKILL)
                service.process.wait()
        self.started.clear()
        actions, self.after_stop = self.after_stop, []
        for action in actions:
            action()


def _signal(process: subprocess.Popen, sig: int) -> None:
    """``sig`` to the process and everything it started (its own session)."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def answers(host: str, port: int, timeout: float = 3.0) -> Optional[str]:
    """None where something listens at ``host:port``, else why not (refused, no such host...)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


OWNER_FILE = ".c4forge-owner"  # in an engine folder: the pid and start time of the process it serves


def _started(pid: int) -> Optional[str]:
    """The start time of process ``pid`` (clock ticks since boot, /proc), or None if none runs."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owned_folder(prefix: str, parent: Optional[str] = None) -> str:
    """A new temporary folder named ``prefix...`` that says which process owns it; first, the
    folders of that name whose owner is gone (a build killed, or stopped before it could
    clean up) are removed. A folder without the owner file is never touched: not ours, or kept
    on purpose (:func:`disown`)."""
    parent = parent or tempfile.gettempdir()
    for name in os.listdir(parent):
        folder = os.path.join(parent, name)
        if not name.startswith(prefix) or not os.path.isfile(os.path.join(folder, OWNER_FILE)):
            continue
        try:
            with open(os.path.join(folder, OWNER_FILE), encoding="ascii") as handle:
                pid, started = handle.read().split()
        except (OSError, ValueError):
            continue
        if _started(int(pid)) != started:
            shutil.rmtree(folder, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
    with open(os.path.join(folder, OWNER_FILE), "w", encoding="ascii") as handle:
        handle.write(f"{os.getpid()} {_started(os.getpid())}")
    return folder


def disown(folder: str) -> None:
    """Keep ``folder`` when its owner is gone (logs the user was told about)."""
    try:
        os.remove(os.path.join(folder, OWNER_FILE))
    except OSError:
        pass


def get_json(url: str) -> dict:
    response = requests.get(url, timeout=5)
    response.raise_for_status()
    return response.json()


class LocalCluster:
    """The lifecycle both engines' standalone clusters share: their processes are the
    ``services`` (logs under ``folder``/logs), started by ``start`` on entering and stopped on
    leaving, also when starting fails half-way (no JVM outlives the block that started it)."""

    folder: str
    services: Services

    def __post_init__(self) -> None:
        self.services = Services(os.path.join(self.folder, "logs"))

    def start(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.services.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.services.stop()
