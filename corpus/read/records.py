"""The record layer of the crawl reader: WARC/WET records out of the decompressed stream, with
resynchronisation on ``WARC/`` (junk, a wrong Content-Length, a record cut by a broken gzip
member: each a counted skip, never the loss of the records after it); records are bounded by
``max_record_bytes`` (gzip bombs and 50 MB lines are counted skips, memory stays bounded).
:func:`iter_records` is the reader's three layers together: opening (corpus/read/opening.py),
gzip members (corpus/read/gzip_members.py) and this parser.
"""
from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Optional

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus.read.gzip_members import BREAK, decompressed_pieces
from c4forge.corpus.read.opening import open_raw
from c4forge.corpus.read.options import CrawlReadInterrupted, ReadOptions
from c4forge.corpus.read.remote import ObjectChanged
from c4forge.corpus.read.warc import WarcRecord, first_by_lower_name, header_block_fields, length_value

MAX_HEADER_BYTES = 1 << 20


# What a parser state's handler says next (``_RecordParser._parse``).
WAIT, AGAIN, NEXT = "wait", "again", "next"


class ParserState(enum.Enum):
    SEEK = "looking for the next WARC/ line"
    HEADER = "reading a record's header block"
    BODY = "reading a record's Content-Length bytes"
    DISCARD = "skipping an over-long record's bytes"


class _RecordParser:
    """Incremental WARC record parser over decompressed pieces, resynchronising on ``WARC/``."""

    def __init__(self, source: str, inc: IncFn, options: ReadOptions) -> None:
        self.source = source
        self.inc = inc
        self.options = options
        self.buf = bytearray()
        self.buf_pos = 0  # stream position of buf[0]
        self.members: list[tuple[int, int]] = []  # (stream position, member offset)
        self.state = ParserState.SEEK
        self.headers: dict[str, str] = {}
        self.by_lower_name: dict[str, str] = {}
        self.record_type = ""
        self.record_pos = 0
        self.length = 0
        self.discard = 0
        self.scanned = 0  # bytes of buf already searched for a following record header
        self.resume = 0  # where the search of a body that is still arriving goes on (_overrun)
        self.junk = False

    # -- inputs
    def feed(self, member_offset: Optional[int], data: bytes) -> Iterator[WarcRecord]:
        """Take the next decompressed bytes; ``member_offset`` is None for uncompressed files,
        whose records are located by their stream position."""
        stream_pos = self.buf_pos + len(self.buf)
        if member_offset is not None and (not self.members or self.members[-1][1] != member_offset):
            if self.state in (ParserState.BODY, ParserState.DISCARD) and data.startswith(b"WARC/1."):
                # A member that starts a new record while the last one still wanted bytes:
                # whatever its Content-Length claimed, the last record ends here (writers put
                # one record per member); resume at the new one.
                if self.state == ParserState.BODY:
                    self._truncated()
                self._drop(len(self.buf))
                self.state = ParserState.SEEK
            self.members.append((stream_pos, member_offset))
        self.buf.extend(data)
        yield from self._parse(final=False)

    def brk(self) -> None:
        """The stream broke: whatever partial record we hold is lost; look for the next one."""
        if self.state in (ParserState.HEADER, ParserState.BODY):
            self._truncated()
        elif self.state == ParserState.DISCARD:
            self.state = ParserState.SEEK
        self.buf_pos += len(self.buf)
        self.buf.clear()

    def finish(self) -> Iterator[WarcRecord]:
        yield from self._parse(final=True)
        if self.state in (ParserState.HEADER, ParserState.BODY):
            self._truncated()
        if self.junk:
            self.inc("skipped:junk")
            self.junk = False

    # -- helpers
    def _truncated(self) -> None:
        self.inc("skipped:truncated_record")
        self.state = ParserState.SEEK

    def _drop(self, n: int) -> None:
        del self.buf[:n]
        self.buf_pos += n

    def _member_offset(self, stream_pos: int) -> int:
        offset = stream_pos
        keep = 0
        for i, (pos, member) in enumerate(self.members):
            if pos <= stream_pos:
                offset, keep = member, i
            else:
                break
        del self.members[:keep]
        return offset

    def _parse(self, final: bool) -> Iterator[WarcRecord]:
        """The records complete in the buffer. Each state's handler moves the parser on and
        says what next: WAIT (more bytes are needed), AGAIN (start over from the new state) or,
        falling through, the next state's check in this pass."""
        while True:
            if self.state == ParserState.SEEK and self._seek() is WAIT:
                return
            if self.state == ParserState.HEADER:
                step = self._header()
                if step is WAIT:
                    return
                if step is AGAIN:
                    continue
            if self.state == ParserState.DISCARD:
                if self._discard(final) is WAIT:
                    return
                continue
            if self.state == ParserState.BODY:
                record = self._body()
                if record is WAIT:
                    return
                if record is not AGAIN:
                    yield record

    def _seek(self):
        """To the next record's start (what comes before it, if not blank, is counted junk)."""
        idx = self._find_record_start()
        if idx < 0:
            keep = 8
            if len(self.buf) > keep:
                if self.buf[: len(self.buf) - keep].strip():
                    self.junk = True
                self._drop(len(self.buf) - keep)
            return WAIT
        if self.buf[:idx].strip():
            self.junk = True
        if self.junk:
            self.inc("skipped:junk")
            self.junk = False
        self._drop(idx)
        self.record_pos = self.buf_pos
        self.state = ParserState.HEADER
        return NEXT

    def _header(self):
        """The record's headers: a bad or endless header block is counted and skipped."""
        end, sep = self._header_end()
        if end < 0:
            if len(self.buf) > MAX_HEADER_BYTES:
                self.inc("skipped:bad_header")
                self._drop(5)
                self.state = ParserState.SEEK
                return AGAIN
            return WAIT
        if not self._parse_headers(bytes(self.buf[:end])):
            self.inc("skipped:bad_header")
            self._drop(5)
            self.state = ParserState.SEEK
            return AGAIN
        self._drop(end + sep)
        self.scanned = self.resume = 0
        if self.length > self.options.max_record_bytes:
            self.inc("skipped:record_too_large")
            self.discard = self.length
            self.state = ParserState.DISCARD
        else:
            self.state = ParserState.BODY
        return NEXT

    def _discard(self, final: bool):
        """Skip an over-long record's bytes, but stop at the next record header inside them: a
        Content-Length far larger than the body must not swallow the records that follow it."""
        cut, _ = _overrun(self.buf, max(0, self.scanned - _HEADER_OVERLAP))
        if 0 <= cut <= self.discard:
            self._drop(cut)
            self.discard = 0
            self.state = ParserState.SEEK
            return AGAIN
        n = min(self.discard, max(0, len(self.buf) - _HEADER_OVERLAP))
        if final:
            n = min(self.discard, len(self.buf))
        self._drop(n)
        self.discard -= n
        self.scanned = len(self.buf)
        if self.discard:
            return WAIT
        self.state = ParserState.SEEK
        return AGAIN

    def _body(self):
        """The record, once its Content-Length bytes are in; cut short where the next record
        already starts inside them (Content-Length was wrong)."""
        if len(self.buf) < self.length:
            # Not all bytes yet: if the next record already starts inside what we hold,
            # Content-Length was wrong; cut here instead of waiting (possibly to the end of
            # the file, losing every record after this one).
            cut, self.resume = _overrun(self.buf, self.resume)
            if cut >= 0:
                self._drop(cut)
                self._truncated()
                return AGAIN
            return WAIT
        with memoryview(self.buf) as view, view[: self.length] as head:
            body = bytes(head)  # one copy (bytes(buf[:n]) copies twice)
        cut, _ = _overrun(body, self.resume)  # before resume: searched while it arrived
        if cut >= 0:  # Content-Length ran into the next record: this one is truncated
            self._drop(cut)
            self._truncated()
            return AGAIN
        self._drop(self.length)
        self.state = ParserState.SEEK
        return WarcRecord(self.record_type, self.headers, body, self.source,
                          self._member_offset(self.record_pos), self.by_lower_name)

    def _find_record_start(self) -> int:
        buf = self.buf
        start = 0
        while True:
            idx = buf.find(b"WARC/", start)
            if idx < 0:
                return -1
            if idx == 0 or buf[idx - 1] in (10, 13):
                return idx
            start = idx + 1

    def _header_end(self) -> tuple[int, int]:
        crlf = self.buf.find(b"\r\n\r\n")
        # a \n\n counts only before the first \r\n\r\n: no need to search the body after it
        lf = self.buf.find(b"\n\n", 0, crlf + 2) if crlf >= 0 else self.buf.find(b"\n\n")
        if crlf >= 0 and (lf < 0 or crlf <= lf):
            return crlf, 4
        if lf >= 0:
            return lf, 2
        return -1, 0

    def _parse_headers(self, block: bytes) -> bool:
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            text = block.decode("latin-1")
        first, headers = header_block_fields(text)
        if not first.startswith("WARC/"):
            return False
        lowered = first_by_lower_name(headers)
        length = length_value(lowered.get("content-length", ""))
        if length is None:
            return False
        self.headers = headers
        self.by_lower_name = lowered
        self.length = length
        self.record_type = lowered.get("warc-type", "")
        return True


