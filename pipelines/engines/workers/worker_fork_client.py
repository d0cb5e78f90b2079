"""The command a managed engine runs for each SDK worker when workers are forked
(pipelines/engines/workers/worker_fork.py): hand this process's arguments, environment, working folder and
standard streams to the fork server, forward SIGTERM/SIGINT/SIGHUP to the worker it forks, and
exit with the worker's status, so that the engine starts, watches and stops this process as
it would the worker itself.

Run as ``python -I -S worker_fork_client.py SOCKET ARGS...``: the standard library only (about
15 ms to start). Where the server cannot be reached, the worker starts cold in this process's
place (``python -m c4forge.pipelines.engines.workers.worker_boot ARGS...``), so a build never depends on it.
"""
import json
import os
import signal
import socket
import sys

COLD_BOOT = "c4forge.pipelines.engines.workers.worker_boot"
LENGTH_BYTES = 8


def request(args: list) -> bytes:
    """The message the server reads: its length, then the request as JSON."""
    payload = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    return len(payload).to_bytes(LENGTH_BYTES, "big") + payload


def exit_status(line: str) -> int:
    """The worker's status as the server reports it (a negative number: killed by that signal),
    as a shell reports it; 1 when the server went away without reporting one."""
    try:
        code = int(line)
    except ValueError:
        return 1
    return 128 - code if code < 0 else code


def main() -> int:
    path, args = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [request(args)], [0, 1, 2])
        replies = conn.makefile("r")
        pid = int(replies.readline())
    except (OSError, ValueError) as exc:
        conn.close()
        print(f"c4forge: no fork server at {path} ({exc}); starting this SDK worker cold",
              file=sys.stderr, flush=True)
        os.execv(sys.executable, [sys.executable, "-m", COLD_BOOT, *args])

    def forward(signum, _frame) -> None:
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    return exit_status(replies.readline())


if __name__ == "__main__":
    sys.exit(main())
