"""Builders for WET test files: records, gzip members, and the faults the reader must survive."""
import gzip
import io
from collections.abc import Iterable
from typing import Optional

WARCINFO = (b"WARC/1.0\r\nWARC-Type: warcinfo\r\nWARC-Date: 2019-04-24T09:23:58Z\r\n"
            b"Content-Type: application/warc-fields\r\nContent-Length: 20\r\n\r\n"
            b"isPartOf: test-crawl\r\n\r\n")


def record(url: Optional[str], text, date: Optional[str] = "2019-04-24T09:23:58Z",
           rtype: str = "conversion", length: Optional[int] = None) -> bytes:
    body = text.encode("utf-8") if isinstance(text, str) else text
    head = [b"WARC/1.0", f"WARC-Type: {rtype}".encode()]
    if url is not None:
        head.append(f"WARC-Target-URI: {url}".encode())
    if date is not None:
        head.append(f"WARC-Date: {date}".encode())
    head.append(b"Content-Type: text/plain")
    head.append(f"Content-Length: {len(body) if length is None else length}".encode())
    return b"\r\n".join(head) + b"\r\n\r\n" + body + b"\r\n\r\n"


def gzip_member(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as handle:
        handle.write(data)
    return buf.getvalue()


def wet_file(records: Iterable[bytes], warcinfo: bool = True) -> bytes:
    """A Common Crawl-style WET file: one gzip member per record."""
    parts: list[bytes] = [gzip_member(WARCINFO)] if warcinfo else []
    parts.extend(gzip_member(r) for r in records)
    return b"".join(parts)


def page(i: int) -> str:
    return (f"Page number {i} talks about the weather in some detail.\n"
            f"It has a second line with enough words to pass the rules.\n"
            f"And a third line, so that Punkt finds three sentences here.")


def renamed_copy(record, copy: int) -> bytes:
    """A parsed WET record (corpus.records.iter_records) written back with its host renamed
    ``c<copy>.<host>``: the same text under a new URL, as a mirror in a real crawl (benchmarks
    and tests build scaled inputs from the shared crawl with it)."""
    headers = dict(record.headers)
    uri = headers.get("WARC-Target-URI")
    if uri and "://" in uri:  # a warcinfo record has none
        scheme, rest = uri.split("://", 1)
        headers["WARC-Target-URI"] = f"{scheme}://c{copy}.{rest}"
    body = record.body if isinstance(record.body, bytes) else record.body.encode("utf-8")
    headers["Content-Length"] = str(len(body))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"WARC/1.0\r\n{head}\r\n".encode() + body + b"\r\n\r\n"
