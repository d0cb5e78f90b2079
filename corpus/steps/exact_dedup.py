"""Exact-text dedup (namespace ``exact-dedup``; off in every C4 preset, Gopher's chain runs it):
pages of the same normalised text keep their earliest crawl. Twins: corpus/dedup/exact_dedup.py and
pipelines/twins/exact_dedup.py."""
from __future__ import annotations

import dataclasses

from c4forge.corpus.chain.step import Scope, wide_step
from c4forge.corpus.dedup.exact_dedup import NS_EXACT, run


@dataclasses.dataclass(frozen=True)
class ExactDedup:
    """``exact-dedup`` in the corpus config: of the cleaned pages whose text is the same after
    NFKC, case folding and whitespace runs made one space, the earliest crawl is kept (off in
    every C4 preset)."""

    on: bool = False


STEP = wide_step(
    "exact-dedup", NS_EXACT, Scope.TEXT_GROUPS, "[exact-text dedup]", run,
    "Pages whose normalised text (exact_dedup.text_key: NFKC, case-folded, whitespace runs "
    "as one space) is the same are one group; the group keeps its earliest crawl (equal times: "
    "the smallest md5(url)); every page counts count_exact_group's share once.",
    settings=ExactDedup, flow="unique text")
