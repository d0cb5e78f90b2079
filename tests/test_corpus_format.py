"""The corpus shard format (corpus/output/shards.py): self-describing Arrow-stream and Parquet shards
that Hugging Face datasets, pyarrow, polars and duckdb open as they are; the id, source, offset
and timestamp columns; version 1 corpora still read and replaced safely."""
import datetime
import gzip
import hashlib
import json
import os
import shutil
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import (
    COLUMNS,
    CORPUS_KIND,
    MANIFEST,
    CorpusFormatError,
    config_hash,
    iter_corpus_documents,
    parse_timestamp,
    read_manifest,
    read_shard,
    shard_info,
    shard_paths,
    shard_rows,
    write_corpus,
)
from tests.conftest import ROOT

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
BADWORDS = ROOT / "corpus" / "data" / "demo-badwords"
CONFIG = build_config("c4", badwords=str(BADWORDS)).to_dict()


@pytest.fixture(scope="module")
def sample_docs():
    return run_chain([str(SAMPLE)], build_config("c4", badwords=str(BADWORDS)), Counters())


@pytest.fixture(scope="module")
def corpora(sample_docs, tmp_path_factory):
    """The sample crawl's c4 documents written once as Arrow and once as Parquet, with a
    validation split large enough to have rows (200 per mille)."""
    root = tmp_path_factory.mktemp("formats")
    out = {}
    for shard_format in ("arrow", "parquet"):
        write_corpus(str(root / shard_format), sample_docs, {"config": CONFIG, "counters": {}},
                     docs_per_shard=40, validation_per_mille=200, shard_format=shard_format)
        out[shard_format] = root / shard_format
    return out


def ours(directory, split="train"):
    return list(iter_corpus_documents(str(directory), split))


def test_arrow_and_parquet_hold_the_same_documents(corpora):
    for split in ("train", "validation"):
        arrow, parquet = ours(corpora["arrow"], split), ours(corpora["parquet"], split)
        assert arrow and arrow == parquet
    names = [p.rsplit(".", 1)[1] for p in shard_paths(str(corpora["parquet"]), "train")]
    assert len(names) > 1 and set(names) == {"parquet"}


def test_every_shard_describes_itself(corpora):
    for shard_format, directory in corpora.items():
        manifest = read_manifest(str(directory))
        assert manifest["version"] == 3 and manifest["shard_format"] == shard_format
        assert manifest["config_hash"] == config_hash(CONFIG)
        for path in shard_paths(str(directory), "train", manifest):
            assert shard_info(path) == {"format": "c4forge-corpus", "version": 3,
                                        "shard_format": shard_format,
                                        "config_hash": manifest["config_hash"]}
            assert shard_rows(path) > 0
    total = sum(shard_rows(p) for p in shard_paths(str(corpora["arrow"]), "train"))
    assert total == read_manifest(str(corpora["arrow"]))["splits"]["train"]["documents"]


def test_id_source_offset_and_timestamp_columns(corpora, sample_docs):
    by_url = {d.url: d for d in sample_docs}
    rows = ours(corpora["arrow"]) + ours(corpora["arrow"], "validation")
    assert len(rows) == len(sample_docs)
    raw = SAMPLE.read_bytes()
    for row in rows:
        doc = by_url[row["url"]]
        assert row["id"] == hashlib.md5(doc.normalized_url.encode()).hexdigest()
        assert row["source"] == str(SAMPLE)
        # The offset is the page's gzip member: decompressing from it gives that page's record.
        member = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(raw[row["offset"]:], 1 << 16)
        assert f"WARC-Target-URI: {row['url']}".encode() in member[:4096]
        assert isinstance(row["timestamp"], datetime.datetime)
        assert row["timestamp"] == datetime.datetime.fromisoformat(doc.timestamp.replace("Z", "+00:00"))
    assert len({r["id"] for r in rows}) == len(rows)


def test_timestamps_that_are_not_dates_become_null():
    assert parse_timestamp("2019-07-13T08:00:00Z") == datetime.datetime(
        2019, 7, 13, 8, tzinfo=datetime.timezone.utc)
    assert parse_timestamp("2019-07-13T10:00:00+02:00").hour == 8
    assert parse_timestamp("yesterday") is None and parse_timestamp("") is None


