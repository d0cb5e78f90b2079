"""Pages parked on disk while what crosses the shuffles is where they wait.

Why: on Flink's batch path every stage boundary writes what crosses it, and every consumer of a
multi-output stage reads its own copy of the stage's whole output. Carried, a kept page was
written ten times or more on its way to a shard: the reading stage's output once per consumer
(the URL groups and the join), again before the join's union, by the join's combine and reduce,
then after near-dedup's input by the join stage's two consumers, the cluster join, the split
counts and the shard assignment, and the shard grouping (899 MB of shuffle files for 219 MB of
text at 4x distinct input; benchmarks/RESULTS.md, "Where the engine path spends it").

Parked, a page is written twice and read twice, by the workers themselves: URL dedup's reader
parks the cleaned text in a file of its bundle and sends its :class:`Spot` (28 bytes) to the
join, which reads back only the pages that won their URL; near-dedup parks the pages it has
hashed and what crosses its cluster join, the split counts, the shard assignment and the shard
grouping is a :class:`Ticket` (URLs, text size, spot, cluster size); each shard's writer reads its
pages back in file order.

Parking needs a folder every worker opens as a local path: ``corpus build`` parks pages in its
staging folder when that is a local (or mounted) path and carries them otherwise (gs://, s3://:
a request per random read). A bundle's file is written by that bundle only and named by a fresh
id: a bundle that fails and runs again writes a new file, and only the spots of the attempt that
succeeded travel on; the folder goes with the build's staging folder.
"""
from __future__ import annotations

import os
import uuid
from collections import OrderedDict
from typing import NamedTuple, Optional

from c4forge.corpus.document import packed_normalized_url, packed_text_size, packed_url, with_cluster_size

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


class Ticket(NamedTuple):
    """A parked page as it crosses the shuffles: what the cluster verdict, the split, the shard
    assignment and the shard's url order need, and where its bytes wait (``spot``: Spot bytes).
    Crosses as a plain tuple (``Ticket._make`` on the other side)."""

    normalized_url: str
    url: str
    text_size: int
    spot: bytes
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

    def park(self, packed: bytes) -> Ticket:
        """``packed`` (corpus.document.to_bytes) appended to the file; its ticket."""
        return Ticket(packed_normalized_url(packed), packed_url(packed), packed_text_size(packed),
                      self.put(packed))

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

    def tickets(self, tickets: list[Ticket]) -> list[bytes]:
        """The packed pages of ``tickets``, in their order, each with its ticket's cluster size
        set (near-dedup's verdict, which the parked bytes do not carry)."""
        packed = self.fetch_all([ticket.spot for ticket in tickets])
        return [with_cluster_size(data, ticket.cluster_size) for ticket, data in zip(tickets, packed)]

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
