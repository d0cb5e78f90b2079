"""`tokenizer train --library tokenizers`: Hugging Face's trainers beside SentencePiece, saved as
a c4forge tokenizer directory that every command opens (tokenizer/kinds.py) and that
transformers' AutoTokenizer opens as it is (tokenizer.json, tokenizer_config.json).

Model types, each a recipe people pretrain with:

- ``byte-bpe``: GPT-2's byte-level BPE (ByteLevel pre-tokenizer without a prefix space, all 256
  bytes in the alphabet, so every text encodes and decodes exactly); specials first:
  ``<|endoftext|>`` (EOS, id 0), ``<pad>``, ``<mask>``, then T5's ``<extra_id_N>`` if asked for;
- ``wordpiece``: BERT's (cased: C4 is cased; BERT's normaliser and pre-tokenizer); ``[PAD]``
  ``[UNK]`` ``[CLS]`` ``[SEP]`` ``[MASK]``, ``[SEP]`` ends a document;
- ``unigram``: the unigram LM with SentencePiece's Metaspace (``▁``), ``</s>`` ends a document.

The sample is the SentencePiece path's (tokenizer/train.py: the same documents for the same
seed), fed whole documents at a time (line breaks are part of what a byte-level BPE learns).
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator

from c4forge.core.io import file_sha256
from c4forge.core.outdir import hook_from_env, writing
from c4forge.tokenizer.kinds import HF_CONFIG, HF_FILE, HF_SPECIAL_MAP
from c4forge.tokenizer.load import CONFIG_FILE, FORMAT, VERSION, TokenizerError

HF_MODEL_TYPES = ("byte-bpe", "wordpiece", "unigram")


def _specials(model_type: str, sentinels: int) -> tuple[list[str], str, str]:
    """(special tokens in id order, the EOS, the unknown token or '')."""
    extra = [f"<extra_id_{i}>" for i in range(sentinels)]
    if model_type == "byte-bpe":
        return ["<|endoftext|>", "<pad>", "<mask>", *extra], "<|endoftext|>", ""
    if model_type == "wordpiece":
        return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *extra], "[SEP]", "[UNK]"
    return ["<pad>", "</s>", "<unk>", "<mask>", *extra], "</s>", "<unk>"


def build_trainer(model_type: str, vocab_size: int, sentinels: int):
    """(untrained tokenizers.Tokenizer, its trainer, the EOS text) for a model type."""
    from tokenizers import (  # lazy: the [tokenizer] extra: `tokenizer --help` runs without it
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    specials, eos, unk = _specials(model_type, sentinels)
    if model_type == "byte-bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    elif model_type == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token=unk))
        tok.normalizer = normalizers.BertNormalizer(lowercase=False)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    else:
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=unk,
                                          show_progress=False)
    return tok, trainer, eos


def train_hf_tokenizer(texts: Iterator[str], stats: dict, target, config, corpus: dict,
                       threads: int) -> dict:
    """Train on ``texts`` (filling ``stats``) and write the directory through the claimed
    ``target``; returns its description."""
    import tokenizers  # lazy: the [tokenizer] extra: `tokenizer --help` runs without it

    specials, _, unk = _specials(config.model_type, config.t5_sentinels)
    minimum = len(specials) + (256 if config.model_type == "byte-bpe" else 1)
    if config.vocab_size <= minimum:
        raise TokenizerError(f"--vocab-size {config.vocab_size} is too small for {config.model_type}: "
                             f"its specials{' and 256 bytes' if config.model_type == 'byte-bpe' else ''} "
                             f"alone take {minimum}")
    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
    tok, trainer, eos = build_trainer(config.model_type, config.vocab_size, config.t5_sentinels)
    started = time.time()
    tok.train_from_iterator(texts, trainer)
    if stats["documents"] == 0:
        raise TokenizerError("no non-empty documents sampled from the corpus")
    seconds = round(time.time() - started, 2)
    ids = {t: tok.token_to_id(t) for t in specials}
    with writing(target, hook_from_env()) as staged:
        tok.save(os.path.join(staged.path, HF_FILE))
        named = {"eos_token": eos, "pad_token": "[PAD]" if config.model_type == "wordpiece" else "<pad>",
                 "mask_token": "[MASK]" if config.model_type == "wordpiece" else "<mask>",
                 **({"unk_token": unk} if unk else {})}
        hf_config = {"tokenizer_class": "PreTrainedTokenizerFast", **named, "bos_token": eos,
                     "clean_up_tokenization_spaces": False, "model_max_length": 1_000_000_000}
        for name, data in ((HF_CONFIG, hf_config), (HF_SPECIAL_MAP, {**named, "bos_token": eos})):
            with open(os.path.join(staged.path, name), "w", encoding="utf-8") as handle:
                handle.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        staged.manifest = {
            "format": FORMAT, "version": VERSION, "library": "tokenizers", "file": HF_FILE,
            "files": [HF_FILE, HF_CONFIG, HF_SPECIAL_MAP],
            **dataclasses.asdict(config),
            "options": {"eos": eos}, "special_ids": ids, "vocab_size": tok.get_vocab_size(),
            "corpus": corpus, "sample": stats, "train_seconds": seconds,
            "tokenizers": tokenizers.__version__,
            "sha256": file_sha256(os.path.join(staged.path, HF_FILE)),
        }
    assert staged.result is not None
    return staged.result


__all__ = ["HF_MODEL_TYPES", "train_hf_tokenizer", "build_trainer", "CONFIG_FILE"]
