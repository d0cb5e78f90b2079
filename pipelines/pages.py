"""The one page handle of the Beam graph (:class:`Pages`): what every corpus-wide step's twin
takes and returns, and the DoFns that turn any handle into Documents.

Pages between two corpus-wide steps are one value: a PCollection in one of four forms (crawl
files not yet read, Documents, PageRefs of pages in a store, or parts waiting to meet at one
join by page bucket), the store that reads their references (pipelines/store.py: carried or
parked, the only place that knows which), and the page steps still to run, fused into
whichever DoFn next touches the pages (where they are read, at the join, or a DoFn of their
own). A twin never looks at another twin: what crosses from one to the next is this value, and
which fusions apply is decided once, by the planning pass in pipelines/c4.py.
"""
from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple, Optional

import apache_beam as beam
from apache_beam.pvalue import PCollection

from c4forge.corpus.chain.step import Step
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup.near_dedup import DEFAULT_CC_ROUNDS
from c4forge.corpus.document import Document, from_bytes, to_bytes
from c4forge.corpus.read.wet import NS_READ, iter_file_documents
from c4forge.corpus.text.urls import url_rank
from c4forge.pipelines.dofns import DEFAULT_BUCKETS, BucketBatchingFn, StepsFn, digest_bucket
from c4forge.pipelines.progress import ProgressReporter
from c4forge.pipelines.store import INLINE, PageRef, PageStore, StoreReader


@dataclasses.dataclass(frozen=True)
class BeamJob:
    """What every step of the graph is given besides its pages. ``progress_dir``: where the
    reading step reports (pipelines/progress.py); ``buckets``: the batched shuffles' buckets
    (dofns.shuffle_buckets); ``launch_dir``: what relative input paths are relative to;
    ``samples_dir``: where DoFns write their rule samples (dofns.merge_sample_parts);
    ``cc_rounds``: near-dedup's Hash-to-Min rounds; ``parking``: a folder where pages may wait
    on disk (pipelines/store.py; None: they are carried)."""

    config: CorpusConfig
    buckets: int = DEFAULT_BUCKETS
    progress_dir: Optional[str] = None
    launch_dir: Optional[str] = None
    samples_dir: Optional[str] = None
    cc_rounds: int = DEFAULT_CC_ROUNDS
    parking: Optional[str] = None


class PageEntry(NamedTuple):
    """A page as it waits at the join: md5(url), its record id (b"" where no URL dedup ran),
    ``ref`` (the packed page, corpus.document.to_bytes; where its store parks pages, its spot
    until the store's ``bring`` reads it back) and its line count."""

    rank: bytes
    record_id: bytes
    ref: bytes
    n_lines: int


# What a step does at the join: given the grouped parts of one page bucket, the pages that
# arrive (PageEntry) -> those that go on.
Joiner = Callable[[Mapping, Iterator, "JoinFn"], Iterator]


class Fused(enum.Enum):
    """The fusions the planning pass (pipelines/c4.py ``fusions``) can choose for a corpus-wide
    step's twin, by name: what each lets the graph skip."""

    PAGE_STEPS_AT_READER = "the page steps after it run where the pages are read (no DoFn of their own)"
    CLAIM_LINES_IN_URL_GROUPS = "its URL groups claim the winners' lines for the line dedup after it"
    LINES_CLAIMED_AT_URL_JOIN = "it takes the line claims the pages carry from URL dedup's join"


@dataclasses.dataclass(frozen=True)
class Fusion:
    """What the planning pass decided for one corpus-wide step's twin, so that no twin decides
    by looking at another: the named fusions it applies (``Fused.X in fusion``) and where the
    pages it hands on wait (``store``: pipelines/store.py)."""

    fused: frozenset[Fused] = frozenset()
    store: PageStore = INLINE

    def __contains__(self, fused: Fused) -> bool:
        return fused in self.fused

    def names(self) -> list[str]:
        """The fusions as the docs list them (``parks pages`` where a store holds them)."""
        return [f.name.lower().replace("_", " ") for f in sorted(self.fused, key=lambda f: f.name)] + \
            (["parks pages"] if self.store is not INLINE else [])


class Form(enum.Enum):
    FILES = "crawl files not yet read"
    DOCUMENTS = "Documents"
    REFS = "PageRefs of pages in a store"
    JOIN = "parts waiting to meet by page bucket"


