"""Where packed pages wait while what crosses the engine's shuffles is a reference to them: the
one place that knows whether pages are carried or parked (:class:`PageStore`).

Carried (``INLINE``), a reference is the packed page itself: the pages cross every shuffle.

Parked (a folder), a reference is where the page waits on local disk. Why: on Flink's batch
path every stage boundary writes what crosses it, and every consumer of a multi-output stage
reads its own copy of the stage's whole output. Carried, a kept page was written ten times or
more on its way to a shard: the reading stage's output once per consumer (the URL groups and
the join), again before the join's union, by the join's combine and reduce, then after
near-dedup's input by the join stage's two consumers, the cluster join, the split counts and
the shard assignment, and the shard grouping (899 MB of shuffle files for 219 MB of text at 4x
distinct input; benchmarks/RESULTS.md, "Where the engine path spends it"). Parked, a page is
written twice and read twice, by the workers themselves: URL dedup's reader parks the cleaned
text in a file of its bundle and sends its :class:`Spot` (28 bytes) to the join, which reads
back only the pages that won their URL; near-dedup parks the pages it has hashed, and what
crosses its cluster join, the split counts, the shard assignment and the shard grouping is a
:class:`PageRef` (URLs, text size, spot, cluster size); each shard's writer reads its pages back
in file order.

Parking needs a folder every worker opens as a local path: ``corpus build`` parks pages in its
staging folder when that is a local (or mounted) path and carries them otherwise (gs://, s3://:
a request per random read). A bundle's file is written by that bundle only and named by a fresh
id: a bundle that fails and runs again writes a new file, and only the spots of the attempt that
succeeded travel on; the folder goes with the build's staging folder.
"""
from __future__ import annotations

import dataclasses
import os
import uuid
from collections import OrderedDict
from typing import NamedTuple, Optional

from c4forge.corpus.document import Document, to_bytes, with_cluster_size

# Documents cross every grouping as corpus.document bytes, their text zstd-compressed (2.3x
# smaller; corpus.document._codec says what it costs and saves against LZ4).
SHUFFLE_COMPRESSION = True
# Parked pages are written as they are: they cross no engine, so compressing them saves only
# local disk, at zstd's cost twice per kept page (packing a copy's pages cost 0.26 CPU s
# compressed against 0.06 plain, unpacking 0.14-0.21 against 0.07-0.11; 5,351 pages). Parked
# bytes are about 2x the compressed ones: one copy's build parks 49.9 MB (2.7x its 18.7 MB
# corpus) instead of 24.4 MB; at 16x on flink-local the shuffle files and the parked pages
# together (1,160 + ~800 MB) are still about half the 3,617 MB of shuffle files the engine wrote
# before pages were parked (benchmarks/RESULTS.md).
PARKED_COMPRESSION = False

SUFFIX = ".pages"
WRITE_BUFFER = 1 << 20
_ID_BYTES, _OFFSET_BYTES, _LENGTH_BYTES = 16, 8, 4


class Spot(NamedTuple):
    """Where a packed page waits: its bundle's file id, the offset and length of its bytes."""

    file_id: bytes
    offset: int
    length: int

    def to_bytes(self) -> bytes:
        return (self.file_id + self.offset.to_bytes(_OFFSET_BYTES, "big")
                + self.length.to_bytes(_LENGTH_BYTES, "big"))

    @classmethod
    def from_bytes(cls, data: bytes) -> Spot:
        offset_end = _ID_BYTES + _OFFSET_BYTES
        return cls(data[:_ID_BYTES], int.from_bytes(data[_ID_BYTES:offset_end], "big"),
                   int.from_bytes(data[offset_end:], "big"))


class PageRef(NamedTuple):
    """A page as it crosses the shuffles after near-dedup and on to the shards: what the cluster
    verdict, the split, the shard assignment and the shard's url order need, and ``ref``: the
    packed page itself where pages are carried, its Spot bytes where they are parked. Crosses as
    a plain tuple (``PageRef._make`` on the other side)."""

    normalized_url: str
    url: str
    text_size: int
    ref: bytes
    cluster_size: int = 1


def file_path(folder: str, file_id: bytes) -> str:
    return os.path.join(folder, file_id.hex() + SUFFIX)


