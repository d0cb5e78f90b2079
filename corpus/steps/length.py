"""tfds' length limit (``is_valid_length``, namespace ``too-long-filter``): a page whose raw text
is longer than ``max_chars`` characters is dropped before anything else looks at it."""
from __future__ import annotations

import dataclasses

from c4forge.core.settings import POSITIVE, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.rules.clean import MAX_PAGE_CHARS, is_valid_length


@dataclasses.dataclass(frozen=True)
class Length:
    """``length`` in the corpus config: on, and the most characters a page may hold (tfds 1.9e5)."""

    on: bool = True
    max_chars: float = setting(MAX_PAGE_CHARS, POSITIVE)


def length(settings: Length, page: Document) -> Verdict:
    return keep(page) if is_valid_length(page, settings.max_chars) else drop()


STEP = page_step("length", length, "length limit", namespace="too-long-filter", settings=Length,
                 flow="length ok")
