"""The record that flows between the corpus stages."""
from __future__ import annotations

import dataclasses
import struct
import threading
from typing import TYPE_CHECKING, NamedTuple, Optional

if TYPE_CHECKING:
    import zstandard  # lazy: zstandard, only when a page is packed to cross a shuffle

# The quality classifier's score: this record's field and the corpus shards' (and JSONL's) column.
SCORE_COLUMN = "quality_score"
_SIZE = "_text_size"  # (text object, its UTF-8 length): valid while ``text`` is that object


@dataclasses.dataclass
class Document:
    """One crawled page. Field names follow tfds' ``c4_utils.PageFeatures`` where they overlap.

    ``source`` and ``offset`` say where the record came from (file and byte offset of its gzip
    member, or of the record in an uncompressed file), so any document can be traced back.
    """

    url: str = ""
    normalized_url: str = ""
    text: str = ""
    timestamp: str = ""
    content_length: str = ""
    content_type: str = ""
    language: Optional[str] = None
    language_score: Optional[float] = None
    source: str = ""
    offset: int = -1
    near_dup_cluster_size: int = 1
    extractor: str = ""  # WARC input: the extractor whose text this is; WET: "" (Common Crawl's)
    quality_score: Optional[float] = None  # the quality classifier's score, where it ran

    def replace(self, **changes) -> Document:
        """``dataclasses.replace``, without its field-by-field ``__init__`` call (about 10 us a
        page, and every kept page is replaced 3 or 4 times in the chain): a copy of the fields
        with ``changes`` written over them. Unknown names raise ``TypeError`` as there."""
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"Document has no field {', '.join(sorted(unknown))}")
        new = object.__new__(type(self))
        fields = new.__dict__
        fields.update(self.__dict__)
        if "text" in changes:
            fields.pop(_SIZE, None)  # the old text's size, and a reference that kept it alive
        fields.update(changes)
        return new

    def text_size(self) -> int:
        """UTF-8 length of ``text``, computed once per text: every step's byte counters ask for
        it, and re-encoding each time cost 7.6% of a `corpus clean` run. An ASCII text's length
        is its size (``str.isascii`` reads a flag CPython keeps, without scanning)."""
        cached = self.__dict__.get(_SIZE)
        text = self.text
        if cached is not None and cached[0] is text:
            return cached[1]
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        self.__dict__[_SIZE] = (text, size)
        return size

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop(_SIZE, None)
        return state

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_FIELDS = frozenset(field.name for field in dataclasses.fields(Document))


# --------------------------------------------------------------------------- binary form
# What Beam shuffles (pipelines/c4.py packs Documents to bytes before every grouping): a fixed
# header, then the UTF-8 string fields. Smaller and faster than pickling the dataclass (no field
# names per record), and opaque to the runner: Beam's local runner decodes grouped values into
# Python objects, and a page's str takes 1-4 bytes per character plus object overhead there,
# where these bytes take one per byte (less with ``compress``).

_HEADER = struct.Struct("<BqddI9I")  # flags, offset, language and quality scores, cluster size, 9 lengths
_LENGTHS = 5  # where the string lengths start in the unpacked header
_STRINGS = ("url", "normalized_url", "text", "timestamp", "content_length", "content_type",
            "language", "source", "extractor")
_NO_LANGUAGE, _NO_SCORE, _COMPRESSED, _NO_QUALITY = 1, 2, 4, 8
FORMAT_VERSION = 5  # 1: zstd text; 2: LZ4 text; 3: + extractor; 4: + quality score; 5: zstd text again (bytes that live only inside one pipeline run)


_PER_THREAD = threading.local()


class _Zstd(NamedTuple):
    """A thread's zstd contexts (zstandard is imported where first used)."""

    compressor: zstandard.ZstdCompressor
    decompressor: zstandard.ZstdDecompressor


def _codec():
    """zstd level 1 (python-zstandard): one compressor and one decompressor per thread, reused
    (they are not thread-safe, and Beam's SDK harness may run bundles on several threads).
    On the shared crawl's pages (5,241 texts over 256 bytes, 54.6 MB; 2026-11-27): 2.33x at
    293 MB/s to compress and 728 MB/s to expand, against pyarrow's LZ4 (format 2-4) 1.65x at
    404 / 1,643 MB/s (pyarrow's zstd: 169 / 315 MB/s, a context per call). The extra CPU is
    paid back where pages wait and cross: flink-local at 2 workers, one build each, the same
    output, LZ4 against zstd: 16x 213.3 against 200.7 CPU s and 4.53 against 4.38 GB; 64x 764.6
    against 712.5 CPU s and 6.12 against 5.70 GB. The 64x peak is the SDK workers holding a
    whole partition's packed pages until the runner reads them (benchmarks/RESULTS.md,
    "flink-local's memory at 64x"): 29% fewer page bytes there."""
    pair = getattr(_PER_THREAD, "zstd", None)
    if pair is None:
        import zstandard  # lazy: zstandard, only when a page is packed to cross a shuffle

        pair = _PER_THREAD.zstd = _Zstd(zstandard.ZstdCompressor(level=1), zstandard.ZstdDecompressor())
    return pair


