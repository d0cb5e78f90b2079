"""The one loop that runs page steps, in ``corpus clean`` (corpus/local.py) and in the Beam
DoFns (pipelines/dofns.py). A step only decides (corpus/verdict.py); around each decision this
loop does the runner's bookkeeping, the same way everywhere:

- **counting** (``verdict.count_verdict``): the verdict's outcome (``passed``, ``filtered[:reason]``), its
  detail counts, and ``bytes-in``/``bytes-out`` so reports say how much text each step removed;
- **samples**: for a page the rule samples trace (corpus/samples.py), what each step did to it;
- **the stage clock**: each step's CPU seconds to its stage (benchmarks/bench_stages.py), a page
  counted once as the input of a stage that consecutive steps share.

Each step is bound to what it loaded under the config (corpus/step.py ``loaded``: once per
process) when the loop is made. Where the counts go is the caller's ``inc_for(namespace)``: a
Counters view in one process, the bundle's table in a DoFn, a URL candidate's record for counts
that only its URL's winner keeps.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional

from c4forge.core.counters import IncFn
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.document import Document
from c4forge.corpus.samples import SampleOptions, SampleSink, step_samples, traced_key
from c4forge.corpus.step import Step, loaded
from c4forge.corpus.verdict import count_verdict

IncFor = Callable[[str], IncFn]  # a namespace -> its inc


class StepLoop:
    """A run of page steps bound to what they loaded under ``config``, with the hooks: ``clock``
    (a StageClock to time each step) and ``samples`` (which pages to trace; their samples go to
    the sink given per page)."""

    def __init__(self, steps: Sequence[Step], config: Any, clock: StageClock | NoClock = NO_CLOCK,
                 samples: Optional[SampleOptions] = None) -> None:
        self.steps = tuple(steps)
        self.bound = tuple(loaded(step, config) for step in self.steps)
        self.clock = None if isinstance(clock, NoClock) else clock
        self.samples = samples if samples is not None and samples.on else None
        # a stage shared by consecutive steps (paragraph filter and clean_page) counts a page once
        self.opens_stage = tuple(i == 0 or self.steps[i - 1].clock_name != step.clock_name
                                 for i, step in enumerate(self.steps))

    def __bool__(self) -> bool:
        return bool(self.steps)

    def run(self, page: Document, inc_for: IncFor, sink: Optional[SampleSink] = None) -> Optional[Document]:
        """``page`` through each step in turn: the page that survives them all, or None."""
        key = None
        if sink is not None and self.samples is not None and self.steps:
            key = traced_key(page.normalized_url, self.samples)
        clock = self.clock
        for step, bound, opens in zip(self.steps, self.bound, self.opens_stage):
            size_in = page.text_size()
            if clock is None:
                verdict = step.apply(bound, page)
                count_verdict(inc_for(step.namespace), inc_for, size_in, verdict)
            else:
                with clock.stage(step.clock_name, 1 if opens else 0):
                    verdict = step.apply(bound, page)
                    count_verdict(inc_for(step.namespace), inc_for, size_in, verdict)
            if key is not None:
                sink.extend(step_samples(step.namespace, verdict.outcome, key, page, verdict.page,
                                         step.explain, bound, sink.wants))
            page = verdict.page
            if page is None:
                return None
        return page
