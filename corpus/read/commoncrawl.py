"""Common Crawl listings: a crawl id and a file slice -> WET file URLs."""
from __future__ import annotations

import gzip
import re

from c4forge.core.errors import C4forgeError
from c4forge.corpus.read.remote import RemotePolicy, RemoteReadError, read_remote

DEFAULT_BASE_URL = "https://data.commoncrawl.org"
_CRAWL_ID = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")


class CrawlListingError(C4forgeError, RuntimeError):
    """The crawl id, the slice or the listing download is wrong."""


def parse_slice(files: str) -> slice:
    """'A:B' -> slice(A, B); 'N' -> the first N files."""
    try:
        if ":" in files:
            start, _, stop = files.partition(":")
            return slice(int(start or 0), int(stop) if stop else None)
        return slice(0, int(files))
    except ValueError as exc:
        raise CrawlListingError(f"--files {files!r}: expected A:B or N") from exc


def crawl_urls(crawl: str, files: str = "0:1", base_url: str = DEFAULT_BASE_URL,
               timeout: float = 60.0, kind: str = "wet", policy=None) -> list[str]:
    """URLs of a slice of a crawl's WET (``kind="wet"``) or WARC (``"warc"``) files, from its
    ``wet.paths.gz`` / ``warc.paths.gz`` listing (read through corpus.remote: retries,
    politeness)."""

    if kind not in ("wet", "warc"):
        raise CrawlListingError(f"listing kind {kind!r}: wet or warc")
    if not _CRAWL_ID.match(crawl):
        raise CrawlListingError(f"--crawl {crawl!r}: expected an id like CC-MAIN-2019-30")
    listing = f"{base_url.rstrip('/')}/crawl-data/{crawl}/{kind}.paths.gz"
    label = kind.upper()
    try:
        paths = gzip.decompress(read_remote(listing, policy or RemotePolicy(timeout=timeout))
                                ).decode("utf-8").split()
    except (RemoteReadError, OSError, EOFError) as exc:
        raise CrawlListingError(f"cannot read the {label} listing {listing}: {exc}") from exc
    chosen = paths[parse_slice(files)]
    if not chosen:
        raise CrawlListingError(f"--files {files} selects none of the {len(paths)} {label} files of {crawl}")
    return [f"{base_url.rstrip('/')}/{path}" for path in chosen]


def wet_urls(crawl: str, files: str = "0:1", base_url: str = DEFAULT_BASE_URL,
             timeout: float = 60.0) -> list[str]:
    """URLs of a slice of a crawl's WET files."""
    return crawl_urls(crawl, files, base_url, timeout, "wet")
