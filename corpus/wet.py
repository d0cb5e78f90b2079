"""Reading Common Crawl WET (and WARC) files, streaming, robust to bad input.

Files are opened through smart-open (local paths, ``gs://``, ``s3://``, ``https://``) with its own
decompression switched off: we walk gzip members ourselves with zlib, because recovery needs
control that warcio and fastwarc do not give (both stop at the first corrupt member):

- a corrupt gzip member is skipped and reading resumes at the next gzip header;
- a truncated gzip (file cut short) keeps every complete record before the cut;
- decompressed bytes are bounded per record (``max_record_bytes``, gzip bombs and 50 MB lines
  are counted skips, memory stays bounded) and per member (``max_member_bytes``, time bound);
- a record whose Content-Length runs into the next record is cut there, and the next record is
  still read.

Every skip increments a counter ``skipped:<reason>`` in namespace ``split-wet-file``; documents
that pass are counted as tfds does (``passed``, ``filtered:no_url``, ...).

Page text follows tfds ``split_wet_file``: lines split on universal newlines, stripped, empty
lines dropped, and lines starting with ``WARC``/``CONTENT-``/``Content-`` dropped (a tfds quirk
kept for exactness; ``keep_metadata_like_lines=True`` switches it off).
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from typing import Optional

from c4forge.core.counters import IncFn, null_inc
from c4forge.core.errors import C4forgeError
from c4forge.corpus.document import Document
from c4forge.corpus.remote import ObjectChanged
from c4forge.corpus.urls import normalize_url
from c4forge.corpus.warc import WarcRecord

GZIP_MAGIC = b"\x1f\x8b\x08"
READ_CHUNK = 1 << 20
FEED_CHUNK = 16 << 10
OUT_CHUNK = 1 << 20
DEFAULT_MAX_RECORD_BYTES = 16 << 20
DEFAULT_MAX_MEMBER_BYTES = 8 << 30
MAX_HEADER_BYTES = 1 << 20
RESYNC_WINDOW = 64 << 20
METADATA_PREFIXES = ("WARC", "CONTENT-", "Content-")
_NEWLINES = re.compile(r"\r\n|\r|\n")
# C0 control characters other than \t \n \v \f \r: text has (almost) none of them.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13))
BINARY_CONTROL_SHARE = 0.01


class CrawlReadError(C4forgeError, RuntimeError):
    """A crawl file that cannot be opened at all (missing, no permission, unreachable)."""


class CrawlReadInterrupted(CrawlReadError):
    """An I/O error part-way through a file (the records before it were yielded)."""


INPUT_FORMATS = ("auto", "wet", "warc")


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    """Bounds of the reader; defaults suit Common Crawl (records are at most a few MB).

    input_format: "wet" reads ``conversion`` records (Common Crawl's text), "warc" ``response``
        records (HTML, main text extracted: corpus.extract), "auto" each record by its type.
    extractor: "cascade" (resiliparse, and trafilatura on the pages the router picks),
        "trafilatura" or "resiliparse" (WARC input; corpus.extract).
    extract_timeout: seconds per page for the extractor (0: no limit).
    max_html_bytes: larger HTML payloads are skipped (``skipped:html_too_large``).
    urls_from: keep only pages whose normalised URL is in this file: a crawl file (its records'
        WARC-Target-URI) or a text file of URLs, one per line (``skipped:not_in_urls_from``).
        Compares two starting points (WET vs WARC) on the same pages.
    retries / retry_seconds: remote files (https, s3, gs): attempts after the first and the
        most seconds spent waiting between them, per file (corpus.remote.RemotePolicy).
    retry_backoff: the first backoff wait in seconds (doubling per attempt, full jitter).
    timeout: seconds to connect to a remote server and between bytes of its response.
    """

    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES
    keep_metadata_like_lines: bool = False
    binary_control_share: float = BINARY_CONTROL_SHARE
    input_format: str = "wet"
    extractor: str = "cascade"
    extract_timeout: float = 10.0
    max_html_bytes: int = 4 << 20
    urls_from: str = ""
    retries: int = 8
    retry_seconds: float = 300.0
    retry_backoff: float = 1.0
    timeout: float = 60.0


# --------------------------------------------------------------------------- inputs

CRAWL_SUFFIXES = (".wet", ".wet.gz", ".warc", ".warc.gz", ".arc", ".arc.gz")


def expand_inputs(patterns: Iterable[str]) -> list[str]:
    """Local globs expanded and sorted; a directory expands to the crawl files directly in it
    (names ending .wet, .wet.gz, .warc, .warc.gz); URLs (``scheme://``) pass through unchanged.
    Anything named that cannot be read as a file is an error naming it (:class:`CrawlReadError`):
    a pattern that matches nothing, a dangling symlink, a directory with no crawl files."""
    paths: list[str] = []
    for pattern in patterns:
        if "://" in pattern:
            paths.append(pattern)
            continue
        matches = sorted(glob.glob(os.path.expanduser(pattern)))
        if not matches:
            if os.path.islink(pattern):
                raise CrawlReadError(f"{pattern} is a dangling symbolic link")
            raise CrawlReadError(f"no such file: {pattern}")
        for match in matches:
            if os.path.isdir(match):
                found = sorted(os.path.join(match, name) for name in os.listdir(match)
                               if name.endswith(CRAWL_SUFFIXES)
                               and os.path.isfile(os.path.join(match, name)))
                if not found:
                    raise CrawlReadError(f"{match} is a directory with no crawl files "
                                         f"(names ending {', '.join(CRAWL_SUFFIXES)})")
                paths.extend(found)
            elif os.path.isfile(match):
                paths.append(match)
            elif os.path.islink(match):
                raise CrawlReadError(f"{match} is a dangling symbolic link")
            else:
                raise CrawlReadError(f"{match} is not a regular file")
    return paths


def remote_policy(options: ReadOptions):
    """The remote-reading policy the read settings give (corpus.remote.RemotePolicy)."""
    from c4forge.corpus.remote import RemotePolicy

    return RemotePolicy(retries=options.retries, retry_seconds=options.retry_seconds,
                        backoff_base=options.retry_backoff, timeout=options.timeout)


def open_raw(path: str, options: ReadOptions = ReadOptions(), inc: IncFn = null_inc):
    """A binary stream of the file's bytes as stored (no decompression). Remote files are read
    through :class:`corpus.remote.ResumingReader` (retries, resume at the byte, politeness)."""
    if "://" in path and not path.startswith("file://"):
        from c4forge.corpus.remote import RemoteReadError, ResumingReader

        try:
            return ResumingReader(path, remote_policy(options), inc)
        except RemoteReadError as exc:
            raise CrawlReadError(f"cannot open {exc}") from exc
    import smart_open

    try:
        return smart_open.open(path, "rb", compression="disable")
    except Exception as exc:  # smart-open raises many types (OSError, botocore, http)
        raise CrawlReadError(f"cannot open {path}: {type(exc).__name__}: {exc}") from exc


# --------------------------------------------------------------------------- gzip layer

_BREAK = None  # a discontinuity in the decompressed stream (corrupt or abandoned member)


class _CompressedInput:
    """The raw bytes of a gzip file, read in ``READ_CHUNK`` pieces into one buffer and consumed
    by offset. Common Crawl files hold one gzip member per record (a few KB each), so copying
    the read buffer per member (as slicing it would) costs more than decompressing; here a
    member is fed to zlib in views of at most ``FEED_CHUNK`` bytes and nothing is copied. The
    bytes of the member being decoded stay in the buffer (up to ``RESYNC_WINDOW``), so a corrupt
    member can be rescanned for the next header. Offsets are file offsets."""

    def __init__(self, raw, first: bytes) -> None:
        self.raw = raw
        self.buf = bytearray(first)
        self.base = 0  # file offset of buf[0]
        self.pos = 0  # file offset of the next unconsumed byte
        self.keep = None  # file offset the buffer must keep (start of the member being decoded)
        self.eof = False

    def available(self) -> int:
        return self.base + len(self.buf) - self.pos

    def refill(self) -> bool:
        if self.eof:
            return False
        data = self.raw.read(READ_CHUNK)
        if not data:
            self.eof = True
            return False
        start = self.pos if self.keep is None else min(self.keep, self.pos)
        drop = start - self.base
        if drop:
            del self.buf[:drop]
            self.base = start
        self.buf.extend(data)
        return True

    def ensure(self, n: int) -> bool:
        """At least ``n`` unconsumed bytes, reading more as needed (False at end of file)."""
        while self.available() < n:
            if not self.refill():
                return False
        return True

    def startswith(self, prefix: bytes) -> bool:
        start = self.pos - self.base
        return self.buf[start:start + len(prefix)] == prefix

    def find(self, needle: bytes, start: int) -> int:
        """File offset of the next ``needle`` at or after file offset ``start``, reading more as
        needed; -1 at end of file (everything is then consumed)."""
        while True:
            idx = self.buf.find(needle, max(start - self.base, 0))
            if idx >= 0:
                return self.base + idx
            start = max(start, self.base + len(self.buf) - len(needle) + 1)
            self.pos = max(self.pos, min(start, self.base + len(self.buf)))
            if not self.refill():
                self.pos = self.base + len(self.buf)
                return -1

    def window_find(self, needle: bytes, start: int, end: int) -> int:
        """File offset of ``needle`` within [start, end) of the kept bytes, or -1."""
        idx = self.buf.find(needle, start - self.base, end - self.base)
        return -1 if idx < 0 else self.base + idx


def _decompressed_pieces(raw, inc: IncFn, options: ReadOptions
                         ) -> Iterator[Optional[tuple[Optional[int], bytes]]]:
    """Yield ``(member offset, bytes)`` pieces of the decompressed stream, and ``None`` where the
    stream breaks. Plain (non-gzip) files yield ``(None, bytes)``."""
    first = raw.read(READ_CHUNK)
    if not first:
        inc("skipped:empty_file")
        return
    if not first.startswith(b"\x1f\x8b"):
        while first:
            yield None, first
            first = raw.read(READ_CHUNK)
        return

    src = _CompressedInput(raw, first)
    while True:
        if not src.ensure(1):
            return
        if not (src.ensure(len(GZIP_MAGIC)) and src.startswith(GZIP_MAGIC)):
            found = src.find(GZIP_MAGIC, src.pos + 1)
            inc("skipped:junk_between_members")
            yield _BREAK
            if found < 0:
                return
            src.pos = found
            continue

        member_pos = src.keep = src.pos
        decomp = zlib.decompressobj(31)
        produced = 0
        outcome = "need_input"
        while outcome == "need_input":
            if not src.ensure(1):
                outcome = "truncated"
                break
            if src.keep is not None and src.pos - member_pos >= RESYNC_WINDOW:
                src.keep = None  # too far into one member to rescan it: let the bytes go
            start = src.pos - src.base
            end = min(start + FEED_CHUNK, len(src.buf))
            left = 0  # bytes of this feed that are not part of the member
            with memoryview(src.buf) as view, view[start:end] as fed:
                data = fed
                while True:
                    try:
                        out = decomp.decompress(data, OUT_CHUNK)
                    except zlib.error:
                        outcome = "corrupt"
                        break
                    if out:
                        produced += len(out)
                        if produced > options.max_member_bytes:
                            outcome = "too_large"
                            left = len(decomp.unconsumed_tail)
                            break
                        yield member_pos, out
                    if decomp.eof:
                        left = len(decomp.unused_data)
                        outcome = "done"
                        break
                    data = decomp.unconsumed_tail
                    if not data:
                        break
            src.pos += end - start - left

        rescan = src.keep is not None
        src.keep = None
        if outcome == "done":
            continue
        if outcome == "truncated":
            inc("skipped:truncated_gzip")
            yield _BREAK
            return
        if outcome == "too_large":
            inc("skipped:gzip_member_too_large")
            yield _BREAK
        else:  # corrupt: the next member may start anywhere after this one's header
            inc("skipped:corrupt_gzip_member")
            yield _BREAK
            restart = src.window_find(GZIP_MAGIC, member_pos + 1, src.pos) if rescan else -1
            if restart >= 0:
                src.pos = restart
                continue
        found = src.find(GZIP_MAGIC, src.pos)
        if found < 0:
            return
        src.pos = found


# --------------------------------------------------------------------------- record layer

class _RecordParser:
    """Incremental WARC record parser over decompressed pieces, resynchronising on ``WARC/``."""

    def __init__(self, source: str, inc: IncFn, options: ReadOptions) -> None:
        self.source = source
        self.inc = inc
        self.options = options
        self.buf = bytearray()
        self.buf_pos = 0  # stream position of buf[0]
        self.members: list[tuple[int, int]] = []  # (stream position, member offset)
        self.state = "seek"
        self.headers: dict[str, str] = {}
        self.record_type = ""
        self.record_pos = 0
        self.length = 0
        self.discard = 0
        self.scanned = 0  # bytes of buf already searched for a following record header
        self.junk = False

    # -- inputs
    def feed(self, member_offset: Optional[int], data: bytes) -> Iterator[WarcRecord]:
        """Take the next decompressed bytes; ``member_offset`` is None for uncompressed files,
        whose records are located by their stream position."""
        stream_pos = self.buf_pos + len(self.buf)
        if member_offset is not None and (not self.members or self.members[-1][1] != member_offset):
            if self.state in ("body", "discard") and data.startswith(b"WARC/1."):
                # A member that starts a new record while the last one still wanted bytes:
                # whatever its Content-Length claimed, the last record ends here (writers put
                # one record per member); resume at the new one.
                if self.state == "body":
                    self._truncated()
                self._drop(len(self.buf))
                self.state = "seek"
            self.members.append((stream_pos, member_offset))
        self.buf.extend(data)
        yield from self._parse(final=False)

    def brk(self) -> None:
        """The stream broke: whatever partial record we hold is lost; look for the next one."""
        if self.state in ("header", "body"):
            self._truncated()
        elif self.state == "discard":
            self.state = "seek"
        self.buf_pos += len(self.buf)
        self.buf.clear()

    def finish(self) -> Iterator[WarcRecord]:
        yield from self._parse(final=True)
        if self.state in ("header", "body"):
            self._truncated()
        if self.junk:
            self.inc("skipped:junk")
            self.junk = False

    # -- helpers
    def _truncated(self) -> None:
        self.inc("skipped:truncated_record")
        self.state = "seek"

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
        while True:
            if self.state == "seek":
                idx = self._find_record_start()
                if idx < 0:
                    keep = 8
                    if len(self.buf) > keep:
                        if self.buf[: len(self.buf) - keep].strip():
                            self.junk = True
                        self._drop(len(self.buf) - keep)
                    return
                if self.buf[:idx].strip():
                    self.junk = True
                if self.junk:
                    self.inc("skipped:junk")
                    self.junk = False
                self._drop(idx)
                self.record_pos = self.buf_pos
                self.state = "header"
            if self.state == "header":
                end, sep = self._header_end()
                if end < 0:
                    if len(self.buf) > MAX_HEADER_BYTES:
                        self.inc("skipped:bad_header")
                        self._drop(5)
                        self.state = "seek"
                        continue
                    return
                if not self._parse_headers(bytes(self.buf[:end])):
                    self.inc("skipped:bad_header")
                    self._drop(5)
                    self.state = "seek"
                    continue
                self._drop(end + sep)
                self.scanned = 0
                if self.length > self.options.max_record_bytes:
                    self.inc("skipped:record_too_large")
                    self.discard = self.length
                    self.state = "discard"
                else:
                    self.state = "body"
            if self.state == "discard":
                # Skip the over-long record's bytes, but stop at the next record header inside
                # them: a Content-Length far larger than the body must not swallow the records
                # that follow it.
                cut = _overrun(self.buf, max(0, self.scanned - _HEADER_OVERLAP))
                if 0 <= cut <= self.discard:
                    self._drop(cut)
                    self.discard = 0
                    self.state = "seek"
                    continue
                n = min(self.discard, max(0, len(self.buf) - _HEADER_OVERLAP))
                if final:
                    n = min(self.discard, len(self.buf))
                self._drop(n)
                self.discard -= n
                self.scanned = len(self.buf)
                if self.discard:
                    return
                self.state = "seek"
                continue
            if self.state == "body":
                if len(self.buf) < self.length:
                    # Not all bytes yet: if the next record already starts inside what we
                    # hold, Content-Length was wrong; cut here instead of waiting (possibly
                    # to the end of the file, losing every record after this one).
                    cut = _overrun(self.buf, max(0, self.scanned - _HEADER_OVERLAP))
                    self.scanned = len(self.buf)
                    if cut >= 0:
                        self._drop(cut)
                        self._truncated()
                        continue
                    return
                body = bytes(self.buf[: self.length])
                cut = _overrun(body)
                if cut >= 0:
                    # Content-Length ran into the next record: this one is truncated.
                    self._drop(cut)
                    self._truncated()
                    continue
                self._drop(self.length)
                self.state = "seek"
                yield WarcRecord(self.record_type, self.headers, body, self.source,
                                 self._member_offset(self.record_pos))

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
        lf = self.buf.find(b"\n\n")
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
        lines = _NEWLINES.split(text)
        if not lines[0].startswith("WARC/"):
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip()] = value.strip()
        length = next((v for k, v in headers.items() if k.lower() == "content-length"), None)
        if length is None or not length.isdigit():
            return False
        self.headers = headers
        self.length = int(length)
        self.record_type = next((v for k, v in headers.items() if k.lower() == "warc-type"), "")
        return True


_HEADER_OVERLAP = 512  # a record header split across two reads is still found


def _overrun(body, start: int = 0) -> int:
    """Where a following record's header starts inside ``body`` (a wrong Content-Length), or -1.
    Checks only for a full ``WARC/1.x`` line followed by a ``WARC-`` header, so page text that
    merely mentions WARC is not cut."""
    idx = body.find(b"\nWARC/1.", start)
    while idx >= 0:
        line_end = body.find(b"\n", idx + 1)
        if line_end >= 0 and body[line_end + 1: line_end + 6] == b"WARC-":
            return idx + 1
        idx = body.find(b"\nWARC/1.", idx + 1)
    return -1


def iter_records(path: str, inc: IncFn = null_inc, options: ReadOptions = ReadOptions(),
                 source: Optional[str] = None) -> Iterator[WarcRecord]:
    """Every well-formed WARC record of one file, in order (``source``: the name records carry,
    ``path`` by default). Raises :class:`CrawlReadError` only when the file cannot be opened;
    every fault inside it is a counted skip."""
    raw = open_raw(path, options, inc)
    parser = _RecordParser(source or path, inc, options)
    try:
        for piece in _decompressed_pieces(raw, inc, options):
            if piece is _BREAK:
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


# --------------------------------------------------------------------------- documents

def page_text(body: str, keep_metadata_like_lines: bool = False) -> str:
    """tfds ``split_wet_file`` text: stripped, non-empty lines joined by ``\\n``."""
    lines = (line.strip() for line in _NEWLINES.split(body))
    if keep_metadata_like_lines:
        return "\n".join(line for line in lines if line)
    return "\n".join(line for line in lines if line and not line.startswith(METADATA_PREFIXES))


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
                         options: ReadOptions = ReadOptions()) -> Optional[Document]:
    """A WARC ``response`` record (HTML) as a Document of its extracted main text, or None
    with a counted reason (corpus.extract lists them)."""
    from c4forge.corpus.extract import response_text

    url = record.header("WARC-Target-URI")
    extracted = response_text(record.body, url, record.header, extractor=options.extractor,
                              timeout=options.extract_timeout,
                              max_html_bytes=options.max_html_bytes, inc=inc)
    if extracted is None:
        return None
    text = page_text(extracted, keep_metadata_like_lines=True)
    return _document(record, text, inc, str(len(text.encode("utf-8"))), "text/plain")


_URL_SETS: dict[str, frozenset] = {}


def url_set(path: str) -> frozenset:
    """Normalised URLs of ``path`` (a crawl file's records, or one URL per line), read once per
    process."""
    if path not in _URL_SETS:
        if path.endswith(CRAWL_SUFFIXES):
            urls = (r.header("WARC-Target-URI") for r in iter_records(path))
        else:
            import gzip

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
            document = response_to_document(record, inc, options)
        else:
            document = record_to_document(record, inc, options)
        if document is not None:
            yield document
    if seen["other"] and not seen["wanted"]:
        raise InputFormatError(format_mismatch(path, options.input_format))


MISMATCH_RECORDS = 3  # records of the other format, and none of ours, that decide a mismatch


class InputFormatError(C4forgeError):
    """A WARC file read as WET or a WET file read as WARC: every page would be skipped."""

    exit_code = 2


def format_mismatch(path: str, input_format: str) -> str:
    if input_format == "wet":
        return (f"{path} holds WARC response records (HTML), not WET text: read it with "
                "--input-format warc (or --preset c4-warc), or --input-format auto")
    return (f"{path} holds WET conversion records (text), not WARC responses: read it with "
            "--input-format wet, or --input-format auto")


def sniff_format(path: str, options: ReadOptions = ReadOptions(), records: int = 20) -> Optional[str]:
    """"wet" or "warc" by a local file's first page records (conversion or response), None when
    they say nothing (no such records, unreadable, or not a local file). Cheap: stops at the
    first page record."""
    if "://" in path:
        return None
    try:
        for i, record in enumerate(iter_records(path, null_inc, options)):
            if record.type in ("conversion", "response"):
                return "wet" if record.type == "conversion" else "warc"
            if i >= records:
                return None
    except (CrawlReadError, OSError):
        return None
    return None


def check_input_formats(paths: Iterable[str], options: ReadOptions) -> None:
    """Refuse, before any work, local crawl files whose records do not match
    ``options.input_format`` (a WARC file read as WET yields zero documents, silently)."""
    if options.input_format == "auto":
        return
    for path in paths:
        found = sniff_format(path, options)
        if found is not None and found != options.input_format:
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
