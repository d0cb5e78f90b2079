"""Hugging Face fast-tokenizer files for a c4forge SentencePiece model, converted without
protobuf or transformers (only the `tokenizers` library), so that
``AutoTokenizer.from_pretrained(DIR)`` gives exactly sentencepiece's ids.

How each sentencepiece setting is reproduced:

- pieces and ids: the vocabulary in id order; BPE merges are every split of a piece into two
  pieces, ranked as sentencepiece ranks merges (by the merged piece's score = its id, then the
  ids of the two halves); unigram keeps the scores;
- identity normalisation, ``remove_extra_whitespaces=False``, ``add_dummy_prefix``: the
  normaliser puts one ``▁`` before the text (also before a leading space, which HF's Metaspace
  would skip) and turns spaces into ``▁``; nothing else is rewritten;
- ``\n`` (a user-defined piece) is split off by the pre-tokeniser and is an ordinary piece, so
  no ``▁`` is inserted after a newline (HF's Llama converters insert one after every added
  token, which is how 0 of 127 demo documents got our ids);
- ``<mask>``, ``<extra_id_N>`` and ``<pad>`` ``<s>`` ``</s>`` ``<unk>`` are special tokens;
- ``byte_fallback``: BPE/unigram byte fallback to ``<0xXX>`` pieces, fused back on decode;
- decode: ``▁`` -> space, bytes fused, the dummy-prefix space stripped;
- the document start: training puts ``</s>`` before every document, so ``</s>`` is also the
  tokenizer's BOS and is prepended when special tokens are added (transformers' default, as
  Llama's tokenizers prepend ``<s>``): ``tok(text)`` conditions the model as training did,
  ``tok(text, add_special_tokens=False)`` gives sentencepiece's ids alone, and lm-eval-harness
  (which adds special tokens by default and uses the BOS for empty contexts) scores exactly as
  ``train eval`` does.

Known difference, only for text that spells a special token literally: ``</s>``, ``<s>``,
``<pad>`` are spelled as characters by both (``split_special_tokens`` is set, tested); a literal
``<mask>`` or ``<extra_id_N>`` is one piece for sentencepiece (user-defined) but spelled as
characters by transformers. Web text practically never contains them; pass
``split_special_tokens=False`` to get the piece.
"""
from __future__ import annotations

import json

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
DOCUMENT_START = "</s>"  # what precedes every document in training (the EOS of the one before)



def _pieces(model_file: str):
    import sentencepiece as spm  # lazy: sentencepiece (the [tokenizer] extra), only for a SentencePiece model

    sp = spm.SentencePieceProcessor(model_file=model_file)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    scores = [sp.get_score(i) for i in range(sp.get_piece_size())]
    return sp, pieces, scores


def _bpe_merges(pieces: list[str], skip: set) -> list[tuple[str, str]]:
    ids = {p: i for i, p in enumerate(pieces)}
    merges = []
    for merged_id, piece in enumerate(pieces):
        if merged_id in skip or len(piece) < 2:
            continue
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in ids and right in ids and ids[left] not in skip and ids[right] not in skip:
                merges.append((merged_id, ids[left], ids[right], left, right))
    merges.sort()
    return [(left, right) for _, _, _, left, right in merges]


def build_fast_tokenizer(model_file: str, model_type: str, user_defined: list[str]):
    """A ``tokenizers.Tokenizer`` equal to the sentencepiece model in ``model_file``."""
    from tokenizers import (  # lazy: tokenizers (the [tokenizer] extra), only when a tokenizer.json is written
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    sp, pieces, scores = _pieces(model_file)
    unk_id = sp.unk_id()
    special_ids = {i for i, p in enumerate(pieces) if sp.is_control(i) or sp.is_unknown(i)}
    added_ids = special_ids | {pieces.index(p) for p in user_defined if p in pieces}
    if model_type == "bpe":
        vocab = {p: i for i, p in enumerate(pieces)}
        model = models.BPE(vocab=vocab, merges=_bpe_merges(pieces, added_ids | {
            i for i in range(len(pieces)) if sp.is_byte(i)}), unk_token=pieces[unk_id],
            byte_fallback=True, fuse_unk=True, dropout=None)
    elif model_type == "unigram":
        model = models.Unigram([(p, s) for p, s in zip(pieces, scores)], unk_id=unk_id,
                               byte_fallback=True)
    else:
        raise ValueError(f"model type {model_type!r}: bpe or unigram")
    tokenizer = Tokenizer(model)
    # One "▁" before the whole text (also before a leading space: Metaspace would skip that)
    # and spaces as "▁"; newlines split off as their own piece, never merged.
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                                 normalizers.Replace(" ", "▁")])
    tokenizer.pre_tokenizer = pre_tokenizers.Split("\n", behavior="isolated")
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tokenizer.add_special_tokens([
        AddedToken(pieces[i], special=True, normalized=False, single_word=False, lstrip=False,
                   rstrip=False) for i in sorted(added_ids) if pieces[i] != "\n"])
    start = DOCUMENT_START
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{start} $A", pair=f"{start} $A {start}:1 $B:1",
        special_tokens=[(start, pieces.index(start))])
    return tokenizer


def hf_tokenizer_files(model_file: str, model_type: str, user_defined: list[str],
                       model_max_length: int = 1_000_000_000) -> dict[str, str]:
    """File name -> text of the three files AutoTokenizer reads."""
    tokenizer = build_fast_tokenizer(model_file, model_type, user_defined)
    specials = {"bos_token": DOCUMENT_START, "eos_token": "</s>", "unk_token": "<unk>",
                "pad_token": "<pad>"}
    extra = [p for p in user_defined if p != "\n"]
    config = {"tokenizer_class": "PreTrainedTokenizerFast", **specials,
              "additional_special_tokens": extra, "add_bos_token": True,
              "add_eos_token": False, "clean_up_tokenization_spaces": False,
              "split_special_tokens": True, "model_max_length": model_max_length,
              "model_input_names": ["input_ids", "attention_mask"]}
    return {TOKENIZER_JSON: tokenizer.to_str(pretty=True),
            TOKENIZER_CONFIG: json.dumps(config, indent=2, ensure_ascii=False) + "\n",
            SPECIAL_TOKENS_MAP: json.dumps({**specials, "additional_special_tokens": extra},
                                           indent=2, ensure_ascii=False) + "\n"}
