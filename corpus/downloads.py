"""Files the corpus rules read from the web (bad-word lists, URL block lists): downloaded once
into the cache (``C4FORGE_CACHE``, default ~/.cache/c4forge) with an atomic write, then read from
there, so a build's workers and its reruns read the same bytes and need no network."""
from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from c4forge.core.io import atomic_write_bytes


def cache_dir() -> Path:
    return Path(os.environ.get("C4FORGE_CACHE", Path.home() / ".cache" / "c4forge"))


def cached_download(url: str, kind: str, timeout: float = 30.0) -> bytes:
    """``url``'s bytes, from ``cache_dir()/kind`` once downloaded. Raises urllib's error (the
    caller says what to do instead, in its own words)."""
    target = cache_dir() / kind / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        return target.read_bytes()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data = response.read()
    atomic_write_bytes(str(target), data)
    return data


