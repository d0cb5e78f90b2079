"""What every layer of the crawl reader shares: its settings (:class:`ReadOptions`) and the two
errors a file can end with (the rest of what goes wrong inside a file is a counted skip)."""
from __future__ import annotations

import dataclasses

from c4forge.core.errors import C4forgeError
from c4forge.core.settings import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    PATH,
    POSITIVE,
    POSITIVE_INT,
    UNIT_INTERVAL,
    setting,
)

DEFAULT_MAX_RECORD_BYTES = 16 << 20
DEFAULT_MAX_MEMBER_BYTES = 8 << 30
BINARY_CONTROL_SHARE = 0.01


class CrawlReadError(C4forgeError, RuntimeError):
    """A crawl file that cannot be opened at all (missing, no permission, unreachable)."""


class CrawlReadInterrupted(CrawlReadError):
    """An I/O error part-way through a file (the records before it were yielded)."""


INPUT_FORMATS = ("auto", "wet", "warc")


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    """Bounds of the reader; defaults suit Common Crawl (records are at most a few MB).

    max_record_bytes: larger records are counted skips (16 MiB).
    max_member_bytes: a gzip member inflating beyond this is abandoned (a bomb guard, 8 GiB).
    keep_metadata_like_lines: tfds drops body lines starting with ``WARC``/``Content-``; true
        keeps them.
    binary_control_share: a page whose text holds more control characters than this share of
        it is binary, a counted skip.
    input_format: "wet" reads ``conversion`` records (Common Crawl's text), "warc" ``response``
        records (HTML, main text extracted: corpus.extract), "auto" each record by its type.
    extractor: "cascade" (resiliparse, and trafilatura on the pages the router picks),
        "trafilatura", "resiliparse" or "rs-trafilatura" (optional; WARC input; corpus.extract).
    extract_timeout: seconds per page for the extractor (0: no limit).
    max_slow_share: a cascade sends at most this share of a file's pages to its slow extractor,
        counted in file order (corpus.extract.SlowBudget; 1.0: no cap), so its speed holds on
        pages unlike the router's training pages.
    max_html_bytes: larger HTML payloads are skipped (``skipped:html_too_large``).
    urls_from: keep only pages whose normalised URL is in this file: a crawl file (its records'
        WARC-Target-URI) or a text file of URLs, one per line (``skipped:not_in_urls_from``).
        Compares two starting points (WET vs WARC) on the same pages.
    retries / retry_seconds: remote files (https, s3, gs): attempts after the first and the
        most seconds spent waiting between them, per file (corpus.remote.RemotePolicy).
    retry_backoff: the first backoff wait in seconds (doubling per attempt, full jitter).
    timeout: seconds to connect to a remote server and between bytes of its response.
    """

    max_record_bytes: int = setting(DEFAULT_MAX_RECORD_BYTES, POSITIVE_INT)
    max_member_bytes: int = setting(DEFAULT_MAX_MEMBER_BYTES, POSITIVE_INT)
    keep_metadata_like_lines: bool = False
    binary_control_share: float = setting(BINARY_CONTROL_SHARE, UNIT_INTERVAL)
    input_format: str = "wet"
    extractor: str = "cascade"
    extract_timeout: float = setting(10.0, NON_NEGATIVE)
    max_slow_share: float = setting(1.0, UNIT_INTERVAL)
    max_html_bytes: int = setting(4 << 20, POSITIVE_INT)
    urls_from: str = setting("", path=PATH)
    retries: int = setting(8, NON_NEGATIVE_INT)
    retry_seconds: float = setting(300.0, NON_NEGATIVE)
    retry_backoff: float = setting(1.0, NON_NEGATIVE)
    timeout: float = setting(60.0, POSITIVE)