@pytest.mark.hf
def test_hugging_face_datasets_opens_shards_and_directory(corpora):
    """HF datasets (the current-HF environment: it cannot share dill with apache-beam 2.62) opens
    a shard with Dataset.from_file and both corpus directories with load_dataset."""
    datasets = pytest.importorskip("datasets", reason="HF datasets runs in the current-HF environment "
                                   "(.venv-hf; `make test` runs it there)")
    directory = corpora["arrow"]
    first = shard_paths(str(directory), "train")[0]
    table = ipc.open_stream(first).read_all()
    shard = datasets.Dataset.from_file(first)
    assert shard.num_rows == table.num_rows and shard.column_names == COLUMNS
    assert list(shard["text"]) == table.column("text").to_pylist()
    for fmt, folder in (("arrow", directory), ("parquet", corpora["parquet"])):
        loaded = datasets.load_dataset(fmt, data_dir=str(folder), cache_dir=str(directory.parent / f"hf-cache-{fmt}"))
        assert set(loaded) == {"train", "validation"}
        for split in loaded:
            assert sorted(loaded[split]["url"]) == sorted(d["url"] for d in ours(directory, split))


def test_pyarrow_polars_and_duckdb_read_them(corpora):
    """Each tool opens the Parquet corpus as the issue's user typed it: a folder, not a glob of
    names (issue 75): pyarrow.dataset the corpus directory (it skips ``_`` names), polars and
    duckdb the shards' folder ``data/``, which holds nothing else."""
    import pyarrow.dataset as ds

    expected = sorted(d["url"] for d in ours(corpora["arrow"]) + ours(corpora["arrow"], "validation"))
    parquet_dir = str(corpora["parquet"])
    assert sorted(os.listdir(parquet_dir)) == ["_manifest.json", "data"]
    assert all(name.endswith(".parquet") for name in os.listdir(f"{parquet_dir}/data"))
    for folder in (parquet_dir, f"{parquet_dir}/data"):
        assert sorted(ds.dataset(folder, format="parquet").to_table().column("url").to_pylist()) == expected
    stream = shard_paths(str(corpora["arrow"]), "train")[0]
    assert pa.ipc.open_stream(stream).read_all().num_rows == shard_rows(stream)

    pl = pytest.importorskip("polars", reason="polars is in the dev extra")
    assert pl.read_ipc_stream(stream).height == shard_rows(stream)
    frame = pl.scan_parquet(f"{parquet_dir}/data").select("url").collect()
    assert sorted(frame["url"].to_list()) == expected
    assert frame.height == len(expected)

    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the dev extra")
    rows = duckdb.sql(f"SELECT url, timestamp FROM read_parquet('{parquet_dir}/data/*') "
                      "ORDER BY url").fetchall()
    assert [r[0] for r in rows] == expected
    assert all(isinstance(r[1], datetime.datetime) for r in rows)


def test_a_corpus_with_flat_parquet_shards_is_still_read_and_replaced(corpora, sample_docs, tmp_path):
    """Parquet corpora written before the data/ folder list their shards flat: they are read as
    listed, and an --overwrite into one replaces exactly its files (and leaves a stranger's)."""
    flat = tmp_path / "flat"
    shutil.copytree(corpora["parquet"], flat)
    manifest = json.loads((flat / "_manifest.json").read_text())
    for entry in manifest["splits"].values():
        for name in entry["files"]:
            os.replace(flat / name, flat / os.path.basename(name))
        entry["files"] = [os.path.basename(name) for name in entry["files"]]
    (flat / "data").rmdir()
    (flat / "_manifest.json").write_text(json.dumps(manifest))
    assert sorted(d["url"] for d in ours(flat)) == sorted(d["url"] for d in ours(corpora["parquet"]))
    (flat / "notes.txt").write_text("mine")
    docs = sample_docs
    write_corpus(str(flat), docs,
                 {"config": CONFIG, "counters": {}}, shard_format="parquet", overwrite=True)
    assert sorted(os.listdir(flat)) == ["_manifest.json", "data", "notes.txt"]
    assert sorted(d["url"] for s in ("train", "validation") for d in ours(flat, s)) == \
        sorted(d.url for d in sample_docs)
    write_corpus(str(flat), docs,
                 {"config": CONFIG, "counters": {}}, shard_format="arrow", overwrite=True)
    assert "data" not in os.listdir(flat)  # emptied by the swap, so removed
    (flat / "data").mkdir()
    (flat / "data" / "keep.txt").write_text("mine")
    write_corpus(str(flat), docs,
                 {"config": CONFIG, "counters": {}}, shard_format="parquet", overwrite=True)
    write_corpus(str(flat), docs,
                 {"config": CONFIG, "counters": {}}, shard_format="arrow", overwrite=True)
    assert (flat / "data" / "keep.txt").read_text() == "mine"  # a folder holding a stranger's file stays


