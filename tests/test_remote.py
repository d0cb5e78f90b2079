"""Reading crawl files over the network (issue 26): every transient fault ridden through with the
records and counters of an uninterrupted read, permanent errors counted, politeness bounds kept.
The server is tests/faultserver.py on 127.0.0.1 (bounded requests and lifetime)."""
from __future__ import annotations

import gzip
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest
from c4forge.corpus.read.remote import RemotePolicy, RemoteReadError, ResumingReader
from tests.conftest import ROOT, shared_path
from tests.faultserver import FaultServer

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
CRAWL = "CC-MAIN-2099-01"
# Fast retries for tests: waits of at most a few ms, 1 s timeouts.
FAST = ["--set", "read.retry_backoff=0.001", "--set", "read.timeout=1", "--set", "read.retries=6"]
ONE_PROCESS = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


def is_read_counter(name: str) -> bool:
    return "/read:" in name or "/skipped_file:" in name


def crawl_dir(tmp_path: Path, files: list[Path]) -> list[str]:
    """A directory laid out like Common Crawl; returns the files' paths on the server."""
    listing = []
    for i, source in enumerate(files):
        rel = f"crawl-data/{CRAWL}/segments/{i}/wet/{source.name}"
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, tmp_path / rel)
        listing.append(rel)
    (tmp_path / "crawl-data" / CRAWL / "wet.paths.gz").write_bytes(
        gzip.compress(("\n".join(listing) + "\n").encode()))
    return ["/" + rel for rel in listing]


def changed_copy(source: Path, target: Path) -> Path:
    """The file as the server's ``changed`` fault serves it (tests/faultserver.py)."""
    target.write_bytes(gzip.compress(gzip.decompress(source.read_bytes()).replace(b"the ", b"teh ", 1)))
    return target


def run(command: str, inputs: list[str], out: Path, *extra: str):
    args = [command, "-i", *inputs, "--preset", "c4-noclean", "-o", str(out), "-q", *FAST, *extra]
    if command == "build":
        args += ONE_PROCESS
    return CliRunner().invoke(corpus_cli, args)


def outcome(out: Path) -> tuple[list, dict]:
    manifest = read_manifest(str(out))
    documents = sorted((d["url"], d["text"]) for split in manifest["splits"]
                       for d in iter_corpus_documents(str(out), split))
    counters = {k: v for k, v in manifest["counters"].items() if not is_read_counter(k)}
    return documents, counters


FAULTS = {
    "cut mid-body": ["cut:30000"],
    "503 + Retry-After": ["status:503:0"],
    "429": ["status:429"],
    "500": ["status:500"],
    "502 then 504": ["status:502", "status:504"],
    "stalled": ["stall:3"],
    "short body": ["short:20000"],
    "cut twice": ["cut:20000", "cut:30000"],
    "cut, then Range ignored": ["cut:30000", "norange"],
    "object changed": ["cut:30000", "changed"],
}


@pytest.fixture(scope="module")
def local_outcomes(tmp_path_factory):
    """What the local files give, per command: the oracle every faulty read must equal."""
    root = tmp_path_factory.mktemp("local")
    changed = changed_copy(SAMPLE, root / "changed.warc.wet.gz")
    out = {}
    for command in ("clean", "build"):
        for name, source in (("original", SAMPLE), ("changed", changed)):
            target = root / f"{command}-{name}"
            result = run(command, [str(source)], target)
            assert result.exit_code == 0, result.output
            out[command, name] = outcome(target)
    return out