def to_bytes(doc: Document, compress: bool = False) -> bytes:
    """The document as bytes (:func:`from_bytes` inverts it exactly); ``compress``: the text
    zstd-compressed (about 2.3x smaller on web text)."""
    values = [doc.url, doc.normalized_url, doc.text, doc.timestamp, doc.content_length,
              doc.content_type, doc.language or "", doc.source, doc.extractor]
    parts = [_utf8(v) for v in values]
    flags = (_NO_LANGUAGE if doc.language is None else 0) | \
        (_NO_SCORE if doc.language_score is None else 0) | \
        (_NO_QUALITY if doc.quality_score is None else 0)
    size = len(parts[2])
    if compress and size > 256:
        parts[2] = _codec().compressor.compress(parts[2])
        flags |= _COMPRESSED
    header = _HEADER.pack(flags, doc.offset, doc.language_score or 0.0, doc.quality_score or 0.0,
                          doc.near_dup_cluster_size, *[len(p) for p in parts])
    if flags & _COMPRESSED:
        header += size.to_bytes(8, "little")
    return b"".join([header, *parts])


def packed_text_size(data: bytes) -> int:
    """UTF-8 length of the text of a :func:`to_bytes` document, from its header alone."""
    header = _HEADER.unpack_from(data)
    if header[0] & _COMPRESSED:
        return int.from_bytes(data[_HEADER.size:_HEADER.size + 8], "little")
    return header[_LENGTHS + 2]  # the third string length: the text's


def packed_normalized_url(data: bytes) -> str:
    """The normalised URL of a :func:`to_bytes` document, without unpacking its text."""
    return _packed_string(data, 1)


def packed_url(data: bytes) -> str:
    """The URL of a :func:`to_bytes` document, without unpacking its text."""
    return _packed_string(data, 0)


def _packed_string(data: bytes, index: int) -> str:
    """String field ``index`` of a :func:`to_bytes` document, for the fields before the text."""
    header = _HEADER.unpack_from(data)
    start = _HEADER.size + (8 if header[0] & _COMPRESSED else 0) + sum(header[_LENGTHS:_LENGTHS + index])
    return _text(memoryview(data)[start:start + header[_LENGTHS + index]])


_CLUSTER_AT = struct.calcsize("<Bqdd")  # where the cluster size sits in the header


def with_cluster_size(data: bytes, size: int) -> bytes:
    """A :func:`to_bytes` document with its ``near_dup_cluster_size`` set, its text untouched
    (near-dedup's verdict on a packed page: no expanding and compressing it again)."""
    return b"".join((data[:_CLUSTER_AT], struct.pack("<I", size), data[_CLUSTER_AT + 4:]))


def from_bytes(data: bytes) -> Document:
    flags, offset, score, quality, cluster, *lengths = _HEADER.unpack_from(data)
    pos = _HEADER.size
    size = 0
    if flags & _COMPRESSED:
        size = int.from_bytes(data[pos:pos + 8], "little")
        pos += 8
    view = memoryview(data)
    values = []
    for i, length in enumerate(lengths):
        chunk = view[pos:pos + length]
        pos += length
        if i == 2 and flags & _COMPRESSED:
            chunk = _codec().decompressor.decompress(chunk, max_output_size=size)
        elif i == 2:
            size = length
        values.append(_text(chunk))
    url, normalized_url, text, timestamp, content_length, content_type, language, source, extractor = values
    doc = Document(url=url, normalized_url=normalized_url, text=text, timestamp=timestamp,
                   content_length=content_length, content_type=content_type,
                   language=None if flags & _NO_LANGUAGE else language,
                   language_score=None if flags & _NO_SCORE else score, source=source,
                   offset=offset, near_dup_cluster_size=cluster, extractor=extractor,
                   quality_score=None if flags & _NO_QUALITY else quality)
    doc.__dict__[_SIZE] = (text, size)  # the byte counters need not encode it again
    return doc


def _utf8(value: str) -> bytes:
    """UTF-8, by CPython's fast path; a lone surrogate (never from our readers, but a str may
    hold one) round-trips through ``surrogatepass``."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _text(data) -> str:
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError:
        return str(data, "utf-8", "surrogatepass")
