"""The corpus shard format: Arrow IPC files plus ``manifest.json``. This module owns it; every
other stage reads corpora through it.

A corpus directory holds::

    train-00000-of-00004.arrow ... train-00003-of-00004.arrow
    validation-00000-of-00001.arrow
    manifest.json

Each shard is an Arrow IPC *file* (random access, memory-mappable) with one row per document:

    text                   string   the cleaned page text, lines joined by "\\n"
    url                    string   WARC-Target-URI as crawled
    timestamp              string   WARC-Date (ISO 8601)
    language               string   fastText lid.176 label
    language_score         float32  its score
    near_dup_cluster_size  int32    documents in this document's MinHash cluster (1: none)

Rows inside a shard are sorted by url, so a build is byte-for-byte reproducible. A document's
split is md5(normalised url) % 1000 < validation_per_mille -> validation (tfds: 1, i.e. == 0);
its shard is doc id % shards.

``manifest.json`` always names a complete set of shards: outputs are swapped in by
:mod:`corpus.outdir` (during a swap it carries ``location``, the staging folder its shards are
in; read shard paths through :func:`shard_paths`, never by joining names yourself). It records: format version, the command's config, input files, library versions,
per-split documents/bytes/shard files, and every pipeline counter.
"""
from __future__ import annotations

import json
import os
import re
import uuid
from typing import Callable, Dict, Iterable, Iterator, List, Optional

import pyarrow as pa
import pyarrow.ipc as ipc

from corpus.outdir import OutputError, OutputKind, check_name, resolve, write_directory

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SPLITS = ("train", "validation")
SCHEMA = pa.schema([
    ("text", pa.string()),
    ("url", pa.string()),
    ("timestamp", pa.string()),
    ("language", pa.string()),
    ("language_score", pa.float32()),
    ("near_dup_cluster_size", pa.int32()),
])
COLUMNS = [field.name for field in SCHEMA]
_SHARD_RE = re.compile(r"^(?P<split>[a-z]+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.arrow$")
BATCH_ROWS = 1024


class CorpusFormatError(ValueError):
    """A directory or file that is not a complete c4forge corpus."""


DEFAULT_DOCS_PER_SHARD = 50_000


