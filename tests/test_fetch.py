"""Every download has a deadline, bounded tries and one line naming what and where (issue 83,
point 4), against a 127.0.0.1 server (tests/faultserver.py) that trickles a byte every second,
cuts the body short, stalls, and answers 503: c4forge/core/fetch.py, and through it the package
index, the URL and bad-word lists and the engine jars. Nothing that fails is cached."""
from __future__ import annotations

import hashlib
import time

import pytest

from c4forge.core.fetch import FetchError, fetch
from c4forge.corpus.assets import package_index
from c4forge.corpus.assets.downloads import cached_download, text_list
from tests.faultserver import FaultServer

BODY = b"".join(b"word%d\n" % i for i in range(20_000))  # 208 KB


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "srv"
    root.mkdir()
    (root / "list.txt").write_bytes(BODY)
    return root


def test_a_trickle_meets_the_deadline_and_is_named(served):
    with FaultServer(served, {"/list.txt": ["trickle:0.5"] * 5}) as server:
        started = time.monotonic()
        with pytest.raises(FetchError) as caught:
            fetch(f"{server.url}/list.txt", "the bad-words list", deadline=3, read_timeout=2)
        took = time.monotonic() - started
    assert took < 3 + 2, took  # the deadline, plus at most one read's wait
    message = str(caught.value)
    assert message.startswith(f"could not fetch the bad-words list from {server.url}/list.txt: ")
    assert "deadline 3 s" in message and "\n" not in message


def test_a_body_cut_short_is_tried_again_and_then_named(served):
    with FaultServer(served, {"/list.txt": ["cut:1000", "short:0.5", None]}) as server:
        assert fetch(f"{server.url}/list.txt", "a list", deadline=30) == BODY
        assert server.requests["/list.txt"] == 3
    with FaultServer(served, {"/list.txt": ["cut:1000"] * 3}) as server:
        with pytest.raises(FetchError, match=r"could not fetch a list from .*/list.txt: cut short "
                                             rf"after 1,000 of {len(BODY):,} bytes .*3 tries"):
            fetch(f"{server.url}/list.txt", "a list", deadline=30)


def test_a_stall_is_a_failed_try_within_the_deadline(served):
    with FaultServer(served, {"/list.txt": ["stall:5", None]}) as server:
        started = time.monotonic()
        assert fetch(f"{server.url}/list.txt", "a list", deadline=20, read_timeout=1) == BODY
        assert time.monotonic() - started < 5
    with FaultServer(served, {"/list.txt": ["stall:5"] * 5}) as server:
        started = time.monotonic()
        with pytest.raises(FetchError, match="list.txt: (stalled: no byte for 1 s|took longer than the deadline)"):
            fetch(f"{server.url}/list.txt", "a list", deadline=2.5, read_timeout=1)
        assert time.monotonic() - started < 2.5 + 1.5


def test_busy_servers_are_retried_and_missing_files_are_not(served):
    with FaultServer(served, {"/list.txt": ["status:503", None]}) as server:
        assert fetch(f"{server.url}/list.txt", "a list") == BODY
        with pytest.raises(FetchError) as caught:
            fetch(f"{server.url}/nothing.txt", "a list")
        assert caught.value.status == 404 and server.requests["/nothing.txt"] == 1


def test_nothing_is_cached_from_a_fetch_that_failed(served, tmp_path, monkeypatch):
    monkeypatch.setenv("C4FORGE_CACHE", str(tmp_path / "cache"))
    with FaultServer(served, {"/list.txt": ["cut:1000"] * 3}) as server:
        with pytest.raises(FetchError, match="the bad-words list"):
            cached_download(f"{server.url}/list.txt", "badwords", check=text_list, what="the bad-words list")
        assert not list((tmp_path / "cache").rglob("*")) or not any(
            p.is_file() for p in (tmp_path / "cache").rglob("*"))
        assert cached_download(f"{server.url}/list.txt", "badwords", check=text_list) == BODY


def test_the_package_index_names_the_wheel_and_the_index(served, tmp_path, monkeypatch):
    wheel = b"PK-not-really-a-wheel" * 1000
    (served / "simple" / "datatrove").mkdir(parents=True)
    (served / "simple" / "datatrove" / "index.html").write_bytes(
        b'<a href="../../files/dt-1.whl">dt-1.whl</a>')
    (served / "files").mkdir()
    (served / "files" / "dt-1.whl").write_bytes(wheel)
    monkeypatch.setenv("C4FORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("C4FORGE_FETCH_DEADLINE", "3")
    pinned = package_index.PinnedWheel("datatrove", "dt-1.whl", hashlib.sha256(wheel).hexdigest())
    with FaultServer(served, {"/files/dt-1.whl": ["trickle:0.5"]}) as server:
        monkeypatch.setenv("C4FORGE_INDEX_URL", f"{server.url}/simple")
        started = time.monotonic()
        with pytest.raises(package_index.IndexUnavailable) as caught:
            package_index.wheel_bytes(pinned)
        assert time.monotonic() - started < 3 + 1.5
        message = str(caught.value)
        assert "could not fetch the wheel dt-1.whl from" in message and server.url in message
        assert "took longer than the deadline" in message
        assert "PIP_INDEX_URL" in message
        assert not (tmp_path / "cache" / "wheels" / "dt-1.whl").exists()
        assert package_index.wheel_bytes(pinned) == wheel  # the next try, whole, is cached
    assert (tmp_path / "cache" / "wheels" / "dt-1.whl").read_bytes() == wheel
