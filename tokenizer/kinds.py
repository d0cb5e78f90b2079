"""The tokenizers c4forge encodes with, whatever made them: one interface over four libraries.

A user names a tokenizer by path (``--tokenizer``):

- a c4forge tokenizer directory (``tokenizer train``; SentencePiece or Hugging Face
  ``tokenizers`` inside, its ``c4forge-tokenizer.json`` says which);
- a Hugging Face ``tokenizer.json``, or a directory holding one (GPT-2's, Llama 3's, BERT's:
  whatever ``tokenizers.Tokenizer.from_file`` loads; ``tokenizer_config.json`` beside it names
  the EOS/BOS tokens when present);
- a SentencePiece ``.model`` file (T5's, Mistral's), or a directory holding exactly one;
- a tiktoken BPE ranks file, with its split pattern and special tokens given by a known
  encoding's name (``--tiktoken-encoding cl100k_base``) or by the user.

Every kind encodes a document exactly as its own library does (``Tokenizer.encode_batch`` with
``add_special_tokens=False``, ``SentencePieceProcessor.encode``, ``Encoding.encode_ordinary``):
c4forge adds nothing but the end-of-document id (and an optional BOS) around those ids, so a
user's trainer that tokenizes the same text with the same library sees the same ids.

A :class:`TokenizerSpec` is what was asked for (picklable: worker processes and Beam workers
reopen the tokenizer from it); :func:`open_tokenizer` gives a :class:`Tokenizer`, whose
:meth:`Tokenizer.describe` is the ``tokenizer`` entry of a token manifest and whose
:meth:`TokenizerSpec.from_manifest` reopens it (refused when the file changed: its sha256).
"""
from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field, replace
from typing import Optional

from c4forge.core.io import file_sha256
from c4forge.tokenizer.load import CONFIG_FILE, TokenizerError, load_tokenizer

KINDS = ("c4forge", "hf", "sentencepiece", "tiktoken")
HF_FILE = "tokenizer.json"
HF_CONFIG = "tokenizer_config.json"
HF_SPECIAL_MAP = "special_tokens_map.json"
# What pretraining tokenizers call the end of a document, in the order they are looked for when
# the tokenizer's own files do not say (GPT-2 and tiktoken's <|endoftext|>, Llama 3's
# <|end_of_text|>, SentencePiece and T5's </s>, Gemma's <eos>).
EOS_NAMES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>")
BOS_NAMES = ("<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>")
MASK_NAMES = ("<mask>", "[MASK]")

