"""Atomic writes, the one mechanism for them in the project: a file is written beside its
target and renamed over it (readers see the old file or the complete new one, never a part);
a directory is filled beside its target and swapped in, the old one set aside until the new one
is in place (a kill at any moment leaves one complete copy under a known name)."""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import site
import sysconfig
import tempfile
import uuid
from collections.abc import Callable, Iterator
from typing import IO, Any


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w", encoding: str = "utf-8",
                 durable: bool = True) -> Iterator[IO]:
    """Write to ``path`` so readers see either the old file or the complete new one. The path
    is resolved first as an output path (``a/missing/../f`` is ``a/f``). ``durable`` fsyncs
    before the rename (off only for files that are rewritten every few seconds and worthless
    after a crash, like progress counts)."""
    path = output_path(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str, data: bytes) -> None:
    with atomic_write(path, "wb") as handle:
        handle.write(data)


def write_then_rename(path: str, write: Callable[[IO], Any],
                      create: Callable[[str], IO] | None = None,
                      rename: Callable[[str, str], None] | None = None) -> Any:
    """``write(handle)`` into a temp file beside ``path``, then rename it to ``path``; returns
    what ``write`` returned. Local paths go through :func:`atomic_write` (fsync, mode). A store
    with its own files (Beam's FileSystems for gs:// or s3://) passes ``create`` and ``rename``:
    its rename is what makes the object appear whole."""
    if create is None:
        with atomic_write(path, "wb") as handle:
            return write(handle)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    handle = create(tmp)
    try:
        result = write(handle)
    finally:
        handle.close()
    (rename or os.replace)(tmp, path)
    return result


def staging_beside(target: str) -> str:
    """A new empty directory beside ``target`` to fill before :func:`swap_in`:
    ``TARGET.tmp-XXXXXXXX``."""
    staging = f"{target}.tmp-{uuid.uuid4().hex[:8]}"
    os.makedirs(staging)
    return staging


def swap_in(staging: str, target: str, hook: Callable[[str], None] = lambda step: None) -> None:
    """``target`` becomes the complete directory ``staging`` by rename. An existing ``target``
    is first set aside as ``TARGET.tmp-XXXXXXXX`` (``hook("set-aside")`` after that) and removed
    only once the new one is in place: killed between the two renames, the old copy is whole
    under the set-aside name (train/checkpoint.py's reader looks there)."""
    aside = None
    if os.path.lexists(target):
        aside = f"{target}.tmp-{uuid.uuid4().hex[:8]}"
        os.replace(target, aside)
        hook("set-aside")
    os.replace(staging, target)
    if aside:
        shutil.rmtree(aside, ignore_errors=True)


def set_aside_copies(target: str) -> list[str]:
    """The copies of ``target`` that ``swap_in`` set aside and did not remove (killed between its
    two renames), oldest name first."""
    parent, name = os.path.split(target)
    return [os.path.join(parent, entry) for entry in sorted(os.listdir(parent or "."))
            if entry.startswith(f"{name}.tmp-")]


def restore_set_aside(aside: str, target: str) -> None:
    """Put a copy ``swap_in`` set aside back in place of a ``target`` that is missing (the
    recovery half of the swap: only this module renames)."""
    os.replace(aside, target)


def put_in_place(written: str, target: str) -> None:
    """A file or directory written whole beside ``target`` by someone else (a JVM's class
    archive at its exit, a list unpacked from an archive) renamed into place: readers see no
    part of it. ``target`` must not be a directory that exists (use :func:`swap_in`)."""
    os.replace(written, target)


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
    """How a folder that may lie outside the working directory is printed: relative to the
    working directory when inside it, under the temp folder as ``$TMPDIR/...``, under the home
    folder as ``~/...``, else as :func:`shown_path` prints it."""
    full = os.path.abspath(path)
    relative = os.path.relpath(full, os.getcwd())
    if not relative.startswith(os.pardir + os.sep) and relative != os.pardir:
        return relative
    for base, name in ((tempfile.gettempdir(), "$TMPDIR"), (os.path.expanduser("~"), "~")):
        relative = os.path.relpath(full, base)
        if not relative.startswith(os.pardir):
            return name if relative == os.curdir else f"{name}/{relative}"
    return shown_path(path)


def shown_path(path: str) -> str:
    """How a path is printed: relative to the working directory when inside it, relative to the
    site-packages folder it sits in (an installed package's data), else its file name - never
    a machine's absolute path."""
    full = os.path.abspath(path)
    bases = [os.getcwd(), sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    for base in bases:
        relative = os.path.relpath(full, base)
        if not relative.startswith(os.pardir + os.sep) and relative != os.pardir:
            return relative
    return os.path.basename(full)


def file_sha256(path: str) -> str:
    """The sha256 of a file's bytes, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
