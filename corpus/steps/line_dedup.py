"""tfds' corpus-wide line dedup (``remove_duplicate_text``; namespace ``dedupe-lines``): each line
is kept only by the page with the smallest md5(url) that holds it. Twins: corpus/dedup/line_dedup.py
and pipelines/twins/line_dedup.py."""
from __future__ import annotations

import dataclasses

from c4forge.corpus.chain.step import Scope, wide_step
from c4forge.corpus.dedup.line_dedup import NS_LINES, run


@dataclasses.dataclass(frozen=True)
class LineDedup:
    """``line-dedup`` in the corpus config. Its sentence check is clean_page's ``min_sentences``
    where clean_page runs, none otherwise (as tfds)."""

    on: bool = True


STEP = wide_step(
    "line-dedup", NS_LINES, Scope.LINE_OWNERS, "corpus-wide line dedup", run,
    "Every line (line_dedup.line_key) is owned by the page with the smallest "
    "md5(url) that holds it; each page keeps the lines it owns "
    "(line_dedup.keep_owned_lines), a page owning none is dropped and counted.",
    settings=LineDedup, flow="line dedup")
