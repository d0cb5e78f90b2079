"""The gzip layer of the crawl reader: a file's gzip members decompressed one after another
recovering where warcio and fastwarc stop (both end at the first corrupt member):

- a corrupt gzip member is skipped and reading resumes at the next gzip header;
- a truncated gzip (file cut short) keeps every complete record before the cut;
- decompressed bytes are bounded per member (``max_member_bytes``, a time bound);
- junk between members is skipped to the next header.

Every skip is counted (``skipped:<reason>``) and marked in the stream by :data:`BREAK`, where
the record parser (corpus/read/records.py) drops the record it was reading.

Members are inflated by ISA-L (python-isal's ``isal_zlib``, zlib's interface, about 1.9x zlib's
speed) where it ends them cleanly, else by zlib (:func:`_member_pieces`): what is read, kept and
counted is zlib's on every file (tests/test_wet.py compares the two on damaged files).
"""
from __future__ import annotations

import zlib
from collections.abc import Generator, Iterator
from typing import Optional

from isal import isal_zlib

from c4forge.core.counters import IncFn
from c4forge.corpus.read.options import ReadOptions

GZIP_MAGIC = b"\x1f\x8b\x08"
READ_CHUNK = 1 << 20
FEED_CHUNK = 16 << 10
OUT_CHUNK = 1 << 20
RESYNC_WINDOW = 64 << 20

INFLATE_ERRORS = (isal_zlib.error, zlib.error)
FAST_MEMBER_BYTES = 8 << 20  # members inflated whole by ISA-L, in and out; larger ones by zlib

BREAK = None  # a discontinuity in the decompressed stream (corrupt or abandoned member)


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
        self.error: Optional[OSError] = None  # what the last read raised, if it failed

    def available(self) -> int:
        return self.base + len(self.buf) - self.pos

    def refill(self) -> bool:
        if self.error is not None:  # a failed read is not retried: it fails again, here
            raise self.error
        if self.eof:
            return False
        try:
            data = self.raw.read(READ_CHUNK)
        except OSError as exc:
            self.error = exc
            raise
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


def decompressed_pieces(raw, inc: IncFn, options: ReadOptions
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
    while src.ensure(1):
        if not (src.ensure(len(GZIP_MAGIC)) and src.startswith(GZIP_MAGIC)):
            found = src.find(GZIP_MAGIC, src.pos + 1)
            inc("skipped:junk_between_members")
            yield BREAK
            if found < 0:
                return
            src.pos = found
            continue

        member_pos = src.keep = src.pos
        outcome = yield from _member_pieces(src, member_pos, options)

        rescan = src.keep is not None
        src.keep = None
        if outcome == "done":
            continue
        if outcome == "truncated":
            inc("skipped:truncated_gzip")
            yield BREAK
            return
        if outcome == "too_large":
            inc("skipped:gzip_member_too_large")
            yield BREAK
        else:  # corrupt: the next member may start anywhere after this one's header
            inc("skipped:corrupt_gzip_member")
            yield BREAK
            restart = src.window_find(GZIP_MAGIC, member_pos + 1, src.pos) if rescan else -1
            if restart >= 0:
                src.pos = restart
                continue
        found = src.find(GZIP_MAGIC, src.pos)
        if found < 0:
            return
        src.pos = found


def _member_pieces(src: _CompressedInput, member_pos: int, options: ReadOptions
                   ) -> Generator[tuple[int, bytes], None, str]:
    """The pieces of the gzip member at ``member_pos``; returns how it ended: "done",
    "truncated" (the file ended inside it), "too_large" or "corrupt".

    ISA-L inflates the member whole first, held back (a Common Crawl member is a few KB). Only a
    member it ends cleanly within ``FAST_MEMBER_BYTES`` is handed on; any other is inflated
    again by zlib from its first byte, streamed, and its end is zlib's: ISA-L accepts some
    damaged streams that zlib refuses (it then read on to the end of the file, where zlib
    stops at the fault and the members after it are kept: seen on randomly damaged files). A
    read that fails inside the member is replayed too: zlib hands on what the bytes read so far
    hold (the records before an I/O error are kept), then meets the same error."""
    held: list[tuple[int, bytes]] = []
    fast = _inflate(src, member_pos, isal_zlib, min(options.max_member_bytes, FAST_MEMBER_BYTES),
                    max_input=FAST_MEMBER_BYTES)
    try:
        while True:
            held.append(next(fast))
    except StopIteration as end:
        if end.value == "done":
            yield from held
            return "done"
    except OSError:  # the file failed mid-member: zlib hands on what it read, then fails the same way
        pass
    src.pos = member_pos
    return (yield from _inflate(src, member_pos, zlib, options.max_member_bytes))


def _inflate(src: _CompressedInput, member_pos: int, module, max_bytes: int,
             max_input: Optional[int] = None) -> Generator[tuple[int, bytes], None, str]:
    """The member at ``member_pos`` inflated by ``module`` (zlib's interface) as its bytes
    arrive; returns how it ended ("too_large": more than ``max_bytes`` out, or more than
    ``max_input`` compressed bytes read)."""
    decomp = module.decompressobj(31)
    produced = 0
    outcome = "need_input"
    while outcome == "need_input":
        if max_input is not None and src.pos - member_pos > max_input:
            return "too_large"
        if not src.ensure(1):
            return "truncated"
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
                except INFLATE_ERRORS:
                    outcome = "corrupt"
                    break
                if out:
                    produced += len(out)
                    if produced > max_bytes:
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
    return outcome
