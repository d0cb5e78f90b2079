"""The URL block-list filter RefinedWeb and FineWeb run first (datatrove 0.10's ``URLFilter``,
exact with the same lists; namespace ``url-filter``; corpus/url_filter.py holds the lists and the
rules): a page goes when its domain, host or URL is listed, or its URL holds banned words."""
from __future__ import annotations

import dataclasses
from typing import Any

from c4forge.core.settings import PATH, POSITIVE_INT, setting
from c4forge.corpus.document import Document
from c4forge.corpus.step import page_step
from c4forge.corpus.url_filter import DATATROVE_LISTS, UrlBlocklist, load_lists
from c4forge.corpus.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class UrlFilter:
    """``url-filter`` in the corpus config. ``lists``: where the lists are (corpus/url_filter.py);
    ``categories``: UT1 category folders read from a ``lists`` directory;
    ``soft_word_threshold``: soft-banned words in a URL that drop it (datatrove: 2)."""

    on: bool = False
    lists: str = setting(DATATROVE_LISTS, path=PATH)
    categories: tuple[str, ...] = ()
    soft_word_threshold: int = setting(2, POSITIVE_INT)


def load(settings: UrlFilter, config: Any) -> UrlBlocklist:
    return UrlBlocklist(load_lists(settings.lists, settings.categories), settings.soft_word_threshold)


def url_filter(blocklist: UrlBlocklist, page: Document) -> Verdict:
    return blocklist(page)


STEP = page_step("url-filter", url_filter, "[URL block lists]", settings=UrlFilter, load=load,
                 flow="url ok")
