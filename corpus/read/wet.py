"""Common Crawl WET (and WARC) files as pages: the reader's top layer.

The layers below, one module each: corpus/read/inputs.py (what to read), corpus/read/opening.py (the
bytes, local or remote), corpus/read/gzip_members.py (gzip member recovery), corpus/read/records.py (the
WARC record parser) and corpus/read/sniff.py (WET or WARC). Every skip increments a counter
``skipped:<reason>`` in namespace ``split-wet-file``; documents that pass are counted as tfds
does (``passed``, ``filtered:no_url``, ...).

Page text follows tfds ``split_wet_file``: lines split on universal newlines, stripped, empty
lines dropped, and lines starting with ``WARC``/``CONTENT-``/``Content-`` dropped (a tfds quirk
kept for exactness; ``keep_metadata_like_lines=True`` switches it off).
"""
from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import Optional

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus.document import Document
from c4forge.corpus.extract.html import SlowBudget, extract_response
from c4forge.corpus.read.inputs import CRAWL_SUFFIXES
from c4forge.corpus.read.options import CrawlReadError, CrawlReadInterrupted, ReadOptions
from c4forge.corpus.read.records import iter_records
from c4forge.corpus.read.remote import ObjectChanged
from c4forge.corpus.read.sniff import MISMATCH_RECORDS, InputFormatError, format_mismatch
from c4forge.corpus.read.warc import NEWLINES, WarcRecord
from c4forge.corpus.text.urls import normalize_url

NS_READ = "split-wet-file"  # the reader's counters (tfds' namespace)

METADATA_PREFIXES = ("WARC", "CONTENT-", "Content-")  # page_text spells them out too
# C0 control characters other than \t \n \v \f \r: text has (almost) none of them.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13))


def page_text(body: str, keep_metadata_like_lines: bool = False) -> str:
    """tfds ``split_wet_file`` text: stripped, non-empty lines joined by ``\\n``.

    The same as stripping each of ``NEWLINES.split(body)`` and keeping the non-empty lines that
    do not start with METADATA_PREFIXES, at about half its CPU: a body without ``\\r`` (nearly
    every WET body) is split on ``\\n`` in C, and the prefix check runs only when a prefix
    occurs in the body at all (tests/test_wet.py checks both against that definition)."""
    lines = NEWLINES.split(body) if "\r" in body else body.split("\n")
    kept = list(filter(None, map(str.strip, lines)))
    if not keep_metadata_like_lines and ("WARC" in body or "CONTENT-" in body or "Content-" in body):
        kept = [line for line in kept if not line.startswith(METADATA_PREFIXES)]
    return "\n".join(kept)


def record_to_document(record: WarcRecord, inc: IncFn = null_inc,
                       options: ReadOptions = ReadOptions()) -> Optional[Document]:
    """A ``conversion`` (WET text) record as a Document, or None with a counted reason."""
    body = record.body
    if body:
        controls = len(body) - len(body.translate(None, _CONTROL_BYTES))
        if controls > options.binary_control_share * len(body):
            inc("skipped:binary_body")
            return None
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError:
        inc("skipped:non_utf8")
        return None
    return _document(record, page_text(decoded, options.keep_metadata_like_lines), inc,
                     record.header("Content-Length"), record.header("Content-Type"))


def _document(record: WarcRecord, text: str, inc: IncFn, content_length: str,
              content_type: str) -> Optional[Document]:
    """The page as a Document, or None counted as tfds names it (no URL, text or date)."""
    url = record.header("WARC-Target-URI")
    timestamp = record.header("WARC-Date")
    if not url:
        inc("filtered:no_url")
        return None
    if not text:
        inc("filtered:no_content")
        return None
    if not timestamp:
        inc("filtered:no_timestamp")
        return None
    inc("passed")
    return Document(url=url, normalized_url=normalize_url(url), text=text, timestamp=timestamp,
                    content_length=content_length, content_type=content_type,
                    source=record.source, offset=record.offset)


def response_to_document(record: WarcRecord, inc: IncFn = null_inc,
                         options: ReadOptions = ReadOptions(),
                         budget: Optional[SlowBudget] = None) -> Optional[Document]:
    """A WARC ``response`` record (HTML) as a Document of its extracted main text, or None
    with a counted reason (corpus.extract lists them). ``budget``: the file's slow budget."""

    url = record.header("WARC-Target-URI")
    extracted = extract_response(record.body, url, record.header, extractor=options.extractor,
                                 timeout=options.extract_timeout,
                                 max_html_bytes=options.max_html_bytes, inc=inc, budget=budget)
    if extracted is None:
        return None
    text = page_text(extracted.text, keep_metadata_like_lines=True)
    page = _document(record, text, inc, str(len(text.encode("utf-8"))), "text/plain")
    if page is not None:
        page.extractor = extracted.extractor
    return page


_URL_SETS: dict[str, frozenset] = {}


