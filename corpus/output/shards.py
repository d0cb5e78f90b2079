"""The corpus shard format: Arrow or Parquet shards plus ``manifest.json``. This module owns it;
every other stage reads corpora through it.

A corpus directory holds::

    train-00000-of-00004.arrow ... train-00003-of-00004.arrow
    validation-00000-of-00001.arrow
    _manifest.json

Shards are Arrow IPC *streams* by default - the format Hugging Face ``datasets`` writes and
memory-maps (``Dataset.from_file``, ``load_dataset("arrow", ...)``), which pyarrow and polars
read too - or Parquet (``--format parquet``: duckdb, Spark, BigQuery). One row per document:

    text                   string     the cleaned page text, lines joined by "\\n"
    id                     string     md5 of the normalised URL, hex (stable across builds)
    url                    string     WARC-Target-URI as crawled
    timestamp              timestamp  WARC-Date (second precision, UTC; null if unparseable)
    language               string     fastText lid.176 label
    language_score         float32    its score
    near_dup_cluster_size  int32      documents in this document's MinHash cluster (1: none)
    source                 string     the crawl file the page was read from
    offset                 int64      byte offset of its gzip member (or record) in that file
    extractor              string     WARC input: the extractor whose text it is (the cascade's
                                      pages come from either of its two); WET input: null
    quality_score          float32    only in corpora built with the quality classifier
                                      (corpus/steps/quality_classifier.py): P(its positive label) of the page

A column that only some builds compute (``OPTIONAL_COLUMNS``) is written only by them, and the
shard metadata names it (``columns``), so every other build's shards are byte for byte what they
were.

Every shard describes itself: its schema metadata ``c4forge`` holds the format name and version,
the shard format and the hash of the config that built it. Rows inside a shard are sorted by
url, so a build is byte-for-byte reproducible. A document's split is md5(normalised url) % 1000
< validation_per_mille -> validation (tfds: 1, i.e. == 0); its shard is doc id % shards.

``_manifest.json`` always names a complete set of shards: outputs are swapped in by
:mod:`c4forge.core.outdir` (during a swap it carries ``location``, the staging folder its shards are
in; read shard paths through :func:`shard_paths`, never by joining names yourself). It records:
format version, shard format, the command's config and its hash, input files, library versions,
per-split documents/bytes/shard files (and documents per extractor where pages were extracted
from HTML), and every pipeline counter. Version 1 corpora (Arrow IPC *files*, no
id/source/offset, timestamp as a string) and version 2 (no extractor) are still read.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, NamedTuple, Optional

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from c4forge.core.errors import C4forgeError
from c4forge.core.io import write_then_rename
from c4forge.core.outdir import OutputError, OutputKind, check_name, manifest_name, resolve, write_directory
from c4forge.core.schemas import problems
from c4forge.corpus.document import SCORE_COLUMN
from c4forge.corpus.output.samples import FILE as SAMPLES_FILE
from c4forge.corpus.output.samples import dumps as dump_samples
from c4forge.corpus.output.samples import read_samples
from c4forge.corpus.text.urls import doc_id, split_of

FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
# Underscore-prefixed, as Hadoop's _SUCCESS: pyarrow.dataset, Spark and HF datasets skip it when
# they read the directory's shards. Version 1 corpora named it manifest.json.
MANIFEST = "_manifest.json"
LEGACY_MANIFEST = "manifest.json"
SPLITS = ("train", "validation")
SHARD_FORMATS = {"arrow": ".arrow", "parquet": ".parquet"}
# Parquet shards live in DIR/data/ (the Hugging Face Hub's layout), so that tools which scan a
# whole folder - polars' scan_parquet(DIR/data), duckdb's read_parquet('DIR/data/*') - meet only
# shards: neither skips a manifest or rule samples beside them. Arrow shards stay beside the
# manifest (Hugging Face datasets reads them by name or data_dir). Corpora written before
# 2026-11-29 hold flat Parquet shards; their manifests name them so, and they are read as listed.
SHARD_FOLDERS = {"arrow": "", "parquet": "data"}
DEFAULT_SHARD_FORMAT = "arrow"
SCHEMA = pa.schema([
    ("text", pa.string()),
    ("id", pa.string()),
    ("url", pa.string()),
    ("timestamp", pa.timestamp("s", tz="UTC")),
    ("language", pa.string()),
    ("language_score", pa.float32()),
    ("near_dup_cluster_size", pa.int32()),
    ("source", pa.string()),
    ("offset", pa.int64()),
    ("extractor", pa.string()),
])
COLUMNS = [field.name for field in SCHEMA]
OPTIONAL_COLUMNS = {SCORE_COLUMN: pa.float32()}
METADATA_KEY = b"c4forge"
_SHARD_RE = re.compile(
    r"^(?P<split>[a-z]+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.(?P<format>arrow|parquet)$")
BATCH_ROWS = 1024
_PARQUET_MAGIC = b"PAR1"
_ARROW_FILE_MAGIC = b"ARROW1"


class CorpusFormatError(C4forgeError, ValueError):
    """A directory or file that is not a complete c4forge corpus."""


DEFAULT_DOCS_PER_SHARD = 50_000


def shard_count(documents: int, docs_per_shard: int = DEFAULT_DOCS_PER_SHARD,
                fixed: Optional[int] = None) -> int:
    """Shards for a split of ``documents`` (at least 1)."""
    return fixed or max(1, -(-documents // docs_per_shard))


class ShardKey(NamedTuple):
    """Which shard file a document goes to: its split, the shard's index and the split's shard
    count (the three parts of a shard's name)."""

    split: str
    shard: int
    shards: int


def shard_key(normalized_url: str, split: str, split_documents: int,
              docs_per_shard: int = DEFAULT_DOCS_PER_SHARD, fixed: Optional[int] = None) -> ShardKey:
    """The one shard assignment (``corpus clean -o`` and ``corpus build`` write the same files):
    a split of ``split_documents`` has ``shard_count`` shards and a document goes to
    doc_id(url) modulo that count."""
    count = shard_count(split_documents, docs_per_shard, fixed)
    return ShardKey(split, doc_id(normalized_url) % count, count)


def check_shard_format(shard_format: str) -> str:
    if shard_format not in SHARD_FORMATS:
        raise CorpusFormatError(f"unknown shard format {shard_format!r} "
                                f"(one of: {', '.join(SHARD_FORMATS)})")
    return shard_format


def shard_name(split: str, index: int, count: int, shard_format: str = DEFAULT_SHARD_FORMAT) -> str:
    """A shard's path inside the corpus directory, as the manifest lists it (SHARD_FOLDERS)."""
    name = f"{split}-{index:05d}-of-{count:05d}{SHARD_FORMATS[check_shard_format(shard_format)]}"
    folder = SHARD_FOLDERS[shard_format]
    return f"{folder}/{name}" if folder else name


def parse_shard_name(name: str) -> Optional[dict]:
    match = _SHARD_RE.match(os.path.basename(name))
    if not match:
        return None
    return {"split": match["split"], "index": int(match["index"]), "count": int(match["count"]),
            "format": match["format"]}


def document_key(normalized_url: str) -> str:
    """The stable ``id`` column: md5 of the normalised URL in hex (the split and the shard are
    drawn from the same digest)."""
    return hashlib.md5(normalized_url.encode("utf-8")).hexdigest()


def parse_timestamp(value: str) -> Optional[datetime.datetime]:
    """WARC-Date (ISO 8601, e.g. ``2019-04-18T12:34:56Z``) as an aware UTC datetime; None when
    it is missing or not a date (the page is kept, the cell is null)."""
    if not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.astimezone(datetime.timezone.utc).replace(microsecond=0)


def document_row(doc) -> dict:
    """A corpus Document as a shard row."""
    return {"text": doc.text, "id": document_key(doc.normalized_url), "url": doc.url,
            "timestamp": parse_timestamp(doc.timestamp), "language": doc.language,
            "language_score": doc.language_score,
            "near_dup_cluster_size": doc.near_dup_cluster_size,
            "source": doc.source, "offset": doc.offset, "extractor": doc.extractor or None,
            SCORE_COLUMN: doc.quality_score}


def counting_extractors(rows: Iterable[dict], counts: dict[str, int]) -> Iterator[dict]:
    """``rows`` passed through while ``counts`` tallies documents per extractor (a shard
    written as a stream is counted as it goes)."""
    for row in rows:
        name = row.get("extractor")
        if name:
            counts[name] = counts.get(name, 0) + 1
        yield row


def extractor_counts(rows: Iterable[dict]) -> dict[str, int]:
    """Documents per extractor of shard rows ({} where none was extracted from HTML)."""
    counts: dict[str, int] = {}
    for _ in counting_extractors(rows, counts):
        pass
    return counts


def shard_stats(documents: int, text_bytes: int, extractors: dict[str, int]) -> dict:
    """What the manifest records of one shard file (``extractors``, by name, only where it has
    any)."""
    stats: dict = {"documents": documents, "bytes": text_bytes}
    if extractors:
        stats["extractors"] = dict(sorted(extractors.items()))
    return stats


def config_hash(config: dict) -> str:
    """A short, order-independent hash of a build's config (16 hex digits of sha256)."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def shard_metadata(config: dict, shard_format: str = DEFAULT_SHARD_FORMAT) -> dict[str, object]:
    """What every shard says about itself (stored in its schema metadata under ``c4forge``)."""
    metadata: dict[str, object] = {
        "format": "c4forge-corpus", "version": FORMAT_VERSION,
        "shard_format": check_shard_format(shard_format), "config_hash": config_hash(config)}
    extra = optional_columns(config)
    if extra:
        metadata["columns"] = extra
    return metadata


def optional_columns(config: dict) -> list[str]:
    """The optional columns a build with ``config`` computes (the score where the quality
    classifier ran)."""
    return [SCORE_COLUMN] if (config.get("quality-classifier") or {}).get("on") else []


def shard_schema(metadata: Optional[dict] = None) -> pa.Schema:
    """The shard schema (with the optional columns ``metadata`` names), with ``metadata`` under
    ``c4forge`` when given."""
    if metadata is None:
        return SCHEMA
    extra = [pa.field(name, OPTIONAL_COLUMNS[name]) for name in metadata.get("columns", ())]
    schema = pa.schema([*SCHEMA, *extra]) if extra else SCHEMA
    return schema.with_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True)})


def to_table(rows: list[dict], metadata: Optional[dict] = None) -> pa.Table:
    """Rows (dicts with the schema's keys) as a table sorted by url."""
    rows = in_url_order(rows)
    schema = shard_schema(metadata)
    return pa.Table.from_pydict({name: [r.get(name) for r in rows] for name in schema.names},
                                schema=schema)


def in_url_order(rows: Iterable[dict]) -> list[dict]:
    """The order of rows in a shard: by url (stable)."""
    return sorted(rows, key=lambda r: r["url"])


def row_batches(rows: Iterable[dict], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Rows as record batches of BATCH_ROWS, built one at a time (a shard is never held whole)."""
    chunk: list[dict] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == BATCH_ROWS:
            yield pa.RecordBatch.from_pydict({n: [r.get(n) for r in chunk] for n in schema.names}, schema=schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pydict({n: [r.get(n) for r in chunk] for n in schema.names}, schema=schema)


def write_batches(sink, schema: pa.Schema, batches: Iterable[pa.RecordBatch],
                  shard_format: str = DEFAULT_SHARD_FORMAT) -> tuple[int, int]:
    """Write a shard to an open binary file object, batch by batch: an Arrow IPC stream (one
    message per batch) or a Parquet file (a row group per 8 batches, zstd). Returns (rows, UTF-8
    bytes of text)."""
    rows = text = 0

    def counted(batch: pa.RecordBatch) -> pa.RecordBatch:
        nonlocal rows, text
        rows += batch.num_rows
        text += sum(len(t.encode("utf-8")) for t in batch.column("text").to_pylist())
        return batch

    if check_shard_format(shard_format) == "parquet":
        with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
            group: list[pa.RecordBatch] = []
            for batch in batches:
                group.append(counted(batch))
                if len(group) == 8:
                    writer.write_table(pa.Table.from_batches(group, schema), row_group_size=BATCH_ROWS * 8)
                    group = []
            if group or not rows:
                writer.write_table(pa.Table.from_batches(group, schema), row_group_size=BATCH_ROWS * 8)
        return rows, text
    with ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(counted(batch))
    return rows, text


def write_table(sink, table: pa.Table, shard_format: str = DEFAULT_SHARD_FORMAT) -> None:
    """Write a table as a shard (:func:`write_batches`, in batches of BATCH_ROWS)."""
    write_batches(sink, table.schema, table.to_batches(max_chunksize=BATCH_ROWS), shard_format)


def table_text_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of a shard's text (what manifests count as a split's ``bytes``)."""
    return sum(len(t.encode("utf-8")) for t in table.column("text").to_pylist())


def write_shard(path: str, rows: Iterable[dict],
                create: Optional[Callable[[str], BinaryIO]] = None,
                rename: Optional[Callable[[str, str], None]] = None,
                metadata: Optional[dict] = None) -> int:
    """Write rows, already in url order (:func:`in_url_order`), as one shard atomically (temp
    name, then rename), streaming them in batches; returns text bytes written. The shard format
    follows the name's extension (see :func:`shard_name`).

    ``create``/``rename`` default to the local filesystem; the Beam pipeline passes its
    FileSystems functions so gs:// and s3:// outputs work the same way.
    """
    info = parse_shard_name(path)
    shard_format = info["format"] if info else DEFAULT_SHARD_FORMAT
    schema = shard_schema(metadata)
    if create is None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def write(handle) -> int:
        return write_batches(handle, schema, row_batches(rows, schema), shard_format)[1]

    text = write_then_rename(path, write, create, rename)
    return text


def _kind(source) -> str:
    """"parquet", "arrow-file" (version 1) or "arrow-stream", from a source's magic bytes."""
    head = source.read(6)
    source.seek(0)
    if head[:4] == _PARQUET_MAGIC:
        return "parquet"
    return "arrow-file" if head == _ARROW_FILE_MAGIC else "arrow-stream"


def _read_source(source, columns: Optional[list[str]]) -> pa.Table:
    """A table from a shard source of any kind."""
    kind = _kind(source)
    if kind == "parquet":
        return pq.read_table(source, columns=columns)
    opened = ipc.open_file(source) if kind == "arrow-file" else ipc.open_stream(source)
    table = opened.read_all()
    return table.select(columns) if columns else table


def read_shard(path: str, columns: Optional[Iterable[str]] = None) -> pa.Table:
    """One shard as a table (memory-mapped for local paths), any shard format."""
    wanted = list(columns) if columns else None
    try:
        if "://" in path:
            import smart_open  # lazy: smart-open (and the cloud SDKs it probes), only for a gs:// or s3:// shard

            with smart_open.open(path, "rb") as handle:
                return _read_source(pa.BufferReader(handle.read()), wanted)
        with pa.memory_map(path) as source:
            return _read_source(source, wanted)
    except (pa.ArrowInvalid, OSError, KeyError) as exc:
        raise CorpusFormatError(f"{path} is not a readable corpus shard: {exc}") from exc


def _inspect_local(path: str, parquet: Callable, arrow_file: Callable, arrow_stream: Callable):
    """Apply the function for the shard's kind to the memory-mapped local shard."""
    try:
        with pa.memory_map(path) as source:
            kind = _kind(source)
            if kind == "parquet":
                return parquet(source)
            if kind == "arrow-file":
                return arrow_file(ipc.open_file(source))
            return arrow_stream(ipc.open_stream(source))
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorpusFormatError(f"{path} is not a readable corpus shard: {exc}") from exc


def shard_rows(path: str) -> int:
    """Documents in one shard (Parquet: from its footer; Arrow: batch headers, memory-mapped)."""
    return _inspect_local(
        path, lambda source: pq.ParquetFile(source).metadata.num_rows,
        lambda reader: sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches)),
        lambda reader: sum(batch.num_rows for batch in reader))


def shard_info(path: str) -> dict:
    """The ``c4forge`` schema metadata of a shard ({} for version 1 shards, which had none)."""
    schema = _inspect_local(path, pq.read_schema, lambda reader: reader.schema,
                            lambda reader: reader.schema)
    raw = (schema.metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw else {}


def manifest_path(directory: str) -> str:
    """The corpus manifest's path (``_manifest.json``; ``manifest.json`` in version 1 corpora)."""
    return os.path.join(directory, manifest_name(directory, CORPUS_KIND) or MANIFEST)


def read_manifest(directory: str) -> dict:
    path = manifest_path(directory)
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except FileNotFoundError as exc:
        raise CorpusFormatError(
            f"{directory} has no {MANIFEST}: not a corpus, or its build did not finish") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorpusFormatError(f"{path} is not valid JSON: {exc}") from exc
    except OSError as exc:
        raise CorpusFormatError(f"{directory} is not a corpus directory: {exc.strerror or exc}") from exc
    if not isinstance(manifest, dict):
        raise CorpusFormatError(f"{path}: not a c4forge corpus manifest")
    if manifest.get("format") != "c4forge-corpus" or manifest.get("version") not in READABLE_VERSIONS:
        raise CorpusFormatError(f"{path}: not a c4forge corpus manifest (versions "
                                f"{', '.join(map(str, READABLE_VERSIONS))} are read)")
    found = problems("corpus-manifest", manifest)
    if found:
        raise CorpusFormatError(f"{path} does not follow the corpus manifest schema: {found[0]}")
    return manifest


def manifest_files(manifest: dict) -> list[str]:
    """Every file a corpus manifest lists: the shards of all splits, and the rule samples."""
    splits = manifest.get("splits") or {}
    if not isinstance(splits, dict):
        raise CorpusFormatError("manifest 'splits' is not a mapping")
    shards = [name for entry in splits.values() for name in (entry or {}).get("files", [])]
    samples = manifest.get("rule_samples")
    return shards + ([samples["file"]] if isinstance(samples, dict) and samples.get("file") else [])


def samples_entry(document: dict) -> dict:
    """What the manifest records of the rule samples written beside the shards."""
    return {"file": SAMPLES_FILE, "version": document["version"], "rules": len(document["rules"]),
            "samples": sum(len(rule["samples"]) for rule in document["rules"])}


def read_rule_samples(directory: str, manifest: Optional[dict] = None) -> Optional[dict]:
    """The corpus's rule samples (corpus/output/samples.py), None when it has none."""
    manifest = manifest or read_manifest(directory)
    entry = manifest.get("rule_samples")
    if not isinstance(entry, dict) or not entry.get("file"):
        return None
    path = resolve(directory, manifest, entry["file"])
    try:
        with open(path, encoding="utf-8") as handle:
            return read_samples(handle.read())
    except (OSError, ValueError) as exc:
        raise CorpusFormatError(f"{path}: {exc}") from None


CORPUS_KIND = OutputKind("corpus", MANIFEST, "c4forge-corpus", manifest_files,
                         legacy_manifests=(LEGACY_MANIFEST,))


def shard_paths(directory: str, split: str, manifest: Optional[dict] = None) -> list[str]:
    """Paths of a split's shards; every name is checked (a manifest cannot point outside)."""
    manifest = manifest or read_manifest(directory)
    try:
        check_name(split, "split name")
        files = manifest["splits"].get(split, {}).get("files", [])
        return [resolve(directory, manifest, name, "shard name") for name in files]
    except OutputError as exc:
        raise CorpusFormatError(f"{directory}: {exc}") from exc


def iter_corpus_documents(directory: str, split: str = "train",
                   columns: Optional[Iterable[str]] = None) -> Iterator[dict]:
    """Documents of one split, shard by shard, as dicts (columns a version 1 shard lacks are
    None; its timestamp stays a string; by default, the optional columns a shard has too)."""
    for path in shard_paths(directory, split):
        table = read_shard(path)
        wanted = list(columns) if columns else COLUMNS + [c for c in OPTIONAL_COLUMNS
                                                          if c in table.column_names]
        present = [c for c in wanted if c in table.column_names]
        missing = [c for c in wanted if c not in table.column_names]
        for batch in table.select(present).to_batches(max_chunksize=BATCH_ROWS):
            for row in batch.to_pylist():
                if missing:
                    row.update(dict.fromkeys(missing))
                yield row


def split_summary(files: dict[str, dict]) -> dict[str, dict]:
    """{split: {documents, bytes, files}} from {file name: {documents, bytes}}."""
    splits: dict[str, dict] = {s: {"documents": 0, "bytes": 0, "files": []} for s in SPLITS}
    for name in sorted(files):
        info = parse_shard_name(name)
        if info is None:  # not a shard (a sidecar or a stray name)
            continue
        entry = splits.setdefault(info["split"], {"documents": 0, "bytes": 0, "files": []})
        entry["documents"] += files[name]["documents"]
        entry["bytes"] += files[name]["bytes"]
        entry["files"].append(name)
        for extractor, n in files[name].get("extractors", {}).items():
            counts = entry.setdefault("extractors", {})
            counts[extractor] = counts.get(extractor, 0) + n
    return splits


def write_corpus(directory: str, documents: Iterable, manifest: dict,
                 docs_per_shard: int = DEFAULT_DOCS_PER_SHARD, validation_per_mille: int = 1,
                 overwrite: bool = False, hook=None,
                 shard_format: str = DEFAULT_SHARD_FORMAT, samples: Optional[dict] = None) -> dict:
    """Write Documents as a corpus directory in one process - the same files, split and shard
    assignment as the Beam writer - through the output-directory rule and swap of
    :mod:`c4forge.core.outdir` (refuse, or with ``overwrite`` replace only this corpus's files).
    ``samples``: the rule samples' document (corpus/output/samples.py), written beside the shards."""
    check_shard_format(shard_format)
    metadata = shard_metadata(manifest.get("config") or {}, shard_format)
    by_split: dict[str, list] = {}
    for doc in documents:
        by_split.setdefault(split_of(doc.normalized_url, validation_per_mille), []).append(doc)

    def fill(staging: str) -> dict:
        files: dict[str, dict] = {}
        for split, docs in by_split.items():
            groups: dict[ShardKey, list] = {}
            for doc in docs:
                groups.setdefault(shard_key(doc.normalized_url, split, len(docs), docs_per_shard),
                                  []).append(doc)
            for (_, index, count), group in groups.items():
                name = shard_name(split, index, count, shard_format)
                rows = in_url_order(document_row(d) for d in group)
                files[name] = shard_stats(len(rows), write_shard(os.path.join(staging, name), rows,
                                                                 metadata=metadata),
                                          extractor_counts(rows))
        extra = {}
        if samples is not None:
            with open(os.path.join(staging, SAMPLES_FILE), "w", encoding="utf-8") as handle:
                handle.write(dump_samples(samples))
            extra["rule_samples"] = samples_entry(samples)
        return full_manifest(dict(manifest, shard_format=shard_format,
                                  splits=split_summary(files), **extra))

    return write_directory(directory, CORPUS_KIND, overwrite, fill, hook)


def export_corpus(source: str, target: str, shard_format: str, overwrite: bool = False,
                  hook: Optional[Callable[[str], None]] = None) -> dict:
    """The corpus in ``source`` rewritten in another shard format (Arrow IPC stream <-> Parquet)
    into ``target``: the same documents in the same shards (names change their extension), the
    same manifest apart from the format and ``exported_from``; nothing is re-run."""
    check_shard_format(shard_format)
    manifest = read_manifest(source)
    if os.path.realpath(source) == os.path.realpath(target):
        raise CorpusFormatError(f"{target} is the corpus being exported; write to another directory")
    metadata = shard_metadata(manifest.get("config") or {}, shard_format)

    def fill(staging: str) -> dict:
        files: dict[str, dict] = {}
        for split in manifest["splits"]:
            for path in shard_paths(source, split, manifest):
                info = parse_shard_name(os.path.basename(path))
                if info is None:
                    raise CorpusFormatError(f"{path}: not a shard name")
                name = shard_name(info["split"], info["index"], info["count"], shard_format)
                table = read_shard(path).replace_schema_metadata(
                    {METADATA_KEY: json.dumps(metadata, sort_keys=True)})
                os.makedirs(os.path.dirname(os.path.join(staging, name)), exist_ok=True)
                with open(os.path.join(staging, name), "wb") as handle:
                    write_table(handle, table, shard_format)
                extractors = (extractor_counts(table.select(["extractor"]).to_pylist())
                              if "extractor" in table.column_names else {})
                files[name] = shard_stats(table.num_rows, table_text_bytes(table), extractors)
        samples = read_rule_samples(source, manifest)
        if samples is not None:
            with open(os.path.join(staging, SAMPLES_FILE), "w", encoding="utf-8") as handle:
                handle.write(dump_samples(samples))
        kept = {k: v for k, v in manifest.items() if k not in ("splits", "shard_format", "location",
                                                                  "superseded")}
        return full_manifest(dict(kept, shard_format=shard_format, splits=split_summary(files),
                                  exported_from={"path": os.path.abspath(source),
                                                 "shard_format": manifest.get("shard_format")}))

    return write_directory(target, CORPUS_KIND, overwrite, fill, hook)


def full_manifest(manifest: dict) -> dict:
    """The manifest with the format's identification (and the config's hash) first."""
    head = {"format": "c4forge-corpus", "version": FORMAT_VERSION,
            "shard_format": manifest.get("shard_format", DEFAULT_SHARD_FORMAT)}
    if "config" in manifest:
        head["config_hash"] = config_hash(manifest["config"])
    return {**head, **{k: v for k, v in manifest.items() if k not in head}}
