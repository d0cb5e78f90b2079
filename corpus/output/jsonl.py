"""`corpus clean --jsonl`: the kept documents as JSON Lines, one object per document (UTF-8,
no ASCII escapes), in the order the chain kept them. What a line holds is docs/formats.md's
"`corpus clean` output"; unlike the shards it carries each document's split (the shards put a
document in its split's files) and no `id`. Written atomically; an existing file is replaced
only with ``overwrite`` and only when it is such an output. Plain json and the floor: no
pyarrow, so `corpus clean --jsonl` starts without it."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable

from c4forge.core.io import atomic_write
from c4forge.core.outdir import OutputError
from c4forge.corpus.document import SCORE_COLUMN, Document
from c4forge.corpus.text.urls import split_of

# The keys every line has, in order (the score follows where the quality classifier ran).
KEYS = ("url", "timestamp", "text", "language", "language_score", "split", "source", "offset",
        "near_dup_cluster_size")


def record(doc: Document, validation_per_mille: int, scored: bool) -> dict:
    """One document's line, as a dict."""
    line = {"url": doc.url, "timestamp": doc.timestamp, "text": doc.text, "language": doc.language,
            "language_score": doc.language_score, "split": split_of(doc.normalized_url, validation_per_mille),
            "source": doc.source, "offset": doc.offset, "near_dup_cluster_size": doc.near_dup_cluster_size}
    if scored:  # the quality classifier's score, as the shards' quality_score column
        line[SCORE_COLUMN] = doc.quality_score
    return line


def write_jsonl(path: str, documents: Iterable[Document], validation_per_mille: int, scored: bool) -> None:
    """Every document's line into ``path``, atomically (the file appears whole or not at all)."""
    with atomic_write(path) as handle:
        for doc in documents:
            handle.write(json.dumps(record(doc, validation_per_mille, scored), ensure_ascii=False) + "\n")


def check_jsonl_target(path: str, overwrite: bool) -> None:
    """The output-file rule for ``--jsonl``: a new file is written; an existing one is replaced
    only with ``overwrite``, and only when it is empty or a JSONL of ``corpus clean`` (its
    first line a document record): a file of anything else is never replaced."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path):
        raise OutputError(f"{path} is a directory; --jsonl takes a file name")
    if not overwrite:
        raise OutputError(f"{path} already exists; pass --overwrite to replace it")
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
        line = json.loads(first) if first.strip() else {}
    except (OSError, UnicodeDecodeError, ValueError):
        line = None
    if not isinstance(line, dict) or (line and not {"url", "text", "split"} <= set(line)):
        raise OutputError(f"{path} is not a `corpus clean --jsonl` output: refusing to replace it, "
                          "--overwrite or not; choose another file")
