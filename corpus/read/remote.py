"""Reading crawl files over the network: retries with backoff, resume at the byte, politeness.

One layer for every remote crawl file (``https://``, ``http://``, ``s3://``, ``gs://``) and the
``wet.paths.gz`` / ``warc.paths.gz`` listings. :class:`ResumingReader` is the file object the
WET/WARC reader reads: a continuous stream of the object's bytes that hides transient faults.

- Transient faults - a connection reset or broken mid-body, a timeout, a body shorter than its
  Content-Length, HTTP 429, 500, 502, 503 and 504 (with or without ``Retry-After``) - are retried
  with exponential backoff and full jitter, capped per wait and in total per file
  (:class:`RemotePolicy`: ``read.retries``, ``read.retry_seconds``). A retry resumes at the
  exact byte offset already delivered (``Range: bytes=N-``), so the gzip decompressor and the
  record parser downstream see the same bytes as from an uninterrupted read.
- Every response is checked to be the same object (ETag, else Last-Modified, and the total
  length); when it changed between attempts, :class:`ObjectChanged` is raised and the caller
  restarts the file from zero (``corpus.wet.iter_file_documents``, counted
  ``read:restarted_files``).
- Permanent errors (400, 401, 403, 404, 410) are not retried: :class:`RemoteReadError`, which
  the reader counts as a whole-file skip (``--strict``: a failure), as it does a file that
  exhausts its retries.
- Politeness, per process and per host: at most ``max_connections`` open responses and
  ``requests_per_second`` new requests (a token bucket); ``Retry-After`` is honoured (within
  the total wait); every request says ``User-Agent: c4forge/<version>``.

Libraries first: HTTP is ``requests``/urllib3 (connection pooling, chunked bodies, and
urllib3's ``enforce_content_length`` that turns a short body into an error); what they lack is
resuming a *body* at its offset after a fault mid-read, which is the glue written here. S3 and
GCS objects are read through smart-open (botocore's and google-cloud-storage's own retries for
their requests), wrapped in the same resume-at-offset reader (smart-open readers seek).
"""
from __future__ import annotations

import dataclasses
import random
import re
import threading
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from importlib import metadata
from typing import Optional
from urllib.parse import urlsplit

from c4forge.core.counters import IncFn, null_inc
from c4forge.core.errors import C4forgeError
from c4forge.corpus.read.warc import length_value

TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 416})
CHUNK = 1 << 20


class RemoteReadError(C4forgeError, OSError):
    """A remote file that cannot be read: a permanent error, or retries exhausted."""


class ObjectChanged(RemoteReadError):
    """The object is not the one the first response described (ETag, date or length changed)."""


class _Transient(Exception):
    """A fault worth another attempt; ``wait`` is the server's Retry-After, if it gave one."""

    def __init__(self, reason: str, wait: Optional[float] = None) -> None:
        super().__init__(reason)
        self.wait = wait


@dataclasses.dataclass(frozen=True)
class RemotePolicy:
    """How a remote crawl file is read (settings ``read.retries`` and ``read.retry_seconds``;
    the rest are per-process politeness bounds).

    retries: attempts after the first, per file (default 8: a few minutes of Common Crawl's
        "503 Slow Down" ride through).
    retry_seconds: the most time spent waiting between attempts, per file (default 300).
    backoff_base / backoff_cap: exponential backoff with full jitter: attempt k waits
        uniform(0, min(cap, base * 2**k)) seconds, or the server's Retry-After.
    timeout: seconds to connect and between bytes of a response.
    max_connections: open responses per host in this process (Beam: per worker process, so a
        job holds at most workers x max_connections connections to one host).
    requests_per_second: new requests per host in this process (token bucket).
    """

    retries: int = 8
    retry_seconds: float = 300.0
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    timeout: float = 60.0
    max_connections: int = 4
    requests_per_second: float = 10.0


def user_agent() -> str:

    try:
        version = metadata.version("c4forge")
    except metadata.PackageNotFoundError:
        version = "dev"
    return f"c4forge/{version} (Common Crawl corpus builder; python-requests)"


