"""The one loop that runs page steps, in ``corpus clean`` (corpus/chain/local.py) and in the Beam
DoFns (pipelines/dofns.py). A step only decides (corpus/chain/verdict.py); around each decision this
loop does the runner's bookkeeping, the same way everywhere:

- **counting** (``verdict.count_verdict``): the verdict's outcome (``passed``, ``filtered[:reason]``), its
  detail counts, and ``bytes-in``/``bytes-out`` so reports say how much text each step removed;
- **samples**: for a page the rule samples trace (corpus/output/samples.py), what each step did to it;
- **the stage clock**: each step's CPU seconds to its stage (benchmarks/bench_stages.py), a page
  counted once as the input of a stage that consecutive steps share.

Each step is bound to what it loaded under the config (corpus/chain/step.py ``loaded``: once per
process) when the loop is made. Where the counts go is the caller's ``inc_for(namespace)``: a
Counters view in one process, the bundle's table in a DoFn, a URL candidate's record for counts
that only its URL's winner keeps.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any, Optional

from c4forge.core.counters import IncFn
from c4forge.core.errors import C4forgeError
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.chain.step import Step, loaded
from c4forge.corpus.chain.verdict import Verdict, count_verdict
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import SampleOptions, SampleSink, step_samples, traced_key

IncFor = Callable[[str], IncFn]  # a namespace -> its inc

_WHILE_RUNNING = re.compile(r" \[while running .*\]$")  # what Beam appends to a worker's error
_IN_TRACEBACK = re.compile(r"^(?:[\w.]+\.)?StepFailure: (.*)$", re.M)


class StepFailure(C4forgeError, RuntimeError):
    """A step, built-in or a user's, raised on a page or returned something that is not a
    decision: one line naming the step, its module, the page's URL and input file, and what went
    wrong (the traceback is the ``__cause__``: ``C4FORGE_DEBUG=1`` shows it). Beam re-raises it
    with "[while running ...]" appended, or as text inside a worker's traceback
    (:func:`step_failure_in` finds the line in both)."""

    exit_code = 1


def step_failure_in(exc: BaseException) -> Optional[str]:
    """The one line of a StepFailure that a runner reports as ``exc`` (the StepFailure itself,
    or a failure whose text holds a worker's traceback), or None."""
    if isinstance(exc, StepFailure):
        found = [str(exc)]
    else:
        found = _IN_TRACEBACK.findall(str(exc) or "")
    return _WHILE_RUNNING.sub("", found[-1].strip()) if found else None


def step_origin(step: Step) -> str:
    """Where a step's code lives, for messages: a user's ``module:function`` and its file, or
    the built-in step's module."""
    function = getattr(step.apply, "function", step.apply)
    module = getattr(function, "__module__", None) or "?"
    if step.origin:
        path = getattr(getattr(function, "__code__", None), "co_filename", "")
        shown = os.path.relpath(path) if path and not os.path.relpath(path).startswith("..") else path
        return f"{step.origin}{', ' + shown if shown else ''}"
    return module


def failure(step: Step, page: Document, problem: str) -> StepFailure:
    where = f"{page.source or 'unknown input'}" + (f", record at byte {page.offset}" if page.offset >= 0 else "")
    return StepFailure(f"step {step.name} ({step_origin(step)}) failed on {page.url or '(no URL)'} "
                       f"({where}): {' '.join(problem.split())}")


def checked(step: Step, page: Document, verdict: Any) -> Verdict:
    """``verdict`` if it is a decision on a page (a Verdict whose kept page is a Document with
    text); else the StepFailure saying what the step returned."""
    if not isinstance(verdict, Verdict):
        raise failure(step, page, f"returned {type(verdict).__name__} {verdict!r:.60}, not a Verdict "
                                  "(keep(page) or drop(reason))")
    kept = verdict.page
    if kept is not None and (not isinstance(kept, Document) or not isinstance(kept.text, str)):
        what = (f"a page whose text is {type(kept.text).__name__}" if isinstance(kept, Document)
                else f"{type(kept).__name__} as the page")
        raise failure(step, page, f"returned {what}; a kept page is a Document with str text")
    return verdict


def decide(step: Step, bound: Any, page: Document) -> Verdict:
    """The step's checked verdict on ``page``; any exception it raises becomes a StepFailure."""
    try:
        verdict = step.apply(bound, page)
    except StepFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of a step is the one line naming it
        raise failure(step, page, f"{type(exc).__name__}: {exc}") from exc
    return checked(step, page, verdict)


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
                verdict = decide(step, bound, page)
                count_verdict(inc_for(step.namespace), inc_for, size_in, verdict)
            else:
                with clock.stage(step.clock_name, 1 if opens else 0):
                    verdict = decide(step, bound, page)
                    count_verdict(inc_for(step.namespace), inc_for, size_in, verdict)
            if key is not None:
                sink.extend(step_samples(step.namespace, verdict.outcome, key, page, verdict.page,
                                         step.explain, bound, sink.wants))
            page = verdict.page
            if page is None:
                return None
        return page