def url_set(path: str) -> frozenset:
    """Normalised URLs of ``path`` (a crawl file's records, or one URL per line), read once per
    process."""
    if path not in _URL_SETS:
        if path.endswith(CRAWL_SUFFIXES):
            urls = (r.header("WARC-Target-URI") for r in iter_records(path))
        else:

            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as handle:
                urls = [line.strip() for line in handle]
        _URL_SETS[path] = frozenset(normalize_url(u) for u in urls if u)
    return _URL_SETS[path]


def iter_crawl_documents(path: str, inc: IncFn = null_inc, options: ReadOptions = ReadOptions(),
                   source: Optional[str] = None) -> Iterator[Document]:
    """The pages of one crawl file: ``conversion`` records (WET text) and, from WARC files,
    ``response`` records (main text extracted from the HTML), as ``options.input_format``
    allows. Other record types are counted as ``skipped:record_type:<type>`` (a WET file starts
    with one ``warcinfo`` record; a WARC file holds ``request`` and ``metadata`` records too)."""
    inc("wet-file")
    wanted = {"auto": ("conversion", "response"), "wet": ("conversion",),
              "warc": ("response",)}[options.input_format]
    other = {"wet": "response", "warc": "conversion"}.get(options.input_format)
    allowed = url_set(options.urls_from) if options.urls_from else None
    seen = {"wanted": 0, "other": 0}
    budget = SlowBudget(options.max_slow_share) if options.max_slow_share < 1 else None
    for record in iter_records(path, inc, options, source):
        if record.type not in wanted:
            inc(f"skipped:record_type:{record.type or 'none'}")
            if record.type == other:
                seen["other"] += 1
                if seen["other"] >= MISMATCH_RECORDS and not seen["wanted"]:
                    raise InputFormatError(format_mismatch(path, options.input_format))
            continue
        seen["wanted"] += 1
        if allowed is not None and normalize_url(record.header("WARC-Target-URI")) not in allowed:
            inc("skipped:not_in_urls_from")
            continue
        if record.type == "response":
            document = response_to_document(record, inc, options, budget)
        else:
            document = record_to_document(record, inc, options)
        if document is not None:
            yield document
    if seen["other"] and not seen["wanted"]:
        raise InputFormatError(format_mismatch(path, options.input_format))



def iter_file_documents(path: str, inc: IncFn = null_inc, options: ReadOptions = ReadOptions(),
                        source: Optional[str] = None) -> Iterator[Document]:
    """:func:`iter_crawl_documents` that never raises for one bad file: a file that cannot be opened
    is counted ``skipped:unreadable_file``; an I/O error mid-file keeps every document read
    before it and is counted ``skipped:read_error``. ``corpus clean`` and ``corpus build``
    both read through here, so they skip the same files the same way (``--strict`` turns any
    such skip into a failure, checked by the caller from the counters)."""
    if "://" in path and not path.startswith("file://"):
        yield from _remote_file_documents(path, inc, options)
        return
    try:
        yield from iter_crawl_documents(path, inc, options, source)
    except CrawlReadInterrupted:
        pass  # counted skipped:read_error where it happened
    except CrawlReadError:
        inc("skipped:unreadable_file")


def _remote_file_documents(path: str, inc: IncFn, options: ReadOptions) -> Iterator[Document]:
    """A remote file read whole before its documents and counters are handed on, so that when
    the object changes mid-read (``ObjectChanged``) the file is read again from zero and counted
    once (``read:restarted_files``), never half of each version. A file that cannot be read is
    a counted skip named in the counters (``skipped_file:<url>``)."""
    for _ in range(options.retries + 1):
        counts: dict[str, int] = {}

        def local(name: str, amount: int = 1, counts: dict[str, int] = counts) -> None:
            counts[name] = counts.get(name, 0) + amount

        documents: list[Document] = []
        try:
            for document in iter_crawl_documents(path, local, options):
                documents.append(document)
        except ObjectChanged:
            for name in ("read:retries", "read:resumed_bytes"):
                if counts.get(name):
                    inc(name, counts[name])
            inc("read:restarted_files")
            continue
        except CrawlReadInterrupted:
            local(f"skipped_file:{path}")  # skipped:read_error counted where it happened
        except CrawlReadError:
            local("skipped:unreadable_file")
            local(f"skipped_file:{path}")
        for name, amount in counts.items():
            inc(name, amount)
        yield from documents
        return
    inc("skipped:unreadable_file")
    inc(f"skipped_file:{path}")


WHOLE_FILE_SKIPS = ("skipped:unreadable_file", "skipped:read_error")
# What ``--strict`` refuses, in ``corpus clean`` and ``corpus build`` alike: a file skipped whole
# or cut short (an I/O error mid-file, a gzip stream or a record that ends early).
STRICT_SKIPS = (*WHOLE_FILE_SKIPS, "skipped:truncated_gzip", "skipped:truncated_record")
