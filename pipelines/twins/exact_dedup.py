"""Exact-text dedup on Beam (the twin of corpus/dedup/exact_dedup.py; contract:
corpus/steps/exact_dedup.py): pages grouped by the key of their normalised text, each group keeping its
earliest crawl. One shuffle of the packed pages (the step is off in every C4 preset; a build
that turns it on pays it once). The transforms: pipelines/c4.py ``exact_dedup``.
"""
from __future__ import annotations

from typing import Optional

import apache_beam as beam

from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup.exact_dedup import (
    NS_EXACT,
    count_exact_page,
    sample_dropped,
    winner_order,
)
from c4forge.corpus.document import from_bytes
from c4forge.pipelines.dofns import Counting, Sampling


class EarliestPageFn(Counting, Sampling, beam.DoFn):
    """(text key, packed pages) -> the group's winner (``winner_order``); every page counted."""

    def __init__(self, config: CorpusConfig, samples_dir: Optional[str] = None) -> None:
        self.samples_dir = samples_dir if config.rule_samples.on else None
        self.sample_options = config.rule_samples

    def process(self, element):
        _, group = element
        pages = sorted((from_bytes(p) for p in group), key=winner_order)
        inc = self.inc_for(NS_EXACT)
        for i, page in enumerate(pages):
            count_exact_page(inc, page.text_size(), i == 0, len(pages))
            if i:
                sample_dropped(page, self.traced(page.normalized_url), self.samples())
        yield pages[0]

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()
