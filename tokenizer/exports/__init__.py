"""`tokenizer export`: a token directory in the formats other trainers open, one module each.

| format | trainers | module |
|---|---|---|
| ``megatron`` | Megatron-LM, NeMo (megatron-core's IndexedDataset) | megatron.py |
| ``memmap`` | nanoGPT (``train.bin``), OLMo's numpy datasets | memmap.py |
| ``datatrove`` | nanotron (datatrove's DatatroveFolderDataset) | datatrove.py |
| ``mds`` | llm-foundry (MosaicML streaming) | mds.py |
| ``litdata`` | LitGPT (litdata's StreamingDataset + TokensLoader) | litdata.py |

Every writer reads the token shards split by split, shard by shard (memory: one shard), writes
into a staging folder that c4forge/core/outdir.py swaps in with an export manifest, and checks
what it wrote against the token manifest (documents, tokens) before the swap.
"""
from c4forge.tokenizer.exports.run import EXPORTS, ExportError, export_tokens

__all__ = ["EXPORTS", "ExportError", "export_tokens"]
