"""Main-content text from WARC ``response`` records: the HTML-to-text step FineWeb (trafilatura)
and DCLM (resiliparse) put in place of Common Crawl's WET text.

Per record, in order, each failure a counted skip (``skipped:<reason>``, namespace of the
reader):

1. the HTTP response: status 200 (``http_status:<code>``), an HTML content type
   (``content_type``), a body not cut by the crawler (``truncated``: WARC-Truncated, or fewer
   bytes than Content-Length), not larger than ``max_html_bytes`` (``html_too_large``), content
   and transfer encodings undone (``bad_encoding``);
2. decoding: the charset of the HTTP header, else of the page's ``<meta>``, else detected by
   charset-normalizer (``undecodable`` when none decodes);
3. extraction with ``cascade`` (default), ``trafilatura``, ``resiliparse`` or ``rs-trafilatura``
   (optional, docs/dependencies.md), bounded in time per
   page (``extract_timeout``; SIGALRM interrupts the extractor in a main thread, elsewhere the page
   is abandoned to a helper thread) and in input size; an exception is ``extract_error``. The
   cascade runs resiliparse, and trafilatura too on the pages a router picks (``corpus.router``):
   counters ``extract:routed_slow``, ``extract:kept_fast``, ``extract:kept_slow`` and
   ``extract:slow_failed`` (trafilatura crashed, timed out or returned nothing on a routed page:
   the fast text is kept, the page is never lost to the slow path);
4. the text as the WET path produces it (stripped, non-empty lines), so the same C4 rules,
   dedup, language ID and bad-word filter follow unchanged.
"""
from __future__ import annotations

import codecs
import gzip
import math
import re
import signal
import threading
import zlib
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from typing import NamedTuple, Optional, TypeVar

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus.extract import router
from c4forge.corpus.read.warc import http_status, length_value, split_http_block

T = TypeVar("T")
EXTRACTORS = ("cascade", "trafilatura", "resiliparse", "rs-trafilatura", "cascade-rs")
OPTIONAL = {"rs-trafilatura": "rs_trafilatura", "cascade-rs": "rs_trafilatura"}  # extractor -> module
SLOW_OF = {"cascade": "trafilatura", "cascade-rs": "rs-trafilatura"}  # a cascade's slow extractor
HTML_TYPES = ("text/html", "application/xhtml+xml")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.I)


class Skip(Exception):
    """A record that yields no text, with the counter reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def extractor_version(name: str) -> str:

    if name in SLOW_OF:
        slow = SLOW_OF[name]
        return (f"resiliparse {extractor_version('resiliparse')} + {slow} "
                f"{extractor_version(slow)}, router {router.load_router(slow).version}")
    try:
        return version({"trafilatura": "trafilatura", "resiliparse": "Resiliparse",
                        "rs-trafilatura": "rs-trafilatura"}[name])
    except PackageNotFoundError:
        return "not installed"


def extraction_info(read) -> Optional[dict]:
    """What a corpus manifest records about HTML extraction (None for WET-only reading)."""
    if read.input_format == "wet":
        return None
    return {"input_format": read.input_format, "extractor": read.extractor,
            "extractor_version": extractor_version(read.extractor),
            "extract_timeout": read.extract_timeout, "max_html_bytes": read.max_html_bytes}


# ----------------------------------------------------------------------------- HTTP

def split_http(body: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, payload) of an HTTP response block."""
    status = http_status(body)
    if status is None:
        raise Skip("not_http")
    headers, payload = split_http_block(body)
    if payload is body:  # no end of the headers: the crawler cut the record
        raise Skip("truncated")
    return status, {k.lower(): v for k, v in headers.items()}, payload


