"""Exact-text dedup (off in every C4 preset): pages whose normalised text is the same keep one
crawl, the earliest. The twin of pipelines/twins/exact_dedup.py; contract: the
``contract`` of corpus/steps/exact_dedup.py. Line dedup already empties most exact copies in C4; this is the cheap first pass
the presets without line dedup want (FineWeb-style chains, ``c4-noclean``), as NeMo Curator's
``ExactDuplicates`` is (which hashes the text as it is; this normalises it first).

Which crawl wins must not depend on the order an engine delivers pages: the smallest
(crawl time, md5(url), record id) (``winner_order``).
"""
from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable

from c4forge.core.counters import IncFn
from c4forge.corpus.chain.verdict import count_group_member
from c4forge.corpus.chain.wide import WideJob
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Reservoir, dropped_page
from c4forge.corpus.text.urls import page_record_id, url_rank

NS_EXACT = "exact-dedup"


def text_key(text: str) -> bytes:
    """md5 of the text NFKC-normalised, case-folded, its whitespace runs one space."""
    normalised = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.md5(normalised.encode("utf-8")).digest()


def winner_order(page: Document) -> tuple[str, bytes, bytes]:
    """The smaller wins: the earliest crawl; equal times, the smallest md5(url), then record id."""
    return page.timestamp, url_rank(page.url), page_record_id(page)


def count_exact_page(inc: IncFn, size: int, kept: bool, group_size: int) -> None:
    """One page's counters (a text held by several pages counts ``groups`` once, at the page kept)."""
    count_group_member(inc, size, kept, group_size, "groups")


def sample_dropped(page: Document, key: int | None, samples: Reservoir | None) -> None:
    """A traced page dropped as a copy (both runners)."""
    rule = f"{NS_EXACT}/filtered"
    if key is not None and samples.wants(rule, key):
        samples.add(dropped_page(rule, key, page))


def run(pages: Iterable[Document], job: WideJob) -> list[Document]:
    """The pages that are the winners of their text's group, in input order."""
    pages = list(pages)
    with job.clock.stage("exact-dedup", len(pages)):
        keys = [text_key(page.text) for page in pages]
        best: dict[bytes, tuple] = {}
        sizes: dict[bytes, int] = {}
        for page, key in zip(pages, keys):
            order = winner_order(page)
            if key not in best or order < best[key]:
                best[key] = order
            sizes[key] = sizes.get(key, 0) + 1
        inc = job.counters.inc_fn(NS_EXACT)
        kept = []
        for page, key in zip(pages, keys):
            survives = winner_order(page) == best[key]
            count_exact_page(inc, page.text_size(), survives, sizes[key])
            if survives:
                kept.append(page)
            else:
                sample_dropped(page, job.traced(page.normalized_url), job.samples)
    return kept