def write_version_1(directory: Path, docs) -> None:
    """A corpus exactly as format version 1 wrote it: manifest.json, Arrow IPC files, no
    id/source/offset, timestamp strings."""
    schema = pa.schema([("text", pa.string()), ("url", pa.string()), ("timestamp", pa.string()),
                        ("language", pa.string()), ("language_score", pa.float32()),
                        ("near_dup_cluster_size", pa.int32())])
    directory.mkdir(parents=True)
    rows = sorted(docs, key=lambda d: d.url)
    table = pa.Table.from_pydict({
        "text": [d.text for d in rows], "url": [d.url for d in rows],
        "timestamp": [d.timestamp for d in rows], "language": [d.language for d in rows],
        "language_score": [d.language_score for d in rows],
        "near_dup_cluster_size": [d.near_dup_cluster_size for d in rows]}, schema=schema)
    with ipc.new_file(str(directory / "train-00000-of-00001.arrow"), schema) as writer:
        writer.write_table(table)
    (directory / "manifest.json").write_text(json.dumps({
        "format": "c4forge-corpus", "version": 1, "config": {"preset": "c4"}, "counters": {},
        "splits": {"train": {"documents": len(rows), "bytes": 0,
                             "files": ["train-00000-of-00001.arrow"]}}}))


def test_version_1_corpora_are_read_and_replaced_cleanly(sample_docs, tmp_path):
    old = tmp_path / "v1"
    write_version_1(old, sample_docs)
    (old / "notes.txt").write_text("mine")
    rows = ours(old)
    assert len(rows) == len(sample_docs) and rows[0]["id"] is None
    assert isinstance(rows[0]["timestamp"], str)
    assert shard_rows(str(old / "train-00000-of-00001.arrow")) == len(sample_docs)
    with pytest.raises(Exception, match="--overwrite"):
        write_corpus(str(old), sample_docs, {"config": CONFIG, "counters": {}})
    write_corpus(str(old), sample_docs, {"config": CONFIG, "counters": {}}, overwrite=True)
    names = {p.name for p in old.iterdir()}
    assert names == set(CORPUS_KIND.files_of(read_manifest(str(old)))) | {MANIFEST, "notes.txt"}
    assert ours(old)[0]["id"] is not None


def test_version_2_corpora_are_read_with_no_extractor(sample_docs, tmp_path):
    """Version 2 (before the extractor column): read as they are, the column None."""
    write_corpus(str(tmp_path / "v3"), sample_docs, {"config": CONFIG, "counters": {}})
    old = tmp_path / "v2"
    old.mkdir()
    manifest = read_manifest(str(tmp_path / "v3"))
    for name in manifest["splits"]["train"]["files"] + manifest["splits"]["validation"]["files"]:
        table = read_shard(str(tmp_path / "v3" / name)).drop_columns(["extractor"])
        schema = table.schema.with_metadata({b"c4forge": json.dumps(
            {"format": "c4forge-corpus", "version": 2, "shard_format": "arrow"})})
        with ipc.new_stream(str(old / name), schema) as writer:
            writer.write_table(table.replace_schema_metadata(schema.metadata))
    (old / MANIFEST).write_text(json.dumps(dict(manifest, version=2)))
    rows = ours(old)
    assert rows and all(r["extractor"] is None for r in rows)
    assert [r["text"] for r in rows] == [r["text"] for r in ours(tmp_path / "v3")]


def test_a_shard_that_is_not_arrow_or_parquet_is_a_clear_error(corpora, tmp_path):
    bad = tmp_path / "train-00000-of-00001.arrow"
    bad.write_bytes(gzip.compress(b"not a shard"))
    with pytest.raises(CorpusFormatError, match="not a readable corpus shard"):
        shard_rows(str(bad))