# --------------------------------------------------------------------------- politeness

class _Host:
    """The per-host bounds of this process: a connection semaphore and a request token bucket."""

    def __init__(self, connections: int, per_second: float) -> None:
        self.slots = threading.BoundedSemaphore(max(1, connections))
        self.per_second = per_second
        self.lock = threading.Lock()
        self.next_free = 0.0

    def pace(self) -> None:
        """Wait for this host's next request slot (requests_per_second)."""
        if self.per_second <= 0:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_free)
            self.next_free = start + 1.0 / self.per_second
        if start > now:
            time.sleep(start - now)


_HOSTS: dict[tuple[str, int, float], _Host] = {}
_HOSTS_LOCK = threading.Lock()


def _host(url: str, policy: RemotePolicy) -> _Host:
    key = (urlsplit(url).netloc, policy.max_connections, policy.requests_per_second)
    with _HOSTS_LOCK:
        if key not in _HOSTS:
            _HOSTS[key] = _Host(policy.max_connections, policy.requests_per_second)
        return _HOSTS[key]


_SESSION = threading.local()


def _session():
    import requests  # lazy: requests, only for an https:// input

    if not hasattr(_SESSION, "value"):
        session = requests.Session()
        session.headers["User-Agent"] = user_agent()
        session.headers["Accept-Encoding"] = "identity"  # the bytes as stored: offsets are file offsets
        _SESSION.value = session
    return _SESSION.value


# --------------------------------------------------------------------------- one attempt

def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        return float(value)

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class _HttpBody:
    """One HTTP response body from ``offset`` on: ``read`` returns bytes, raises
    :class:`_Transient` for faults worth a retry."""

    def __init__(self, url: str, offset: int, policy: RemotePolicy, identity: Optional[tuple]) -> None:
        import requests  # lazy: requests, only for an https:// input

        self.host = _host(url, policy)
        self.host.pace()
        self.host.slots.acquire()
        self.holding = True
        self.response = None
        try:
            headers = {"Range": f"bytes={offset}-"} if offset else {}
            try:
                self.response = _session().get(url, headers=headers, stream=True,
                                               timeout=(policy.timeout, policy.timeout))
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise _Transient(f"{type(exc).__name__}: {exc}") from exc
            status = self.response.status_code
            if status in TRANSIENT_STATUS:
                raise _Transient(f"HTTP {status}", _retry_after(self.response.headers.get("Retry-After")))
            if status in PERMANENT_STATUS or status >= 400:
                raise RemoteReadError(f"{url}: HTTP {status} {self.response.reason}")
            # A server that ignores Range sends the whole object: its first `offset` bytes,
            # already delivered, are read and dropped.
            self.skip = offset if offset and status == 200 else 0
            self.identity = self._identity(offset)
            if identity is not None and self.identity != identity:
                raise ObjectChanged(f"{url} changed while it was read ({identity} -> {self.identity})")
            self.response.raw.decode_content = False
        except BaseException:
            self.close()
            raise

    def _identity(self, offset: int) -> tuple:
        headers = self.response.headers
        length = None
        if self.response.status_code == 206:
            match = re.match(r"bytes \d+-\d+/(\d+)", headers.get("Content-Range", ""))
            length = int(match.group(1)) if match else None
        else:
            length = length_value(headers.get("Content-Length", ""))
        return (headers.get("ETag") or headers.get("Last-Modified"), length)

    def read(self, n: int) -> bytes:
        import requests  # lazy: requests, only for an https:// input
        import urllib3  # lazy: urllib3 (through requests), only for an https:// input

        raw = self.response.raw
        try:  # read1: what has arrived (up to n), so a stall or a cut loses no delivered byte
            while True:
                data = raw.read1(n) if hasattr(raw, "read1") else raw.read(n)
                if not self.skip or not data:
                    return data
                dropped = min(self.skip, len(data))
                self.skip -= dropped
                if dropped < len(data):
                    return data[dropped:]
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        if self.response is not None:
            self.response.close()
            self.response = None
        if self.holding:
            self.holding = False
            self.host.slots.release()


