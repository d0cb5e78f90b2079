"""Corpus-wide steps on Beam: the typed protocol every ``pipelines/<twin>.py`` meets, the
registry that finds it, and the ``Stream`` of pages that passes from one to the next.

A twin's ``expand(stream, segment, job)`` takes the pages so far and returns them after its
step and the page steps that follow it (``segment.after``). Pages between steps are not always
a PCollection of Documents: to spare a hop or a shuffle, a stream may still be crawl files not
yet read (page steps then run where the pages are read), or parts waiting to meet at one join
by page bucket (URL dedup's winners and line dedup's owned lines meet the pages in one
CoGroupByKey); ``pending`` page steps run wherever the pages are next touched, fused into that
DoFn. ``pages_of`` turns any stream into Documents; a twin that needs Documents calls it.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple, Optional, Protocol

import apache_beam as beam
from apache_beam.pvalue import PCollection

from c4forge.corpus.chain import Segment, Step
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document, from_bytes, to_bytes
from c4forge.corpus.near_dedup import DEFAULT_CC_ROUNDS
from c4forge.corpus.steps import NS_READ, text_bytes
from c4forge.corpus.wet import iter_file_documents
from c4forge.pipelines.dofns import DEFAULT_BUCKETS, SHUFFLE_COMPRESSION, StepsFn
from c4forge.pipelines.parking import ParkingReader, Ticket
from c4forge.pipelines.progress import ProgressReporter


@dataclasses.dataclass(frozen=True)
class BeamJob:
    """What every step of the graph is given besides its pages. ``progress_dir``: where the
    reading step reports (pipelines/progress.py); ``buckets``: the batched shuffles' buckets
    (dofns.shuffle_buckets); ``launch_dir``: what relative input paths are relative to;
    ``samples_dir``: where DoFns write their rule samples (dofns.merge_sample_parts);
    ``cc_rounds``: near-dedup's Hash-to-Min rounds; ``parking``: where pages wait on disk
    while what crosses the shuffles is their spot or ticket (pipelines/parking.py: URL dedup's
    reader parks the pages it reads, near-dedup those it has hashed; None: the pages cross)."""

    config: CorpusConfig
    buckets: int = DEFAULT_BUCKETS
    progress_dir: Optional[str] = None
    launch_dir: Optional[str] = None
    samples_dir: Optional[str] = None
    cc_rounds: int = DEFAULT_CC_ROUNDS
    parking: Optional[str] = None


class PageEntry(NamedTuple):
    """A page as it waits at the join: md5(url), its record id (b"" where no URL dedup ran),
    the packed page (corpus.document.to_bytes) and its line count; or, where the reader parked
    the page (pipelines/parking.py), b"" and its spot (``bring_parked`` reads it back)."""

    rank: bytes
    record_id: bytes
    packed: bytes
    n_lines: int
    spot: bytes = b""


# What a corpus-wide step does at the join: given the grouped parts of one page bucket, the
# pages that arrive (PageEntry, or Documents once a joiner unpacked them) -> those that go on.
Joiner = Callable[[Mapping, Iterator, "JoinFn"], Iterator]


@dataclasses.dataclass(frozen=True)
class Stream:
    """The pages between two corpus-wide steps (see the module doc): ``files`` not yet read,
    ``pages`` (Documents), ``packed`` (Documents as corpus.document.to_bytes, compressed as
    for a shuffle), ``parked`` (tickets of pages parked in ``BeamJob.parking``:
    pipelines/parking.py), or ``join`` parts keyed by page bucket (``"pages"``: batches of
    PageEntry) with the ``joiners`` to run there, in order. ``claims``: the pages' line claims,
    where URL dedup made them from its winners (pipelines/line_dedup.py uses them)."""

    files: Optional[PCollection] = None
    pages: Optional[PCollection] = None
    packed: Optional[PCollection] = None
    parked: Optional[PCollection] = None
    join: Mapping[str, PCollection] = dataclasses.field(default_factory=dict)
    joiners: tuple[Joiner, ...] = ()
    pending: tuple[Step, ...] = ()
    claims: Optional[PCollection] = None


class BeamTwin(Protocol):
    """``expand(stream, segment, job)``: the stream after ``segment.step`` and ``segment.after``."""

    def __call__(self, stream: Stream, segment: Segment, job: BeamJob) -> Stream: ...


def beam_twin(step: Step) -> BeamTwin:
    """The Beam transform of the corpus-wide ``step``: ``expand`` in pipelines/<twin>.py."""
    return importlib.import_module(f"c4forge.pipelines.{step.twin}").expand


def pages_of(stream: Stream, job: BeamJob, label: str) -> PCollection:
    """The stream's pages as Documents, its pending page steps run (``label`` names the step)."""
    names = ", ".join(step.summary for step in stream.pending)
    if stream.files is not None:
        return stream.files | f"read{', ' + names if names else ''}" >> beam.ParDo(ReadFn(job, stream.pending))
    if stream.join:
        grouped = stream.join | f"group by page bucket ({label})" >> beam.CoGroupByKey()
        return grouped | f"join{', ' + names if names else ''} ({label})" >> beam.ParDo(
            JoinFn(job, stream.joiners, stream.pending))
    if stream.parked is not None:
        pages = stream.parked | f"unpark ({label})" >> beam.ParDo(UnparkFn(job.parking))
        return pages | f"{names} ({label})" >> beam.ParDo(PageStepsFn(job, stream.pending)) if stream.pending else pages
    if stream.packed is not None:
        pages = stream.packed | f"unpack ({label})" >> beam.Map(from_bytes)
        return pages | f"{names} ({label})" >> beam.ParDo(PageStepsFn(job, stream.pending)) if stream.pending else pages
    if stream.pending:
        return stream.pages | f"{names} ({label})" >> beam.ParDo(PageStepsFn(job, stream.pending))
    return stream.pages


