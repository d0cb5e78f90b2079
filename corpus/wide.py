"""Corpus-wide steps in one process: the typed protocol every ``corpus/<twin>.py`` meets, and the
registry that finds it. A corpus-wide step (corpus/chain.py) names its ``twin``; its one-process
algorithm is ``run`` in ``corpus/<twin>.py`` and its Beam transform ``expand`` in
``pipelines/<twin>.py`` (pipelines/wide.py), the two held to the step's written contract.
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable
from typing import Optional, Protocol

from c4forge.core.counters import Counters
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.chain import Step
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.samples import Reservoir, traced_key


@dataclasses.dataclass(frozen=True)
class WideJob:
    """What a one-process corpus-wide step is given besides its pages: the config, where its
    counts go, the stage clock and the rule samples' reservoir (None: none recorded)."""

    config: CorpusConfig
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


def local_twin(step: Step) -> LocalTwin:
    """The one-process algorithm of the corpus-wide ``step``: ``run`` in corpus/<twin>.py."""
    return importlib.import_module(f"c4forge.corpus.{step.twin}").run
