"""URL dedup (tfds' ``select_newest_page``; namespace ``duplicate-url-filter``): of the crawls of
one normalised URL the newest is kept. Needs every page: its twins are corpus/dedup/url_dedup.py (one
process) and pipelines/twins/url_dedup.py (Beam), held to the contract below."""
from __future__ import annotations

import dataclasses

from c4forge.corpus.chain.step import Scope, wide_step
from c4forge.corpus.dedup.url_dedup import NS_URL, run


@dataclasses.dataclass(frozen=True)
class UrlDedup:
    """``url-dedup`` in the corpus config: one page per normalised URL (scheme, ``www.``,
    ``?utm_``/``?ref``/``?feed`` tails and a trailing ``/`` stripped), the newest by WARC-Date;
    of equally new crawls the one with the smaller record id (md5 of file *name* and byte
    offset), so the choice is the same in any input order, folder or runner (tfds keeps
    whichever its shuffle delivers first)."""

    on: bool = True


STEP = wide_step(
    "url-dedup", NS_URL, Scope.URL_GROUPS, "newest page per normalised URL", run,
    "Of the crawls of one normalised URL the newest is kept (equal times: the smallest "
    "record id, urls.newer_page / UrlCandidate.replaces); every URL counts "
    "count_url_group once; what the kept crawl's later page steps counted is counted "
    "for it alone.", settings=UrlDedup, flow="unique url")
