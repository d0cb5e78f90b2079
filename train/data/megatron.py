"""A Megatron indexed dataset (``PREFIX.bin`` + ``PREFIX.idx``, from Megatron-LM's or NeMo's
``preprocess_data.py``, megatron-core's ``IndexedDatasetBuilder`` or ``tokenizer export --format
megatron``) as the trainer's documents: ``data.train=PREFIX`` with ``data.tokenizer=TOKENIZER``.

The ``.idx`` is read by tokenizer/exports/megatron.py; its documents (each the run of sequences
``document_indices`` gives it, laid out one after another in ``.bin``) become one memory-mapped
shard, so packing, masks and resume work on it as on c4forge's own token shards. A Megatron
dataset does not say which tokenizer made it: the run needs ``data.tokenizer`` (any path
``tokenizer encode --tokenizer`` takes), which gives the vocabulary and the end-of-document id.
"""
from __future__ import annotations

import os

import numpy as np

from c4forge.tokenizer.exports.megatron import dataset_prefix, is_megatron, read_index
from c4forge.tokenizer.formats import TokenShard
from c4forge.tokenizer.kinds import TokenizerSpec, open_tokenizer

__all__ = ["is_megatron", "open_megatron"]


def open_megatron(path: str, split: str, tokenizer: str) -> tuple[dict, list[TokenShard]]:
    """(a token manifest describing the dataset, its one shard); ValueError says what is wrong."""
    base = dataset_prefix(path)
    if not tokenizer:
        raise ValueError(f"{base} is a Megatron dataset, which does not name its tokenizer: give "
                         "data.tokenizer=PATH (a tokenizer directory, tokenizer.json, .model or ranks file)")
    index = read_index(base)
    offsets = index.document_offsets()
    size = os.path.getsize(base + ".bin")
    tokens = (np.memmap(base + ".bin", dtype=index.dtype, mode="r") if size else np.zeros(0, index.dtype))
    if int(offsets[-1]) != len(tokens):
        raise ValueError(f"{base}: .idx says {int(offsets[-1]):,} tokens, .bin holds {len(tokens):,}")
    tok = open_tokenizer(TokenizerSpec(tokenizer))
    if len(tokens) and int(tokens.max()) >= tok.vocab_size:
        raise ValueError(f"{base} holds id {int(tokens.max())}, beyond {tokenizer}'s {tok.vocab_size} ids: "
                         "not the tokenizer it was made with")
    manifest = {"format": "megatron", "path": base, "tokenizer": tok.describe(), "eos_id": tok.eos_id,
                "dtype": index.dtype.str,
                "splits": {split: {"documents": len(offsets) - 1, "tokens": len(tokens), "bytes": 0}}}
    return manifest, [TokenShard(tokens, offsets)]