# The split patterns and special tokens of tiktoken's own encodings, as
# tiktoken_ext/openai_public.py defines them (tiktoken 0.12), for a ranks file saved locally
# (tiktoken itself would download it). Checked against tiktoken's module in the tests.
_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
_O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
TIKTOKEN_ENCODINGS = {
    "gpt2": (_R50K, {"<|endoftext|>": 50256}),
    "r50k_base": (_R50K, {"<|endoftext|>": 50256}),
    "p50k_base": (_R50K, {"<|endoftext|>": 50256}),
    "cl100k_base": (_CL100K, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                              "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                              "<|endofprompt|>": 100276}),
    "o200k_base": (_O200K, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}


@dataclass(frozen=True)
class TokenizerSpec:
    """What the user asked for. ``eos``/``bos``: a token's text (or its id, as digits); ``eos``
    None takes the tokenizer's own end-of-text token; ``bos`` None adds none, "auto" the
    tokenizer's own. tiktoken only: ``tiktoken_encoding`` (a known encoding's name: its pattern
    and special tokens) or ``tiktoken_pattern`` and ``special_tokens`` ((text, id) pairs)."""

    path: str
    kind: str = "auto"
    eos: Optional[str] = None
    bos: Optional[str] = None
    tiktoken_encoding: Optional[str] = None
    tiktoken_pattern: Optional[str] = None
    special_tokens: tuple[tuple[str, int], ...] = ()

    def options(self) -> dict:
        """The settings beside the path, as a manifest records them."""
        return {"eos": self.eos, "bos": self.bos, "tiktoken_encoding": self.tiktoken_encoding,
                "tiktoken_pattern": self.tiktoken_pattern,
                "special_tokens": [list(pair) for pair in self.special_tokens]}

    @classmethod
    def from_manifest(cls, entry: dict, path: Optional[str] = None) -> TokenizerSpec:
        """The spec a token manifest's ``tokenizer`` entry was encoded with (older manifests,
        from c4forge tokenizer directories only, have no kind: c4forge)."""
        options = entry.get("options") or {}
        return cls(path=path or entry.get("path", ""), kind=entry.get("kind", "c4forge"),
                   eos=options.get("eos"), bos=options.get("bos"),
                   tiktoken_encoding=options.get("tiktoken_encoding"),
                   tiktoken_pattern=options.get("tiktoken_pattern"),
                   special_tokens=tuple((str(t), int(i)) for t, i in options.get("special_tokens") or ()))


@dataclass
class Tokenizer:
    """An opened tokenizer: ``encode_batch`` gives each text's ids (no specials added)."""

    spec: TokenizerSpec
    kind: str
    file: str
    sha256: str
    vocab_size: int
    eos_id: int
    bos_id: Optional[int]
    special_ids: dict[str, int]
    model_type: Optional[str] = None
    threads: int = 1
    library: object = field(default=None, repr=False)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0]

    def decode(self, ids) -> str:
        raise NotImplementedError

    def pieces(self) -> list[str]:
        """Every id's piece as the library spells it (SentencePiece's ``▁``, byte-level BPE's
        ``Ġ``, WordPiece's ``##``; tiktoken's bytes decoded with replacement)."""
        raise NotImplementedError

    def document(self, ids: list[int]) -> list[int]:
        """A document's ids as a token shard stores them: [BOS] + ids + [EOS]."""
        ids.append(self.eos_id)
        if self.bos_id is not None:
            ids.insert(0, self.bos_id)
        return ids

    def with_threads(self, threads: int) -> Tokenizer:
        """The same tokenizer encoding on ``threads`` of the library's own threads."""
        self.threads = max(1, int(threads))
        return self

    def describe(self) -> dict:
        """The ``tokenizer`` entry of a token manifest: enough to reopen it and to tell it apart."""
        return {"kind": self.kind, "path": os.path.abspath(self.spec.path), "file": os.path.abspath(self.file),
                "sha256": self.sha256, "model_sha256": self.sha256, "vocab_size": self.vocab_size,
                "eos_id": self.eos_id, "bos_id": self.bos_id, "special_ids": self.special_ids,
                "options": self.spec.options(),
                **({"model_type": self.model_type} if self.model_type else {})}


class _SentencePiece(Tokenizer):
    def encode_batch(self, texts):
        processor = self.library
        return processor.encode(texts, num_threads=self.threads)  # type: ignore[attr-defined]

    def decode(self, ids):
        return self.library.decode([int(i) for i in ids])  # type: ignore[attr-defined]

    def pieces(self):
        processor = self.library
        return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]  # type: ignore[attr-defined]


class _HuggingFace(Tokenizer):
    def encode_batch(self, texts):
        tokenizer = self.library
        # encode_batch_fast (tokenizers >= 0.21) skips the character offsets; same ids.
        encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch  # type: ignore[attr-defined]
        return [e.ids for e in encode(texts, add_special_tokens=False)]

    def decode(self, ids):
        return self.library.decode([int(i) for i in ids], skip_special_tokens=False)  # type: ignore[attr-defined]

    def pieces(self):
        tokenizer = self.library
        return [tokenizer.id_to_token(i) or "" for i in range(self.vocab_size)]  # type: ignore[attr-defined]

    def with_threads(self, threads):
        # The Rust pool is process-wide and sized once, by RAYON_NUM_THREADS at first use; one
        # thread: no pool at all (the worker processes are the parallelism).
        super().with_threads(threads)
        os.environ["TOKENIZERS_PARALLELISM"] = "true" if self.threads > 1 else "false"
        os.environ.setdefault("RAYON_NUM_THREADS", str(self.threads))
        return self


class _Tiktoken(Tokenizer):
    def encode_batch(self, texts):
        encoding = self.library
        if self.threads > 1:
            return encoding.encode_ordinary_batch(texts, num_threads=self.threads)  # type: ignore[attr-defined]
        return [encoding.encode_ordinary(t) for t in texts]  # type: ignore[attr-defined]

    def decode(self, ids):
        return self.library.decode([int(i) for i in ids])  # type: ignore[attr-defined]

    def pieces(self):
        encoding = self.library
        out = []
        for i in range(self.vocab_size):
            try:
                out.append(encoding.decode_single_token_bytes(i).decode("utf-8", "replace"))  # type: ignore[attr-defined]
            except KeyError:
                out.append("")
        return out


