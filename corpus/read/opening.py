"""Opening a crawl file's bytes as stored, local or remote (no decompression: the gzip layer,
corpus/read/gzip_members.py, walks the members itself)."""
from __future__ import annotations

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus.read.options import CrawlReadError, ReadOptions
from c4forge.corpus.read.remote import RemotePolicy, RemoteReadError, ResumingReader


def remote_policy(options: ReadOptions):
    """The remote-reading policy the read settings give (corpus.remote.RemotePolicy)."""

    return RemotePolicy(retries=options.retries, retry_seconds=options.retry_seconds,
                        backoff_base=options.retry_backoff, timeout=options.timeout)


def open_raw(path: str, options: ReadOptions = ReadOptions(), inc: IncFn = null_inc):
    """A binary stream of the file's bytes as stored (no decompression). Remote files are read
    through :class:`corpus.remote.ResumingReader` (retries, resume at the byte, politeness)."""
    if "://" in path and not path.startswith("file://"):
        try:
            return ResumingReader(path, remote_policy(options), inc)
        except RemoteReadError as exc:
            raise CrawlReadError(f"cannot open {exc}") from exc
    import smart_open  # lazy: smart-open (and the cloud SDKs it probes), only for a remote input

    try:
        return smart_open.open(path, "rb", compression="disable")
    except Exception as exc:  # smart-open raises many types (OSError, botocore, http)
        raise CrawlReadError(f"cannot open {path}: {type(exc).__name__}: {exc}") from exc
