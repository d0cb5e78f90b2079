"""WET or WARC? A local file's first page records say which, so a file read in the wrong
format is refused before any work instead of yielding zero documents."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from c4forge.core.counters import null_inc
from c4forge.core.errors import C4forgeError
from c4forge.corpus.read.options import CrawlReadError, ReadOptions
from c4forge.corpus.read.records import iter_records

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
