"""A c4forge corpus read by the data tools people use instead (issue 80, point 3): datatrove's
IpcReader (Arrow shards) and ParquetReader, NeMo Curator's ParquetReader in a pipeline on Ray,
each statement as docs/formats.md's "datatrove and NeMo Curator" block gives it, on the shared
crawl's c4 corpus in several shards: every document with its id, text, url and the metadata
columns, in shard order (datatrove) or by id (Curator's executor returns batches as they finish).

Both libraries need huggingface-hub >= 1 and current pandas/pyarrow: they run in .venv-hf
(`make test` runs the tests marked hf there); elsewhere these skip, saying so."""
import contextlib
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import export_corpus, iter_corpus_documents, read_manifest, write_corpus
from tests.conftest import ROOT, shared_path

NEEDS = "datatrove and NeMo Curator run in .venv-hf (make test runs the tests marked hf there)"
DOCS = ROOT / "docs" / "formats.md"
MARKER = "C4FORGE_TEST_RAY"
pytest.importorskip("datatrove.pipeline.readers", reason=NEEDS)  # before the corpus is built
psutil = pytest.importorskip("psutil", reason=NEEDS)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """The shared crawl's c4 corpus as Arrow (DIR, 3+ train shards) and its Parquet export (PQDIR),
    and its documents by split as c4forge reads them."""
    files = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    root = tmp_path_factory.mktemp("readers")
    docs = run_chain(files, build_config("c4", badwords=str(ROOT / "corpus/data/demo-badwords")), Counters())
    write_corpus(str(root / "arrow"), docs, {"config": {"preset": "c4"}, "counters": {}},
                 docs_per_shard=120, validation_per_mille=100)
    export_corpus(str(root / "arrow"), str(root / "parquet"), "parquet")
    assert len(read_manifest(str(root / "arrow"))["splits"]["train"]["files"]) >= 3
    rows = {split: list(iter_corpus_documents(str(root / "arrow"), split)) for split in ("train", "validation")}
    assert len(rows["train"]) > 300 and rows["validation"]
    return root / "arrow", root / "parquet", rows


def docs_block(title: str) -> list[str]:
    """The statements of the docs' python block that follows `title`."""
    text = DOCS.read_text(encoding="utf-8")
    block = re.search(re.escape(title) + r".*?```python\n(.*?)```", text, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def run_block(title: str, arrow: Path, parquet: Path) -> dict:
    namespace: dict = {}
    for statement in docs_block(title):
        exec(statement.replace("PQDIR", str(parquet)).replace("DIR", str(arrow)), namespace)  # the docs' line
    return namespace


def as_datatrove(row: dict) -> tuple:
    metadata = {k: v for k, v in row.items() if k not in ("id", "text")}
    return row["id"], row["text"], metadata


def read_back(documents) -> list[tuple]:
    """datatrove's Documents as (id, text, metadata), the `file_path` it adds checked and set aside."""
    read = []
    for doc in documents:
        metadata = dict(doc.metadata)
        assert re.search(r"/(data/)?(train|validation)-\d{5}-of-\d{5}\.(arrow|parquet)$", metadata.pop("file_path"))
        read.append((doc.id, doc.text, metadata))
    return read


@pytest.mark.hf
def test_datatrove_readers_give_every_document_with_its_metadata(corpora):
    arrow, parquet, rows = corpora
    statements = docs_block("<!-- datatrove -->")
    assert sum("Reader(" in s for s in statements) == 2
    namespace: dict = {}
    for statement in statements:
        exec(statement.replace("PQDIR", str(parquet)).replace("DIR", str(arrow)), namespace)
        if statement.startswith(("arrow_docs", "parquet_docs")):
            name = statement.split("=")[0].strip()
            read = read_back(namespace[name])
            ours = [as_datatrove(r) for r in rows["train"]]
            assert len(read) == len(ours), name
            assert read == ours, name
            assert {"url", "timestamp", "language", "language_score", "source", "offset"} <= set(read[0][2])
    for split in ("validation",):  # the same call with the split's name gives the other split
        from datatrove.pipeline.readers import ParquetReader

        read = read_back(ParquetReader(str(parquet / "data"), glob_pattern=f"{split}-*.parquet")())
        assert read == [as_datatrove(r) for r in rows[split]]


@pytest.fixture
def local_ray():
    """A Ray cluster of this process bound to 127.0.0.1 (a small object store; its dashboard too,
    whose state API Xenna asks), in a temporary folder of its own, started for the test and gone
    after it, also on failure. Curator's executor joins it (its own ray.init is then a no-op) and
    shuts it down when the pipeline ends; a worker Ray leaves behind then (Xenna's resource
    monitor outlives the shutdown) is found by the marker in its environment, which every
    process of this cluster inherits, and stopped. 4 logical CPUs on this 2-core machine: Xenna's
    streaming mode keeps one for itself and wants 1.5 for the two reader stages."""
    pytest.importorskip("nemo_curator", reason=NEEDS)  # first: it sets the API limits the dashboard starts with
    ray = pytest.importorskip("ray", reason=NEEDS)
    marker = f"c4forge-test-{uuid.uuid4().hex}"
    temp = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths must fit in 107 bytes
    os.environ[MARKER] = marker
    try:
        ray.init(address="local", _node_ip_address="127.0.0.1", dashboard_host="127.0.0.1", num_cpus=4,
                 object_store_memory=256 * 2**20, log_to_driver=False, _temp_dir=temp)
        yield ray
    finally:
        ray.shutdown()
        del os.environ[MARKER]
        stop_marked(marker)
        shutil.rmtree(temp, ignore_errors=True)


def stop_marked(marker: str) -> None:
    """Terminate (then kill) every process whose environment carries `marker`: ours alone."""
    marked = []
    for process in psutil.process_iter():
        try:
            if process.pid != os.getpid() and process.environ().get(MARKER) == marker:
                marked.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    for process in marked:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.terminate()
    _, alive = psutil.wait_procs(marked, timeout=10)
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


@pytest.mark.hf
def test_nemo_curator_parquet_reader_gives_every_document_with_its_metadata(corpora, local_ray):
    arrow, parquet, rows = corpora
    namespace = run_block("<!-- nemo-curator -->", arrow, parquet)
    frame = namespace["frame"]
    ours = {r["id"]: r for r in rows["train"]}
    assert len(frame) == len(ours) and frame["id"].is_unique
    for record in frame.to_dict("records"):
        row = ours[record["id"]]
        assert record["text"] == row["text"] and record["url"] == row["url"]
        for column in ("language", "source", "offset", "near_dup_cluster_size"):
            assert record[column] == row[column], column
        assert abs(record["language_score"] - row["language_score"]) < 1e-6
        assert record["timestamp"].to_pydatetime() == row["timestamp"]
    assert set(frame.columns) == set(rows["train"][0])
