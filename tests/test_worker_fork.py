"""SDK workers forked from a warm process (pipelines/engines/workers/worker_fork.py): the client the engine runs
hands the server its arguments, environment, folder and standard streams, the worker runs in
them with what the server loaded, signals reach it, its status is the client's, and no worker
or server outlives what started it. The builds on flink-local and spark-local (tests/
test_engines.py) run their workers this way; here the worker runs a test function instead of
Beam's harness."""
import gc
import json
import os
import signal
import subprocess
import sys
import time
from concurrent import futures
from pathlib import Path

import grpc
import psutil
import pytest

from c4forge.pipelines.engines.workers import worker_fork
from c4forge.pipelines.engines.workers.worker_fork import CLIENT, SOCKET_NAME, ForkServer, forking_available
from c4forge.pipelines.engines.workers.worker_fork_client import exit_status
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork server: Linux")

WARMED: list = []
ECHO = "/c4forge.test.Echo/Echo"  # a gRPC method that answers with its request


def warm() -> None:
    WARMED.append("loaded in the server")


def report(argv: list) -> int:
    """A worker that says where it runs and what it sees, then exits with argv[0]."""
    print(json.dumps({"argv": argv, "cwd": os.getcwd(), "env": os.environ.get("FORK_TEST"),
                      "warmed": WARMED, "frozen": gc.get_freeze_count(), "pid": os.getpid(),
                      "ppid": os.getppid()}), flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    return int(argv[0])


def linger(argv: list) -> int:
    """A worker that writes its pid to argv[0] and waits to be killed."""
    with open(argv[0] + ".tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.rename(argv[0] + ".tmp", argv[0])
    time.sleep(300)
    return 0


def raising(argv: list) -> int:
    raise SystemExit("a worker's own error")


def broken() -> None:
    raise RuntimeError("no model here")


@pytest.fixture(params=["forked", "fresh"])
def serve(tmp_path, request):
    """A fork server forked from this process, or started fresh (as when threads run here)."""
    servers = []

    def start(target, warm_with=warm) -> ForkServer:
        server = ForkServer(str(tmp_path), str(tmp_path / "fork.log"), warm_with, target,
                            fork_here=request.param == "forked")
        server.start()
        servers.append(server)
        return server
    yield start
    for server in servers:
        server.stop()


def client(tmp_path, *args, cwd=None, env=None, **popen):
    command = [sys.executable, "-I", "-S", CLIENT, str(tmp_path / SOCKET_NAME), *args]
    return subprocess.Popen(command, cwd=cwd or tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def wait_for_file(path, timeout=30.0) -> str:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return open(path).read()


def gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_forked_worker_runs_in_the_clients_arguments_folder_environment_and_streams(tmp_path, serve):
    server = serve(report)
    folder = tmp_path / "work"
    folder.mkdir()
    proc = client(tmp_path, "3", "--id=7", cwd=folder, env={**os.environ, "FORK_TEST": "seen"})
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err  # the worker's status is the client's
    seen = json.loads(out)
    assert seen["argv"] == ["3", "--id=7"] and seen["cwd"] == str(folder) and seen["env"] == "seen"
    assert seen["ppid"] == server.pid and seen["pid"] != proc.pid  # forked, not started cold
    assert seen["warmed"] == ["loaded in the server"] and seen["frozen"] > 1000
    assert err == "to stderr\n"
    assert "fork server ready" in (tmp_path / "fork.log").read_text()
    # the server serves the next one too, and a worker exiting 0 gives 0
    second = client(tmp_path, "0")
    assert second.wait(timeout=60) == 0 and json.loads(second.stdout.read())["ppid"] == server.pid


def test_sigterm_to_the_client_ends_the_worker_and_its_status_says_so(tmp_path, serve):
    serve(linger)
    proc = client(tmp_path, str(tmp_path / "pid"))
    pid = int(wait_for_file(tmp_path / "pid"))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM  # as a shell reports a killed worker
    assert gone(pid)


def test_a_killed_client_takes_its_worker_with_it(tmp_path, serve):
    """The engine SIGKILLs a worker that does not stop in time: it kills the client, so the
    server kills the client's worker."""
    serve(linger)
    proc = client(tmp_path, str(tmp_path / "pid"))
    pid = int(wait_for_file(tmp_path / "pid"))
    proc.kill()
    proc.wait(timeout=30)
    assert gone(pid)


def test_stop_ends_the_server_and_every_worker_and_removes_the_socket(tmp_path, serve):
    server = serve(linger)
    proc = client(tmp_path, str(tmp_path / "pid"))
    pid, server_pid = int(wait_for_file(tmp_path / "pid")), server.pid
    server.stop()
    assert gone(pid) and gone(server_pid)
    assert not (tmp_path / SOCKET_NAME).exists()
    assert proc.wait(timeout=30) != 0  # the client of a lost server fails; it does not hang


@pytest.mark.parametrize("fork_here", [True, False], ids=["forked", "fresh"])
def test_server_and_workers_die_with_the_process_that_started_them(tmp_path, fork_here):
    """SIGKILL of the submitting process (no clean-up runs): the server gets SIGTERM from the
    kernel (parent-death signal) and kills its workers."""
    script = (f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
              "from c4forge.pipelines.engines.workers.worker_fork import ForkServer\n"
              "from tests.test_worker_fork import linger\n"
              f"server = ForkServer({str(tmp_path)!r}, {str(tmp_path / 'log')!r}, None, linger, fork_here={fork_here})\n"
              "server.start()\n"
              "print(server.pid, flush=True)\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        server_pid = int(parent.stdout.readline())
        proc = client(tmp_path, str(tmp_path / "pid"))
        pid = int(wait_for_file(tmp_path / "pid"))
    finally:
        parent.kill()
        parent.wait()
    assert gone(server_pid) and gone(pid)
    assert proc.wait(timeout=30) != 0


def test_a_failing_warm_up_is_logged_and_workers_still_start(tmp_path, serve):
    serve(report, warm_with=broken)
    proc = client(tmp_path, "0")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(out)["frozen"] > 1000
    log = (tmp_path / "fork.log").read_text()
    assert "warming the fork server failed" in log and "no model here" in log


def test_a_fresh_server_whose_warm_up_cannot_be_pickled_says_so_and_serves(tmp_path):
    server = ForkServer(str(tmp_path), str(tmp_path / "fork.log"), lambda: WARMED.append("no"), report,
                        fork_here=False)
    server.start()
    server_pid = server.pid
    try:
        proc = client(tmp_path, "0")
        out, _ = proc.communicate(timeout=60)
    finally:
        server.stop()
    seen = json.loads(out)
    assert proc.returncode == 0 and seen["warmed"] == [] and seen["ppid"] == server_pid
    log = (tmp_path / "fork.log").read_text()
    assert "fork server started fresh, not forked from the submitting process: asked" in log
    assert "its warm-up cannot be sent to it" in log and "fork server ready" in log


def test_a_worker_that_raises_systemexit_with_a_message_exits_1(tmp_path, serve):
    serve(raising)
    proc = client(tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1


def test_a_malformed_request_is_refused_and_the_server_goes_on(tmp_path, serve):
    import socket
    server = serve(report)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(tmp_path / SOCKET_NAME))
        sock.sendall(b"not a request")  # no descriptors, no length
        assert sock.recv(100) == b""  # closed without forking anything
    assert "a request was refused" in (tmp_path / "fork.log").read_text()
    proc = client(tmp_path, "0")
    assert proc.wait(timeout=60) == 0 and json.loads(proc.stdout.read())["ppid"] == server.pid


def test_without_a_server_the_client_starts_the_worker_cold(tmp_path):
    proc = client(tmp_path, "--help")  # no server listens in tmp_path
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert "starting this SDK worker cold" in err
    assert "Python SDK worker's boot" in out  # worker_boot's own --help, in a fresh interpreter


def test_exit_status_reads_as_a_shells():
    assert [exit_status(s) for s in ("0\n", "3\n", "-15\n", "-9\n", "", "junk")] == [0, 3, 143, 137, 1, 1]


def test_forking_is_off_by_switch_and_for_socket_paths_too_long(tmp_path, monkeypatch):
    assert forking_available(str(tmp_path))
    assert not forking_available("/" + "x" * 120)
    monkeypatch.setenv(worker_fork.FORK_ENV, "0")
    assert not forking_available(str(tmp_path))


def echo_over_grpc(argv: list) -> int:
    """A worker that makes one gRPC call to the echo server at argv[0]: 0 when it answers."""
    with grpc.insecure_channel(argv[0]) as channel:
        try:
            return 0 if channel.unary_unary(ECHO)(b"ping", timeout=20) == b"ping" else 2
        except grpc.RpcError as exc:
            print(f"the call failed: {exc.code()}", file=sys.stderr)
            return 3


def grpc_scenario(folder: str) -> None:
    """In a process of its own: gRPC's threads running (an echo server, as a pipeline run before
    would leave them), a fork server, one worker that calls the echo server; prints the
    client's status and what the server's log says."""
    echo = grpc.server(futures.ThreadPoolExecutor(2))
    echo.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        ECHO.split("/")[1], {"Echo": grpc.unary_unary_rpc_method_handler(lambda request, _: request)}),))
    port = echo.add_insecure_port("127.0.0.1:0")
    echo.start()
    hazard = worker_fork.fork_hazard()
    server = ForkServer(folder, os.path.join(folder, "fork.log"), warm, echo_over_grpc)
    server.start()
    try:
        status = client(Path(folder), f"127.0.0.1:{port}").wait(60)
    except subprocess.TimeoutExpired:
        status = "hung"
    finally:
        server.stop()
        echo.stop(0)
    print(json.dumps({"status": status, "hazard": hazard, "log": open(os.path.join(folder, "fork.log")).read()}))


def test_fork_hazard_names_other_python_threads_and_grpcs_threads():
    script = ("import threading, grpc\n"
              "from c4forge.pipelines.engines.workers.worker_fork import fork_hazard\n"
              "print(fork_hazard())\n"
              "channel = grpc.insecure_channel('127.0.0.1:1')\n"  # nothing listens: gRPC's core starts
              "try:\n    channel.unary_unary('/a/b')(b'x', timeout=0.5)\nexcept grpc.RpcError:\n    pass\n"
              "print(fork_hazard())\n"
              "threading.Thread(target=threading.Event().wait, args=(30,), name='waiting', daemon=True).start()\n"
              "print(fork_hazard())\n"
              "from c4forge.cli.common import filtered_stderr\n"
              "with filtered_stderr():\n    print(fork_hazard())\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out[0] == "None"  # a fresh interpreter with c4forge's modules: nothing to fear
    assert out[1].startswith("gRPC's threads run here (")  # which of them run by now varies
    assert out[2] == "1 other Python thread(s) run here (waiting)"
    assert out[3] == out[2]  # the CLI's stderr filter is a thread it does not count


def test_with_grpcs_threads_running_the_server_starts_fresh_and_its_workers_use_grpc(tmp_path):
    """The CI failure of stop 69: a pipeline run earlier in the same process left gRPC's
    threads running; a server forked from it gave workers whose gRPC calls never returned
    (here forking even crashes the parent). Now the server starts fresh and the call works."""
    script = f"from tests.test_worker_fork import grpc_scenario; grpc_scenario({str(tmp_path)!r})"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["hazard"] and seen["status"] == 0, seen
    assert "fork server started fresh, not forked from the submitting process: " + seen["hazard"] in seen["log"]
    assert "fork server ready" in seen["log"]