@pytest.mark.parametrize("command", ["clean", "build"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_every_transient_fault_gives_the_records_of_an_uninterrupted_read(
        command, fault, local_outcomes, tmp_path):
    paths = crawl_dir(tmp_path / "site", [SAMPLE])
    with FaultServer(tmp_path / "site", faults={paths[0]: FAULTS[fault]}) as server:
        result = run(command, [server.url + paths[0]], tmp_path / "out")
        assert result.exit_code == 0, result.output
        failing = [f for f in FAULTS[fault] if f != "norange"]  # norange serves the whole object
        assert server.requests[paths[0]] == 1 + len(failing)  # every failing response retried once
    version = "changed" if fault == "object changed" else "original"
    assert outcome(tmp_path / "out") == local_outcomes[command, version]
    counters = read_manifest(str(tmp_path / "out"))["counters"]
    assert counters["split-wet-file/read:retries"] >= 1
    if fault.startswith(("cut", "short", "stalled")):
        assert counters["split-wet-file/read:resumed_bytes"] > 0
    if fault == "object changed":
        assert counters["split-wet-file/read:restarted_files"] == 1
    stats = CliRunner().invoke(corpus_cli, ["stats", str(tmp_path / "out")]).output
    assert "| reading remote files | count |" in stats and "| read:retries |" in stats


def test_crawl_slice_from_a_listing_end_to_end(tmp_path):
    files = sorted(p for p in shared_path("crawl").glob("*.wet.gz"))[:4]
    paths = crawl_dir(tmp_path / "site", files)
    with FaultServer(tmp_path / "site", faults={paths[1]: ["status:503:0"], paths[2]: ["cut:0.5"]}) as server:
        result = CliRunner().invoke(corpus_cli, [
            "build", "--crawl", CRAWL, "--files", "0:4", "--cc-base-url", server.url, "-o",
            str(tmp_path / "out"), "--preset", "c4-noclean", "-q", *FAST, *ONE_PROCESS])
        assert result.exit_code == 0, result.output
        assert server.requests[f"/crawl-data/{CRAWL}/wet.paths.gz"] == 1
    manifest = read_manifest(str(tmp_path / "out"))
    assert [i.rsplit("/", 1)[1] for i in manifest["inputs"]] == [f.name for f in files]
    expected = Counters()
    run_chain([str(f) for f in files], build_config("c4-noclean"), expected)
    assert manifest["counters"]["split-wet-file/passed"] == expected["split-wet-file/passed"]


def test_whole_shared_crawl_at_a_20_percent_fault_rate_loses_nothing(tmp_path):
    files = sorted(shared_path("crawl").glob("*.wet.gz"))
    paths = crawl_dir(tmp_path / "site", files)
    local = tmp_path / "local"
    assert run("clean", [str(f) for f in files], local).exit_code == 0
    with FaultServer(tmp_path / "site", random_rate=0.2, seed=7) as server:
        result = run("clean", [server.url + p for p in paths], tmp_path / "remote")
        assert result.exit_code == 0, result.output
        assert server.total > len(paths)  # faults were injected and retried
    assert outcome(tmp_path / "remote") == outcome(local)


@pytest.mark.parametrize("command", ["clean", "build"])
def test_a_permanent_404_is_a_counted_skip_naming_the_file_and_strict_fails(command, tmp_path):
    paths = crawl_dir(tmp_path / "site", [SAMPLE])
    with FaultServer(tmp_path / "site", faults={paths[0]: ["status:404"]}) as server:
        missing = server.url + paths[0]
        result = run(command, [str(SAMPLE), missing], tmp_path / "out")
        assert result.exit_code == 0, result.output
        assert server.requests[paths[0]] == 1  # never retried
        counters = read_manifest(str(tmp_path / "out"))["counters"]
        assert counters["split-wet-file/skipped:unreadable_file"] == 1
        assert counters[f"split-wet-file/skipped_file:{missing}"] == 1
        before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
        server.faults[paths[0]] = ["status:404"]
        result = run(command, [str(SAMPLE), missing], tmp_path / "out", "--strict", "--overwrite")
        assert result.exit_code == 1 and "skipped:unreadable_file" in result.output
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_retries_are_bounded_in_count_and_in_waiting(tmp_path):
    paths = crawl_dir(tmp_path / "site", [SAMPLE])
    waits = []
    with FaultServer(tmp_path / "site", faults={paths[0]: ["status:503"] * 10}) as server:
        with pytest.raises(RemoteReadError, match="gave up after 3 retries"):
            ResumingReader(server.url + paths[0], RemotePolicy(retries=3, backoff_base=0.001),
                           sleep=waits.append)
        assert server.requests[paths[0]] == 4
        with pytest.raises(RemoteReadError, match=r"retry_seconds 5"):
            ResumingReader(server.url + paths[0], RemotePolicy(retries=50, retry_seconds=5,
                                                               backoff_base=4, backoff_cap=4),
                           sleep=waits.append)
    assert sum(waits[3:]) <= 5


def test_retry_after_is_honoured(tmp_path):
    paths = crawl_dir(tmp_path / "site", [SAMPLE])
    waits = []
    with FaultServer(tmp_path / "site", faults={paths[0]: ["status:503:2", "status:429:1"]}) as server:
        with ResumingReader(server.url + paths[0], RemotePolicy(backoff_base=0.001), sleep=waits.append) as reader:
            data = b"".join(iter(lambda: reader.read(1 << 16), b""))
    assert waits == [2.0, 1.0] and data == SAMPLE.read_bytes()


def test_the_connection_cap_per_host_holds(tmp_path):
    files = sorted(shared_path("crawl").glob("*.wet.gz"))
    paths = crawl_dir(tmp_path / "site", files)
    policy = RemotePolicy(max_connections=2, requests_per_second=1000)
    with FaultServer(tmp_path / "site") as server:
        def read_all(path):
            with ResumingReader(server.url + path, policy) as reader:
                while reader.read(1 << 12):
                    pass

        threads = [threading.Thread(target=read_all, args=(p,)) for p in paths * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert server.max_open <= 2 and sum(server.requests.values()) == len(threads)


def test_requests_say_who_is_asking(tmp_path):
    from c4forge.corpus.read.remote import user_agent

    assert user_agent().startswith("c4forge/")
