"""The corpus written on Beam: pages split (train/validation), assigned to shards and each
shard written by one worker into the staging directory (corpus/output/shards.py's format). The pages
come as PageRefs (pipelines/store.py), read from their store by the worker that writes their
shard once the shard's url order is known."""
from __future__ import annotations

import json
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from c4forge.corpus.document import from_bytes
from c4forge.corpus.output.shards import (
    counting_extractors,
    document_row,
    shard_key,
    shard_name,
    shard_stats,
    write_shard,
)
from c4forge.corpus.text.urls import split_of
from c4forge.pipelines.dofns import Counting
from c4forge.pipelines.progress import ProgressReporter
from c4forge.pipelines.store import PageRef, PageStore, StoreReader

NS_OUTPUT = "output"


class WriteShardFn(Counting, beam.DoFn):
    """((split, index, count), pages) -> one shard file in the staging directory (and the
    documents written, to the build's progress: pipelines/progress.py). The pages are PageRefs,
    read from ``store`` (in file order where it parks them) once the shard's url order is known."""

    def __init__(self, staging: str, shard_format: str, metadata: dict, store: PageStore,
                 progress_dir: Optional[str] = None) -> None:
        self.staging = staging
        self.shard_format = shard_format
        self.metadata = metadata
        self.store = store
        self.progress_dir = progress_dir
        self.reporter: Optional[ProgressReporter] = None
        self.reader: Optional[StoreReader] = None

    def setup(self) -> None:
        if self.progress_dir:
            self.reporter = ProgressReporter(self.progress_dir)
        self.reader = self.store.reader()

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()

    def process(self, element):
        (split, index, count), refs = element
        # (url, PageRef) pairs: sorted by url, then read and unpacked one at a time as the shard
        # is written, so a worker holds the shard's packed pages, not its rows
        refs = [PageRef._make(ref) for _, ref in sorted(refs, key=lambda pair: pair[0])]
        pages = [(ref.url, data) for ref, data in zip(refs, self.reader.pages(refs))]
        extractors: dict[str, int] = {}
        rows = counting_extractors((document_row(from_bytes(packed)) for _, packed in pages), extractors)
        name = shard_name(split, index, count, self.shard_format)
        path = FileSystems.join(self.staging, name)
        text_bytes = write_shard(path, rows, create=FileSystems.create,
                                 rename=lambda a, b: FileSystems.rename([a], [b]),
                                 metadata=self.metadata)
        stats = shard_stats(len(pages), text_bytes, extractors)
        handle = FileSystems.create(path + ".json")
        handle.write(json.dumps(stats).encode("utf-8"))
        handle.close()
        inc = self.inc_for(NS_OUTPUT)
        inc(f"{split}:documents", len(pages))
        inc(f"{split}:bytes", text_bytes)
        if self.reporter:
            self.reporter.documents_written(len(pages))
        yield name, stats


def assign_shard(ref: tuple, counts: dict[str, int], docs_per_shard: int,
                 fixed: Optional[int], per_mille: int):
    """PageRef -> (shard key, (url, PageRef)): a shard's pages sort by url before they are read."""
    page = PageRef._make(ref)
    split = split_of(page.normalized_url, per_mille)
    return tuple(shard_key(page.normalized_url, split, counts.get(split, 0), docs_per_shard, fixed)), (page.url, ref)


def page_split(ref: tuple, per_mille: int):
    """PageRef -> (its split, 1): what the count per split sums."""
    return split_of(PageRef._make(ref).normalized_url, per_mille), 1
