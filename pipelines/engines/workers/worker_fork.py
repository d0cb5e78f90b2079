"""SDK workers forked from a warm process instead of started cold (managed engines).

A managed engine (flink-local, spark-local) starts one Python SDK worker per slot through Beam's
PROCESS environment. Started cold, each is a fresh interpreter that imports Beam's harness
(0.77 CPU s) and c4forge's chain and loads the language-ID model, the bad-word lists and numba's
compiled kernels (0.65 s) before its first element: 1.42 CPU s per worker and build
(benchmarks/RESULTS.md, the stage table's start-up line), which `corpus clean` pays once. A
forked worker is ready in 0.05 s.

Here the submitting process forks, before the engine starts, a *fork server*: a copy of itself
(Beam and c4forge already imported) that imports what a worker imports, loads what its steps
load (``warm``: the chain's models, MinHash's kernels), moves those objects out of the
garbage collector's reach (``gc.freeze``: a worker's collections then never walk, or write to,
the 200,000 objects it shares with the server), and forks one worker per request. The engine
runs pipelines/engines/workers/worker_fork_client.py as the environment's command; the client hands the server
its arguments, environment, working folder and standard streams, forwards signals to the
worker and exits with its status. The worker then runs pipelines/engines/workers/worker_boot.py as a cold one
would, in the client's environment and folder.

Forking a process whose other threads hold state the child needs hangs the child: a Beam
pipeline run earlier in the same process (a direct runner in multi_processing mode, a notebook,
a test suite) leaves gRPC's core threads running, and a worker forked from a copy of that
process connects to the engine and never hears back (the engine gives up after 3 minutes). So
the server is forked from the submitting process only while no other Python thread and none of
gRPC's threads run there (``fork_hazard``); otherwise it starts as a fresh interpreter (the
submitting process's ``sys.path``, ``warm`` and target passed by pickle) and warms the same way:
one cold start per build instead of one per worker.

Lifetimes: the server is in a session of its own (a Ctrl-C at the terminal reaches the
submitting process, which stops the engine), gets SIGTERM when the submitting process dies, and
SIGKILLs a worker whose client is gone; a worker gets SIGKILL when the server dies.
``C4FORGE_FORK_WORKERS=0`` starts every worker cold.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import json
import logging
import os
import pickle
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, Optional

from apache_beam.portability import api as beam_api

from c4forge.pipelines.engines.clusters.processes import die_with_parent
from c4forge.pipelines.engines.workers import worker_boot

FORK_ENV = "C4FORGE_FORK_WORKERS"  # 0: every SDK worker starts cold
CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_fork_client.py")
SOCKET_NAME = "fork.sock"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux
MAX_REQUEST_BYTES = 16 << 20
REQUEST_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
# What a worker imports before its first element, beyond the submitting process's modules
WORKER_MODULES = ("apache_beam.runners.worker.sdk_worker_main",
                  "apache_beam.runners.worker.bundle_processor",
                  "apache_beam.runners.worker.operations",
                  "c4forge.pipelines.engines.workers.sdk_harness")
WORKER_API_MODULES = ("beam_provision_api_pb2_grpc", "beam_artifact_api_pb2_grpc")
# How gRPC's core names its threads (Linux truncates names to 15 characters)
GRPC_THREAD_NAMES = ("grpc", "default-executo", "resolver-execut", "event_engine", "lifeguard")
# A fresh server reads its sys.path before it can import c4forge, then the rest (serve_fresh)
FRESH_SERVER = ("import pickle, sys; fresh = pickle.load(sys.stdin.buffer); sys.path[:] = fresh['path']; "
                "from c4forge.pipelines.engines.workers.worker_fork import serve_fresh; sys.exit(serve_fresh(fresh))")


@dataclass
class Request:
    """One worker to fork: the client's arguments, environment, folder and standard streams."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    fds: list[int]


def socket_path(folder: str) -> str:
    """Where the fork server of an engine run in ``folder`` listens."""
    return os.path.join(folder, SOCKET_NAME)


def forking_available(folder: str) -> bool:
    """Whether workers can be forked here: Linux, not switched off, a short enough socket path."""
    return (sys.platform.startswith("linux") and os.environ.get(FORK_ENV, "1") != "0"
            and len(socket_path(folder)) <= MAX_SOCKET_PATH)


def fork_hazard() -> Optional[str]:
    """Why a process forked from this one might hang (threads whose locks or connections the
    copy would inherit half-held: other Python threads, gRPC's core), or None when none run.
    A thread marked ``fork_safe`` (the CLI's stderr filter: it only moves bytes between file
    descriptors) does not count."""
    others = [t.name for t in threading.enumerate()
              if t is not threading.main_thread() and not getattr(t, "fork_safe", False)]
    if others:
        return f"{len(others)} other Python thread(s) run here ({', '.join(sorted(others)[:3])})"
    grpc = sorted({name for name in _thread_names() if name.startswith(GRPC_THREAD_NAMES)})
    if grpc:
        return f"gRPC's threads run here ({', '.join(grpc)})"
    return None


