"""The engine jar cache: every use checks a cached jar against its pinned sha256 (a stamp of the
file it was hashed on spares the rehash while the file is unchanged), and a jar whose bytes are
not the pinned ones is fetched again or refused, never run."""
import hashlib
import os

import pytest

from c4forge.pipelines.engines.jvm import jars

JAR_PATH = "org/example/tool/1.0/tool-1.0.jar"


@pytest.fixture
def one_jar_lock(tmp_path, monkeypatch):
    """A lock of one small jar, a local Maven repository (~/.m2) that holds it, an empty cache."""
    payload = os.urandom(64 * 1024)
    home = tmp_path / "home"
    (home / ".m2" / "repository" / JAR_PATH).parent.mkdir(parents=True)
    (home / ".m2" / "repository" / JAR_PATH).write_bytes(payload)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(jars.REPOSITORY_ENV, "http://127.0.0.1:9/unreachable")
    lock = jars.Lock("test", "a test lock", jars.BEAM_VERSION, "Main",
                     ({"path": JAR_PATH, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()},))
    return lock, payload, home


def corrupt_in_place(path, keep_mtime=False):
    """64 bytes zeroed in the middle: the same size (what a size check cannot see)."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)
    with open(path, "r+b") as handle:
        handle.write(data)
    if keep_mtime:  # as `touch -r` would put it back
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["written", "mtime-restored"])
def test_a_same_size_corrupted_cached_jar_is_fetched_again(one_jar_lock, keep_mtime):
    lock, payload, _ = one_jar_lock
    messages = []
    [path] = jars.fetch_jars(lock, log=messages.append)
    assert path.read_bytes() == payload
    corrupt_in_place(path, keep_mtime)
    [again] = jars.fetch_jars(lock, log=messages.append)
    assert again.read_bytes() == payload
    assert "differ from the lock and are replaced" in messages[-1]


def test_a_corrupted_jar_that_cannot_be_fetched_again_is_refused(one_jar_lock):
    lock, _, home = one_jar_lock
    [path] = jars.fetch_jars(lock)
    (home / ".m2" / "repository" / JAR_PATH).unlink()  # and the repository is unreachable
    corrupt_in_place(path)
    with pytest.raises(jars.EngineError, match="could not fetch the engine jar"):
        jars.fetch_jars(lock)


def test_an_unchanged_cached_jar_is_hashed_once(one_jar_lock, monkeypatch):
    lock, _, _ = one_jar_lock
    jars.fetch_jars(lock)  # hashed while written
    hashed = []
    real = jars.file_sha256
    monkeypatch.setattr(jars, "file_sha256", lambda path: hashed.append(path) or real(path))
    for _ in range(3):
        jars.fetch_jars(lock)
    assert hashed == []
    stamp = jars.cache_dir() / "maven" / (JAR_PATH + jars.STAMP_SUFFIX)
    stamp.unlink()  # e.g. a cache filled by an earlier version: hashed once, then stamped
    jars.fetch_jars(lock)
    jars.fetch_jars(lock)
    assert len(hashed) == 1 and stamp.exists()