class _SmartOpenBody:
    """An s3:// or gs:// object through smart-open, opened at ``offset`` (its readers seek)."""

    def __init__(self, url: str, offset: int, policy: RemotePolicy, identity: Optional[tuple]) -> None:
        import smart_open  # lazy: smart-open (and the cloud SDKs it probes), only for a gs:// or s3:// input

        try:
            self.stream = smart_open.open(url, "rb", compression="disable")
            if offset:
                self.stream.seek(offset)
        except FileNotFoundError as exc:
            raise RemoteReadError(f"{url}: not found") from exc
        except PermissionError as exc:
            raise RemoteReadError(f"{url}: permission denied") from exc
        except Exception as exc:  # botocore / google errors: worth another attempt
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        self.identity = None

    def read(self, n: int) -> bytes:
        try:
            return self.stream.read(n)
        except Exception as exc:  # any client-library failure mid-body is retried at the offset
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        self.stream.close()


# --------------------------------------------------------------------------- the reader

class ResumingReader:
    """A remote object as one binary stream: ``read(n)`` delivers its bytes in order, resuming at
    the offset reached after any transient fault (see the module docstring). Counts
    ``read:retries`` and ``read:resumed_bytes`` (bytes already delivered when a retry resumed)."""

    def __init__(self, url: str, policy: RemotePolicy = RemotePolicy(), inc: IncFn = null_inc,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: Optional[random.Random] = None) -> None:
        self.url = url
        self.policy = policy
        self.inc = inc
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.offset = 0
        self.identity: Optional[tuple] = None
        self.attempt = 0
        self.waited = 0.0
        self.total: Optional[int] = None
        self.body = self._open()

    def _open(self):
        opener = _HttpBody if self.url.startswith(("http://", "https://")) else _SmartOpenBody
        while True:
            try:
                body = opener(self.url, self.offset, self.policy, self.identity)
                if self.identity is None:
                    self.identity = body.identity
                    self.total = body.identity[1] if body.identity else None
                return body
            except _Transient as exc:
                self._back_off(exc)

    def _back_off(self, exc: _Transient) -> None:
        self.attempt += 1
        if self.attempt > self.policy.retries:
            raise RemoteReadError(f"{self.url}: gave up after {self.policy.retries} retries "
                                  f"(last: {exc})") from exc
        wait = exc.wait if exc.wait is not None else self.rng.uniform(
            0, min(self.policy.backoff_cap, self.policy.backoff_base * 2 ** (self.attempt - 1)))
        if self.waited + wait > self.policy.retry_seconds:
            raise RemoteReadError(f"{self.url}: gave up after waiting {self.waited:.0f} s "
                                  f"(read.retry_seconds {self.policy.retry_seconds:g}; last: {exc})") from exc
        self.inc("read:retries")
        if self.offset:
            self.inc("read:resumed_bytes", self.offset)
        self.waited += wait
        self.sleep(wait)

    def read(self, n: int = CHUNK) -> bytes:
        while True:
            try:
                data = self.body.read(n)
            except _Transient as exc:
                self.body.close()
                self._back_off(exc)
                self.body = self._open()
                continue
            if not data and self.total is not None and self.offset < self.total:
                # the body ended early (a short body the client did not flag): resume
                self.body.close()
                self._back_off(_Transient(f"body ended at byte {self.offset:,} of {self.total:,}"))
                self.body = self._open()
                continue
            self.offset += len(data)
            return data

    def close(self) -> None:
        self.body.close()

    def __enter__(self) -> ResumingReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_remote(url: str, policy: RemotePolicy = RemotePolicy(), inc: IncFn = null_inc) -> bytes:
    """A whole (small) remote object, e.g. a ``wet.paths.gz`` listing, through the same retries."""
    with ResumingReader(url, policy, inc) as reader:
        chunks = []
        while True:
            data = reader.read(CHUNK)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
