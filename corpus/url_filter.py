"""The URL block-list filter RefinedWeb and FineWeb run first (datatrove 0.10's ``URLFilter``,
exact with the same lists): a page goes when its registered domain or its full host is a listed
domain, its URL a listed URL, a word of its URL a banned word, ``soft_word_threshold`` words of
it soft-banned words, or a banned subword occurs anywhere in its normalised URL. Each of those is
its own reason (datatrove's names: ``domain``, ``subdomain``, ``url``, ``hard_blacklisted``,
``soft_blacklisted``, ``blacklisted_subword``).

The lists (``url_filter.lists``), read once per worker:

- a directory holding any of ``domains``, ``urls`` (one per line) and ``banned_words.txt``,
  ``banned_subwords.txt``, ``soft_banned_words.txt`` (datatrove's file names), and, for each of
  ``url_filter.categories``, the UT1 layout ``<category>/domains`` and ``<category>/urls`` (the
  Université Toulouse 1 lists RefinedWeb filtered with: adult, phishing, dating...);
- ``datatrove-0.10``: datatrove's integrated lists at the v0.10.0 commit (FineWeb's), downloaded
  once and cached (corpus/downloads.py), as the bad-word lists are;
- an http(s) URL of such a directory as a ``.tar.gz`` (e.g. UT1's ``blacklists.tar.gz``),
  downloaded once, cached and unpacked.

Domains are split into registered domain and host by tldextract with the public suffix list it
ships (never fetched: the same answer offline and on every worker; datatrove fetches the live
list when it can, which a test run offline does not).
"""
from __future__ import annotations

import dataclasses
import io
import os
import re
import shutil
import tarfile
import urllib.error
from collections.abc import Iterable
from typing import Optional

import ahocorasick

from c4forge.core.errors import C4forgeError
from c4forge.core.io import put_in_place, staging_beside
from c4forge.corpus.document import Document
from c4forge.corpus.downloads import cache_dir, cached_download
from c4forge.corpus.verdict import Verdict, drop, keep

DATATROVE_LISTS = "datatrove-0.10"
DATATROVE_ASSETS = ("https://raw.githubusercontent.com/huggingface/datatrove/"
                    "7024aecca2f9ffb7b7cf0d02c0c823b8b24cf664/src/datatrove/assets/")
DATATROVE_TARBALL = "url_filterblacklistsv0_3_0.tar.gz"
WORD_FILES = ("banned_words.txt", "banned_subwords.txt", "soft_banned_words.txt")

_NORMALIZER = re.compile(r"[^a-zA-Z0-9]+")


class UrlListsUnavailable(C4forgeError, RuntimeError):
    """The block lists could not be read (no network, wrong path)."""


def normalize(text: str) -> str:
    """datatrove's URL normalisation: runs of anything but ASCII letters and digits removed,
    lower-cased."""
    return _NORMALIZER.sub("", text).lower()


def parse_list(lines: Iterable[str], normalise: bool = True) -> set[str]:
    """datatrove's ``parse_list``: each line not starting with ``#``, normalised (words) or
    stripped (domains, URLs). An empty line gives the empty string, as there."""
    return {normalize(x) if normalise else x.strip() for x in lines if x[0] != "#"}


@dataclasses.dataclass
class UrlLists:
    domains: set[str]
    urls: set[str]
    banned_words: set[str]
    banned_subwords: set[str]
    soft_banned_words: set[str]


