"""One command at a time per output directory: an exclusive lock for the life of the command.

Two commands writing the same directory (two ``train run`` into one run, two ablations into one
``out_dir``) would damage each other. Every command that writes a local directory locks it first
(:func:`lock_directory`); the second one gets "DIR is in use by PID N (command)" and exit 2.

The lock is ``fcntl.flock`` on a file of ours under ``$C4FORGE_CACHE/locks`` (named by a hash of
the directory's real path), never a file inside the user's directory; the kernel releases it
when the process ends, however it ends, so a killed command leaves no stale lock. Locks of one
process are re-entrant (a command locks a directory once, however many of its steps claim it),
and the command line releases them when the command returns (:func:`release_all`). Remote
outputs (gs://, s3://) are not locked: the lock is per machine.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import sys
from pathlib import Path
from typing import IO

from c4forge.core.errors import C4forgeError

_HELD: dict[str, IO[str]] = {}


class DirectoryBusy(C4forgeError):
    """Another running command writes the same output directory."""

    exit_code = 2


def _lock_folder() -> Path:
    root = Path(os.environ.get("C4FORGE_CACHE", Path.home() / ".cache" / "c4forge"))
    folder = root / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def lock_directory(directory: str) -> None:
    """Hold the exclusive lock of ``directory`` until :func:`release_all` or the process ends;
    :class:`DirectoryBusy` when another process holds it."""
    if not directory or "://" in directory:
        return
    key = os.path.realpath(directory)
    if key in _HELD:
        return
    path = _lock_folder() / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:32] + ".lock")
    handle = open(path, "a+", encoding="utf-8")  # held open: the lock lives as long as it
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise DirectoryBusy(f"{directory} is in use by PID {holder}; wait for that command to "
                            "finish, or write to another directory") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()} ({' '.join(Path(sys.argv[0]).name.split()[:1] + sys.argv[1:3])})\n")
    handle.flush()
    _HELD[key] = handle


def release_all() -> None:
    """Release every lock this process holds (the command line calls it when a command ends)."""
    while _HELD:
        _, handle = _HELD.popitem()
        try:
            fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            handle.close()
