"""Train a SentencePiece vocabulary (BPE or unigram) from corpus shards.

The training text is a deterministic sample of the corpus split, streamed shard by shard (the
corpus is never loaded whole): a document is taken when md5(seed, url) falls under the share
``sample_bytes / split bytes``, until ``sample_bytes`` are collected. Documents are fed to the
SentencePiece trainer line by line through its iterator interface, on every core.

Settings chosen for exact, lossless round trips on web text (decode(encode(x)) == x):

- normalisation ``identity`` and ``remove_extra_whitespaces=False``: text is not rewritten;
- ``byte_fallback``: any character outside the vocabulary becomes its UTF-8 bytes, never <unk>;
- ``split_digits``: numbers are spelled digit by digit;
- ``character_coverage`` 0.9995: rare characters go to byte fallback instead of taking vocabulary
  slots (1.0 spends most of a small vocabulary on them);
- ``\\n`` is a user-defined piece, so line breaks cost one token and never merge with text.

Fixed ids: 0 ``<pad>``, 1 ``<s>``, 2 ``</s>`` (EOS, appended to every document), 3 ``<unk>``,
4 ``<mask>``, 5 ``\\n``, then T5's ``<extra_id_0>`` .. ``<extra_id_{N-1}>`` when asked for
(ids 6 .. 5+N; T5 itself puts them at the end of the vocabulary), then the 256 byte pieces.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import re
import time
from collections.abc import Iterator
from typing import Optional

from c4forge.core.outdir import OutputError, claim, hook_from_env, writing
from c4forge.corpus.output.shards import (
    CorpusFormatError,
    iter_corpus_documents,
    manifest_path,
    read_manifest,
)
from c4forge.tokenizer.formats import file_sha256
from c4forge.tokenizer.hf import hf_tokenizer_files
from c4forge.tokenizer.hf_train import HF_MODEL_TYPES, train_hf_tokenizer
from c4forge.tokenizer.load import (  # noqa: F401 - the directory's names, where users import them
    CONFIG_FILE,
    FORMAT,
    MODEL_FILE,
    SPECIAL_IDS,
    SPECIAL_PIECES,
    TOKENIZER_KIND,
    VERSION,
    VOCAB_FILE,
    TokenizerError,
    load_tokenizer,
    tokenizer_files,
    tokenizer_settings,
    tokenizer_user_symbols,
    user_symbols,
)

LIBRARIES = {"sentencepiece": ("bpe", "unigram"), "tokenizers": HF_MODEL_TYPES}


@dataclasses.dataclass(frozen=True)
class TokenizerConfig:
    """model_type: "bpe" or "unigram". vocab_size: pieces in total, specials and bytes included.
    sample_bytes: UTF-8 bytes of text sampled for training (default 1 GB). seed: picks the
    sample. split: which corpus split to sample. t5_sentinels: how many <extra_id_N> pieces
    (100, as T5's vocabulary: the span objective needs them; 0 for none).
    character_coverage: share of characters that get their own piece (the rest: bytes).
    max_line_bytes: longer lines are cut into pieces of this size for training only.
    library: "sentencepiece" (model types bpe, unigram: the settings of the module doc) or
    "tokenizers", Hugging Face's trainers (tokenizer/hf_train.py: byte-bpe, GPT-2's byte-level
    BPE; wordpiece, BERT's; unigram)."""

    model_type: str = "bpe"
    vocab_size: int = 8000
    library: str = "sentencepiece"
    sample_bytes: int = 1_000_000_000
    seed: int = 0
    split: str = "train"
    t5_sentinels: int = 100
    character_coverage: float = 0.9995
    max_line_bytes: int = 16384


def sampled_documents(corpus: str, config: TokenizerConfig, total_bytes: int, stats: dict[str, int]
                      ) -> Iterator[str]:
    """The texts of the sampled documents (module doc); fills ``stats`` as it goes."""
    share = min(1.0, config.sample_bytes / total_bytes) if total_bytes else 1.0
    limit = int(share * (1 << 64))
    for doc in iter_corpus_documents(corpus, config.split, columns=("text", "url")):
        if stats["bytes"] >= config.sample_bytes:
            return
        key = hashlib.md5(f"{config.seed}:{doc['url']}".encode()).digest()[:8]
        if int.from_bytes(key, "big") >= limit:
            continue
        text = doc["text"]
        if not text:
            stats["empty_documents"] += 1
            continue
        stats["documents"] += 1
        stats["bytes"] += len(text.encode("utf-8"))
        yield text


def _sampled(corpus: str, config: TokenizerConfig, total_bytes: int, stats: dict[str, int]
             ) -> Iterator[str]:
    """Lines of the sampled documents (long ones cut), as the SentencePiece trainer takes them."""
    for text in sampled_documents(corpus, config, total_bytes, stats):
        for line in text.split("\n"):
            if not line:
                continue
            encoded = line.encode("utf-8")
            if len(encoded) <= config.max_line_bytes:
                stats["lines"] += 1
                yield line
                continue
            for start in range(0, len(encoded), config.max_line_bytes):
                piece = encoded[start:start + config.max_line_bytes].decode("utf-8", "ignore")
                if piece:
                    stats["lines"] += 1
                    yield piece


def _vocab_text(model_proto: bytes) -> str:
    import sentencepiece as spm  # lazy: sentencepiece (the [tokenizer] extra): the module's settings load without it

    sp = spm.SentencePieceProcessor(model_proto=model_proto)
    rows = []
    for i in range(sp.get_piece_size()):
        rows.append(f"{i}\t{sp.id_to_piece(i)!r}\t{sp.get_score(i):.6f}")
    return "\n".join(rows) + "\n"


def train_tokenizer(corpus: str, output: str, config: TokenizerConfig = TokenizerConfig(),
                    overwrite: bool = False, num_threads: Optional[int] = None) -> dict:
    """Train and write ``output/`` (model, vocab, c4forge-tokenizer.json) following the
    output-directory rule of :mod:`c4forge.core.outdir`; returns the settings."""
    if config.library not in LIBRARIES:
        raise TokenizerError(f"--library {config.library!r}: choose {' or '.join(LIBRARIES)}")
    if config.model_type not in LIBRARIES[config.library]:
        raise TokenizerError(f"--model-type {config.model_type!r} with --library {config.library}: "
                             f"choose {', '.join(LIBRARIES[config.library])}")
    try:
        manifest = read_manifest(corpus)
    except CorpusFormatError as exc:
        raise TokenizerError(str(exc)) from exc
    split = manifest["splits"].get(config.split, {})
    if not split.get("documents"):
        raise TokenizerError(f"corpus {corpus} has no documents in split {config.split!r}: "
                             "nothing to train on")
    try:  # refuse before spending time on training
        target = claim(output, TOKENIZER_KIND, overwrite)
    except OutputError as exc:
        raise TokenizerError(str(exc)) from exc
    corpus_info = {"path": os.path.abspath(corpus), "preset": manifest["config"].get("preset"),
                   "manifest_sha256": file_sha256(manifest_path(corpus))}
    if config.library == "tokenizers":
        stats = {"documents": 0, "bytes": 0, "lines": 0, "empty_documents": 0}
        return train_hf_tokenizer(sampled_documents(corpus, config, split["bytes"], stats), stats,
                                  target, config, corpus_info, num_threads or os.cpu_count() or 1)
    import sentencepiece as spm  # lazy: sentencepiece (the [tokenizer] extra): the module's settings load without it

    minimum = 256 + len(SPECIAL_PIECES) + config.t5_sentinels + 1
    if config.vocab_size < minimum:
        raise TokenizerError(f"--vocab-size {config.vocab_size} is too small: the specials and the "
                             f"256 byte pieces alone need {minimum - 1}")
    stats = {"documents": 0, "bytes": 0, "lines": 0, "empty_documents": 0}
    started = time.time()
    model = _train_model(_sampled(corpus, config, split["bytes"], stats), config, stats,
                         num_threads or os.cpu_count() or 1)
    if stats["documents"] == 0:
        raise TokenizerError(f"no non-empty documents sampled from {corpus}")
    info = {**dataclasses.asdict(config),
            "corpus": corpus_info, "sample": stats, "train_seconds": round(time.time() - started, 2),
            "sentencepiece": spm.__version__}
    return _write_tokenizer(target, model, config, info)


def _train_model(lines: Iterator[str], config: TokenizerConfig, stats: dict, num_threads: int) -> bytes:
    """The SentencePiece model trained on ``lines`` (its settings: the module doc), or one clear
    error saying which setting to change."""
    import sentencepiece as spm  # lazy: sentencepiece (the [tokenizer] extra): the module's settings load without it

    proto = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=lines, model_writer=proto, model_type=config.model_type,
            vocab_size=config.vocab_size, byte_fallback=True, split_digits=True,
            normalization_rule_name="identity", remove_extra_whitespaces=False,
            add_dummy_prefix=True, allow_whitespace_only_pieces=True,
            character_coverage=config.character_coverage,
            pad_id=SPECIAL_IDS["pad"], bos_id=SPECIAL_IDS["bos"],
            eos_id=SPECIAL_IDS["eos"], unk_id=SPECIAL_IDS["unk"],
            user_defined_symbols=user_symbols(config.t5_sentinels),
            max_sentence_length=config.max_line_bytes, input_sentence_size=0,
            shuffle_input_sentence=False, num_threads=num_threads, minloglevel=2)
    except RuntimeError as exc:
        text = str(exc)
        if "smaller than required_chars" in text:
            found = re.search(r"(\d+) vs (\d+)", text)
            need = f" it needs {int(found.group(2)):,} pieces for the characters alone" if found else ""
            raise TokenizerError(
                f"--vocab-size {config.vocab_size:,} cannot hold the sample's characters "
                f"(character_coverage {config.character_coverage}):{need}. Use a larger "
                f"--vocab-size, or a lower --character-coverage than {config.character_coverage} "
                "(e.g. 0.995 for text in many scripts; rarer characters then go to byte "
                "pieces).") from exc
        if "Vocabulary size too high" in text or "vocab_size" in text:
            raise TokenizerError(
                f"the sample ({stats['documents']:,} documents, {stats['bytes'] / 1e6:.1f} MB) cannot "
                f"support {config.vocab_size:,} pieces: {text.strip()} Use a smaller --vocab-size or "
                "a larger corpus/--sample-bytes.") from exc
        raise TokenizerError(f"sentencepiece training failed: {text.strip()}") from exc
    return proto.getvalue()


