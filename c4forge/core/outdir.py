"""Output directories: the one rule every c4forge command that writes a directory follows, the
crash-safe swap from an old output to a new one, and the check on every name that becomes a path.

The rule (:func:`claim`):

- a directory that does not exist, or is empty, is written;
- a directory that holds c4forge output of the same kind (its manifest says so) is replaced only
  with ``overwrite``, and then only the files that manifest lists (plus our own staging folders)
  are removed: anything else in it stays;
- any other non-empty directory is refused, ``overwrite`` or not.

The swap (:func:`commit`). New files are written into ``DIR/.c4forge-staging-<id>/`` (a marker
file inside says the folder is ours, so we never delete a folder we did not make). Then:

1. the manifest is replaced (atomic rename) by the new one with ``location`` naming the staging
   folder and ``superseded`` listing the old files that go: from here the new output is
   complete (readers resolve files through :func:`resolve`, which honours ``location``);
2. each new file is hard-linked (copied where links are impossible) to a temporary name in DIR
   and renamed over its final name;
3. superseded old files are deleted;
4. the final manifest (no ``location``) replaces the pointing one;
5. the staging folder is removed.

Before step 1 the old manifest and its files are untouched; from step 1 on, the manifest in
place names a complete set of files. A crash leaves at worst a staging folder (removed by the
next run) and old files the pointing manifest lists as superseded (removed by the next
``overwrite``). ``hook(step)`` lets tests kill the process at every step.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Optional, Protocol

from c4forge.core.errors import C4forgeError
from c4forge.core.io import atomic_write, output_path

STAGING_PREFIX = ".c4forge-staging-"
STAGING_MARKER = ".c4forge-staging"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,199}$")  # "_name": kept out of directory scans
_STAGING_NAME = re.compile(r"^\.c4forge-staging-[A-Za-z0-9-]{1,64}$")


class OutputError(C4forgeError, ValueError):
    """An output directory that may not be written, or a name that may not become a path."""


# --------------------------------------------------------------------------- names

def check_name(name: str, what: str = "name") -> str:
    """``name`` if it is safe as one path component (letters, digits, ``. _ + -``, no leading dot,
    no separators, no ``..``); else :class:`OutputError`. Every name read from data or configs
    that becomes part of a path goes through here."""
    if not isinstance(name, str) or not _SAFE_NAME.match(name) or ".." in name:
        raise OutputError(f"unsafe {what} {name!r}: use letters, digits and . _ + - only "
                          "(no path separators, no '..', not starting with a dot)")
    return name


def check_listed(name: str, what: str = "file name") -> str:
    """``name`` if it is safe as a file an output lists: one name, or ``folder/name`` one level
    down (a corpus's Parquet shards live in ``data/``), each part as :func:`check_name` wants."""
    parts = name.split("/") if isinstance(name, str) else [name]
    if len(parts) > 2:
        raise OutputError(f"unsafe {what} {name!r}: at most one folder level (folder/name)")
    for part in parts:
        check_name(part, what)
    return name


def folders_of(names: list[str]) -> set[str]:
    """The folder parts of listed names (``data`` of ``data/x.parquet``); plain names have none."""
    return {name.split("/", 1)[0] for name in names if "/" in name}


def resolve(directory: str, manifest: dict, name: str, what: str = "file name") -> str:
    """The path of a file a manifest lists, honouring a swap in progress (``location``)."""
    check_listed(name, what)
    location = manifest.get("location")
    if location:
        if not isinstance(location, str) or not _STAGING_NAME.match(location):
            raise OutputError(f"unsafe location {location!r} in the manifest of {directory}")
        return os.path.join(directory, location, name)
    return os.path.join(directory, name)


# --------------------------------------------------------------------------- filesystems

class FileSystem(Protocol):
    """What the swap needs of a filesystem: :class:`LocalFS` here, ``pipelines.build.BeamFS``
    for gs:// and s3://."""

    def join(self, *parts: str) -> str: ...
    def exists(self, path: str) -> bool: ...
    def isdir(self, path: str) -> bool: ...
    def listdir(self, path: str) -> list[str]: ...
    def makedirs(self, path: str) -> None: ...
    def read_text(self, path: str) -> str: ...
    def write_text(self, path: str, text: str) -> None: ...
    def place(self, source: str, target: str) -> None: ...
    def remove(self, path: str) -> None: ...


class LocalFS:
    """The filesystem operations the swap needs, on local paths. ``pipelines`` passes an
    equivalent built on Beam's FileSystems for gs:// and s3:// outputs."""

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def read_text(self, path: str) -> str:
        with open(path, encoding="utf-8") as handle:
            return handle.read()

    def write_text(self, path: str, text: str) -> None:
        with atomic_write(path) as handle:
            handle.write(text)

    def place(self, source: str, target: str) -> None:
        """``target`` becomes a copy of ``source`` atomically; ``source`` stays."""
        tmp = os.path.join(os.path.dirname(target),
                           f".{os.path.basename(target)}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
        try:
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def remove(self, path: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


LOCAL = LocalFS()


# --------------------------------------------------------------------------- kinds

@dataclass(frozen=True)
class OutputKind:
    """One kind of c4forge output: ``label`` for messages, the manifest's file name and
    ``format`` value, and ``files_of(manifest)``: the files (names in the directory) it owns."""

    label: str
    manifest: str
    format: str
    files_of: Callable[[dict], list[str]]
    flag: str = "--overwrite"
    # Names the manifest had in older format versions: still recognised (so such an output can
    # be read and replaced), and removed when the output is replaced.
    legacy_manifests: tuple[str, ...] = ()


def read_manifest_json(directory: str, kind: OutputKind, fs: FileSystem = LOCAL) -> Optional[dict]:
    """The kind's manifest in ``directory`` as a dict, or None when there is none, it is not
    JSON, or it belongs to another kind."""
    name = manifest_name(directory, kind, fs)
    if name is None:
        return None
    path = fs.join(directory, name)
    try:
        manifest = json.loads(fs.read_text(path))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != kind.format:
        return None
    return manifest


def manifest_name(directory: str, kind: OutputKind, fs: FileSystem = LOCAL) -> Optional[str]:
    """The name of the kind's manifest present in ``directory`` (current name first), or None."""
    for name in (kind.manifest, *kind.legacy_manifests):
        if fs.exists(fs.join(directory, name)):
            return name
    return None


def _is_our_staging(directory: str, name: str, fs: FileSystem) -> bool:
    return (bool(_STAGING_NAME.match(name))
            and fs.exists(fs.join(fs.join(directory, name), STAGING_MARKER)))


def owned_files(directory: str, manifest: dict, kind: OutputKind) -> list[str]:
    """Every name in ``directory`` an existing output owns: its manifest, listed files,
    superseded files of an interrupted swap. Names that are not safe are refused."""
    names = [kind.manifest]
    for name in list(kind.files_of(manifest)) + list(manifest.get("superseded") or []):
        names.append(check_listed(name, f"file name in {kind.manifest}"))
    return sorted(set(names))


@dataclass
class Claim:
    """What :func:`claim` found: the directory, and the files of an old output it may replace."""

    directory: str
    kind: OutputKind
    old_files: list[str]


def claim(directory: str, kind: OutputKind, overwrite: bool, fs: FileSystem = LOCAL) -> Claim:
    """Apply the rule and remove our stale staging folders (the directory itself is created
    with the first staging folder). Raises :class:`OutputError` with the reason when the
    directory may not be written. The claim's ``directory`` is :func:`output_path` of the one
    given: write through it."""
    directory = output_path(directory)
    if fs.exists(directory) and not fs.isdir(directory):
        raise OutputError(f"{directory} exists and is not a directory; choose another output")
    if not fs.exists(directory):
        _check_writable(_existing_ancestor(directory), fs, f"cannot create {directory}: ")
        return Claim(directory, kind, [])
    try:
        entries = fs.listdir(directory)
    except OSError as exc:
        raise OutputError(f"cannot read {directory}: {exc.strerror or exc}") from exc
    stale = [e for e in entries if _is_our_staging(directory, e, fs)]
    others = [e for e in entries if e not in stale]
    manifest = read_manifest_json(directory, kind, fs)
    if manifest is None:
        if others:
            shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
            raise OutputError(
                f"{directory} is not empty ({shown}) and holds no c4forge {kind.label}: refusing "
                f"to write there, {kind.flag} or not; choose a new or empty directory")
        old: list[str] = []
    else:
        if not overwrite:
            raise OutputError(f"{directory} already holds a c4forge {kind.label}; pass "
                              f"{kind.flag} to replace it (only its own files are removed)")
        old = owned_files(directory, manifest, kind)
        old += [n for n in kind.legacy_manifests if n in entries and n not in old]
    for name in stale:
        fs.remove(fs.join(directory, name))
    _check_writable(directory, fs)
    return Claim(directory, kind, old)


def _existing_ancestor(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _check_writable(directory: str, fs: FileSystem, prefix: str = "") -> None:
    if "://" in directory:
        return
    if not os.path.isdir(directory):
        raise OutputError(f"{prefix}{directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"{prefix}{directory} is not writable (permission denied)")


def new_staging(claim_: Claim, fs: FileSystem = LOCAL) -> str:
    """A fresh staging folder inside the claimed directory, marked as ours."""
    name = f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}"
    path = fs.join(claim_.directory, name)
    fs.makedirs(path)
    fs.write_text(fs.join(path, STAGING_MARKER), "c4forge staging folder; safe to delete\n")
    return path


def manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def commit(claim_: Claim, staging: str, manifest: dict,
           hook: Optional[Callable[[str], None]] = None, fs: FileSystem = LOCAL) -> dict:
    """Swap the files in ``staging`` (those ``manifest`` lists) into the directory, crash-safe
    (see the module docstring); returns the final manifest. ``manifest`` must carry the kind's
    ``format``."""
    kind, directory = claim_.kind, claim_.directory
    hook = hook or (lambda step: None)
    staging_name = os.path.basename(staging.rstrip("/"))
    new = [check_listed(n, "output file name") for n in kind.files_of(manifest)]
    superseded = sorted(set(claim_.old_files) - set(new) - {kind.manifest})
    target = fs.join(directory, kind.manifest)
    final = {k: v for k, v in manifest.items() if k not in ("location", "superseded")}
    hook("staged")
    fs.write_text(target, manifest_text(dict(final, location=staging_name, superseded=superseded)))
    hook("pointed")
    for folder in sorted(folders_of(new)):
        fs.makedirs(fs.join(directory, folder))
    for name in new:
        fs.place(fs.join(staging, name), fs.join(directory, name))
        hook("placed")
    for name in superseded:
        fs.remove(fs.join(directory, name))
    _remove_emptied_folders(directory, superseded, new, fs)
    hook("superseded-removed")
    fs.write_text(target, manifest_text(final))
    hook("final")
    fs.remove(staging)
    hook("done")
    return final


def refuse_strangers_at_new_names(claim_: Claim, manifest: dict, fs: FileSystem = LOCAL) -> None:
    """Before anything is swapped: a new file's name (or its folder's) taken by something the old
    output does not own is a user's file, which the swap would replace. Refused with one line,
    the directory untouched (:func:`writing` then removes the staging folder)."""
    new = [check_listed(n, "output file name") for n in claim_.kind.files_of(manifest)]
    owned = set(claim_.old_files)
    taken = [name for name in new if name not in owned and fs.exists(fs.join(claim_.directory, name))]
    taken += [folder for folder in sorted(folders_of(new))
              if fs.exists(fs.join(claim_.directory, folder))
              and not fs.isdir(fs.join(claim_.directory, folder))]
    if taken:
        shown = ", ".join(taken[:3]) + (" ..." if len(taken) > 3 else "")
        raise OutputError(
            f"{claim_.directory} holds {shown}, which the old {claim_.kind.label} does not list "
            f"and the new one would write over: refusing to replace a file c4forge did not "
            f"write (nothing was changed); move it away and run again")


@dataclass
class Staging:
    """The staging folder of one write (:func:`writing`): the block writes files into ``path``
    and sets ``manifest``; after the block, ``result`` is the committed manifest."""

    path: str
    manifest: Optional[dict] = None
    result: Optional[dict] = None


def _remove_emptied_folders(directory: str, removed: list[str], kept: list[str], fs: FileSystem) -> None:
    """The folders the removed files lived in, where the new output has none and nothing else
    is left in them (a folder holding anything we did not list stays)."""
    for folder in sorted(folders_of(removed) - folders_of(kept)):
        path = fs.join(directory, folder)
        if fs.isdir(path) and not fs.listdir(path):
            fs.remove(path)


@contextlib.contextmanager
def writing(claim_: Claim, hook: Optional[Callable[[str], None]] = None,
            fs: FileSystem = LOCAL) -> Iterator[Staging]:
    """Stage new files inside a claimed directory and swap them in (:func:`commit`) when the
    block ends having set ``staging.manifest``. An exception in the block, or a block that sets
    no manifest, removes the staging folder and leaves the directory as it was. Every command
    that writes a directory goes through here (claiming first, so it refuses before working)."""
    existed = fs.exists(claim_.directory)
    staging = Staging(new_staging(claim_, fs))

    def undo() -> None:
        with contextlib.suppress(OSError):
            fs.remove(staging.path)
            if not existed and not fs.listdir(claim_.directory):  # ours, and left empty
                fs.remove(claim_.directory)

    try:
        yield staging
    except BaseException:
        undo()
        raise
    if staging.manifest is None:
        undo()
        return
    try:
        refuse_strangers_at_new_names(claim_, staging.manifest, fs)
    except BaseException:
        undo()
        raise
    staging.result = commit(claim_, staging.path, staging.manifest, hook, fs)


def write_directory(directory: str, kind: OutputKind, overwrite: bool,
                    fill: Callable[[str], dict], hook: Optional[Callable[[str], None]] = None,
                    fs: FileSystem = LOCAL) -> dict:
    """Claim ``directory``, let ``fill(staging)`` write the new files and return their manifest,
    then swap them in. A failure inside ``fill`` removes the staging folder and leaves the
    directory as it was."""
    with writing(claim(directory, kind, overwrite, fs), hook, fs) as staging:
        staging.manifest = fill(staging.path)
    assert staging.result is not None
    return staging.result


def hook_from_env(variable: str = "C4FORGE_SWAP_CRASH_AT") -> Optional[Callable[[str], None]]:
    """A hook that kills the process at the named swap step (``C4FORGE_SWAP_CRASH_AT=placed``),
    for crash tests of the CLIs; None when the variable is unset."""
    crash_at = os.environ.get(variable)
    if not crash_at:
        return None

    def hook(step: str) -> None:
        if step == crash_at:
            os._exit(99)
    return hook
