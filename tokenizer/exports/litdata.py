"""litdata's optimized chunks for LitGPT: the token stream of a split written with litdata's own
``BinaryWriter`` and ``TokensLoader``, as ``litgpt``'s data preparation (``litdata.optimize(...,
item_loader=TokensLoader())``) writes them: one item per document (its ids, EOS included), chunks
of ``chunk_tokens`` ids. ``litdata.StreamingDataset(SPLIT_DIR, item_loader=TokensLoader(
block_size=N))`` then yields the stream in blocks of N, as LitGPT trains on it.
"""
from __future__ import annotations

import os

import numpy as np

from c4forge.core.errors import C4forgeError

CHUNK_TOKENS = 2049 * 8012  # LitGPT's prepare scripts' chunk size (block 2048 + 1, 8012 blocks)


def opens_with(output: str, split: str, dtype: np.dtype) -> str:
    return (f"StreamingDataset('{output}/{split}', item_loader=TokensLoader(block_size=N), "
            "shuffle=False)")


def write(source, staging: str, split: str, options: dict, bar) -> tuple[list[str], int, int]:
    try:  # the [interop] extra (litdata, torch): c4forge installs without it
        import torch  # lazy: torch and litdata, only for --format litdata
        from litdata.streaming.item_loader import (
            TokensLoader,  # lazy: litdata is not a dependency of c4forge (the interop extra)
        )
        from litdata.streaming.writer import (
            BinaryWriter,  # lazy: litdata is not a dependency of c4forge (the interop extra)
        )
    except ImportError as exc:
        raise C4forgeError("--format litdata needs litdata: pip install 'c4forge[interop]'") from exc
    folder = os.path.join(staging, split)
    os.makedirs(folder, exist_ok=True)
    writer = BinaryWriter(folder, chunk_size=int(options.get("chunk_tokens") or CHUNK_TOKENS),
                          item_loader=TokensLoader())
    documents = tokens = 0
    for doc in source.documents(split):
        writer.add_item(documents, torch.from_numpy(np.asarray(doc, dtype=np.int32)))
        documents += 1
        tokens += len(doc)
        bar.update(1)
    writer.done()
    writer.merge()
    return [f"{split}/{name}" for name in sorted(os.listdir(folder))], documents, tokens