def shard_count(documents: int, docs_per_shard: int = DEFAULT_DOCS_PER_SHARD,
                fixed: Optional[int] = None) -> int:
    """Shards for a split of ``documents`` (at least 1)."""
    return fixed or max(1, -(-documents // docs_per_shard))


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.arrow"


def parse_shard_name(name: str) -> Optional[dict]:
    match = _SHARD_RE.match(os.path.basename(name))
    if not match:
        return None
    return {"split": match["split"], "index": int(match["index"]), "count": int(match["count"])}


def document_row(doc) -> dict:
    """A corpus Document as a shard row."""
    return {"text": doc.text, "url": doc.url, "timestamp": doc.timestamp, "language": doc.language,
            "language_score": doc.language_score, "near_dup_cluster_size": doc.near_dup_cluster_size}


def to_table(rows: List[dict]) -> pa.Table:
    """Rows (dicts with the schema's keys) as a table sorted by url."""
    rows = sorted(rows, key=lambda r: r["url"])
    return pa.Table.from_pydict({name: [r.get(name) for r in rows] for name in COLUMNS},
                                schema=SCHEMA)


def write_table(sink, table: pa.Table) -> None:
    """Write an Arrow IPC file to an open binary file object."""
    with ipc.new_file(sink, SCHEMA) as writer:
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            writer.write_batch(batch)


def write_shard(path: str, rows: List[dict],
                create: Optional[Callable[[str], object]] = None,
                rename: Optional[Callable[[str, str], None]] = None) -> int:
    """Write rows as one shard atomically (temp name, then rename); returns text bytes written.

    ``create``/``rename`` default to the local filesystem; the Beam pipeline passes its
    FileSystems functions so gs:// and s3:// outputs work the same way.
    """
    table = to_table(rows)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    if create is None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(tmp, "wb") as handle:
            write_table(handle, table)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    else:
        handle = create(tmp)
        try:
            write_table(handle, table)
        finally:
            handle.close()
        rename(tmp, path)
    return sum(len(t.encode("utf-8")) for t in table.column("text").to_pylist())


def read_shard(path: str) -> pa.Table:
    """One shard as a table (memory-mapped for local paths)."""
    try:
        if "://" in path:
            import smart_open

            with smart_open.open(path, "rb") as handle:
                return ipc.open_file(pa.BufferReader(handle.read())).read_all()
        with pa.memory_map(path) as source:
            return ipc.open_file(source).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorpusFormatError(f"{path} is not a readable corpus shard: {exc}") from exc


def read_manifest(directory: str) -> dict:
    path = os.path.join(directory, MANIFEST)
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
    if manifest.get("format") != "c4forge-corpus" or manifest.get("version") != FORMAT_VERSION:
        raise CorpusFormatError(f"{path}: not a c4forge corpus manifest (version {FORMAT_VERSION})")
    return manifest


def manifest_files(manifest: dict) -> List[str]:
    """Every shard file a corpus manifest lists (all splits)."""
    splits = manifest.get("splits") or {}
    if not isinstance(splits, dict):
        raise CorpusFormatError("manifest 'splits' is not a mapping")
    return [name for entry in splits.values() for name in (entry or {}).get("files", [])]


CORPUS_KIND = OutputKind("corpus", MANIFEST, "c4forge-corpus", manifest_files)


def shard_paths(directory: str, split: str, manifest: Optional[dict] = None) -> List[str]:
    """Paths of a split's shards; every name is checked (a manifest cannot point outside)."""
    manifest = manifest or read_manifest(directory)
    try:
        check_name(split, "split name")
        files = manifest["splits"].get(split, {}).get("files", [])
        return [resolve(directory, manifest, name, "shard name") for name in files]
    except OutputError as exc:
        raise CorpusFormatError(f"{directory}: {exc}") from exc


def iter_documents(directory: str, split: str = "train",
                   columns: Optional[Iterable[str]] = None) -> Iterator[dict]:
    """Documents of one split, shard by shard, as dicts."""
    wanted = list(columns) if columns else COLUMNS
    for path in shard_paths(directory, split):
        table = read_shard(path)
        for batch in table.select(wanted).to_batches(max_chunksize=BATCH_ROWS):
            yield from batch.to_pylist()


def split_summary(files: Dict[str, dict]) -> Dict[str, dict]:
    """{split: {documents, bytes, files}} from {file name: {documents, bytes}}."""
    splits: Dict[str, dict] = {s: {"documents": 0, "bytes": 0, "files": []} for s in SPLITS}
    for name in sorted(files):
        info = parse_shard_name(name)
        entry = splits.setdefault(info["split"], {"documents": 0, "bytes": 0, "files": []})
        entry["documents"] += files[name]["documents"]
        entry["bytes"] += files[name]["bytes"]
        entry["files"].append(name)
    return splits


def write_corpus(directory: str, documents: Iterable, manifest: dict,
                 docs_per_shard: int = DEFAULT_DOCS_PER_SHARD, validation_per_mille: int = 1,
                 overwrite: bool = False, hook=None) -> dict:
    """Write Documents as a corpus directory in one process - the same files, split and shard
    assignment as the Beam writer - through the output-directory rule and swap of
    :mod:`corpus.outdir` (refuse, or with ``overwrite`` replace only this corpus's files)."""
    from corpus.near_dedup import doc_id
    from corpus.urls import split_of

    by_split: Dict[str, list] = {}
    for doc in documents:
        by_split.setdefault(split_of(doc.normalized_url, validation_per_mille), []).append(doc)

    def fill(staging: str) -> dict:
        files: Dict[str, dict] = {}
        for split, docs in by_split.items():
            count = shard_count(len(docs), docs_per_shard)
            groups: Dict[int, list] = {}
            for doc in docs:
                groups.setdefault(doc_id(doc.normalized_url) % count, []).append(doc)
            for index, group in groups.items():
                name = shard_name(split, index, count)
                rows = [document_row(d) for d in group]
                files[name] = {"documents": len(rows),
                               "bytes": write_shard(os.path.join(staging, name), rows)}
        return full_manifest(dict(manifest, splits=split_summary(files)))

    return write_directory(directory, CORPUS_KIND, overwrite, fill, hook)


def full_manifest(manifest: dict) -> dict:
    """The manifest with the format's identification first."""
    return {"format": "c4forge-corpus", "version": FORMAT_VERSION,
            **{k: v for k, v in manifest.items() if k not in ("format", "version")}}
