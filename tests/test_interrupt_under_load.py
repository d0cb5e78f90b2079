"""Ctrl-C ends a command in bounded time, also on a loaded machine (issue 83, point 7): once a
flink-local build printed `interrupted` and was still running 60 s later. What could hold it:
the progress thread joined without a timeout while it sat in a runner's metrics call (gRPC,
no deadline) to a job server busy cancelling, and the interpreter joining, at exit, any
non-daemon thread a library left blocked. Both are bounded now (pipelines/progress.py JOIN_S,
c4forge/cli/common.py exit_within)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from c4forge.pipelines.progress import JOIN_S, ProgressBoard
from tests.conftest import ROOT, flink_local_or_skip

HANGING_COMMAND = '''
import threading, time
import click
from c4forge.cli.common import group, guarded_main

@group
def cli():
    """a test group"""

@cli.command("hang")
def hang():
    threading.Thread(target=time.sleep, args=(600,), name="a library's thread").start()  # not a daemon
    raise KeyboardInterrupt

guarded_main(cli, ["hang"], "test")
'''


def test_an_interrupted_command_ends_though_a_non_daemon_thread_would_hold_it():
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", HANGING_COMMAND], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode == 130 and proc.stderr.strip() == "interrupted", proc.stderr
    assert took < 30, took


def test_the_progress_board_does_not_wait_for_a_poll_stuck_in_a_runner_call():
    release = threading.Event()

    def stuck_source():
        release.wait(120)  # a metrics call to a job server that does not answer
        return {"files": 0, "pages": 0, "bytes": 0, "written": 0}

    board = ProgressBoard(stuck_source, 1, log=lambda *_: None, log_every=0.1)
    with board:
        time.sleep(1.0)  # the poll thread is inside the call now
        started = time.monotonic()
    took = time.monotonic() - started
    release.set()
    assert took < JOIN_S + 2, took


def burners(count: int, seconds: float) -> list[subprocess.Popen]:
    """CPU-bound children with a bounded life (the machine 'busy'); the test stops them."""
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


@pytest.mark.slow
def test_ctrl_c_stops_a_flink_local_build_on_a_busy_machine(tmp_path):
    flink_local_or_skip("the interrupt test")
    tmpdir = Path(tempfile.mkdtemp(prefix="c4i-", dir="/tmp"))  # short: the fork server's socket
    load = burners(max(2, os.cpu_count() or 2), 300)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "c4forge.cli.corpus", "build", "-i",
             str(ROOT / "corpus" / "data" / "sample.warc.wet.gz"), "--runner", "flink-local",
             "--workers", "2", "--set", "bad-words.on=false", "-o", str(tmp_path / "out")],
            env=dict(os.environ, TMPDIR=str(tmpdir)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if list(tmpdir.glob("c4forge-flink-*/logs/job-server.log")):
                break
            time.sleep(0.2)
        time.sleep(3)  # the job server is starting or running the job
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - started
        assert proc.returncode in (130, -signal.SIGINT), err[-2000:]
        assert took < 45, (took, err[-2000:])
        assert "Traceback" not in err
    finally:
        for burner in load:
            burner.kill()
            burner.wait()
        if proc.poll() is None:
            proc.kill()
        import shutil

        shutil.rmtree(tmpdir, ignore_errors=True)
