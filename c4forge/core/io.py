"""Atomic file writes: a temp file beside the target, fsync, then rename."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w", encoding: str = "utf-8") -> Iterator[IO]:
    """Write to ``path`` so readers see either the old file or the complete new one. The path
    is resolved first as an output path (``a/missing/../f`` is ``a/f``)."""
    path = output_path(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def current_umask() -> int:
    """The process umask (mkstemp creates 0600 files; ours get the user's usual mode)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def output_path(path: str) -> str:
    """An output path with ``.`` and ``..`` resolved once, up front, as ``mkdir -p`` would see
    them but without creating anything: ``..`` after a folder that exists goes to that folder's
    real parent (symlinks followed), after one that does not exist it drops it
    (``runs/missing/../r2`` -> ``runs/r2``). URLs (gs://, s3://) are returned unchanged."""
    if not path or "://" in path:
        return path
    out = os.sep if os.path.isabs(path) else ""
    for part in path.split(os.sep):
        if part in ("", "."):
            continue
        if part == "..":
            if out and os.path.islink(out.rstrip(os.sep) or os.sep):
                out = os.path.dirname(os.path.realpath(out))
            elif out and os.path.basename(out.rstrip(os.sep)) not in ("", ".."):
                out = os.path.dirname(out.rstrip(os.sep))
            else:
                out = os.path.join(out, "..")
            continue
        out = os.path.join(out, part)
    return out or "."


def shown_place(path: str) -> str:
    """How a folder outside the project is printed: under the home folder as ``~/...``, under
    the temp folder as ``$TMPDIR/...``, else as :func:`shown_path` prints it."""
    import tempfile

    full = os.path.abspath(path)
    for base, name in ((tempfile.gettempdir(), "$TMPDIR"), (os.path.expanduser("~"), "~")):
        relative = os.path.relpath(full, base)
        if not relative.startswith(os.pardir):
            return name if relative == os.curdir else f"{name}/{relative}"
    return shown_path(path)


def shown_path(path: str) -> str:
    """How a path is printed: relative to the working directory when inside it, relative to the
    site-packages folder it sits in (an installed package's data), else its file name - never
    a machine's absolute path."""
    import site
    import sysconfig

    full = os.path.abspath(path)
    bases = [os.getcwd(), sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    for base in bases:
        relative = os.path.relpath(full, base)
        if not relative.startswith(os.pardir + os.sep) and relative != os.pardir:
            return relative
    return os.path.basename(full)
