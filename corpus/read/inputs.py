"""Crawl inputs as the user names them (paths, globs, directories, URLs) -> the files to read."""
from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from c4forge.corpus.read.options import CrawlReadError

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


def input_bytes(paths: Iterable[str]) -> int:
    """The stored size of the local files among ``paths`` (what a manifest's ``build.input_bytes``
    records for `corpus clean`); a URL's size is not asked for and counts 0, as `corpus build`
    counts a file whose filesystem cannot tell."""
    total = 0
    for path in paths:
        if "://" not in path:
            try:
                total += os.path.getsize(path)
            except OSError:
                continue
    return total
