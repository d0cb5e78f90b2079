"""datatrove's tokenized files, what its DocumentTokenizer writes and nanotron reads through
``datatrove.utils.dataset.DatatroveFolderDataset``.

Per split a folder ``SPLIT/`` with ``SPLIT_00000.ds`` (the ids, little-endian, 2 bytes per token
up to 65,536 ids, else 4: datatrove's ``token_size``), ``.ds.index`` (the uint64 end, in tokens,
of every document, as its TokenizedFile writes it) and ``.ds.metadata`` (the tokenizer's name and
token size, the token count: what its merger and readers print).
"""
from __future__ import annotations

import os

import numpy as np


def opens_with(output: str, split: str, dtype: np.dtype) -> str:
    return (f"DatatroveFolderDataset('{output}/{split}', seq_len=SEQ_LEN, token_size={dtype.itemsize}, "
            "filename_pattern='*.ds')")


def write(source, staging: str, split: str, options: dict, bar) -> tuple[list[str], int, int]:
    folder = os.path.join(staging, split)
    os.makedirs(folder, exist_ok=True)
    name = f"{split}_00000.ds"
    documents = tokens = 0
    with open(os.path.join(folder, name), "wb") as data, open(os.path.join(folder, name + ".index"), "wb") as index:
        for shard in source.shards(split):
            data.write(np.asarray(shard.tokens, dtype=source.dtype).tobytes())
            index.write((np.asarray(shard.offsets[1:], dtype=np.uint64) + np.uint64(tokens)).astype("<u8").tobytes())
            documents += len(shard)
            tokens += int(shard.offsets[-1])
            bar.update(len(shard))
    tokenizer = source.manifest["tokenizer"].get("file") or source.manifest["tokenizer"].get("path", "")
    with open(os.path.join(folder, name + ".metadata"), "w", encoding="utf-8") as handle:
        handle.write(f"{tokenizer}|{source.dtype.itemsize}\n{tokens}\n{tokens / 1e6:.1f}MT")
    return [f"{split}/{name}", f"{split}/{name}.index", f"{split}/{name}.metadata"], documents, tokens
