"""A trained tokenizer directory: its files, its description (``c4forge-tokenizer.json``) and
loading it, checked. Apart from training (tokenizer/train.py, which reads corpus shards and so
pyarrow), so the trainer and the evaluators load a vocabulary without the corpus stage.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from c4forge.core.errors import C4forgeError
from c4forge.core.io import file_sha256
from c4forge.core.outdir import OutputError, OutputKind, resolve

FORMAT = "c4forge-tokenizer"
VERSION = 1
MODEL_FILE = "tokenizer.model"
VOCAB_FILE = "tokenizer.vocab"
# c4forge's own description of a tokenizer directory (its manifest). Not "tokenizer.json": that
# is the name of Hugging Face's fast-tokenizer file, which AutoTokenizer would try to parse.
CONFIG_FILE = "c4forge-tokenizer.json"
SPECIAL_IDS = {"pad": 0, "bos": 1, "eos": 2, "unk": 3}
SPECIAL_PIECES = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "\n": 5}


class TokenizerError(C4forgeError, RuntimeError):
    """Training or loading cannot proceed; the message says why and what to change."""



def user_symbols(t5_sentinels: int) -> list[str]:
    return ["<mask>", "\n"] + [f"<extra_id_{i}>" for i in range(t5_sentinels)]


def tokenizer_user_symbols(info: dict) -> list[str]:
    """The user-defined pieces of a trained tokenizer, from its settings."""
    return user_symbols(int(info.get("t5_sentinels") or 0))


def tokenizer_settings(directory: str) -> Optional[dict]:
    """The settings a tokenizer directory was trained with (and the corpus it was trained on),
    or None when there is no readable tokenizer there."""
    try:
        with open(os.path.join(directory, CONFIG_FILE), encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def load_tokenizer(directory: str):
    """(SentencePieceProcessor, settings dict) of a tokenizer directory, checked for
    consistency: a model file that is not the one the settings describe is refused, and so is
    anything that is not a SentencePiece model (one clear error, never a traceback)."""
    config_path = os.path.join(directory, CONFIG_FILE)
    try:
        with open(config_path, encoding="utf-8") as handle:
            info = json.load(handle)
    except FileNotFoundError as exc:
        legacy = os.path.exists(os.path.join(directory, "tokenizer.json"))
        raise TokenizerError(
            f"{directory} is not a tokenizer directory (no {CONFIG_FILE})" +
            ("; it looks like one from c4forge < 0.2 (tokenizer.json): retrain it" if legacy
             else "; make one with `tokenizer train`")) from exc
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"{config_path} is not valid JSON: {exc}") from exc
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise TokenizerError(f"{config_path} is not a c4forge tokenizer description")
    try:
        model_path = resolve(directory, info, MODEL_FILE)
    except OutputError as exc:
        raise TokenizerError(f"{config_path}: {exc}") from exc
    if not os.path.exists(model_path):
        raise TokenizerError(f"{directory} has no {MODEL_FILE}")
    if file_sha256(model_path) != info.get("model_sha256"):
        raise TokenizerError(f"{model_path} is not the model {CONFIG_FILE} describes (files from "
                             "different training runs?); retrain or restore the pair")
    import sentencepiece as spm  # lazy: the [tokenizer] extra: `tokenizer --help` runs without it

    try:
        processor = spm.SentencePieceProcessor(model_file=model_path)
    except (RuntimeError, OSError) as exc:
        raise TokenizerError(f"{model_path} is not a SentencePiece model: "
                             f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else exc}") from exc
    if not isinstance(info.get("special_ids"), dict) or "</s>" not in info["special_ids"]:
        raise TokenizerError(f"{config_path} lacks special_ids: not a complete tokenizer description")
    return processor, info


def tokenizer_files(info: dict) -> list[str]:
    """The files a tokenizer directory's settings say it owns."""
    return list(info.get("files") or [MODEL_FILE, VOCAB_FILE])


TOKENIZER_KIND = OutputKind("tokenizer", CONFIG_FILE, FORMAT, tokenizer_files)
