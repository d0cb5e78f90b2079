"""URL normalisation, newest-page selection, and the hashed train/validation split (tfds c4)."""
from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable
from typing import NamedTuple, Optional

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus.document import Document

_SCHEME_WWW = re.compile(r"https?:\/\/(www\.)?")
_TRACKING_TAIL = re.compile(r"\?(utm_|ref|feed).*")


def normalize_url(url: str) -> str:
    """tfds ``normalize_url``: drop scheme and ``www.``, ``?utm_``/``?ref``/``?feed`` tails, and
    trailing slashes. Note ``re.sub`` removes a scheme anywhere in the string, as tfds does."""
    url = _SCHEME_WWW.sub("", url)
    url = _TRACKING_TAIL.sub("", url)
    return url.rstrip("/")


def md5_int(text: str) -> int:
    """The integer md5 of a UTF-8 string, as tfds' ``get_hashed_url_filter_fn``."""
    return int(hashlib.md5(text.encode("utf-8")).hexdigest(), 16)


def record_id(source: str, offset: int) -> bytes:
    """Which crawl record a page came from, as 8 bytes of md5(file name, byte offset): the file's
    *name*, not its path, so the id (and every tie it breaks) does not depend on the folder or
    host the crawl was read from."""
    name = posixpath.basename(source.rstrip("/"))  # a local path or a URL
    return hashlib.md5(f"{name}\0{offset}".encode("utf-8", "surrogatepass")).digest()[:8]


def page_record_id(page: Document) -> bytes:
    """:func:`record_id` of a Document."""
    return record_id(page.source, page.offset)


def replaces(timestamp: str, record: bytes, current_timestamp: str, current_record: bytes) -> bool:
    """Whether a page crawled at ``timestamp`` (record id ``record``) replaces the one kept so far:
    if newer (ISO strings compare in time order), or as new and with the smaller record id.

    tfds keeps whichever of equally new pages its shuffle delivers first, which differs per runner
    and per input order; the record id makes the choice the same in every arrival order, on every
    runner and in both chains (issue 29: the pinned build changed with the input's folder)."""
    return timestamp > current_timestamp or (timestamp == current_timestamp and record < current_record)


def newer_page(a: Document, b: Document) -> Document:
    """Of two pages of one normalised URL the one kept (see :func:`replaces`)."""
    return b if replaces(b.timestamp, page_record_id(b), a.timestamp, page_record_id(a)) else a


def select_newest_page(pages: Iterable[Document], inc: IncFn = null_inc) -> Optional[Document]:
    """tfds ``select_newest_page``: of the pages sharing a normalised URL keep the one with the
    greatest timestamp; ties keep the smallest record id (:func:`replaces`), not the first seen.

    Usable as a Beam ``CombinePerKey`` function: Beam may call it on partial groups and again on
    their results, and the choice is associative and commutative. Counters are only exact when the
    caller counts duplicates itself (see pipelines/), because of that re-application.
    """
    count = 0
    selected: Optional[Document] = None
    for page in pages:
        count += 1
        selected = page if selected is None else newer_page(selected, page)
    if count:
        inc("filtered", count - 1)
        inc("passed")
    return selected


class UrlCandidate(NamedTuple):
    """What URL dedup needs of one crawl of a normalised URL, carried to the URL's group: the
    group keeps the newest (:func:`replaces`), counts every crawl, and goes on with the winner's
    clean counters, cleaned page (by ``rank``) and line keys."""

    timestamp: str  # WARC-Date, ISO: compares in time order
    raw_bytes: int  # text bytes before cleaning (URL dedup's bytes-in)
    counts: str  # the paragraph and clean_page counters this crawl recorded, packed
    rank: bytes  # md5 of the cleaned page's URL; b"" when cleaning dropped the page
    record_id: bytes  # :func:`page_record_id`: breaks ties between equally new crawls
    line_keys: bytes  # the cleaned page's line keys, packed (b"" without line dedup)
    samples: str = ""  # a traced crawl: what cleaning did to it (corpus/output/samples.py), JSON

    def replaces(self, other: UrlCandidate) -> bool:
        return replaces(self.timestamp, self.record_id, other.timestamp, other.record_id)


def count_url_group(inc: IncFn, pages: int, bytes_in: int, bytes_out: int) -> None:
    """URL-dedup counters of one normalised URL's ``pages`` (``bytes_in`` of text in all): one
    kept, the newest (``bytes_out``), the rest filtered. Both chains count through here."""
    inc("bytes-in", bytes_in)
    inc("bytes-out", bytes_out)
    inc("passed")
    if pages > 1:
        inc("filtered", pages - 1)


VALIDATION_MODULUS = 1000


def split_of(normalized_url: str, per_mille: int = 1) -> str:
    """``validation`` when md5(normalised url) % 1000 < per_mille, else ``train``. The default
    (1) is tfds' rule, md5 % 1000 == 0 (0.1%); small corpora need a larger share to hold out."""
    return "validation" if md5_int(normalized_url) % VALIDATION_MODULUS < per_mille else "train"


def doc_id(normalized_url: str) -> int:
    """Deterministic 63-bit document id (fits a signed int64 column): near-dedup labels
    clusters with it and shard assignment hashes it."""
    return int.from_bytes(hashlib.md5(normalized_url.encode("utf-8")).digest()[:8], "big") >> 1


def url_rank(url: str) -> bytes:
    """md5(url) as 16 raw bytes: the rank that picks a line's owner (tfds) and keys a page's
    join bucket."""
    return hashlib.md5(url.encode("utf-8")).digest()