def _thread_names() -> list[str]:
    names = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                with open(f"/proc/self/task/{task}/comm") as handle:
                    names.append(handle.read().strip())
    return names


def client_command(folder: str) -> str:
    """The shell line that starts one worker through the server listening in ``folder``."""
    command = [sys.executable, "-I", "-S", CLIENT, socket_path(folder)]
    return f"exec {shlex.join(command)} \"$@\""


class ForkServer:
    """The fork server of one engine run: ``start`` forks it from this process (or, when
    ``fork_hazard`` says that is unsafe or ``fork_here`` is False, starts it fresh); ``stop``
    ends it and any worker still running."""

    def __init__(self, folder: str, log: str, warm: Optional[Callable[[], None]] = None,
                 target: Callable[[list[str]], Optional[int]] = worker_boot.main,
                 fork_here: Optional[bool] = None) -> None:
        self.path = socket_path(folder)
        self.log = log
        self.warm = warm
        self.target = target  # what a forked worker runs with the client's arguments
        self.fork_here = fork_here  # None: unless fork_hazard() says otherwise
        self.pid: Optional[int] = None
        self.fresh: Optional[subprocess.Popen] = None  # the server, when started fresh

    def start(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)  # before the server starts: the socket is there for the first client
        listener.listen(64)
        hazard = fork_hazard() if self.fork_here is None else (None if self.fork_here else "asked")
        try:
            if hazard is None:
                self.pid = self._fork(listener)
            else:
                self.fresh = self._spawn(listener, hazard)
                self.pid = self.fresh.pid
        finally:
            listener.close()

    def _fork(self, listener: socket.socket) -> int:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the server: never returns into the submitting process's code
            code = 1
            try:
                code = _serve(listener, self.log, self.warm, self.target, parent)
            except BaseException:  # noqa: BLE001 - the server's own failure, in its log
                traceback.print_exc()
            finally:
                os._exit(code)
        return pid

    def _spawn(self, listener: socket.socket, hazard: str) -> subprocess.Popen:
        """The server as a fresh interpreter, given the listening socket, this process's
        ``sys.path`` and, by pickle, ``warm`` and the target."""
        with open(self.log, "a") as log:
            log.write(f"fork server started fresh, not forked from the submitting process: {hazard}\n")
            try:
                warm = pickle.dumps(self.warm)
            except (pickle.PicklingError, AttributeError, TypeError) as exc:
                log.write(f"its warm-up cannot be sent to it ({exc}); workers load for themselves\n")
                warm = pickle.dumps(None)
            fresh = pickle.dumps({"path": list(sys.path), "fd": listener.fileno(), "log": self.log,
                                  "parent": os.getpid(), "warm": warm, "target": pickle.dumps(self.target)})
            log.flush()
            process = subprocess.Popen([sys.executable, "-c", FRESH_SERVER], stdin=subprocess.PIPE,
                                       stdout=log, stderr=log, pass_fds=(listener.fileno(),))
        with contextlib.suppress(BrokenPipeError):  # it failed to start: its log says why
            process.stdin.write(fresh)
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        return process

    def stop(self) -> None:
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not self._ended(pid, STOP_TIMEOUT_S):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # the server and what it forked
            self._ended(pid, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def _ended(self, pid: int, timeout: Optional[float]) -> bool:
        """Whether the server ended (and was reaped) within ``timeout`` seconds (None: waits)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._reaped(pid):
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def _reaped(self, pid: int) -> bool:
        if self.fresh is not None:  # its Popen reaps it (and knows it did)
            return self.fresh.poll() is not None
        return os.waitpid(pid, os.WNOHANG) != (0, 0)


def serve_fresh(fresh: dict) -> int:
    """A fresh server's body (FRESH_SERVER): what ``ForkServer._spawn`` sent, then ``_serve``."""
    target = pickle.loads(fresh["target"])
    try:
        warm = pickle.loads(fresh["warm"])
    except Exception:  # noqa: BLE001 - as a failing warm-up: reported, workers load for themselves
        print("the fresh fork server cannot load its warm-up:", file=sys.stderr)
        traceback.print_exc()
        warm = None
    listener = socket.socket(fileno=fresh["fd"])
    return _serve(listener, fresh["log"], warm, target, fresh["parent"])


class _Stop(Exception):
    """SIGTERM reached the server."""


def _raise_stop(_signum, _frame) -> NoReturn:
    raise _Stop


def _serve(listener: socket.socket, log: str, warm: Optional[Callable[[], None]],
           target: Callable[[list[str]], Optional[int]], parent: int) -> int:
    os.setsid()
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # it died before the line above could take effect
        return 0
    _streams_to(log)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _raise_stop)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a Python handler: the wakeup fd is written
    workers: dict[int, socket.socket] = {}
    try:
        prepare(warm)
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, "accept")
        selector.register(wake_r, selectors.EVENT_READ, "reap")
        while True:
            for key, _ in selector.select():
                if key.data == "accept":
                    _accept(listener, selector, workers, target,
                            inherited=(listener.fileno(), wake_r, wake_w))
                elif key.data == "reap":
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                    _reap(selector, workers)
                else:
                    _client_gone(key, selector)
    except _Stop:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return 0