def load_lists(source: str, categories: tuple[str, ...] = ()) -> UrlLists:
    """The lists ``source`` names (``url_filter.lists``), merged (UT1 categories' domains and
    URLs added)."""
    directory = _lists_directory(source)
    found = UrlLists(set(), set(), set(), set(), set())
    for folder in ("", *categories):
        found.domains |= _read_list(os.path.join(directory, folder, "domains"), normalise=False)
        found.urls |= _read_list(os.path.join(directory, folder, "urls"), normalise=False)
    found.banned_words = _read_list(os.path.join(directory, WORD_FILES[0]))
    found.banned_subwords = _read_list(os.path.join(directory, WORD_FILES[1]))
    found.soft_banned_words = _read_list(os.path.join(directory, WORD_FILES[2]))
    if not any(vars(found).values()):  # (astuple would deep-copy millions of domains)
        raise UrlListsUnavailable(f"url-filter.lists={source}: no block list found there "
                                  f"(domains, urls, {', '.join(WORD_FILES)}, or <category>/domains)")
    return found


def _read_list(path: str, normalise: bool = True) -> set[str]:
    if not os.path.isfile(path):
        return set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse_list(handle, normalise)


def _lists_directory(source: str) -> str:
    """A local directory holding the lists named by ``source`` (downloaded and unpacked once)."""
    if source == DATATROVE_LISTS:
        target = cache_dir() / "url-lists" / DATATROVE_LISTS
        if not (target / "domains").exists():
            _unpack(_download(DATATROVE_ASSETS + DATATROVE_TARBALL), str(target))
            for name in WORD_FILES:
                (target / name).write_bytes(_download(DATATROVE_ASSETS + name))
        return str(target)
    if "://" in source:
        target = cache_dir() / "url-lists" / normalize(source)
        if not target.exists():
            _unpack(_download(source), str(target))
        return str(target)
    if not os.path.isdir(source):
        raise UrlListsUnavailable(f"url_filter.lists={source}: not a directory of block lists")
    return source


def _download(url: str) -> bytes:
    try:
        return cached_download(url, "url-lists")
    except (urllib.error.URLError, OSError) as exc:
        raise UrlListsUnavailable(
            f"could not download the URL block list {url} ({exc}). Offline? Give a local copy "
            "with url_filter.lists=DIR, or switch the filter off with url_filter.on=false") from exc


def _unpack(data: bytes, target: str) -> None:
    """A .tar.gz of lists unpacked into ``target`` (its one top folder, if it has one, dropped),
    completely or not at all: filled beside it, then put in place (c4forge.core.io)."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = staging_beside(target)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            archive.extractall(staging, filter="data")
        entries = os.listdir(staging)
        inner = os.path.join(staging, entries[0]) if len(entries) == 1 and os.path.isdir(
            os.path.join(staging, entries[0])) else staging
        put_in_place(inner, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class UrlBlocklist:
    """The filter bound to its lists: ``__call__(page) -> Verdict``."""

    def __init__(self, lists: UrlLists, soft_word_threshold: int = 2) -> None:
        self.lists = lists
        self.soft_word_threshold = soft_word_threshold
        from tldextract import TLDExtract  # it imports requests: only where the filter runs

        self.extract = TLDExtract(suffix_list_urls=(), cache_dir=None)
        self.subwords = ahocorasick.Automaton(ahocorasick.STORE_INTS)
        for word in lists.banned_subwords:
            self.subwords.add_word(word, len(self.subwords))
        self.subwords.make_automaton()

    def reason(self, url: str) -> Optional[str]:
        """Why datatrove's ``URLFilter`` drops ``url``, or None (kept); its tests in its order."""
        lists = self.lists
        parts = self.extract(url)
        if parts.top_domain_under_public_suffix in lists.domains:  # datatrove: registered_domain, the same
            return "domain"
        if parts.fqdn in lists.domains:
            return "subdomain"
        if url in lists.urls:
            return "url"
        words = set(_NORMALIZER.split(url))
        if any(word in words for word in lists.banned_words):
            return "hard_blacklisted"
        if sum(word in words for word in lists.soft_banned_words) >= self.soft_word_threshold:
            return "soft_blacklisted"
        if lists.banned_subwords and next(self.subwords.iter(normalize(url)), False):
            return "blacklisted_subword"
        return None

    def __call__(self, page: Document) -> Verdict:
        reason = self.reason(page.url)
        return keep(page) if reason is None else drop(reason)