class ParkingWriter:
    """One bundle's file of parked pages, opened at the first page, closed by ``close`` (at
    the end of the bundle, before its tickets are handed on)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.file_id = uuid.uuid4().bytes
        self.handle = None
        self.offset = 0

    def put(self, packed: bytes) -> bytes:
        """``packed`` appended to the file; its spot (Spot bytes)."""
        if self.handle is None:
            os.makedirs(self.folder, exist_ok=True)
            # pages go to the file in 1 MB writes, not one system call each (20,000 pages of
            # 2-20 KB: 0.18-0.22 CPU s with the default buffer, 0.08-0.09 with this one)
            self.handle = open(file_path(self.folder, self.file_id), "xb", buffering=WRITE_BUFFER)
        self.handle.write(packed)
        spot = Spot(self.file_id, self.offset, len(packed))
        self.offset += len(packed)
        return spot.to_bytes()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


class ParkingReader:
    """Parked pages read back by their spots, keeping up to ``max_open`` files open."""

    def __init__(self, folder: str, max_open: int = 64) -> None:
        self.folder = folder
        self.max_open = max_open
        self.handles: OrderedDict[bytes, object] = OrderedDict()

    def fetch(self, spot_bytes: bytes) -> bytes:
        spot = Spot.from_bytes(spot_bytes)
        handle = self._handle(spot.file_id)
        data = os.pread(handle.fileno(), spot.length, spot.offset)
        if len(data) != spot.length:
            raise ValueError(f"parked page {spot.file_id.hex()}@{spot.offset}: file ends early")
        return data

    def fetch_all(self, spots: list[bytes]) -> list[bytes]:
        """The pages of ``spots``, in their order, read in file and offset order."""
        order = sorted(range(len(spots)), key=spots.__getitem__)
        pages: list[Optional[bytes]] = [None] * len(spots)
        for i in order:
            pages[i] = self.fetch(spots[i])
        return pages  # type: ignore[return-value]

    def _handle(self, file_id: bytes):
        handle = self.handles.get(file_id)
        if handle is not None:
            self.handles.move_to_end(file_id)
            return handle
        path = file_path(self.folder, file_id)
        try:
            handle = open(path, "rb")
        except FileNotFoundError:
            raise FileNotFoundError(f"parked pages {path} are gone (removed while the build ran?)") from None
        self.handles[file_id] = handle
        if len(self.handles) > self.max_open:
            _, oldest = self.handles.popitem(last=False)
            oldest.close()
        return handle

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()
        self.handles.clear()


@dataclasses.dataclass(frozen=True)
class PageStore:
    """Where packed pages wait (module doc): carried in their references (``folder`` None) or
    parked in ``folder``. ``writer()`` per bundle turns packed pages into references,
    ``reader()`` per worker turns references back into packed pages."""

    folder: Optional[str] = None

    @property
    def parks(self) -> bool:
        return self.folder is not None

    @property
    def compression(self) -> bool:
        """Whether the pages it holds are packed with their text compressed."""
        return PARKED_COMPRESSION if self.parks else SHUFFLE_COMPRESSION

    def writer(self) -> StoreWriter:
        return StoreWriter(ParkingWriter(self.folder) if self.folder else None)

    def reader(self) -> StoreReader:
        return StoreReader(ParkingReader(self.folder) if self.folder else None)

    def page_ref(self, page: Document, writer: StoreWriter) -> PageRef:
        """``page`` packed, put in the store, as its PageRef."""
        return PageRef(page.normalized_url, page.url, page.text_size(),
                       writer.put(to_bytes(page, self.compression)), page.near_dup_cluster_size)


INLINE = PageStore()


class StoreWriter:
    """One bundle's way into a store: ``put(packed)`` gives the page's reference; ``close`` (at
    the end of the bundle, before its references are handed on) makes the pages readable."""

    def __init__(self, parking: Optional[ParkingWriter]) -> None:
        self.parking = parking

    def put(self, packed: bytes) -> bytes:
        return packed if self.parking is None else self.parking.put(packed)

    def close(self) -> None:
        if self.parking is not None:
            self.parking.close()


class StoreReader:
    """A worker's way out of a store: ``get(ref)`` the packed page, ``pages(refs)`` those of
    PageRefs in their order (read in file order) with their cluster sizes set."""

    def __init__(self, parking: Optional[ParkingReader]) -> None:
        self.parking = parking

    def get(self, ref: bytes) -> bytes:
        return ref if self.parking is None else self.parking.fetch(ref)

    def pages(self, refs: list[PageRef]) -> list[bytes]:
        packed = ([r.ref for r in refs] if self.parking is None
                  else self.parking.fetch_all([r.ref for r in refs]))
        return [data if ref.cluster_size == 1 else with_cluster_size(data, ref.cluster_size)
                for ref, data in zip(refs, packed)]

    def close(self) -> None:
        if self.parking is not None:
            self.parking.close()