def _streams_to(log: str) -> None:
    """Standard input from /dev/null, output and error to ``log`` (the server's own lines)."""
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    _fresh_streams()


def _fresh_streams() -> None:
    """``sys.stdin``/``stdout``/``stderr`` on file descriptors 0, 1, 2 (the submitting process
    may have pointed ``sys.stderr`` elsewhere: c4forge/cli/common.py's filter)."""
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")


def prepare(warm: Optional[Callable[[], None]]) -> None:
    """Import what a worker imports and load what it loads, then freeze it all (``gc.freeze``).
    A failing ``warm`` is reported here and left to the workers, which load for themselves and
    fail with the step's own error."""
    for name in WORKER_MODULES:
        importlib.import_module(name)
    for name in WORKER_API_MODULES:  # attributes of the package, not importable by name
        getattr(beam_api, name)
    if warm is not None:
        try:
            warm()
        except Exception:  # noqa: BLE001 - the workers report it as a cold worker would
            print("warming the fork server failed; workers load for themselves:", file=sys.stderr)
            traceback.print_exc()
    gc.collect()
    gc.freeze()
    print(f"fork server ready ({gc.get_freeze_count()} objects frozen)", file=sys.stderr, flush=True)


def _accept(listener: socket.socket, selector, workers: dict, target, inherited: tuple) -> None:
    conn, _ = listener.accept()
    try:
        request = _receive(conn)
    except (OSError, ValueError) as exc:
        print(f"fork server: a request was refused ({exc})", file=sys.stderr, flush=True)
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        _run_worker(request, target, [*inherited, *(c.fileno() for c in workers.values()), conn.fileno()])
    for fd in request.fds:
        os.close(fd)
    try:
        conn.sendall(f"{pid}\n".encode())
    except OSError:
        os.kill(pid, signal.SIGKILL)
    conn.setblocking(False)
    workers[pid] = conn
    selector.register(conn, selectors.EVENT_READ, pid)


def _receive(conn: socket.socket) -> Request:
    """The client's request; its peer must be this user. ValueError on anything malformed."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    uid = int.from_bytes(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[4:8], sys.byteorder)
    if uid != os.getuid():
        raise ValueError(f"peer uid {uid} is not this user's")
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    try:
        if len(fds) != 3 or len(data) < 8:
            raise ValueError("expected a length and three file descriptors")
        size = int.from_bytes(data[:8], "big")
        if size > MAX_REQUEST_BYTES:
            raise ValueError(f"a request of {size} bytes")
        while len(data) < 8 + size:
            chunk = conn.recv(8 + size - len(data))
            if not chunk:
                raise ValueError("the request ended early")
            data += chunk
        fields = json.loads(data[8:8 + size])
        return Request(list(fields["argv"]), dict(fields["env"]), str(fields["cwd"]), fds)
    except (ValueError, KeyError, TypeError):
        for fd in fds:
            os.close(fd)
        raise


def _reap(selector, workers: dict) -> None:
    """Tell each exited worker's client its status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = workers.pop(pid, None)
        if conn is None:
            continue
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn)
        with contextlib.suppress(OSError):
            conn.setblocking(True)
            conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        conn.close()


def _client_gone(key, selector) -> None:
    """A client's connection became readable: it ended (the engine killed it), so its worker
    goes too; the worker's exit is reaped as any other."""
    conn = key.fileobj
    with contextlib.suppress(BlockingIOError):
        if conn.recv(1):
            return
    selector.unregister(conn)
    with contextlib.suppress(ProcessLookupError):
        os.kill(key.data, signal.SIGKILL)


def _run_worker(request: Request, target, close: list[int]) -> NoReturn:
    """In the forked child: become the client's worker (its streams, folder, environment and
    arguments) and run ``target`` (worker_boot's main) as a cold worker would; exit with its
    status."""
    code = 1
    try:
        die_with_parent(signal.SIGKILL)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in close:
            os.close(fd)
        for number, fd in enumerate(request.fds):
            os.dup2(fd, number)
            os.close(fd)
        _fresh_streams()
        logging.getLogger().handlers.clear()  # the submitting process's handlers
        os.chdir(request.cwd)
        os.environ.clear()
        os.environ.update(request.env)
        sys.argv = [worker_boot.__file__, *request.argv]
        code = target(request.argv) or 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on the worker's stderr, as a cold worker's
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
