"""The URL block-list filter RefinedWeb and FineWeb run first (datatrove 0.10's ``URLFilter``,
exact with the same lists; namespace ``url-filter``;: a page goes when its domain, host or URL is listed, or its URL holds banned words.

The URL block-list filter RefinedWeb and FineWeb run first (datatrove 0.10's ``URLFilter``,
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
- ``datatrove-0.10``: datatrove's integrated lists (FineWeb's), as datatrove 0.10.1's wheel
  ships them, taken from that wheel on the package index (corpus/assets/package_index.py: PyPI or the
  ``PIP_INDEX_URL`` mirror, sha256-pinned), unpacked once into the cache;
- an http(s) URL of such a directory as a ``.tar.gz`` (e.g. UT1's ``blacklists.tar.gz``),
  downloaded once, checked to open as one, cached and unpacked.

A blank line in a list is read as datatrove reads it, the empty string, and said once as a
warning: in ``banned_words.txt`` it drops every URL that ends in a character other than a letter
or digit, in ``domains`` every URL whose host has no registered domain (an IP address). In
``banned_subwords.txt`` it would match every URL (datatrove fails on it): it is left out, and
said. A category that is not a folder of the lists is an error naming those that are.

Domains are split into registered domain and host by tldextract with the public suffix list it
ships (never fetched: the same answer offline and on every worker; datatrove fetches the live
list when it can, which a test run offline does not)."""
from __future__ import annotations

import dataclasses
import io
import logging
import os
import re
import shutil
import tarfile
from collections.abc import Iterable
from typing import Any, Optional

import ahocorasick

from c4forge.core.errors import C4forgeError
from c4forge.core.io import put_in_place, shown_path, staging_beside
from c4forge.core.settings import PATH, POSITIVE_INT, setting
from c4forge.corpus.assets.downloads import cache_dir, cached_download
from c4forge.corpus.assets.package_index import IndexUnavailable, PinnedWheel, wheel_member
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document

DATATROVE_LISTS = "datatrove-0.10"
DATATROVE_WHEEL = PinnedWheel("datatrove", "datatrove-0.10.1-py3-none-any.whl",
                              "b0846fc28482b25c9dbeaa09445066ff68266b58d762e9344c64fe5f6d92d14c")
DATATROVE_ASSETS = "datatrove/assets/"
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
    """The lists ``source`` names (``url-filter.lists``), merged (UT1 categories' domains and
    URLs added)."""
    directory = _lists_directory(source)
    missing = [c for c in categories if not os.path.isdir(os.path.join(directory, c))]
    if missing:
        have = sorted(n for n in os.listdir(directory) if os.path.isdir(os.path.join(directory, n)))
        raise UrlListsUnavailable(f"url-filter.categories: {', '.join(map(repr, missing))} is not a folder of "
                                  f"url-filter.lists={_shown(source)} (its folders: {', '.join(have) or 'none'})")
    found = UrlLists(set(), set(), set(), set(), set())
    for folder in ("", *categories):
        found.domains |= _read_list(os.path.join(directory, folder, "domains"), normalise=False)
        found.urls |= _read_list(os.path.join(directory, folder, "urls"), normalise=False)
    found.banned_words = _read_list(os.path.join(directory, WORD_FILES[0]))
    found.banned_subwords = _read_list(os.path.join(directory, WORD_FILES[1]))
    found.soft_banned_words = _read_list(os.path.join(directory, WORD_FILES[2]))
    found.banned_subwords.discard("")  # (said where it was read)
    if not any(entry for entries in vars(found).values() for entry in entries):
        raise UrlListsUnavailable(f"url-filter.lists={_shown(source)}: no block list entry found there "
                                  f"(domains, urls, {', '.join(WORD_FILES)}, or <category>/domains)")
    return found


def _shown(source: str) -> str:
    return source if "://" in source or source == DATATROVE_LISTS else shown_path(source)


