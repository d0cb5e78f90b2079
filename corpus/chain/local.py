"""The whole chain in one process (``corpus clean``): the reference for the Beam pipeline and
the fastest way to see what the rules do to a few files. A short loop over the plan
(corpus/chain/chains.py): runs of page steps through the step loop (corpus/chain/loop.py), each
corpus-wide step through its one-process twin (corpus/chain/wide.py).

Pages are held in memory by the corpus-wide steps (each needs every page), so this is for
inputs of up to a few GB; ``corpus build`` runs the same steps on Beam at any size.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Optional

from c4forge.core import progress
from c4forge.core.counters import Counters
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.chain.chains import plan
from c4forge.corpus.chain.loop import StepLoop
from c4forge.corpus.chain.step import Step
from c4forge.corpus.chain.wide import WideJob
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Reservoir
from c4forge.corpus.read.wet import NS_READ, iter_file_documents


def read_pages(paths: Iterable[str], config: CorpusConfig, counters: Counters) -> Iterator[Document]:
    """Every page of every file, with a progress bar (files, pages, MB/s) when bars are on."""
    inc = counters.inc_fn(NS_READ)
    paths = list(paths)
    with progress.bar(total=len(paths), desc="reading crawl files", unit=" files") as bar:
        rate = progress.Throughput(bar, "pages")
        for path in paths:
            for page in iter_file_documents(path, inc, config.read):
                rate.add(page.text_size())
                yield page
            bar.update(1)


def run_chain(paths: Iterable[str], config: CorpusConfig, counters: Counters,
              clock: StageClock | NoClock = NO_CLOCK, chain: Optional[Sequence[Step]] = None,
              samples: Optional[Reservoir] = None) -> list[Document]:
    """Read, filter and dedup: the steps of ``chain`` (default: the config's) in order; returns
    the surviving documents in input order. ``clock`` (a StageClock) collects the CPU seconds
    of each stage (benchmarks/bench_stages.py); ``samples`` collects what every rule did to the
    traced pages (corpus/output/samples.py)."""
    layout = plan(config, chain)
    job = WideJob(config, counters, clock, samples)
    loops = [StepLoop(steps, config, clock, config.rule_samples)  # models loaded before reading
             for steps in (layout.first, *(segment.after for segment in layout.wide))]
    pages: Iterable[Document] = clock.timed("read", read_pages(paths, config, counters))
    pages = through_page_steps(loops[0], pages, job)
    for segment, loop in zip(layout.wide, loops[1:]):
        pages = segment.step.local(pages, job)
        if loop:
            desc = " and ".join(step.summary for step in segment.after)
            pages = through_page_steps(loop, progress.bar(pages, desc=desc, unit=" pages"), job)
    return list(pages)


def through_page_steps(loop: StepLoop, pages: Iterable[Document], job: WideJob) -> Iterator[Document]:
    """The pages that pass a run of page steps, lazily, in order."""
    if not loop:
        yield from pages
        return
    incs: dict[str, object] = {}

    def inc_for(namespace: str):
        inc = incs.get(namespace)
        if inc is None:
            incs[namespace] = inc = job.counters.inc_fn(namespace)
        return inc

    for page in pages:
        kept = loop.run(page, inc_for, job.samples)
        if kept is not None:
            yield kept
