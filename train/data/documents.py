"""The documents of one split of a token directory, memory-mapped, indexed without per-document
Python objects.

Document k (0 <= k < len) is numbered across the split's shards in manifest order. The only
per-document array held in memory is ``lengths`` (uint32, 4 bytes per document), read from the
shards' offset files; token ids stay in the memory-mapped ``.bin`` files and are read only when
:meth:`TokenDocuments.gather` asks for them.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from c4forge.core.errors import C4forgeError
from c4forge.tokenizer.formats import iter_shards, read_token_manifest
from c4forge.train.data.megatron import is_megatron, open_megatron


class TrainDataError(C4forgeError, ValueError):
    """Token directories that cannot be trained on together (empty split, other tokenizer, bad
    loader settings)."""


class TokenDocuments:
    """All documents of a split of one token directory."""

    def __init__(self, directory: str, split: str, tokenizer: str = "") -> None:
        """``directory``: a token directory, or a Megatron dataset's prefix (train/data/megatron.py,
        which needs ``tokenizer``)."""
        self.directory = directory
        self.split = split
        if is_megatron(directory):
            try:
                self.manifest, self.shards = open_megatron(directory, split, tokenizer)
            except (ValueError, OSError) as exc:
                raise TrainDataError(str(exc)) from exc
        else:
            self.manifest = read_token_manifest(directory)
            self.shards = list(iter_shards(directory, split, self.manifest))
        counts = [len(s) for s in self.shards]
        if not self.shards or not sum(counts):
            raise TrainDataError(f"{directory} has no documents in split {split!r}")
        self.shard_starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.eos_id = int(self.manifest["eos_id"])
        self.vocab_size = int(self.manifest["tokenizer"]["vocab_size"])
        split_info = self.manifest["splits"][split]
        self.text_bytes = int(split_info["bytes"])
        self.total_tokens = int(split_info["tokens"])
        self._lengths = None

    def __len__(self) -> int:
        return int(self.shard_starts[-1])

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per document (uint32), read once from the offset files."""
        if self._lengths is None:
            parts = [np.diff(np.asarray(s.offsets)).astype(np.uint32) for s in self.shards]
            self._lengths = np.concatenate(parts)
        return self._lengths

    def tokenizer_identity(self) -> dict[str, object]:
        """What must agree between directories mixed into one training stream."""
        tokenizer = self.manifest.get("tokenizer") or {}
        return {"model_sha256": tokenizer.get("model_sha256"),
                "vocab_size": self.vocab_size, "eos_id": self.eos_id,
                "dtype": self.manifest.get("dtype")}

    def document(self, k: int) -> np.ndarray:
        """The token ids of document k (a view into the memory map)."""
        shard = int(np.searchsorted(self.shard_starts, k, side="right")) - 1
        return self.shards[shard].document(int(k - self.shard_starts[shard]))

    def gather(self, docs: np.ndarray, within: np.ndarray) -> np.ndarray:
        """Token ids (int64) at offset ``within[i]`` of document ``docs[i]``, any shape."""
        docs = np.asarray(docs, dtype=np.int64)
        within = np.asarray(within, dtype=np.int64)
        out = np.empty(docs.shape, dtype=np.int64)
        if len(self.shards) == 1:
            shard = self.shards[0]
            out[...] = shard.tokens[shard.offsets[docs].astype(np.int64) + within]
            return out
        which = np.searchsorted(self.shard_starts, docs, side="right") - 1
        for s in np.unique(which):
            mask = which == s
            shard = self.shards[int(s)]
            local = docs[mask] - self.shard_starts[s]
            out[mask] = shard.tokens[shard.offsets[local].astype(np.int64) + within[mask]]
        return out


def check_same_tokenizer(sources: Sequence[TokenDocuments]) -> None:
    """Directories trained on together must share one tokenizer (ids mean the same tokens)."""
    first = sources[0].tokenizer_identity()
    for other in sources[1:]:
        theirs = other.tokenizer_identity()
        diffs = [f"{k} {first[k]!r} vs {theirs[k]!r}" for k in first if first[k] != theirs[k]]
        if diffs:
            raise TrainDataError(f"{sources[0].directory} and {other.directory} were encoded with "
                             f"different tokenizers ({'; '.join(diffs)}); re-encode them with one")
