"""Corpus-wide steps in one process: the typed protocol every one-process twin meets. A
corpus-wide step (corpus/steps/) names its one-process algorithm ``run(pages, job)`` as its
``local``; pipelines/c4.py's CORPUS_WIDE names its Beam transforms (DoFns: pipelines/twins/); the
two are held to the step's written contract (tests run them against each other).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Optional, Protocol

from c4forge.core.counters import Counters
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Reservoir, traced_key


@dataclasses.dataclass(frozen=True)
class WideJob:
    """What a one-process corpus-wide step is given besides its pages: the config (a
    CorpusConfig: ``config.settings_of(name)`` is a step's settings), where its counts go, the
    stage clock and the rule samples' reservoir (None: none recorded)."""

    config: Any
    counters: Counters
    clock: StageClock | NoClock = NO_CLOCK
    samples: Optional[Reservoir] = None

    def traced(self, normalized_url: str) -> Optional[int]:
        """The page's sampling key when the rule samples trace it, else None."""
        if self.samples is None:
            return None
        return traced_key(normalized_url, self.config.rule_samples)


class LocalTwin(Protocol):
    """``run(pages, job)``: the pages that survive the step, in input order."""

    def __call__(self, pages: Iterable[Document], job: WideJob) -> list[Document]: ...
