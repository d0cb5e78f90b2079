"""MosaicML streaming's MDS shards, written with its own ``MDSWriter`` as llm-foundry's
text-to-MDS converter writes pre-tokenized data: a column ``tokens`` of type ``ndarray:int32``.

By default one sample per document (its ids, EOS included). With ``seq_len`` (``--seq-len N``),
llm-foundry's concatenated samples: the token stream cut into samples of exactly N ids, the
documents still separated by their EOS, the last partial sample dropped (as ConcatTokensDataset
drops it). Per split a folder ``SPLIT/`` (``index.json`` + ``shard.NNNNN.mds``), which
``streaming.StreamingDataset(local=...)`` and llm-foundry's ``StreamingTextDataset`` open.
"""
from __future__ import annotations

import os

import numpy as np

from c4forge.core.errors import C4forgeError


def opens_with(output: str, split: str, dtype: np.dtype) -> str:
    return f"StreamingDataset(local='{output}/{split}', shuffle=False)  # sample['tokens']"


def write(source, staging: str, split: str, options: dict, bar) -> tuple[list[str], int, int]:
    try:
        from streaming import MDSWriter  # lazy: the [interop] extra: c4forge installs without it
    except ImportError as exc:
        raise C4forgeError("--format mds needs MosaicML streaming: pip install 'c4forge[interop]'") from exc
    folder = os.path.join(staging, split)
    seq_len = int(options.get("seq_len") or 0)
    documents = tokens = 0
    carry = np.zeros(0, dtype=np.int32)
    with MDSWriter(out=folder, columns={"tokens": "ndarray:int32"}, compression=None, progress_bar=False) as writer:
        for doc in source.documents(split):
            ids = np.asarray(doc, dtype=np.int32)
            documents += 1
            tokens += len(ids)
            bar.update(1)
            if not seq_len:
                writer.write({"tokens": ids})
                continue
            carry = np.concatenate((carry, ids))
            while len(carry) >= seq_len:
                writer.write({"tokens": carry[:seq_len].copy()})
                carry = carry[seq_len:]
    return [f"{split}/{name}" for name in sorted(os.listdir(folder))], documents, tokens
