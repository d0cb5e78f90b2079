"""The corpus written on Beam: pages split (train/validation), assigned to shards and each
shard written by one worker into the staging directory (corpus/shards.py's format). The pages
come packed (corpus.document.to_bytes), or as tickets of pages parked on disk
(pipelines/parking.py), read back by the worker that writes their shard."""
from __future__ import annotations

import json
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from c4forge.corpus.document import from_bytes, packed_normalized_url, packed_url
from c4forge.corpus.shards import (
    DEFAULT_DOCS_PER_SHARD,
    DEFAULT_SHARD_FORMAT,
    counting_extractors,
    document_row,
    shard_key,
    shard_name,
    shard_stats,
    write_shard,
)
from c4forge.corpus.urls import split_of
from c4forge.pipelines.dofns import Counting
from c4forge.pipelines.parking import ParkingReader, Ticket
from c4forge.pipelines.progress import ProgressReporter

NS_OUTPUT = "output"


class WriteShardFn(Counting, beam.DoFn):
    """((split, index, count), pages) -> one shard file in the staging directory (and the
    documents written, to the build's progress: pipelines/progress.py). With ``parking`` the
    pages are tickets, read back from there (in file order) once the shard's url order is known."""

    def __init__(self, staging: str, shard_format: str, metadata: dict,
                 progress_dir: Optional[str] = None, parking: Optional[str] = None) -> None:
        self.staging = staging
        self.shard_format = shard_format
        self.metadata = metadata
        self.progress_dir = progress_dir
        self.parking = parking
        self.reporter: Optional[ProgressReporter] = None
        self.reader: Optional[ParkingReader] = None

    def setup(self) -> None:
        if self.progress_dir:
            self.reporter = ProgressReporter(self.progress_dir)
        if self.parking:
            self.reader = ParkingReader(self.parking)

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()

    def process(self, element):
        (split, index, count), pages = element
        # (url, packed page) pairs: sorted by url without unpacking, then unpacked one batch at
        # a time as the shard is written, so a worker holds the shard's packed pages, not its rows
        pages = sorted(pages, key=lambda pair: pair[0])
        if self.reader is not None:
            tickets = [Ticket._make(ticket) for _, ticket in pages]
            pages = [(ticket.url, data) for ticket, data in zip(tickets, self.reader.tickets(tickets))]
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


def _assign_shard(page: bytes, counts: dict[str, int], docs_per_shard: int,
                  fixed: Optional[int], per_mille: int):
    """Packed page -> (shard key, (url, packed page)): a shard's pages sort by url while packed."""
    url = packed_normalized_url(page)
    split = split_of(url, per_mille)
    return tuple(shard_key(url, split, counts.get(split, 0), docs_per_shard, fixed)), (packed_url(page), page)


def _assign_ticket(ticket: tuple, counts: dict[str, int], docs_per_shard: int,
                   fixed: Optional[int], per_mille: int):
    """Ticket (pipelines/parking.py) -> (shard key, (url, ticket))."""
    url = Ticket._make(ticket).normalized_url
    split = split_of(url, per_mille)
    return tuple(shard_key(url, split, counts.get(split, 0), docs_per_shard, fixed)), (ticket[1], ticket)


def _ticket_split(ticket: tuple, per_mille: int):
    return split_of(Ticket._make(ticket).normalized_url, per_mille), 1


def _packed_split(page: bytes, per_mille: int):
    return split_of(packed_normalized_url(page), per_mille), 1


def write_shards(pages, staging: str, docs_per_shard: int = DEFAULT_DOCS_PER_SHARD,
                 num_shards: Optional[int] = None, per_mille: int = 1,
                 shard_format: str = DEFAULT_SHARD_FORMAT, metadata: Optional[dict] = None,
                 progress_dir: Optional[str] = None, parking: Optional[str] = None):
    """Split and shard the pages (packed: corpus.document.to_bytes; with ``parking``, tickets
    of pages parked there); returns a PCollection of (file name, stats)."""
    counts = (pages
              | "split of page" >> beam.Map(_ticket_split if parking else _packed_split, per_mille)
              | "count per split" >> beam.CombinePerKey(sum))
    return (pages
            | "assign shard" >> beam.Map(_assign_ticket if parking else _assign_shard,
                                         counts=beam.pvalue.AsDict(counts),
                                         docs_per_shard=docs_per_shard, fixed=num_shards,
                                         per_mille=per_mille)
            | "group shards" >> beam.GroupByKey()
            | "write shards" >> beam.ParDo(WriteShardFn(staging, shard_format, metadata or {}, progress_dir,
                                                        parking)))
