"""Megatron-core's indexed dataset (``.bin`` + ``.idx``), what Megatron-LM's and NeMo's
``preprocess_data.py`` write and ``megatron.core.datasets.indexed_dataset.IndexedDataset`` reads.

One dataset per split, ``SPLIT_text_document`` (preprocess_data's name for the ``text`` key), one
sequence per document (its ids with the EOS, as ``--append-eod`` writes them). The ``.idx``, as
megatron-core's ``_IndexWriter`` lays it out: ``MMIDIDX\\x00\\x00``, version 1 (uint64), the dtype
code (uint8: 8 uint16, 4 int32; Megatron has no uint32 code and its own tokenizer path uses int32
past 65,500 ids), the sequence count and the document count (uint64), then int32 sequence
lengths, int64 byte pointers into ``.bin`` and int64 document indices (0, 1, ..., n). Written
in passes over the shards' offset files, so memory stays flat in the corpus size. The reader here
(:func:`read_index`) is what ``train run`` uses to train on a Megatron dataset made elsewhere.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

HEADER = b"MMIDIDX\x00\x00"
CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
         8: np.uint16}
CODE_OF = {np.dtype(v): k for k, v in CODES.items()}


def prefix(split: str) -> str:
    return f"{split}_text_document"


def opens_with(output: str, split: str, dtype: np.dtype) -> str:
    return (f"IndexedDataset('{output}/{prefix(split)}')  # Megatron-LM: --data-path "
            f"{output}/{prefix(split)}")


def write(source, staging: str, split: str, options: dict, bar) -> tuple[list[str], int, int]:
    out_dtype = np.dtype("<u2") if source.dtype == np.dtype("<u2") else np.dtype("<i4")
    base = os.path.join(staging, prefix(split))
    documents = tokens = 0
    with open(base + ".bin", "wb") as handle:
        for shard in source.shards(split):
            handle.write(np.asarray(shard.tokens, dtype=out_dtype).tobytes())
            documents += len(shard)
            tokens += int(shard.offsets[-1])
            bar.update(len(shard))
    with open(base + ".idx", "wb") as handle:
        handle.write(HEADER + struct.pack("<Q", 1) + struct.pack("<B", CODE_OF[np.dtype(out_dtype.type)]))
        handle.write(struct.pack("<Q", documents) + struct.pack("<Q", documents + 1))
        for shard in source.shards(split):
            handle.write(np.diff(np.asarray(shard.offsets, dtype=np.int64)).astype("<i4").tobytes())
        start = 0
        for shard in source.shards(split):
            offsets = np.asarray(shard.offsets, dtype=np.int64)
            handle.write(((offsets[:-1] + start) * out_dtype.itemsize).astype("<i8").tobytes())
            start += int(offsets[-1])
        for first in range(0, documents + 1, 1 << 20):
            handle.write(np.arange(first, min(documents + 1, first + (1 << 20)), dtype="<i8").tobytes())
    return [prefix(split) + ".bin", prefix(split) + ".idx"], documents, tokens


@dataclass(frozen=True)
class MegatronIndex:
    """A Megatron ``.idx`` read: the token dtype and, per document, where its tokens are."""

    dtype: np.dtype
    lengths: np.ndarray       # int32 per sequence
    pointers: np.ndarray      # int64 byte offsets per sequence
    document_indices: np.ndarray  # int64, sequences of document k: [d[k], d[k+1])

    def document_offsets(self) -> np.ndarray:
        """Token offsets of each document (n + 1 of them), for sequences laid out in order (as
        every Megatron writer lays them); refused otherwise."""
        starts = self.pointers // self.dtype.itemsize
        ends = starts + self.lengths
        if len(starts) and (starts[0] != 0 or np.any(starts[1:] != ends[:-1])):
            raise ValueError("its sequences are not laid out one after another in .bin")
        total = int(ends[-1]) if len(ends) else 0
        firsts = self.document_indices[:-1]
        return np.concatenate((starts[firsts] if len(firsts) else np.zeros(0, np.int64), [total])).astype(np.uint64)


def is_megatron(path: str) -> bool:
    """Whether ``path`` (a prefix, or its .bin/.idx) names a Megatron indexed dataset."""
    base = dataset_prefix(path)
    try:
        with open(base + ".idx", "rb") as handle:
            return handle.read(len(HEADER)) == HEADER and os.path.isfile(base + ".bin")
    except OSError:
        return False


def dataset_prefix(path: str) -> str:
    return path[:-4] if path.endswith((".bin", ".idx")) else path


def read_index(path: str) -> MegatronIndex:
    """The ``.idx`` of a Megatron dataset (``path``: the prefix or either file), checked."""
    base = dataset_prefix(path)
    data = np.memmap(base + ".idx", dtype=np.uint8, mode="r")
    if bytes(data[:9]) != HEADER:
        raise ValueError(f"{base}.idx is not a Megatron index (no MMIDIDX header)")
    version, = struct.unpack("<Q", bytes(data[9:17]))
    code = int(data[17])
    if version != 1 or code not in CODES:
        raise ValueError(f"{base}.idx: version {version}, dtype code {code}: not a Megatron index c4forge reads")
    sequences, documents = struct.unpack("<QQ", bytes(data[18:34]))
    offset = 34
    lengths = np.frombuffer(data, dtype="<i4", count=sequences, offset=offset)
    offset += lengths.nbytes
    pointers = np.frombuffer(data, dtype="<i8", count=sequences, offset=offset)
    offset += pointers.nbytes
    document_indices = np.frombuffer(data, dtype="<i8", count=documents, offset=offset)
    return MegatronIndex(np.dtype(CODES[code]).newbyteorder("<"), lengths, pointers, document_indices)
