"""Corpus-wide line dedup of tfds c4 (``remove_duplicate_text``), as pure pieces.

A line's key is md5(line.strip().lower()). Every page claims each of its lines; the owner of a
line is the claiming page with the smallest md5(url). A page keeps only lines it owns, each the
first time it appears in the page; pages left empty, or with fewer than ``min_sentences`` Punkt
sentences in the joined text, are dropped (namespace ``dedupe-lines``).

Keys and ranks are raw 16-byte md5 digests: they order exactly as tfds' hex strings do, in half
the memory. The Beam pipeline groups claims by key; :class:`LineOwners` does the same in memory
for single-process runs.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Optional

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus import sentences
from c4forge.corpus.document import Document


def line_key(line: str) -> bytes:
    return hashlib.md5(line.strip().lower().encode("utf-8")).digest()


def url_rank(url: str) -> bytes:
    return hashlib.md5(url.encode("utf-8")).digest()


def line_keys(page: Document) -> Iterator[bytes]:
    """The key of every line of the page, in order."""
    return map(line_key, page.text.split("\n"))


def add_claims(owners: dict[bytes, bytes], page: Document) -> None:
    """Claim every line of ``page`` in ``owners`` (line key -> smallest md5(url) so far), as
    tfds ``_emit_url_to_lines`` + ``Top.PerKey(1, key=_hash_text, reverse=True)`` combined."""
    claim_keys(owners, url_rank(page.url), line_keys(page))


def claim_keys(owners: dict[bytes, bytes], rank: bytes, keys: Iterable[bytes]) -> None:
    """:func:`add_claims` for a page given by its md5(url) and its line keys."""
    for key in keys:
        current = owners.get(key)
        if current is None or rank < current:
            owners[key] = rank


def pack_keys(keys: Iterable[bytes]) -> bytes:
    """A page's line keys as one bytes object (16 bytes each, in line order): computed where
    the page is cleaned and carried to the URL groups, which claim the winners' lines without
    the text."""
    return b"".join(keys)


def unpack_keys(packed: bytes) -> list[bytes]:
    return [packed[i:i + 16] for i in range(0, len(packed), 16)]


def owner_of(urls: Iterable[str]) -> str:
    """The claimant with the smallest md5(url) (tfds ``Top.PerKey(1, key=_hash_text, reverse=True)``)."""
    return min(urls, key=url_rank)


def dedupe_page_lines(page: Document, owned: set[bytes], min_sentences: int, inc: IncFn) -> Optional[Document]:
    """:func:`keep_owned_lines` with the step's byte counters: what both chains run per page."""
    kept = keep_owned_lines(page, owned, min_sentences, inc)
    inc("bytes-in", page.text_size())
    if kept is not None:
        inc("bytes-out", kept.text_size())
    return kept


def count_page_owning_nothing(n_lines: int, text_size: int, inc: IncFn) -> None:
    """The counters :func:`dedupe_page_lines` records for a page of ``n_lines`` lines and
    ``text_size`` UTF-8 bytes that owns none of its lines (every line a global duplicate, the
    page left empty), without the page's text: a page whose every line another page owns need
    not be unpacked (tests/test_dedup_urls_badwords.py checks both agree)."""
    inc("line-filtered:global_duplicate", n_lines)
    inc("filtered:empty")
    inc("bytes-in", text_size)


def keep_owned_lines(page: Document, owned: set[bytes], min_sentences: int = 3,
                     inc: IncFn = null_inc) -> Optional[Document]:
    """tfds ``_remove_lines_from_text``: the page with only its owned, first-seen lines."""
    new_lines = []
    seen: set[bytes] = set()
    n_global = n_local = 0
    for line in page.text.split("\n"):
        key = line_key(line)
        if key not in owned:
            n_global += 1
        elif key in seen:
            n_local += 1
        else:
            new_lines.append(line)
            seen.add(key)
    if n_global:
        inc("line-filtered:global_duplicate", n_global)
    if n_local:
        inc("line-filtered:local_duplicate", n_local)
    if new_lines:
        inc("line-passed", len(new_lines))
    new_text = "\n".join(new_lines)
    if not new_text:
        inc("filtered:empty")
        return None
    if min_sentences and not sentences.has_at_least(new_text, min_sentences):
        inc("filtered:too_few_sentences")
        return None
    inc("passed")
    return page.replace(text=new_text)


def line_fates(page: Document, owned: set[bytes]) -> tuple[list[str], list[Optional[str]], Optional[int]]:
    """What :func:`keep_owned_lines` does to each line (for the rule samples, corpus/samples.py):
    the lines, each one's fate (None: kept; ``line-filtered:global_duplicate``: another page owns
    it; ``line-filtered:local_duplicate``: repeated in this page) and no deciding line."""
    lines = page.text.split("\n")
    fates: list[Optional[str]] = []
    seen: set[bytes] = set()
    for line in lines:
        key = line_key(line)
        if key not in owned:
            fates.append("line-filtered:global_duplicate")
        elif key in seen:
            fates.append("line-filtered:local_duplicate")
        else:
            fates.append(None)
            seen.add(key)
    return lines, fates, None


class LineOwners:
    """In-memory owner table for single-process runs: line key -> smallest md5(url)."""

    def __init__(self) -> None:
        self._best: dict[bytes, bytes] = {}

    def add(self, page: Document) -> None:
        add_claims(self._best, page)

    def owned_by(self, page: Document) -> set[bytes]:
        best = self._best
        rank = url_rank(page.url)
        return {key for key in line_keys(page) if best[key] == rank}

    def __len__(self) -> int:
        return len(self._best)