def _dechunk(payload: bytes) -> bytes:
    out, pos = bytearray(), 0
    while True:
        line_end = payload.find(b"\r\n", pos)
        if line_end < 0:
            raise Skip("truncated")
        size = int(payload[pos:line_end].split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return bytes(out)
        start = line_end + 2
        if start + size > len(payload):
            raise Skip("truncated")
        out += payload[start:start + size]
        pos = start + size + 2


def _decode_content(payload: bytes, encoding: str, limit: int) -> bytes:
    encoding = encoding.lower().strip()
    if encoding in ("", "identity", "none"):
        return payload
    try:
        if encoding in ("gzip", "x-gzip"):
            return gzip.decompress(payload)[: limit + 1]
        if encoding == "deflate":
            try:
                return zlib.decompressobj().decompress(payload, limit + 1)
            except zlib.error:
                return zlib.decompressobj(-zlib.MAX_WBITS).decompress(payload, limit + 1)
        if encoding == "br":
            import brotli  # lazy: brotli, only for a page served with Content-Encoding br

            return brotli.decompress(payload)[: limit + 1]
    except Exception as exc:  # any decompressor failure is the same skip
        raise Skip("bad_encoding") from exc
    raise Skip("bad_encoding")


def html_bytes(block: bytes, warc_headers: Callable[[str], str], max_html_bytes: int) -> tuple[bytes, str]:
    """The HTML payload of an HTTP response block and the charset its header names ('' if none).
    ``warc_headers(name)`` reads the WARC record's headers."""
    status, headers, payload = split_http(block)
    if status != 200:
        raise Skip(f"http_status:{status}")
    content_type = headers.get("content-type", "")
    if not any(t in content_type.lower() for t in HTML_TYPES):
        raise Skip("content_type")
    if warc_headers("WARC-Truncated"):
        raise Skip("truncated")
    # Common Crawl stores payloads decoded and renames the headers X-Crawler-*: only the plain
    # headers say the payload is still encoded.
    if "chunked" in headers.get("transfer-encoding", "").lower():
        payload = _dechunk(payload)
    declared = length_value(headers.get("content-length", ""))
    if declared is not None and len(payload) < declared and not headers.get("content-encoding"):
        raise Skip("truncated")
    payload = _decode_content(payload, headers.get("content-encoding", ""), max_html_bytes)
    if len(payload) > max_html_bytes:
        raise Skip("html_too_large")
    match = _HEADER_CHARSET.search(content_type)
    return payload, (match.group(1) if match else "")


def _known(charset: str) -> Optional[str]:
    try:
        return codecs.lookup(charset).name
    except (LookupError, ValueError):
        return None


def decode_html(payload: bytes, header_charset: str = "") -> tuple[str, str]:
    """(text, charset used): the HTTP header's charset, else the page's <meta> charset, else
    charset-normalizer's detection. A declared charset that fails to decode falls through."""
    candidates = [header_charset]
    meta = _META_CHARSET.search(payload[:4096])
    if meta:
        candidates.append(meta.group(1).decode("ascii", "ignore"))
    for charset in candidates:
        name = _known(charset) if charset else None
        if name is None:
            continue
        if name in ("iso8859-1", "ascii"):  # browsers read latin-1/ascii labels as windows-1252
            name = "cp1252"
        try:
            return payload.decode(name), name
        except UnicodeDecodeError:
            continue
    try:
        return payload.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import (
        from_bytes,  # lazy: charset-normalizer, only for a page that names no charset
    )

    best = from_bytes(payload).best()
    if best is None:
        raise Skip("undecodable")
    return str(best), best.encoding


# ----------------------------------------------------------------------------- extraction

def _trafilatura(html: str, url: str) -> str:
    import trafilatura  # lazy: trafilatura (0.15 s to import), only when WARC input reaches it

    return trafilatura.extract(html, url=url or None, include_comments=False, include_tables=True,
                               deduplicate=False, fast=False) or ""


def _rs_trafilatura(html: str, url: str) -> str:
    """rs-trafilatura (a Rust port of trafilatura with page-type classification; optional:
    docs/dependencies.md): its main content, paragraphs on lines of their own."""
    import rs_trafilatura  # lazy: rs-trafilatura is optional (not installed by make venv)

    return rs_trafilatura.extract(html, url=url or None).main_content or ""


def missing_extractor(name: str) -> Optional[str]:
    """Why ``name`` cannot run here (an optional extractor not installed), or None."""
    module = OPTIONAL.get(name)
    if module is None:
        return None

    if find_spec(module) is None:
        return (f"extractor {name} is not installed: pip install {name} (it builds from source "
                "with a Rust toolchain; docs/dependencies.md)")
    return None


def _plain_text(tree, main_content: bool) -> str:
    from resiliparse.extract.html2text import extract_plain_text  # lazy: resiliparse, only for WARC input

    return extract_plain_text(tree, main_content=main_content, alt_texts=False, links=False,
                              list_bullets=False)


def _resiliparse(html: str, url: str) -> str:
    from resiliparse.parse.html import HTMLTree  # lazy: resiliparse, only for WARC input

    return _plain_text(HTMLTree.parse(html), main_content=True)


def fast_pass(html: str) -> tuple[str, str, str]:
    """(main text, whole-page text, title) from one resiliparse parse: the cascade's first step
    and what its router reads."""
    from resiliparse.parse.html import HTMLTree  # lazy: resiliparse, only for WARC input

    tree = HTMLTree.parse(html)
    return _plain_text(tree, True), _plain_text(tree, False), tree.title or ""


class SlowBudget:
    """At most ``share`` of a file's pages go to a cascade's slow extractor: by the n-th page
    the cascade sees, at most ceil(share x n) were sent slow, whatever the router wants (a page
    refused is counted ``extract:slow_over_budget`` and keeps the fast text). Counted in file
    order, and a file is read whole by one worker on every engine, so the same pages go slow in
    `corpus clean` and `corpus build`. Keeps the speed on pages unlike the router's training
    pages, where it would send more slow."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.pages = 0
        self.slow = 0

    def seen(self) -> None:
        self.pages += 1

    def allows(self) -> bool:
        if self.slow < math.ceil(self.share * self.pages - 1e-9):
            self.slow += 1
            return True
        return False


class Extracted(NamedTuple):
    """A page's main text and the extractor that produced it (what a document records, so a
    corpus can be split by extractor: the cascade's pages come from either)."""

    text: str
    extractor: str


def cascade(html: str, url: str, timeout: float, inc: IncFn = null_inc,
            slow_extractor: str = "trafilatura", budget: Optional[SlowBudget] = None) -> Extracted:
    """resiliparse's main text, or the slow extractor's (trafilatura, or rs-trafilatura for
    ``cascade-rs``) where its router expects it to be better per second spent. The fast pass is
    bounded by ``timeout`` like any extractor; the slow pass has its own ``timeout`` and any
    failure of it keeps the fast text (counted)."""
    fast, full, title = run_with_time_limit(lambda: fast_pass(html), timeout)
    if budget is not None:
        budget.seen()
    if not router.load_router(slow_extractor).sends_slow(router.page_signals(html, url, title, fast, full)):
        inc("extract:kept_fast")
        return Extracted(fast, "resiliparse")
    if budget is not None and not budget.allows():
        inc("extract:slow_over_budget")
        inc("extract:kept_fast")
        return Extracted(fast, "resiliparse")
    inc("extract:routed_slow")
    slow_fn = _rs_trafilatura if slow_extractor == "rs-trafilatura" else _trafilatura
    try:
        slow = run_with_time_limit(lambda: slow_fn(html, url), timeout)
    except Exception:  # noqa: BLE001 (the slow path never costs the page: fast text kept)
        slow = ""
    if not slow.strip():
        inc("extract:slow_failed")
        inc("extract:kept_fast")
        return Extracted(fast, "resiliparse")
    inc("extract:kept_slow")
    return Extracted(slow, slow_extractor)


def cascade_text(html: str, url: str, timeout: float, inc: IncFn = null_inc) -> str:
    """:func:`cascade`'s text."""
    return cascade(html, url, timeout, inc).text


def extract_main_text(html: str, url: str = "", extractor: str = "trafilatura") -> str:
    """The page's main content as plain text (paragraphs on their own lines)."""
    if extractor == "trafilatura":
        return _trafilatura(html, url)
    if extractor == "resiliparse":
        return _resiliparse(html, url)
    if extractor == "rs-trafilatura":
        return _rs_trafilatura(html, url)
    if extractor in SLOW_OF:
        return cascade(html, url, 0, slow_extractor=SLOW_OF[extractor]).text
    raise ValueError(f"extractor {extractor!r}: choose from {', '.join(EXTRACTORS)}")


class _Timeout(Exception):
    pass


def run_with_time_limit(fn: Callable[[], T], seconds: float) -> T:
    """``fn()`` or :class:`Skip` ``extract_timeout`` after ``seconds``. In the main thread an
    interval timer interrupts it; elsewhere (Beam worker threads) it runs in a daemon thread
    that is abandoned at the limit, so the worker goes on with the next page."""
    if seconds <= 0:
        return fn()
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def alarm(signum, frame):
            raise _Timeout()

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return fn()
        except _Timeout:
            raise Skip("extract_timeout") from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    box: dict[str, object] = {}

    def target():
        try:
            box["text"] = fn()
        except BaseException as exc:  # noqa: BLE001 (reported to the caller below)
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name="c4forge-extract")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Skip("extract_timeout")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["text"]  # type: ignore[return-value]


