"""mC4's paragraph filter (namespace ``paragraph-filter``): a page needs ``min_paragraphs``
lines of at least ``min_paragraph_len`` characters (off in c4; the mc4 preset's)."""
from __future__ import annotations

import dataclasses

from c4forge.core.settings import NON_NEGATIVE_INT, POSITIVE_INT, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.rules.clean import paragraph_filter as has_paragraphs


@dataclasses.dataclass(frozen=True)
class ParagraphFilter:
    """``paragraph-filter`` in the corpus config: mC4's filter, with its defaults. min_paragraphs:
    the lines a page must have of at least min_paragraph_len characters (mC4: 3 of 200)."""

    on: bool = False
    min_paragraphs: int = setting(3, POSITIVE_INT)
    min_paragraph_len: int = setting(200, NON_NEGATIVE_INT)


def paragraphs(settings: ParagraphFilter, page: Document) -> Verdict:
    ok = has_paragraphs(page, settings.min_paragraphs, settings.min_paragraph_len)
    return keep(page) if ok else drop()


STEP = page_step("paragraph-filter", paragraphs, "[paragraph filter]", settings=ParagraphFilter,
                 clock="clean-page", flow=None)
