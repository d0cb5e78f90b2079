"""The Java side of the Flink and Spark runners: the pinned jars (locks/*.json, written by
scripts/lock_engine_jars.py), fetched once from Maven Central into a cache with every sha256
checked, a launcher jar per job server, and the Java that runs them.

Beam's ready-made job-server jars are not served by the Maven Central this project is built
against (scripts/lock_engine_jars.py says which coordinates were refused); the runner modules
they are made of are. A job server here is then a *launcher jar*: a manifest with the server's
``Main-Class`` and a ``Class-Path`` naming the cached jars, which ``java -jar`` (and so Beam's
own ``--flink_job_server_jar`` / ``--spark_job_server_jar``) runs like the shaded jar.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from apache_beam.version import __version__ as BEAM_VERSION

from c4forge.core.fetch import FetchError, deadline_seconds, fetch_chunks
from c4forge.core.io import atomic_write, file_sha256, shown_place
from c4forge.pipelines.engines.jvm.java import (  # noqa: F401 - also jars' names
    MIN_JAVA,
    EngineError,
    java_executable,
    java_version,
)

LOCKS = Path(__file__).resolve().parent / "locks"
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
REPOSITORY_ENV = "C4FORGE_MAVEN_REPOSITORY"  # a mirror of Maven Central (URL)
MIN_RATE = 256 << 10  # bytes/s: a jar of hundreds of MB gets the deadline it needs at this rate
CACHE_ENV = "C4FORGE_ENGINE_CACHE"           # where the jars go (default ~/.cache/c4forge/engines)
# slf4j-simple (the job servers' and Flink's logger here): time-stamped lines, warnings and up
LOG_PROPERTIES = ("-Dorg.slf4j.simpleLogger.showDateTime=true",
                  "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                  "-Dorg.slf4j.simpleLogger.defaultLogLevel=info")  # Flink 1.19 and Spark 3.5 both run on 11 and 17
# Spark 3.5 on Java 17 reads JDK internals; spark-submit passes these, so must a job server
# that starts a SparkContext itself (a launcher jar's manifest can carry them).
SPARK_OPENS = ("java.base/java.lang", "java.base/java.lang.invoke", "java.base/java.lang.reflect",
               "java.base/java.io", "java.base/java.net", "java.base/java.nio",
               "java.base/java.util", "java.base/java.util.concurrent",
               "java.base/java.util.concurrent.atomic", "java.base/sun.nio.ch",
               "java.base/sun.nio.cs", "java.base/sun.security.action", "java.base/sun.util.calendar")


class EngineUsageError(EngineError):
    """Engine options that cannot work together: a usage error, before anything starts."""

    exit_code = 2


@dataclass(frozen=True)
class Lock:
    """One pinned set of jars (a job server's or a cluster's classpath)."""

    name: str
    what: str
    beam: str
    main_class: str
    jars: tuple[dict, ...]

    @property
    def size(self) -> int:
        return sum(j["size"] for j in self.jars)


def load_lock(name: str) -> Lock:
    data = json.loads((LOCKS / f"{name}.json").read_text())
    return Lock(data["name"], data["what"], data["beam"], data["main_class"], tuple(data["jars"]))


def cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "c4forge" / "engines"


def _chunks(jar: dict, repository: str):
    """The jar's bytes: from the local Maven repository when it holds a file of that size, else
    over HTTPS from ``repository``."""
    local = Path.home() / ".m2" / "repository" / jar["path"]
    if local.is_file() and local.stat().st_size == jar["size"]:
        with open(local, "rb") as handle:
            yield from iter(lambda: handle.read(1 << 20), b"")
        return
    url = f"{repository.rstrip('/')}/{jar['path']}"
    try:
        yield from fetch_chunks(url, f"the engine jar {os.path.basename(jar['path'])}",
                                deadline=max(deadline_seconds(), jar["size"] / MIN_RATE))
    except FetchError as exc:  # what, where and why; the way out is ours to say
        raise EngineError(f"{exc} (no network? set {REPOSITORY_ENV} to a reachable Maven "
                          "Central mirror)") from exc


def _fetch(jar: dict, target: Path, repository: str) -> None:
    """One jar into ``target``, written atomically and named only once its sha256 is the pinned
    one (a corrupt or substituted download leaves nothing)."""
    digest = hashlib.sha256()
    with atomic_write(str(target), "wb") as handle:
        for block in _chunks(jar, repository):
            digest.update(block)
            handle.write(block)
        if digest.hexdigest() != jar["sha256"]:
            raise EngineError(f"{jar['path']}: sha256 {digest.hexdigest()[:16]}... is not the "
                              f"pinned {jar['sha256'][:16]}...; nothing was kept")
    with atomic_write(str(target.with_name(target.name + STAMP_SUFFIX))) as handle:
        json.dump(_stamp(jar, target), handle)  # hashed as it was written: verified


STAMP_SUFFIX = ".verified"  # beside each cached jar: its pinned sha256 and the file it was checked on


def _file_identity(path: Path) -> dict:
    """What changes when a file's bytes may have: size, inode, modification and change times (a
    write sets both times; setting the mtime back, as `touch -r` does, still moves the ctime)."""
    st = path.stat()
    return {"size": st.st_size, "inode": st.st_ino, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def _stamp(jar: dict, path: Path) -> dict:
    return {"sha256": jar["sha256"], **_file_identity(path)}


def verified(jar: dict, path: Path) -> bool:
    """Whether the cached ``path`` holds the pinned bytes of ``jar``. Hashed once; afterwards
    its stamp (written after the hash matched) vouches for it while the file's size, inode, mtime
    and ctime are those it was hashed with, so a build pays a stat and a small read per jar. A
    file that changed is hashed again; a mismatch is False (the caller fetches the jar again)."""
    if not (path.is_file() and path.stat().st_size == jar["size"]):
        return False
    stamp_path = path.with_name(path.name + STAMP_SUFFIX)
    try:
        if json.loads(stamp_path.read_text()) == _stamp(jar, path):
            return True
    except (OSError, ValueError):
        pass
    if file_sha256(str(path)) != jar["sha256"]:
        return False
    with atomic_write(str(stamp_path)) as handle:
        json.dump(_stamp(jar, path), handle)
    return True


def fetch_jars(lock: Lock, log=None) -> list[Path]:
    """The lock's jars in the cache, in classpath order: each checked against its pinned sha256
    (:func:`verified`), fetched where missing or where the cached bytes are not the pinned ones."""
    if lock.beam != BEAM_VERSION:
        raise EngineError(f"the {lock.name} jars are Beam {lock.beam}'s but apache-beam "
                          f"{BEAM_VERSION} is installed: the job server and the SDK must be one "
                          "release (pip install the apache-beam version pyproject.toml pins)")
    root = cache_dir() / "maven"
    paths = [root / jar["path"] for jar in lock.jars]
    missing = [(jar, path) for jar, path in zip(lock.jars, paths) if not verified(jar, path)]
    if missing:
        corrupt = [path for _, path in missing if path.is_file()]
        if log:
            size = sum(jar["size"] for jar, _ in missing)
            log(f"fetching {len(missing)} jar(s) of {lock.name} ({size / 1e6:.0f} MB, once) "
                f"into {shown_place(str(root))}"
                + (f"; {len(corrupt)} cached jar(s) differ from the lock and are replaced" if corrupt else ""))
        repository = os.environ.get(REPOSITORY_ENV) or MAVEN_CENTRAL
        with ThreadPoolExecutor(8) as pool:
            for future in [pool.submit(_fetch, jar, path, repository) for jar, path in missing]:
                future.result()
    return paths


def _manifest(attributes: dict[str, str]) -> bytes:
    """A JAR manifest: lines of at most 72 bytes, continued with a leading space."""
    out = io.BytesIO()
    for key, value in attributes.items():
        line = f"{key}: {value}".encode()
        out.write(line[:72] + b"\r\n")
        for start in range(72, len(line), 71):
            out.write(b" " + line[start:start + 71] + b"\r\n")
    out.write(b"\r\n")
    return out.getvalue()


def launcher_jar(lock: Lock, log=None, add_opens: tuple[str, ...] = ()) -> Path:
    """A jar that ``java -jar`` runs as the lock's main class on the lock's jars (fetched first).
    Its bytes depend only on the lock, so it is written once and then reused."""
    jars = fetch_jars(lock, log)
    folder = cache_dir()
    target = folder / f"c4forge-{lock.name}-beam-{lock.beam}.jar"
    attributes = {"Manifest-Version": "1.0", "Created-By": "c4forge",
                  "Main-Class": lock.main_class,
                  "Class-Path": " ".join(p.relative_to(folder).as_posix() for p in jars)}
    if add_opens:
        attributes["Add-Opens"] = " ".join(add_opens)
    manifest = _manifest(attributes)
    if target.is_file():
        with zipfile.ZipFile(target) as existing:
            if existing.read("META-INF/MANIFEST.MF") == manifest:
                return target
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("META-INF/MANIFEST.MF", date_time=(2000, 1, 1, 0, 0, 0))
        archive.writestr(info, manifest)
    with atomic_write(str(target), "wb") as handle:
        handle.write(buffer.getvalue())
    return target


def classpath(lock: Lock, log=None) -> str:
    return os.pathsep.join(str(p) for p in fetch_jars(lock, log))
