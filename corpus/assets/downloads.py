"""Files the corpus rules read from the web (bad-word lists, URL block lists): downloaded once
into the cache (``C4FORGE_CACHE``, default ~/.cache/c4forge) with an atomic write, then read from
there, so a build's workers and its reruns read the same bytes and need no network."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from c4forge.core.errors import C4forgeError
from c4forge.core.fetch import fetch
from c4forge.core.io import atomic_write_bytes


def cache_dir() -> Path:
    return Path(os.environ.get("C4FORGE_CACHE", Path.home() / ".cache" / "c4forge"))


class BadDownload(C4forgeError, ValueError):
    """What a URL served is not what it should be (an HTML error page for a word list, a cut
    archive), fetched twice."""


def cached_download(url: str, kind: str, timeout: float = 30.0,
                    check: Optional[Callable[[bytes], None]] = None, what: str = "") -> bytes:
    """``url``'s bytes, from ``cache_dir()/kind`` once downloaded. ``check(data)`` raises
    (ValueError, OSError or EOFError) where the bytes are not what they should be: a download enters the cache only
    once it passes, and a cached copy that does not pass (written by an older release, or
    damaged) is fetched again once; what still does not pass is a BadDownload naming the URL.
    Raises FetchError (an OSError: c4forge/core/fetch.py, with its deadline and tries) for the
    network; the caller says what to do instead. ``what`` names the file in messages."""
    target = cache_dir() / kind / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        data = target.read_bytes()
        if _problem(data, check) is None:
            return data
    data = fetch(url, what or f"the {kind} file", read_timeout=timeout)
    problem = _problem(data, check)
    if problem is not None:
        raise BadDownload(f"{url} did not serve what it should ({problem}); nothing was cached")
    atomic_write_bytes(str(target), data)
    return data


def _problem(data: bytes, check: Optional[Callable[[bytes], None]]) -> Optional[str]:
    if check is None:
        return None
    try:
        check(data)
    except (ValueError, OSError, EOFError) as exc:  # a check that opens an archive may raise these
        return str(exc) or type(exc).__name__
    return None


def text_list(data: bytes) -> None:
    """A word list: UTF-8 text, not an HTML page (a server's error or login page)."""
    head = data[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        raise ValueError("an HTML page, not a list")
    data.decode("utf-8")