def detect_kind(path: str) -> tuple[str, str]:
    """(kind, the file it loads) of a path a user gave, or one line saying what it is not."""
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, CONFIG_FILE)):
            return "c4forge", os.path.join(path, CONFIG_FILE)
        if os.path.isfile(os.path.join(path, HF_FILE)):
            return "hf", os.path.join(path, HF_FILE)
        models = sorted(n for n in os.listdir(path) if n.endswith(".model"))
        if len(models) == 1:
            return "sentencepiece", os.path.join(path, models[0])
        raise TokenizerError(
            f"{path} holds no tokenizer c4forge knows ({CONFIG_FILE}, {HF_FILE} or one "
            "SentencePiece .model" + (f"; it has {len(models)} .model files: name one" if models else "") + ")")
    if not os.path.isfile(path):
        raise TokenizerError(f"{path}: no such tokenizer file or directory")
    if path.endswith(".json"):
        return "hf", path
    if path.endswith(".model"):
        return "sentencepiece", path
    return "tiktoken", path


def open_tokenizer(spec: TokenizerSpec, expect_sha256: Optional[str] = None) -> Tokenizer:
    """The tokenizer ``spec`` names, opened and checked; a bad file or a missing end-of-document
    token is one line (naming the flag to give)."""
    kind, file = detect_kind(spec.path)
    # a c4forge directory describes what it holds, whatever kind it was first opened as
    if spec.kind not in ("auto", kind) and kind != "c4forge":
        if spec.kind not in KINDS:
            raise TokenizerError(f"tokenizer kind {spec.kind!r}: choose one of {', '.join(KINDS)}")
        kind = spec.kind
    if kind == "c4forge":
        tokenizer = _open_c4forge(spec)
    elif kind == "hf":
        tokenizer = _open_hf(spec, file)
    elif kind == "sentencepiece":
        tokenizer = _open_sentencepiece(spec, file)
    else:
        tokenizer = _open_tiktoken(spec, file)
    if expect_sha256 and tokenizer.sha256 != expect_sha256:
        raise TokenizerError(f"{tokenizer.file} is not the tokenizer these token shards were encoded "
                             "with (its sha256 differs): restore it, or re-encode")
    return tokenizer


def _token_id(given: str, vocabulary: dict[str, int], what: str, flag: str) -> int:
    if given.isdigit():
        return int(given)
    if given not in vocabulary:
        raise TokenizerError(f"{what}: the tokenizer has no token {given!r} ({flag})")
    return vocabulary[given]


def _specials(spec: TokenizerSpec, file: str, vocabulary: dict[str, int], special_ids: dict[str, int],
              own_eos: Optional[str], own_bos: Optional[str]) -> tuple[int, Optional[int]]:
    """(EOS id, BOS id or None) from the flags, else the tokenizer's own."""
    if spec.eos is not None:
        eos = _token_id(spec.eos, vocabulary, file, "--eos")
    else:
        name = own_eos or next((n for n in EOS_NAMES if n in special_ids), None)
        if name is None or name not in vocabulary:
            raise TokenizerError(f"{file} names no end-of-document token: give one with --eos "
                                 "TOKEN (its text, e.g. '[SEP]', or its id)")
        eos = vocabulary[name]
    bos: Optional[int] = None
    if spec.bos == "auto":
        name = own_bos or next((n for n in BOS_NAMES if n in special_ids), None)
        if name is None or name not in vocabulary:
            raise TokenizerError(f"{file} names no beginning-of-document token: give one with "
                                 "--bos TOKEN, or leave --bos out")
        bos = vocabulary[name]
    elif spec.bos is not None:
        bos = _token_id(spec.bos, vocabulary, file, "--bos")
    return eos, bos


def tokenizer_of_manifest(entry: dict) -> Tokenizer:
    """The tokenizer a token manifest's ``tokenizer`` entry names, reopened and checked to be the
    same file (its sha256)."""
    return open_tokenizer(TokenizerSpec.from_manifest(entry),
                          expect_sha256=entry.get("sha256") or entry.get("model_sha256"))


LIBRARY_KIND = {"tokenizers": "hf", "sentencepiece": "sentencepiece", "tiktoken": "tiktoken"}