def packed_pages_of(stream: Stream, job: BeamJob, label: str) -> PCollection:
    """The stream's pages packed (corpus.document.to_bytes, compressed as for a shuffle), its
    pending page steps run: what the shards are written from. Packed where they are made, so
    what crosses to the shard writers is bytes, never a pickled Document."""
    if stream.packed is not None and not stream.pending:
        return stream.packed
    return pages_of(stream, job, label) | f"pack ({label})" >> beam.Map(to_bytes, SHUFFLE_COMPRESSION)


class UnparkFn(beam.DoFn):
    """Tickets (pipelines/parking.py) -> their pages as Documents, read back from the folder."""

    def __init__(self, parking: str) -> None:
        self.parking = parking
        self.reader: Optional[ParkingReader] = None

    def setup(self) -> None:
        self.reader = ParkingReader(self.parking)

    def process(self, ticket):
        ticket = Ticket._make(ticket)
        yield from_bytes(self.reader.tickets([ticket])[0])

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()


class ReadFn(StepsFn):
    """One crawl file -> its pages through the page steps that follow the reading (``steps``),
    in the same DoFn (a page crosses no Beam hop between them). An unreadable file is counted,
    never fatal. Subclasses decide what becomes of each page (``emit``)."""

    def __init__(self, job: BeamJob, steps: tuple[Step, ...]) -> None:
        super().__init__(job.config, job.samples_dir)
        self.job = job
        self.steps = steps
        self.reporter: Optional[ProgressReporter] = None

    def setup(self) -> None:
        super().setup()
        self.read_loop = self.loop(self.steps)
        if self.job.progress_dir:
            self.reporter = ProgressReporter(self.job.progress_dir)

    def process(self, path: str):
        """``path`` as the user gave it (what documents record as their ``source``, as in
        ``corpus clean``), opened relative to ``launch_dir``: workers start in folders of their
        own."""
        launch = self.job.launch_dir
        where = os.path.join(launch, path) if launch and "://" not in path else path
        for page in iter_file_documents(where, self.inc_for(NS_READ), self.config.read, source=path):
            if self.reporter:
                self.reporter.page(text_bytes(page))
            page = self.run_steps(self.read_loop, page)
            if page is not None:
                yield from self.emit(page)
        if self.reporter:
            self.reporter.file_done()

    def emit(self, page: Document):
        yield page

    def finish_bundle(self):
        super().finish_bundle()
        if self.reporter:
            self.reporter.flush()


class PageStepsFn(StepsFn):
    """Documents -> those that pass a run of page steps."""

    def __init__(self, job: BeamJob, steps: tuple[Step, ...]) -> None:
        super().__init__(job.config, job.samples_dir)
        self.steps = steps

    def setup(self) -> None:
        super().setup()
        self.rules.setup()  # the LID model and bad-word lists, once per worker
        self.step_loop = self.loop(self.steps)

    def process(self, page: Document):
        page = self.run_steps(self.step_loop, page)
        if page is not None:
            yield page


def bring_parked(grouped: Mapping, arriving: Iterator, fn: JoinFn) -> Iterator:
    """At the join: the parked pages that arrive, read back (pipelines/parking.py); a joiner
    placed after those that drop pages unread (URL dedup's older crawls are never read)."""
    for entry in arriving:
        yield entry._replace(packed=fn.reader.fetch(entry.spot), spot=b"") if entry.spot else entry


class JoinFn(PageStepsFn):
    """(page bucket, grouped parts) -> the pages that the joiners let through, then the pending
    page steps. The whole group's joins first, then the page steps over the survivors in one
    run, and only then are the survivors handed on: measured faster than alternating per page,
    because fastText's tables stay in cache. A page handed on runs the DoFns fused after this
    one at once (near-dedup's parking and MinHash batches); fastText's predict costs 14-16% more
    CPU when 8 MB are touched between two calls (one process, 3,000 pages, 6 alternating
    rounds), and DirectRunner builds at 4x spent 20.5/26.1/22.5 CPU s in predict yielding page by
    page against 20.6/21.3/19.7 yielding after the group (paired, interleaved)."""

    def __init__(self, job: BeamJob, joiners: tuple[Joiner, ...], steps: tuple[Step, ...]) -> None:
        super().__init__(job, steps)
        self.joiners = joiners
        self.parking = job.parking
        self.reader: Optional[ParkingReader] = None

    def setup(self) -> None:
        super().setup()
        if self.parking:
            self.reader = ParkingReader(self.parking)

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()

    def process(self, element):
        _, grouped = element
        arriving: Iterator = (PageEntry._make(entry) for batch in grouped["pages"] for entry in batch)
        for joiner in self.joiners:
            arriving = joiner(grouped, arriving, self)
        kept = []
        for page in list(arriving):
            if page is None:
                continue
            if not isinstance(page, Document):
                page = from_bytes(page.packed)
            page = self.run_steps(self.step_loop, page)
            if page is not None:
                kept.append(page)
        yield from kept
