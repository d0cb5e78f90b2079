"""A flat memory map per split: what nanoGPT's ``train.bin`` and OLMo's numpy datasets read.

``SPLIT.bin``: every document's ids (EOS included, so the boundaries stay in the stream), one
after another, in the token shards' dtype (uint16, or uint32 past 65,536 ids), no header:
``np.memmap("train.bin", dtype=np.uint16, mode="r")``. ``SPLIT.offsets.npy``: the uint64 token
offset of every document and the end (n + 1 values, ``np.load``), for readers that want documents.
"""
from __future__ import annotations

import os

import numpy as np


def opens_with(output: str, split: str, dtype: np.dtype) -> str:
    return f"np.memmap('{output}/{split}.bin', dtype=np.{dtype.name}, mode='r')"


def write(source, staging: str, split: str, options: dict, bar) -> tuple[list[str], int, int]:
    documents = tokens = 0
    starts = []
    with open(os.path.join(staging, f"{split}.bin"), "wb") as handle:
        for shard in source.shards(split):
            handle.write(np.asarray(shard.tokens, dtype=source.dtype).tobytes())
            starts.append(np.asarray(shard.offsets[:-1], dtype=np.uint64) + np.uint64(tokens))
            documents += len(shard)
            tokens += int(shard.offsets[-1])
            bar.update(len(shard))
    offsets = np.concatenate([*starts, np.array([tokens], dtype=np.uint64)]).astype("<u8")
    np.save(os.path.join(staging, f"{split}.offsets.npy"), offsets)
    return [f"{split}.bin", f"{split}.offsets.npy"], documents, tokens