def _open_c4forge(spec: TokenizerSpec) -> Tokenizer:
    """A c4forge tokenizer directory: ``tokenizer train``'s SentencePiece model (the original
    layout), or one file of another library that its description names (``tokenizer train
    --library tokenizers``, a run's copy of a user's tokenizer) with the options it was used with."""
    info = _c4forge_info(spec.path)
    if info.get("file"):
        library = info.get("library")
        if library not in LIBRARY_KIND:
            raise TokenizerError(f"{os.path.join(spec.path, CONFIG_FILE)}: library {library!r} is not "
                                 f"one of {', '.join(LIBRARY_KIND)}")
        file = os.path.join(spec.path, os.path.basename(str(info["file"])))
        stored = TokenizerSpec.from_manifest({"kind": LIBRARY_KIND[library], "options": info.get("options") or {}},
                                             path=file)
        inner_spec = replace(stored, eos=spec.eos if spec.eos is not None else stored.eos,
                             bos=spec.bos if spec.bos is not None else stored.bos)
        opener = {"hf": _open_hf, "sentencepiece": _open_sentencepiece, "tiktoken": _open_tiktoken}
        inner = opener[LIBRARY_KIND[library]](inner_spec, file)
        if info.get("sha256") and inner.sha256 != info["sha256"]:
            raise TokenizerError(f"{file} is not the file {CONFIG_FILE} describes (its sha256 differs)")
        inner.spec = replace(spec, eos=inner_spec.eos, bos=inner_spec.bos)
        inner.kind = str(info.get("kind") or "c4forge")
        inner.model_type = info.get("model_type") or inner.model_type
        return inner
    processor, info = load_tokenizer(spec.path)
    pieces = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    special = dict(info["special_ids"])
    eos, bos = _specials(spec, spec.path, pieces, special, "</s>", "<s>")
    return _SentencePiece(spec, "c4forge", os.path.join(spec.path, "tokenizer.model"),
                          info["model_sha256"], processor.get_piece_size(), eos, bos, special,
                          model_type=info.get("model_type"), library=processor)


def _c4forge_info(directory: str) -> dict:
    try:
        with open(os.path.join(directory, CONFIG_FILE), encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"{os.path.join(directory, CONFIG_FILE)} is not valid JSON: {exc}") from exc
    return info if isinstance(info, dict) else {}


def _hf_named_tokens(directory: str) -> tuple[Optional[str], Optional[str]]:
    """The EOS and BOS texts a tokenizer_config.json (or special_tokens_map.json) beside
    tokenizer.json names, when there is one."""
    for name in (HF_CONFIG, HF_SPECIAL_MAP):
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                config = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(config, dict):
            def text(value):
                return value.get("content") if isinstance(value, dict) else value
            return text(config.get("eos_token")), text(config.get("bos_token"))
    return None, None


