"""The record that flows between the corpus stages."""
from __future__ import annotations

import dataclasses
from typing import Optional

_SIZE = "_text_size"  # (text object, its UTF-8 length): valid while ``text`` is that object


@dataclasses.dataclass
class Document:
    """One crawled page. Field names follow tfds' ``c4_utils.PageFeatures`` where they overlap.

    ``source`` and ``offset`` say where the record came from (file and byte offset of its gzip
    member, or of the record in an uncompressed file), so any document can be traced back.
    """

    url: str = ""
    normalized_url: str = ""
    text: str = ""
    timestamp: str = ""
    content_length: str = ""
    content_type: str = ""
    language: Optional[str] = None
    language_score: Optional[float] = None
    source: str = ""
    offset: int = -1
    near_dup_cluster_size: int = 1

    def replace(self, **changes) -> "Document":
        new = dataclasses.replace(self, **changes)
        if "text" not in changes and _SIZE in self.__dict__:
            new.__dict__[_SIZE] = self.__dict__[_SIZE]
        return new

    def text_size(self) -> int:
        """UTF-8 length of ``text``, encoded once per text: every step's byte counters ask for
        it, and re-encoding each time cost 7.6% of a `corpus clean` run."""
        cached = self.__dict__.get(_SIZE)
        if cached is not None and cached[0] is self.text:
            return cached[1]
        size = len(self.text.encode("utf-8"))
        self.__dict__[_SIZE] = (self.text, size)
        return size

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop(_SIZE, None)
        return state

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