@pytest.mark.parametrize("compress", [False, True])
def test_document_bytes_round_trip(compress):
    """The form Documents take in Beam shuffles: every field back exactly, None kept apart from
    empty, long texts compressed, lone surrogates and non-ASCII intact; the byte size known."""
    from c4forge.corpus.document import (
        Document,
        from_bytes,
        packed_normalized_url,
        packed_text_size,
        packed_url,
        to_bytes,
        with_cluster_size,
    )

    docs = [Document(),
            Document(url="http://ü.example/ä?q=1", normalized_url="ü.example/ä", text="Grüße 😀\n" * 200,
                     timestamp="2019-04-24T09:23:58Z", content_length="123", content_type="text/plain",
                     language="de", language_score=0.0, source="s3://b/f.wet.gz", offset=1 << 40,
                     near_dup_cluster_size=7, extractor="trafilatura", quality_score=0.0),
            Document(url="http://y/", quality_score=0.8125, language_score=0.5),
            Document(url="http://x/", text="lone \udc80 surrogate " * 40, language="", language_score=None)]
    for doc in docs:
        data = to_bytes(doc, compress)
        back = from_bytes(data)
        assert back == doc and back.text_size() == len(doc.text.encode("utf-8", "surrogatepass"))
        assert packed_text_size(data) == back.text_size()  # from the header alone
        assert packed_normalized_url(data) == doc.normalized_url  # without unpacking the text
        assert packed_url(data) == doc.url
        for size in (1, 3, (1 << 32) - 1):  # near-dedup's verdict, set in the header
            assert with_cluster_size(data, size) == to_bytes(doc.replace(near_dup_cluster_size=size), compress)
        assert (back.language is None) == (doc.language is None)
        assert (back.quality_score is None) == (doc.quality_score is None)
    long_text = docs[1]
    assert (len(to_bytes(long_text, compress)) < len(long_text.text.encode())) == compress


def test_pages_cross_the_shuffles_at_about_half_their_text_bytes():
    """Regression for the 64x memory of flink-local: packed for a shuffle, the shared crawl's
    real pages, header and URLs included, take at most 55% of their text's UTF-8 bytes (zstd
    level 1: 47%; pyarrow's LZ4, used before: 65%), and every one unpacks to itself."""
    from c4forge.corpus.document import from_bytes, to_bytes
    from c4forge.corpus.read.wet import iter_crawl_documents
    from tests.conftest import shared_path

    pages = [page for path in sorted(shared_path("crawl").glob("*.wet.gz")) for page in iter_crawl_documents(str(path))]
    assert len(pages) > 1000
    packed = [to_bytes(page, compress=True) for page in pages]
    assert all(from_bytes(data) == page for data, page in zip(packed, pages))
    text_bytes = sum(page.text_size() for page in pages)
    assert sum(map(len, packed)) <= 0.55 * text_bytes


def test_pages_packed_on_several_threads_are_the_bytes_of_one_thread():
    """Beam's SDK harness may run bundles on several threads, and a zstd compressor is not
    thread-safe: each thread packs with its own, and the bytes are the same as on one thread."""
    from concurrent.futures import ThreadPoolExecutor

    from c4forge.corpus.document import Document, from_bytes, to_bytes

    docs = [Document(url=f"http://{i}.example/", text=f"page {i}: " + "words of a web page " * (20 + i % 300))
            for i in range(2000)]
    alone = [to_bytes(doc, compress=True) for doc in docs]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda doc: to_bytes(doc, compress=True), docs))
        back = list(pool.map(from_bytes, together))
    assert together == alone and back == docs


def test_corpus_clean_records_its_input_bytes_and_stats_shows_them(tmp_path):
    """`corpus clean -o` records the stored size of its inputs as `corpus build` does
    (build.input_bytes), so `corpus stats` says how much crawl a corpus came from (it said
    "(0.0 MB)" before the manifest held it)."""
    from click.testing import CliRunner

    from c4forge.cli.corpus import cli

    sample = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
    out = tmp_path / "c"
    result = CliRunner().invoke(cli, ["clean", "-i", str(sample), "-o", str(out), "-q",
                                      "--set", f"bad-words.lists={ROOT / 'corpus/data/demo-badwords'}"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["build"]["input_bytes"] == os.path.getsize(sample) > 0
    stats = CliRunner().invoke(cli, ["stats", str(out)])
    assert f"({os.path.getsize(sample) / 1e6:.1f} MB)" in stats.output and "(0.0 MB)" not in stats.output