def extract_response(block: bytes, url: str, warc_headers: Callable[[str], str], extractor: str,
                     timeout: float, max_html_bytes: int, inc: IncFn = null_inc,
                     budget: Optional[SlowBudget] = None) -> Optional[Extracted]:
    """The extracted text of one WARC response block and the extractor that produced it, or
    None with the reason counted (``budget``: the file's, for a cascade)."""
    try:
        payload, charset = html_bytes(block, warc_headers, max_html_bytes)
        html, _ = decode_html(payload, charset)
        try:
            if extractor in SLOW_OF:
                return cascade(html, url, timeout, inc, SLOW_OF[extractor], budget)
            text = run_with_time_limit(lambda: extract_main_text(html, url, extractor), timeout)
            return Extracted(text, extractor)
        except Skip:
            raise
        except Exception as exc:  # an extractor bug on one page is one skip
            raise Skip("extract_error") from exc
    except Skip as skip:
        inc(f"skipped:{skip.reason}")
        return None


def response_text(block: bytes, url: str, warc_headers: Callable[[str], str], extractor: str,
                  timeout: float, max_html_bytes: int, inc: IncFn = null_inc) -> Optional[str]:
    """:func:`extract_response`'s text."""
    extracted = extract_response(block, url, warc_headers, extractor, timeout, max_html_bytes, inc)
    return None if extracted is None else extracted.text
