"""Every download c4forge makes for itself (the package index and its wheels, URL and bad-word
lists, models, engine jars) goes through :func:`fetch`: an overall deadline (a server that
trickles one byte every few seconds cannot hold a command for minutes: the per-read timeout of
urllib alone would let it), a bounded number of tries for the faults that pass (a stall, a
connection cut short, HTTP 5xx and 429), a progress bar on a terminal for large files, and one
line naming what was being fetched from where when it cannot be had. It returns bytes or yields
chunks; callers check what they got before they cache it (corpus/assets/downloads.py,
corpus/assets/package_index.py, pipelines/engines/jvm/jars.py).

Reading is crawl data's job elsewhere (corpus/read/remote.py: ranged, resumable reads of large
objects); this is for the small files that rules and engines need, read whole.
"""
from __future__ import annotations

import http.client
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Optional

from c4forge.core import progress
from c4forge.core.errors import C4forgeError

DEADLINE_ENV = "C4FORGE_FETCH_DEADLINE"  # seconds for a whole fetch, all its tries together
DEFAULT_DEADLINE = 300.0
READ_TIMEOUT = 30.0  # seconds without a byte before a try is abandoned
TRIES = 3
CHUNK = 1 << 16
PROGRESS_FROM = 4 << 20  # bytes: smaller files come without a bar
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})


class FetchError(C4forgeError, OSError):
    """A download that could not be had: the line names what, from where, and why (an OSError
    too, so callers that catch network errors to say what to do instead still do). ``status``:
    the HTTP status of a permanent refusal (404: a list that does not exist), else None."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _Transient(Exception):
    """A try failed in a way the next try may not."""


def deadline_seconds() -> float:
    try:
        value = float(os.environ.get(DEADLINE_ENV) or DEFAULT_DEADLINE)
    except ValueError:
        raise FetchError(f"{DEADLINE_ENV}={os.environ[DEADLINE_ENV]!r}: not a number of seconds") from None
    if not value > 0:
        raise FetchError(f"{DEADLINE_ENV}={value}: must be positive")
    return value


def fetch(url: str, what: str, deadline: Optional[float] = None, tries: int = TRIES,
          read_timeout: float = READ_TIMEOUT) -> bytes:
    """``url``'s whole body. ``what`` names it in messages ("the bad-words list for en")."""
    return b"".join(fetch_chunks(url, what, deadline, tries, read_timeout))


def fetch_chunks(url: str, what: str, deadline: Optional[float] = None, tries: int = TRIES,
                 read_timeout: float = READ_TIMEOUT) -> Iterator[bytes]:
    """``url``'s body in chunks, all of one successful try (a failed try's chunks are dropped
    before any is yielded, so a caller never sees two tries' bytes mixed). Raises FetchError:
    the deadline passed, the tries ran out, or a permanent failure (404, a refused connection)."""
    limit = deadline if deadline is not None else deadline_seconds()
    ends = time.monotonic() + limit
    problem = ""
    for attempt in range(tries):
        if attempt:
            pause = min(2.0 ** (attempt - 1), ends - time.monotonic())
            if pause <= 0:
                break
            time.sleep(pause)
        try:
            chunks = _one_try(url, what, ends, read_timeout)
        except _Transient as exc:
            problem = str(exc)
            if time.monotonic() >= ends:
                break
            continue
        yield from chunks
        return
    raise FetchError(f"could not fetch {what} from {url}: {problem} ({attempt + 1} "
                     f"tr{'y' if attempt == 0 else 'ies'}, deadline {limit:g} s: {DEADLINE_ENV})")


def _one_try(url: str, what: str, ends: float, read_timeout: float) -> list[bytes]:
    def remaining() -> float:
        left = ends - time.monotonic()
        if left <= 0:
            raise _Transient(f"took longer than the deadline ({received:,} bytes received)")
        return min(read_timeout, left)

    received = 0
    request = urllib.request.Request(url, headers={"User-Agent": "c4forge"})
    try:
        response = urllib.request.urlopen(request, timeout=remaining())  # noqa: S310 - https/http/file only
    except urllib.error.HTTPError as exc:
        if exc.code in RETRIED_STATUS:
            raise _Transient(f"HTTP {exc.code}") from None
        raise FetchError(f"could not fetch {what} from {url}: HTTP {exc.code} {exc.reason}",
                         status=exc.code) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise _Transient("no answer within the read timeout") from None
        raise FetchError(f"could not fetch {what} from {url}: {reason}") from None
    except TimeoutError:
        raise _Transient("no answer within the read timeout") from None
    except (ConnectionError, http.client.HTTPException) as exc:
        raise _Transient(f"{type(exc).__name__}: {exc}") from None
    chunks: list[bytes] = []
    with response:
        length = response.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        sock = _socket_of(response)
        bar = (progress.bar(total=expected, desc=f"fetching {what}", unit="B", unit_scale=True)
               if expected and expected >= PROGRESS_FROM else None)
        try:
            while True:
                if sock is not None:
                    sock.settimeout(remaining())
                try:
                    chunk = response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
                except TimeoutError:
                    remaining()  # the deadline's wait ran out, not the read timeout
                    raise _Transient(f"stalled: no byte for {read_timeout:g} s after {received:,} "
                                     "bytes") from None
                except (ConnectionError, http.client.HTTPException) as exc:
                    raise _Transient(f"cut short after {received:,} of {expected or '?'} bytes "
                                     f"({type(exc).__name__})") from None
                if not chunk:
                    break
                chunks.append(chunk)
                received += len(chunk)
                if bar is not None:
                    bar.update(len(chunk))
                remaining()  # a trickle meets the deadline between reads
        finally:
            if bar is not None:
                bar.close()
    if expected is not None and received != expected:
        raise _Transient(f"cut short after {received:,} of {expected:,} bytes")
    return chunks


def _socket_of(response: Any) -> Optional[socket.socket]:
    """The response's socket, so that each read waits at most until the deadline (http.client
    keeps it on its buffered reader's raw SocketIO); None for other schemes (file://)."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None