_HEADER_OVERLAP = 512  # a record header split across two reads is still found


def _overrun(body, start: int = 0) -> tuple[int, int]:
    """(where a following record's header starts inside ``body`` (a wrong Content-Length) or -1,
    where a later search of ``body`` grown longer must start). Checks only for a full
    ``WARC/1.x`` line followed by a ``WARC-`` header, so page text that merely mentions WARC is
    not cut; a candidate whose lines are not all in ``body`` yet is searched again later, so
    searching a body as it arrives finds what searching it whole from ``start`` finds."""
    idx = body.find(b"\nWARC/1.", start)
    while idx >= 0:
        line_end = body.find(b"\n", idx + 1)
        if line_end < 0 or line_end + 6 > len(body):
            return -1, idx
        if body[line_end + 1: line_end + 6] == b"WARC-":
            return idx + 1, idx
        idx = body.find(b"\nWARC/1.", idx + 1)
    return -1, max(start, len(body) - 7)  # a needle cut at the end starts again


def iter_records(path: str, inc: IncFn = null_inc, options: ReadOptions = ReadOptions(),
                 source: Optional[str] = None) -> Iterator[WarcRecord]:
    """Every well-formed WARC record of one file, in order (``source``: the name records carry,
    ``path`` by default). Raises :class:`CrawlReadError` only when the file cannot be opened;
    every fault inside it is a counted skip."""
    raw = open_raw(path, options, inc)
    parser = _RecordParser(source or path, inc, options)
    try:
        for piece in decompressed_pieces(raw, inc, options):
            if piece is BREAK:
                parser.brk()
            else:
                yield from parser.feed(*piece)
        yield from parser.finish()
    except OSError as exc:  # network or disk failure mid-file: keep what was read
        if isinstance(exc, ObjectChanged):  # the caller starts the file again
            raise
        inc("skipped:read_error")
        parser.brk()
        raise CrawlReadInterrupted(f"read error in {path}: {exc}") from exc
    finally:
        raw.close()