def _write_tokenizer(target, model: bytes, config: TokenizerConfig, info: dict) -> dict:
    """The tokenizer directory written atomically (model, vocab, the HF files, the settings)."""
    with writing(target, hook_from_env()) as staged:
        staging = staged.path
        model_path = os.path.join(staging, MODEL_FILE)
        with open(model_path, "wb") as handle:
            handle.write(model)
        with open(os.path.join(staging, VOCAB_FILE), "w", encoding="utf-8") as handle:
            handle.write(_vocab_text(model))
        hf_files = hf_tokenizer_files(model_path, config.model_type, user_symbols(config.t5_sentinels))
        for name, text in hf_files.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        staged.manifest = {
            "format": FORMAT, "version": VERSION, "files": [MODEL_FILE, VOCAB_FILE, *hf_files],
            **{k: v for k, v in info.items() if k not in ("corpus", "sample", "train_seconds", "sentencepiece")},
            "special_ids": dict(SPECIAL_PIECES) | {
                f"<extra_id_{i}>": len(SPECIAL_PIECES) + i for i in range(config.t5_sentinels)},
            "normalization": "identity", "remove_extra_whitespaces": False,
            "add_dummy_prefix": True, "byte_fallback": True, "split_digits": True,
            **{k: info[k] for k in ("corpus", "sample", "train_seconds", "sentencepiece")},
            "model_sha256": file_sha256(model_path),
        }
    assert staged.result is not None
    return staged.result


