"""Fixed-size numpy records keyed by a digest, as the engine path sends them across a shuffle:
split by the bucket of their first field and shipped as bytes, one bytes object per batch
instead of a Python tuple per record (Beam's coders and the runner then move one object).

A record's bucket is its first field (the digest's first 8 bytes read little-endian) modulo
the buckets: pipelines/dofns.digest_bucket of the digest. Records use native byte order: the
workers of one build run on one machine type.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def by_bucket(records: np.ndarray, buckets: int) -> list[tuple[int, bytes]]:
    """(bucket, the records of that bucket as bytes) for every bucket that has some."""
    if len(records) == 0:
        return []
    of = records[records.dtype.names[0]] % np.uint64(buckets)
    order = np.argsort(of, kind="stable")
    # np.take: a structured array's fancy indexing is about 10x slower
    ordered, of = np.take(records, order), np.take(of, order)
    bounds = np.searchsorted(of, np.arange(buckets + 1, dtype=np.uint64))
    return [(bucket, ordered[bounds[bucket]:bounds[bucket + 1]].tobytes())
            for bucket in range(buckets) if bounds[bucket + 1] > bounds[bucket]]


def join(blobs: Iterable[bytes], dtype: np.dtype) -> np.ndarray:
    """Records sent as bytes (:func:`by_bucket`) back as one array."""
    return np.frombuffer(b"".join(blobs), dtype)


def group_starts(ordered: np.ndarray, fields: tuple[str, ...]) -> np.ndarray:
    """Where each run of equal ``fields`` begins in records sorted by them."""
    if len(ordered) == 0:
        return np.zeros(0, np.int64)
    new = np.zeros(len(ordered), bool)
    new[0] = True
    for name in fields:
        values = ordered[name]
        new[1:] |= values[1:] != values[:-1]
    return np.flatnonzero(new)


def group_ends(starts: np.ndarray, length: int) -> np.ndarray:
    """Where each run that ``group_starts`` found ends (exclusive), in records of ``length``."""
    return np.append(starts[1:], length)