BLANK_LINE_EFFECT = {
    "banned_words.txt": "it drops every URL that ends in a character other than a letter or digit, as in datatrove",
    "soft_banned_words.txt": "it counts as a soft-banned word in every URL that ends in a character other "
                             "than a letter or digit, as in datatrove",
    "banned_subwords.txt": "it would match every URL (datatrove fails on it): left out",
    "domains": "it drops every URL whose host has no registered domain (an IP address), as in datatrove",
    "urls": "it matches no URL",
}


def _read_list(path: str, normalise: bool = True) -> set[str]:
    if not os.path.isfile(path):
        return set()
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            entries = parse_list(handle, normalise)
    except OSError as exc:
        raise UrlListsUnavailable(f"cannot read the URL block list {shown_path(path)} "
                                  f"({exc.strerror or exc})") from None
    if "" in entries:
        logging.getLogger(__name__).warning(
            "%s has a blank line: %s", shown_path(path), BLANK_LINE_EFFECT[os.path.basename(path)])
    return entries


def _lists_directory(source: str) -> str:
    """A local directory holding the lists named by ``source`` (fetched and unpacked once)."""
    if source == DATATROVE_LISTS:
        target = cache_dir() / "url-lists" / DATATROVE_LISTS
        if not (target / "domains").exists():
            _unpack(_datatrove_asset(DATATROVE_TARBALL), str(target),
                    {name: _datatrove_asset(name) for name in WORD_FILES})
        return str(target)
    if "://" in source:
        target = cache_dir() / "url-lists" / normalize(source)
        if not target.exists():
            _unpack(_download(source), str(target))
        return str(target)
    if not os.path.isdir(source):
        raise UrlListsUnavailable(f"url-filter.lists={_shown(source)}: not a directory of block lists")
    return source


def _datatrove_asset(name: str) -> bytes:
    try:
        return wheel_member(DATATROVE_WHEEL, DATATROVE_ASSETS + name)
    except IndexUnavailable as exc:
        raise UrlListsUnavailable(f"{exc}. Offline? Give a local copy of the lists with "
                                  "url-filter.lists=DIR, or switch the filter off with url-filter.on=false") from None


def _tarball(data: bytes) -> None:
    """A .tar.gz that opens and lists its members (what a download of lists must be)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            archive.getmembers()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ValueError(f"not a .tar.gz: {exc}") from None


def _download(url: str) -> bytes:
    try:
        return cached_download(url, "url-lists", check=_tarball, what="the URL block lists")
    except OSError as exc:  # FetchError: what, where, why
        raise UrlListsUnavailable(
            f"{exc}. Offline? Give a local copy "
            "with url-filter.lists=DIR, or switch the filter off with url-filter.on=false") from exc


def _unpack(data: bytes, target: str, files: Optional[dict[str, bytes]] = None) -> None:
    """A .tar.gz of lists unpacked into ``target`` (its one top folder, if it has one, dropped),
    with ``files`` beside them, completely or not at all: filled beside it, then put in place
    (c4forge.core.io)."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = staging_beside(target)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            archive.extractall(staging, filter="data")
        entries = os.listdir(staging)
        inner = os.path.join(staging, entries[0]) if len(entries) == 1 and os.path.isdir(
            os.path.join(staging, entries[0])) else staging
        for name, content in (files or {}).items():
            with open(os.path.join(inner, name), "wb") as handle:
                handle.write(content)
        put_in_place(inner, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class UrlBlocklist:
    """The filter bound to its lists: ``__call__(page) -> Verdict``."""

    def __init__(self, lists: UrlLists, soft_word_threshold: int = 2) -> None:
        self.lists = lists
        self.soft_word_threshold = soft_word_threshold
        from tldextract import TLDExtract  # lazy: it imports requests: only where the filter runs

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
        if len(self.subwords) and next(self.subwords.iter(normalize(url)), False):
            return "blacklisted_subword"
        return None

    def __call__(self, page: Document) -> Verdict:
        reason = self.reason(page.url)
        return keep(page) if reason is None else drop(reason)


@dataclasses.dataclass(frozen=True)
class UrlFilter:
    """``url-filter`` in the corpus config. ``lists``: where the lists are (``DATATROVE_LISTS``, or a folder or URL as above);
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