@dataclasses.dataclass(frozen=True)
class Pages:
    """The pages between two corpus-wide steps (module doc). ``pcoll``: the files, Documents or
    PageRefs; ``store``: what reads the references (PageRefs, join entries); ``parts``: a join's
    parts (``"pages"``: batches of PageEntry by page bucket, and each step's own part) with the
    ``joiners`` to run there, in order; ``pending``: page steps to run where the pages are next
    touched; ``claims``: the pages' line claims, where the planning pass had URL dedup's groups
    make them."""

    form: Form
    pcoll: Optional[PCollection] = None
    store: PageStore = INLINE
    parts: Mapping[str, PCollection] = dataclasses.field(default_factory=dict)
    joiners: tuple[Joiner, ...] = ()
    pending: tuple[Step, ...] = ()
    claims: Optional[PCollection] = None

    @classmethod
    def files(cls, files: PCollection, pending: tuple[Step, ...] = ()) -> Pages:
        return cls(Form.FILES, files, pending=pending)

    @classmethod
    def joined(cls, pages: PCollection, store: PageStore, parts: Mapping[str, PCollection],
               selecting: tuple[Joiner, ...], claims: Optional[PCollection] = None) -> Pages:
        """Pages (``pages``: PageEntry batches by page bucket, references into ``store``) that
        wait at a join for ``parts``; the ``selecting`` joiners drop entries unread, then the
        store brings the pages the others need."""
        return cls(Form.JOIN, store=store, parts={"pages": pages, **parts},
                   joiners=(*selecting, *((bring,) if store.parks else ())), claims=claims)

    def then(self, steps: tuple[Step, ...]) -> Pages:
        """These pages with ``steps`` to run after what is pending."""
        return dataclasses.replace(self, pending=(*self.pending, *steps))

    def meet(self, job: BeamJob, name: str, part: PCollection, joiner: Joiner) -> Pages:
        """These pages meeting ``part`` (keyed by page bucket) at one join, where ``joiner``
        runs: the join they already wait at, or a new one."""
        if self.form is Form.JOIN:
            if self.pending:
                raise ValueError("page steps pending before a join's last part")  # a wiring bug
            return dataclasses.replace(self, parts={**self.parts, name: part},
                                       joiners=(*self.joiners, joiner))
        keyed = self.documents(job, name) | f"key by url rank ({name})" >> beam.ParDo(KeyPagesFn(job.buckets))
        return Pages(Form.JOIN, store=INLINE, parts={"pages": keyed, name: part}, joiners=(joiner,))

    def documents(self, job: BeamJob, label: str) -> PCollection:
        """The pages as Documents, the pending page steps run (``label`` names the step that
        asks, for the graph's step names)."""
        names = ", ".join(step.summary for step in self.pending)
        steps = f", {names}" if names else ""
        if self.form is Form.FILES:
            return self.pcoll | f"read{steps}" >> beam.ParDo(ReadFn(job, self.pending))
        if self.form is Form.JOIN:
            grouped = self.parts | f"group by page bucket ({label})" >> beam.CoGroupByKey()
            return grouped | f"join{steps} ({label})" >> beam.ParDo(
                JoinFn(job, self.joiners, self.pending, self.store))
        pages = self.pcoll
        if self.form is Form.REFS:
            pages = pages | f"unref ({label})" >> beam.ParDo(UnrefFn(self.store))
        if not self.pending:
            return pages
        return pages | f"{names} ({label})" >> beam.ParDo(PageStepsFn(job, self.pending))

    def refs(self, job: BeamJob, label: str) -> tuple[PCollection, PageStore]:
        """The pages as PageRefs and the store that reads them: what the shards are written
        from. Documents are packed where they are made (a PageRef carrying the bytes), so what
        crosses to the shard writers is bytes, never a pickled Document."""
        if self.form is Form.REFS and not self.pending:
            return self.pcoll, self.store
        refs = self.documents(job, label) | f"pack ({label})" >> beam.ParDo(PackRefsFn())
        return refs, INLINE


class PackRefsFn(beam.DoFn):
    """Documents -> their PageRefs, the pages carried in them (the INLINE store)."""

    def process(self, page: Document):
        yield tuple(INLINE.page_ref(page, CARRIED))


CARRIED = INLINE.writer()  # holds nothing: a carried page's reference is its bytes


def bring(grouped: Mapping, arriving: Iterator, fn: JoinFn) -> Iterator:
    """At the join: the entries that arrive with their pages read from the store in place of
    their references (placed after the joiners that drop entries unread, as URL dedup's
    older crawls)."""
    for entry in arriving:
        yield entry._replace(ref=fn.reader.get(entry.ref))


class UnrefFn(beam.DoFn):
    """PageRefs -> their pages as Documents, read from their store."""

    def __init__(self, store: PageStore) -> None:
        self.store = store
        self.reader: Optional[StoreReader] = None

    def setup(self) -> None:
        self.reader = self.store.reader()

    def process(self, ref):
        yield from_bytes(self.reader.pages([PageRef._make(ref)])[0])

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()


class KeyPagesFn(BucketBatchingFn):
    """Documents -> (page bucket, [PageEntry...]) for a join (no record id: no URL dedup made
    them), the pages carried in the entries."""

    def process(self, page: Document):
        rank = url_rank(page.url)
        packed = to_bytes(page, INLINE.compression)
        entry = tuple(PageEntry(rank, b"", packed, page.text.count("\n") + 1))
        yield from self.batcher.add(digest_bucket(rank, self.buckets), entry, len(packed) + 64)


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
                self.reporter.page(page.text_size())
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
        self.step_loop = self.loop(self.steps)

    def process(self, page: Document):
        page = self.run_steps(self.step_loop, page)
        if page is not None:
            yield page


class JoinFn(PageStepsFn):
    """(page bucket, grouped parts) -> the pages that the joiners let through, then the pending
    page steps. The whole group's joins first, then the page steps over the survivors in one
    run, and only then are the survivors handed on: measured faster than alternating per page,
    because fastText's tables stay in cache. A page handed on runs the DoFns fused after this
    one at once (near-dedup's parking and MinHash batches); fastText's predict costs 14-16% more
    CPU when 8 MB are touched between two calls (one process, 3,000 pages, 6 alternating
    rounds), and DirectRunner builds at 4x spent 20.5/26.1/22.5 CPU s in predict yielding page by
    page against 20.6/21.3/19.7 yielding after the group (paired, interleaved)."""

    def __init__(self, job: BeamJob, joiners: tuple[Joiner, ...], steps: tuple[Step, ...],
                 store: PageStore = INLINE) -> None:
        super().__init__(job, steps)
        self.joiners = joiners
        self.store = store
        self.reader: Optional[StoreReader] = None

    def setup(self) -> None:
        super().setup()
        self.reader = self.store.reader()

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
                page = from_bytes(page.ref)
            page = self.run_steps(self.step_loop, page)
            if page is not None:
                kept.append(page)
        yield from kept
