"""tfds' ``clean_page`` (namespace ``clean-page``): C4's line rules and page rules, exact to tfds
3.1.0 (corpus/rules/clean.py argues and tests it). The settings are its PageRules and the switch."""
from __future__ import annotations

import dataclasses

from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict
from c4forge.corpus.document import Document
from c4forge.corpus.rules.clean import PageRules, clean_page, line_fates


@dataclasses.dataclass(frozen=True)
class CleanPage(PageRules):
    """``clean-page`` in the corpus config: on, and the rules' parameters (corpus/rules/clean.py's
    PageRules, tfds' defaults; a falsy value switches a rule off)."""

    on: bool = True


def clean(settings: CleanPage, page: Document) -> Verdict:
    return clean_page(page, settings)


def clean_fates(settings: CleanPage, page: Document):
    return line_fates(page.text, settings)


STEP = page_step("clean-page", clean, "clean_page", settings=CleanPage, flow="clean",
                 explain=clean_fates)