def _open_hf(spec: TokenizerSpec, file: str) -> Tokenizer:
    try:
        from tokenizers import (
            Tokenizer as HFTokenizer,  # lazy: each library only for its own kind of tokenizer
        )
    except ImportError as exc:
        raise TokenizerError("a Hugging Face tokenizer needs the `tokenizers` library: "
                             "pip install 'c4forge[tokenizer]'") from exc
    try:
        tokenizer = HFTokenizer.from_file(file)
    except Exception as exc:  # the Rust loader raises plain Exception subclasses
        raise TokenizerError(f"{file} is not a Hugging Face tokenizer.json: "
                             f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc
    vocabulary = tokenizer.get_vocab(with_added_tokens=True)
    special = {token.content: i for i, token in tokenizer.get_added_tokens_decoder().items() if token.special}
    own_eos, own_bos = _hf_named_tokens(os.path.dirname(file))
    eos, bos = _specials(spec, file, vocabulary, special, own_eos, own_bos)
    size = max(vocabulary.values()) + 1 if vocabulary else 0
    model_type = json.loads(tokenizer.to_str()).get("model", {}).get("type")
    return _HuggingFace(spec, "hf", file, file_sha256(file), size, eos, bos, special,
                        model_type=model_type, library=tokenizer)


def _open_sentencepiece(spec: TokenizerSpec, file: str) -> Tokenizer:
    try:
        import sentencepiece as spm  # lazy: each library only for its own kind of tokenizer
    except ImportError as exc:
        raise TokenizerError("a SentencePiece model needs sentencepiece: pip install 'c4forge[tokenizer]'") from exc
    try:
        processor = spm.SentencePieceProcessor(model_file=file)
    except (RuntimeError, OSError) as exc:
        raise TokenizerError(f"{file} is not a SentencePiece model: "
                             f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else exc}") from exc
    size = processor.get_piece_size()
    pieces = {processor.id_to_piece(i): i for i in range(size)}
    special = {processor.id_to_piece(i): i for i in range(size)
               if processor.is_control(i) or processor.is_unknown(i)}
    special.update({p: i for p, i in pieces.items() if p in MASK_NAMES or p.startswith("<extra_id_")})
    own_eos = processor.id_to_piece(processor.eos_id()) if processor.eos_id() >= 0 else None
    own_bos = processor.id_to_piece(processor.bos_id()) if processor.bos_id() >= 0 else None
    eos, bos = _specials(spec, file, pieces, special, own_eos, own_bos)
    return _SentencePiece(spec, "sentencepiece", file, file_sha256(file), size, eos, bos, special,
                          library=processor)


def _open_tiktoken(spec: TokenizerSpec, file: str) -> Tokenizer:
    try:
        import tiktoken  # lazy: each library only for its own kind of tokenizer
    except ImportError as exc:
        raise TokenizerError("a tiktoken ranks file needs tiktoken: pip install 'c4forge[tokenizer]'") from exc
    name = spec.tiktoken_encoding
    if name is None and not spec.tiktoken_pattern:
        stem = os.path.basename(file).split(".")[0]
        name = stem if stem in TIKTOKEN_ENCODINGS else None
    if name is not None and name not in TIKTOKEN_ENCODINGS:
        raise TokenizerError(f"--tiktoken-encoding {name!r}: known ones are {', '.join(TIKTOKEN_ENCODINGS)}")
    if name is None and not spec.tiktoken_pattern:
        raise TokenizerError(f"{file}: a tiktoken ranks file needs its split pattern: "
                             f"--tiktoken-encoding ({', '.join(TIKTOKEN_ENCODINGS)}) or --tiktoken-pattern REGEX")
    pattern, special = TIKTOKEN_ENCODINGS[name] if name else ("", {})
    pattern = spec.tiktoken_pattern or pattern
    special = {**special, **dict(spec.special_tokens)}
    ranks = read_tiktoken_ranks(file)
    try:
        encoding = tiktoken.Encoding(name=f"c4forge:{os.path.basename(file)}", pat_str=pattern,
                                     mergeable_ranks=ranks, special_tokens=special)
    except ValueError as exc:
        raise TokenizerError(f"{file}: {exc}") from exc
    vocabulary = {**special}
    eos, bos = _specials(spec, file, vocabulary, special, None, None)
    if eos >= encoding.n_vocab:
        raise TokenizerError(f"{file}: --eos {spec.eos} is beyond the vocabulary ({encoding.n_vocab} ids)")
    return _Tiktoken(spec, "tiktoken", file, file_sha256(file), encoding.n_vocab, eos, bos, special,
                     model_type="bpe", library=encoding)


def read_tiktoken_ranks(file: str) -> dict[bytes, int]:
    """A tiktoken ranks file (``base64(token) rank`` per line), read as tiktoken's own
    ``load_tiktoken_bpe`` reads it, with a bad line named rather than a traceback."""
    ranks: dict[bytes, int] = {}
    try:
        with open(file, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    token, rank = line.split()
                    ranks[base64.b64decode(token, validate=True)] = int(rank)
                except ValueError as exc:
                    raise TokenizerError(f"{file}:{number} is not a tiktoken ranks line "
                                         "(base64 token, space, rank)") from exc
    except OSError as exc:
        raise TokenizerError(f"{file}: {exc}") from exc
    if not ranks:
        raise TokenizerError(f"{file} holds no tiktoken ranks")
    return ranks


def write_tiktoken_ranks(path: str, ranks: dict[bytes, int]) -> None:
    """The ranks file format tiktoken reads (``load_tiktoken_bpe``)."""
    with open(path, "w", encoding="ascii") as handle:
        for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
            handle.write(f"{base64.b64encode(token).decode('ascii')} {rank}\n")


def copy_plan(tok: Tokenizer) -> tuple[list[tuple[str, str]], Optional[dict]]:
    """What a copy of ``tok`` in a folder of its own holds, so it opens by that folder's path
    alone: (source file, name in the copy) pairs, and the c4forge description to write beside
    them (None when the description is among the files: a c4forge directory)."""
    if os.path.isfile(os.path.join(tok.spec.path, CONFIG_FILE)):
        info = _c4forge_info(tok.spec.path)
        names = [*(info.get("files") or []), CONFIG_FILE]
        return [(os.path.join(tok.spec.path, n), n) for n in names
                if os.path.isfile(os.path.join(tok.spec.path, n))], None
    name = os.path.basename(tok.file)
    pairs = [(tok.file, name)]
    if tok.kind == "hf":
        pairs += [(os.path.join(os.path.dirname(tok.file), n), n) for n in (HF_CONFIG, HF_SPECIAL_MAP)
                  if n != name and os.path.isfile(os.path.join(os.path.dirname(tok.file), n))]
    library = {v: k for k, v in LIBRARY_KIND.items()}[tok.kind]
    description = {"format": "c4forge-tokenizer", "version": 1, "library": library, "kind": tok.kind,
                   "file": name, "sha256": tok.sha256, "options": tok.spec.options(),
                   "vocab_size": tok.vocab_size, "eos_id": tok.eos_id, "bos_id": tok.bos_id,
                   "special_ids": tok.special_ids, "model_type": tok.model_type,
                   "files": [n for _, n in pairs]}
    return pairs, description
