"""The token shard format. This module owns it; the trainer reads token shards through it.

A token directory holds, per split, shards written in corpus order::

    train-00000-of-00008.bin    token ids, little-endian uint16 (vocab <= 65,536) or uint32
    train-00000-of-00008.idx    little-endian uint64 offsets into .bin, one per document plus a
                                final one: document k is bin[idx[k]:idx[k+1]]
    ...
    manifest.json

Every document's ids end with the EOS id, so the boundaries are also in the token stream. Both
files are memory-mappable with numpy (``np.memmap(path, dtype=..., mode="r")``) and are written
atomically (temp name, fsync, rename); ``tokenizer encode`` swaps a finished directory in through
:mod:`c4forge.core.outdir`, so ``manifest.json`` always names a complete set of shards.

manifest.json: format/version, the tokenizer (path, model sha256, vocab size, special ids),
the corpus (path and manifest sha256), dtype, per split: documents, tokens, text bytes,
bytes per token, shard file names with their document and token counts.
"""
from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from c4forge.core.errors import C4forgeError
from c4forge.core.io import (
    atomic_write,
    atomic_write_bytes,
    file_sha256,  # noqa: F401 - also this module's name for it (encode, the ablation)
)
from c4forge.core.outdir import OutputError, OutputKind, check_name, resolve
from c4forge.core.schemas import problems

FORMAT = "c4forge-tokens"
VERSION = 1
MANIFEST = "manifest.json"
OFFSET_DTYPE = np.dtype("<u8")


class TokenFormatError(C4forgeError, ValueError):
    """A directory or file that is not a complete token directory."""


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


def shard_base(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}"


def _atomic_write_array(path: str, array: np.ndarray) -> None:
    atomic_write_bytes(path, np.ascontiguousarray(array).tobytes())


def write_token_shard(directory: str, base: str, documents: Sequence[Sequence[int]],
                      dtype: np.dtype) -> dict[str, int]:
    """Write documents (each a sequence of ids, EOS included) as BASE.bin + BASE.idx."""
    lengths = np.fromiter((len(d) for d in documents), dtype=np.int64, count=len(documents))
    offsets = np.zeros(len(documents) + 1, dtype=OFFSET_DTYPE)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.fromiter(itertools.chain.from_iterable(documents), dtype=dtype,
                         count=int(offsets[-1]))
    _atomic_write_array(os.path.join(directory, base + ".bin"), tokens)
    _atomic_write_array(os.path.join(directory, base + ".idx"), offsets)
    return {"documents": len(documents), "tokens": int(offsets[-1])}


@dataclass
class TokenShard:
    """A memory-mapped shard: ``tokens`` and ``offsets`` arrays."""

    tokens: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def document(self, k: int) -> np.ndarray:
        return self.tokens[self.offsets[k]:self.offsets[k + 1]]


def manifest_files(manifest: dict) -> list[str]:
    """Every .bin/.idx file a token manifest lists."""
    splits = manifest.get("splits") or {}
    if not isinstance(splits, dict):
        raise TokenFormatError("token manifest 'splits' is not a mapping")
    return [entry["name"] + ext for split in splits.values()
            for entry in (split or {}).get("shards", []) for ext in (".bin", ".idx")]


TOKENS_KIND = OutputKind("token directory", MANIFEST, FORMAT, manifest_files)


def open_token_shard(directory: str, base: str, dtype: np.dtype,
                     manifest: Optional[dict] = None) -> TokenShard:
    try:
        bin_path = resolve(directory, manifest or {}, base + ".bin", "token shard name")
        idx_path = resolve(directory, manifest or {}, base + ".idx", "token shard name")
    except OutputError as exc:
        raise TokenFormatError(f"{directory}: {exc}") from exc
    try:
        offsets = np.memmap(idx_path, dtype=OFFSET_DTYPE, mode="r")
        size = os.path.getsize(bin_path)
        tokens = (np.memmap(bin_path, dtype=dtype, mode="r") if size
                  else np.zeros(0, dtype=dtype))
    except (OSError, ValueError) as exc:
        raise TokenFormatError(f"cannot open token shard {base} in {directory}: {exc}") from exc
    if len(offsets) == 0 or int(offsets[-1]) != len(tokens):
        raise TokenFormatError(f"{base}: .idx and .bin disagree (truncated or mixed files)")
    return TokenShard(tokens, offsets)


def token_manifest_sha256(directory: str) -> str:
    """sha256 of a token directory's manifest: names exactly this encoding of its corpus."""
    return file_sha256(os.path.join(directory, MANIFEST))


def read_token_manifest(directory: str) -> dict:
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except FileNotFoundError as exc:
        raise TokenFormatError(f"{directory} has no {MANIFEST}: not a token directory, or "
                               "its encode did not finish") from exc
    except (OSError, ValueError) as exc:
        raise TokenFormatError(f"{path} is not readable JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise TokenFormatError(f"{path} is not a c4forge token manifest (version {VERSION})")
    found = problems("token-manifest", manifest)
    if found:
        raise TokenFormatError(f"{path} does not follow the token manifest schema: {found[0]}")
    return manifest


def iter_shards(directory: str, split: str, manifest: Optional[dict] = None) -> Iterator[TokenShard]:
    manifest = manifest or read_token_manifest(directory)
    try:
        check_name(split, "split name")
    except OutputError as exc:
        raise TokenFormatError(str(exc)) from exc
    dtype = np.dtype(manifest["dtype"])
    for entry in manifest["splits"].get(split, {}).get("shards", []):
        yield open_token_shard(directory, entry["name"], dtype, manifest)


def iter_token_documents(directory: str, split: str = "train") -> Iterator[np.ndarray]:
    """Every document's ids (EOS included), in corpus order."""
    for shard in iter_shards(directory, split):
        for k in range(len(shard)):
            yield shard.document(k)


def full_manifest(manifest: dict) -> dict:
    return {"format": FORMAT, "version": VERSION,
            **{k: v for k, v in manifest.items() if k not in ("format", "version")}}


def write_manifest(directory: str, manifest: dict) -> None:
    """Write a token manifest in place (tests and tools that build a directory by hand;
    ``tokenizer encode`` goes through the output-directory swap instead)."""
    with atomic_write(os.path.join(directory, MANIFEST)) as handle:
        handle.write(json.dumps(full_manifest(manifest), indent=2) + "\n")
