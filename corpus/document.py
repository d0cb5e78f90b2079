"""The record that flows between the corpus stages."""
from __future__ import annotations

import dataclasses
from typing import Optional


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
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
