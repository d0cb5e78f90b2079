"""WARC records and the HTTP messages inside them: the parsing both readers share.

``corpus.records`` splits a (gzipped) WARC/WET file into :class:`WarcRecord` s; ``corpus.extract``
takes a ``response`` record's HTTP block apart (:func:`split_http_block`, :func:`http_status`)
to reach the HTML. Both read header lines through :func:`header_block_fields`. Neither imports
the other for this, so the reader and the extractor stay independent (tests/test_architecture.py
checks there is no import circle).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional

NEWLINES = re.compile(r"\r\n|\r|\n")  # universal newlines, as str.splitlines() minus the rare ones
_STATUS = re.compile(rb"^HTTP/\d(?:\.\d)?\s+(\d{3})")


@dataclasses.dataclass
class WarcRecord:
    """One WARC record: its type, headers (names as written), raw body, and where it starts."""

    type: str
    headers: dict[str, str]
    body: bytes
    source: str
    offset: int
    # {name lower-cased: value of its first occurrence}, built once (a page asks for 4 headers)
    by_lower_name: Optional[dict[str, str]] = dataclasses.field(default=None, compare=False, repr=False)

    def header(self, name: str, default: str = "") -> str:
        """The value of the first header named ``name`` in any case."""
        if self.by_lower_name is None:
            self.by_lower_name = first_by_lower_name(self.headers)
        return self.by_lower_name.get(name.lower(), default)


def first_by_lower_name(headers: dict[str, str]) -> dict[str, str]:
    """{name lower-cased: the value of the first name that lower-cases to it}."""
    lowered: dict[str, str] = {}
    for key, value in headers.items():
        lowered.setdefault(key.lower(), value)
    return lowered


def http_payload(record: WarcRecord) -> tuple[dict[str, str], bytes]:
    """HTTP headers and payload of a WARC ``response`` record (for HTML extraction)."""
    return split_http_block(record.body)


def split_http_block(body: bytes) -> tuple[dict[str, str], bytes]:
    """(headers as written, payload) of an HTTP message block; ({}, body) when the block has
    no end of headers."""
    end = body.find(b"\r\n\r\n")
    sep = 4
    if end < 0:
        end, sep = body.find(b"\n\n"), 2
    if end < 0:
        return {}, body
    _, headers = header_block_fields(body[:end].decode("latin-1"))
    return headers, body[end + sep:]


def header_block_fields(block: str) -> tuple[str, dict[str, str]]:
    """(first line, {name: value}) of a header block (a WARC record's or an HTTP message's):
    one field per ``name: value`` line, names as written, both stripped; lines without a colon
    are ignored; a repeated name keeps its last value."""
    lines = NEWLINES.split(block)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    return lines[0], headers


def http_status(block: bytes) -> Optional[int]:
    """The status code of an HTTP response block, or None when it does not start with a status
    line (``HTTP/1.1 200 OK``)."""
    match = _STATUS.match(block)
    return int(match.group(1)) if match else None


def length_value(value: str) -> Optional[int]:
    """A Content-Length header's value as a number, or None unless it is ASCII digits only
    (``"88³".isdigit()`` is True, and int() refuses it: a fuzz finding)."""
    return int(value) if value.isascii() and value.isdigit() else None
