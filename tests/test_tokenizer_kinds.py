"""`tokenizer encode` with the tokenizers people pretrain with (issue 79): a Hugging Face
byte-level BPE and WordPiece, a SentencePiece model, a tiktoken ranks file, each trained here
with its own library (no network). On every document of the shared crawl's c4 corpus the shard
ids equal that library's own encoding, EOS (and BOS) as configured."""
import json
import os

import numpy as np
import pytest
import sentencepiece as spm
import tiktoken
from click.testing import CliRunner
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from c4forge.cli.tokenizer import cli
from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import iter_corpus_documents, write_corpus
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.formats import iter_token_documents, read_token_manifest
from c4forge.tokenizer.kinds import (
    TIKTOKEN_ENCODINGS,
    TokenizerSpec,
    open_tokenizer,
    write_tiktoken_ranks,
)
from c4forge.tokenizer.load import TokenizerError
from tests.conftest import ROOT, shared_path

QUIET = {"log": lambda *_: None}


@pytest.fixture(scope="module")
def crawl_corpus(tmp_path_factory):
    """The shared crawl's c4 corpus (train and a 10% validation split) and its texts by split."""
    files = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    root = tmp_path_factory.mktemp("kinds")
    docs = run_chain(files, build_config("c4", badwords=str(ROOT / "corpus/data/demo-badwords")), Counters())
    write_corpus(str(root / "corpus"), docs, {"config": {"preset": "c4"}, "counters": {}},
                 validation_per_mille=100)
    texts = {split: [d["text"] for d in iter_corpus_documents(str(root / "corpus"), split, ["text"])]
             for split in ("train", "validation")}
    assert len(texts["train"]) > 300 and texts["validation"]
    return root, str(root / "corpus"), texts


def byte_level_bpe(texts, vocab_size=2000) -> Tokenizer:
    """GPT-2's recipe: byte-level pre-tokenizer, all 256 bytes, <|endoftext|>."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def wordpiece(texts) -> Tokenizer:
    """BERT's recipe: lower-cased, WordPiece, [CLS]/[SEP]/[MASK]; no end-of-text token."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=2000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False))
    return tok


def bytes_to_unicode() -> dict[str, int]:
    """GPT-2's printable stand-in for each byte (openai/gpt-2 encoder.py), inverted."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def ranks_from_byte_level(tok: Tokenizer) -> dict[bytes, int]:
    decode = bytes_to_unicode()
    specials = {t.content for t in tok.get_added_tokens_decoder().values()}
    return {bytes(decode[ch] for ch in piece): i for piece, i in tok.get_vocab(with_added_tokens=False).items()
            if piece not in specials}


def assert_shards_equal(token_dir, texts, encode, eos, bos=None):
    """Every document of every split: [BOS] + the library's ids + [EOS], in corpus order."""
    for split, split_texts in texts.items():
        got = list(iter_token_documents(token_dir, split))
        assert len(got) == len(split_texts)
        expected = encode(split_texts)
        for k, (ids, want) in enumerate(zip(got, expected)):
            want = ([bos] if bos is not None else []) + list(want) + [eos]
            assert ids.tolist() == want, f"{split} document {k} differs"


def test_hf_byte_level_bpe_equals_encode_batch(crawl_corpus, tmp_path):
    root, corpus, texts = crawl_corpus
    tok = byte_level_bpe(texts["train"])
    tok.save(str(tmp_path / "tokenizer.json"))
    manifest = encode_corpus(corpus, str(tmp_path / "tokenizer.json"), str(tmp_path / "ids"), workers=2, **QUIET)
    eos = tok.token_to_id("<|endoftext|>")
    assert_shards_equal(str(tmp_path / "ids"), texts,
                        lambda t: [e.ids for e in tok.encode_batch(t, add_special_tokens=False)], eos)
    info = manifest["tokenizer"]
    assert info["kind"] == "hf" and info["model_type"] == "BPE" and manifest["dtype"] == "<u2"
    assert info["eos_id"] == manifest["eos_id"] == eos and info["vocab_size"] == tok.get_vocab_size()
    assert info["special_ids"] == {"<|endoftext|>": eos}
    from c4forge.core.io import file_sha256
    assert info["sha256"] == file_sha256(str(tmp_path / "tokenizer.json"))
    # a folder holding tokenizer.json (as the Hub ships it) with tokenizer_config.json naming
    # the EOS and BOS: the same shards, and --bos auto puts that BOS first
    hub = tmp_path / "hub"
    hub.mkdir()
    tok.save(str(hub / "tokenizer.json"))
    (hub / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": "<|endoftext|>", "bos_token": {"content": "<|endoftext|>"}}))
    encode_corpus(corpus, TokenizerSpec(str(hub), bos="auto"), str(tmp_path / "bos"), workers=1, **QUIET)
    assert_shards_equal(str(tmp_path / "bos"), texts,
                        lambda t: [e.ids for e in tok.encode_batch(t, add_special_tokens=False)], eos, bos=eos)


def test_wordpiece_needs_an_eos_named_and_then_equals_the_library(crawl_corpus, tmp_path):
    root, corpus, texts = crawl_corpus
    tok = wordpiece(texts["train"])
    tok.save(str(tmp_path / "wp.json"))
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(tmp_path / "wp.json"),
                                      "-o", str(tmp_path / "ids")])
    assert result.exit_code == 1, result.output
    line = result.output.strip()
    assert "\n" not in line and "names no end-of-document token" in line and "--eos" in line
    assert not (tmp_path / "ids").exists()
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(tmp_path / "wp.json"),
                                      "--eos", "[SEP]", "--bos", "[CLS]", "-o", str(tmp_path / "ids"),
                                      "--workers", "2"])
    assert result.exit_code == 0, result.output
    sep, cls = tok.token_to_id("[SEP]"), tok.token_to_id("[CLS]")
    assert_shards_equal(str(tmp_path / "ids"), texts,
                        lambda t: [e.ids for e in tok.encode_batch(t, add_special_tokens=False)], sep, bos=cls)
    manifest = read_token_manifest(str(tmp_path / "ids"))
    assert manifest["tokenizer"]["model_type"] == "WordPiece" and manifest["bos_id"] == cls
    assert manifest["tokenizer"]["options"]["eos"] == "[SEP]"


def test_sentencepiece_model_equals_sentencepiece_encode(crawl_corpus, tmp_path):
    """A user's SentencePiece model, trained with the library's defaults (NFKC, T5's way)."""
    root, corpus, texts = crawl_corpus
    model = tmp_path / "user.model"
    with open(model, "wb") as handle:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(texts["train"]), model_writer=handle,
                                       vocab_size=1500, model_type="unigram", minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(model))
    manifest = encode_corpus(corpus, str(model), str(tmp_path / "ids"), workers=2, **QUIET)
    assert manifest["tokenizer"]["kind"] == "sentencepiece" and manifest["eos_id"] == sp.eos_id()
    assert_shards_equal(str(tmp_path / "ids"), texts, lambda t: sp.encode(t), sp.eos_id())
    # threads mode (sentencepiece's own threads): the same bytes
    encode_corpus(corpus, str(model), str(tmp_path / "threads"), workers=2, mode="threads", **QUIET)
    for name in sorted(os.listdir(tmp_path / "ids")):
        if name != "manifest.json":
            assert (tmp_path / "ids" / name).read_bytes() == (tmp_path / "threads" / name).read_bytes()


def test_tiktoken_ranks_file_equals_encode_ordinary(crawl_corpus, tmp_path):
    root, corpus, texts = crawl_corpus
    ranks = ranks_from_byte_level(byte_level_bpe(texts["train"]))
    path = tmp_path / "mine.tiktoken"
    write_tiktoken_ranks(str(path), ranks)
    pattern = TIKTOKEN_ENCODINGS["gpt2"][0]
    special = {"<|endoftext|>": max(ranks.values()) + 1}
    reference = tiktoken.Encoding("reference", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
    # no pattern: one line naming the flags
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(path), "-o", str(tmp_path / "x")])
    assert result.exit_code == 1 and "--tiktoken-encoding" in result.output and "--tiktoken-pattern" in result.output
    result = CliRunner().invoke(cli, [
        "encode", "-i", corpus, "--tokenizer", str(path), "--tiktoken-pattern", pattern,
        "--special-token", f"<|endoftext|>={special['<|endoftext|>']}", "-o", str(tmp_path / "ids"),
        "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert_shards_equal(str(tmp_path / "ids"), texts, lambda t: [reference.encode_ordinary(x) for x in t],
                        special["<|endoftext|>"])
    assert read_token_manifest(str(tmp_path / "ids"))["tokenizer"]["vocab_size"] == reference.n_vocab


def test_a_vocabulary_beyond_65535_ids_writes_uint32(crawl_corpus, tmp_path):
    """Llama 3's way: reserved tokens push the vocabulary past uint16; EOS at id 70,000."""
    root, corpus, texts = crawl_corpus
    tok = byte_level_bpe(texts["train"], vocab_size=1000)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    first = max(vocab.values()) + 1
    vocab.update({f"<|reserved_{i}|>": i for i in range(first, 70_000)})
    data["added_tokens"].append({"id": 70_000, "content": "<|end_of_text|>", "single_word": False,
                                 "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    (tmp_path / "big.json").write_text(json.dumps(data))
    big = Tokenizer.from_file(str(tmp_path / "big.json"))
    spec = TokenizerSpec(str(tmp_path / "big.json"), eos="<|end_of_text|>")
    manifest = encode_corpus(corpus, spec, str(tmp_path / "ids"), workers=2, **QUIET)
    assert manifest["dtype"] == "<u4" and manifest["tokenizer"]["vocab_size"] == 70_001
    assert_shards_equal(str(tmp_path / "ids"), texts,
                        lambda t: [e.ids for e in big.encode_batch(t, add_special_tokens=False)], 70_000)
    assert np.fromfile(next((tmp_path / "ids").glob("train-*.bin")), dtype="<u4").max() == 70_000


def test_known_tiktoken_encodings_match_tiktokens_own(monkeypatch):
    """Our table of split patterns and special tokens is tiktoken's (read from its module, the
    download replaced by an empty ranks table)."""
    import tiktoken_ext.openai_public as public

    monkeypatch.setattr(public, "load_tiktoken_bpe", lambda *a, **k: {})
    monkeypatch.setattr(public, "data_gym_to_mergeable_bpe_ranks", lambda *a, **k: {})
    for name, (pattern, special) in TIKTOKEN_ENCODINGS.items():
        params = getattr(public, name)()
        assert params["pat_str"] == pattern, name
        assert params["special_tokens"] == special, name


def test_bad_tokenizer_files_are_one_line(crawl_corpus, tmp_path):
    root, corpus, _ = crawl_corpus
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "broken.model").write_bytes(b"\x00garbage")
    (tmp_path / "broken.tiktoken").write_text("not base64 at all here\n")
    (tmp_path / "empty").mkdir()
    cases = {"broken.json": "is not a Hugging Face tokenizer.json",
             "broken.model": "is not a SentencePiece model",
             "broken.tiktoken": "is not a tiktoken ranks line",
             "empty": "holds no tokenizer c4forge knows"}
    for name, message in cases.items():
        extra = ["--tiktoken-encoding", "gpt2"] if name.endswith("tiktoken") else []
        result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(tmp_path / name),
                                          *extra, "-o", str(tmp_path / "ids")])
        assert result.exit_code == 1, (name, result.output)
        assert message in result.output and "Traceback" not in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_reencoding_with_another_kind_needs_overwrite(crawl_corpus, tmp_path):
    root, corpus, texts = crawl_corpus
    byte_level_bpe(texts["train"][:200], vocab_size=600).save(str(tmp_path / "a.json"))
    wordpiece(texts["train"][:200]).save(str(tmp_path / "b.json"))
    with pytest.raises(TokenizerError, match="has no token '<nope>'"):
        open_tokenizer(TokenizerSpec(str(tmp_path / "a.json"), eos="<nope>"))
    encode_corpus(corpus, str(tmp_path / "a.json"), str(tmp_path / "ids"), workers=1, **QUIET)
    with pytest.raises(TokenizerError, match="a different tokenizer"):
        encode_corpus(corpus, TokenizerSpec(str(tmp_path / "b.json"), eos="[SEP]"), str(tmp_path / "ids"), **QUIET)
    assert read_token_manifest(str(tmp_path / "ids"))["tokenizer"]["file"].endswith("a.json")
    encode_corpus(corpus, TokenizerSpec(str(tmp_path / "b.json"), eos="[SEP]"), str(tmp_path / "ids"),
                  workers=1, overwrite=True, **QUIET)
    assert read_token_manifest(str(tmp_path / "ids"))["tokenizer"]["file"].endswith("b.json")


@pytest.mark.parametrize("model_type, eos", [("byte-bpe", "<|endoftext|>"), ("wordpiece", "[SEP]"),
                                             ("unigram", "</s>")])
def test_tokenizer_train_with_hf_trainers_then_encode(crawl_corpus, tmp_path, model_type, eos):
    """`tokenizer train --library tokenizers` writes a directory that encode, the trainer and
    transformers open; its shards are the tokenizer.json's own encoding."""
    root, corpus, texts = crawl_corpus
    out = tmp_path / "tok"
    result = CliRunner().invoke(cli, ["train", "-i", corpus, "-o", str(out), "--library", "tokenizers",
                                      "--model-type", model_type, "--vocab-size", "1200",
                                      "--t5-sentinels", "4"])
    assert result.exit_code == 0, result.output
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert tok.get_vocab_size() == 1200 and tok.token_to_id("<extra_id_3>") is not None
    manifest = encode_corpus(corpus, str(out), str(tmp_path / "ids"), workers=2, **QUIET)
    assert manifest["tokenizer"]["kind"] == "c4forge" and manifest["eos_id"] == tok.token_to_id(eos)
    assert_shards_equal(str(tmp_path / "ids"), texts,
                        lambda t: [e.ids for e in tok.encode_batch(t, add_special_tokens=False)], tok.token_to_id(eos))
    if model_type == "byte-bpe":  # byte-level: every text round-trips exactly
        assert all(tok.decode(e.ids) == t for e, t in zip(tok.encode_batch(texts["validation"]), texts["validation"]))
    from c4forge.train.objectives import load_vocabulary
    vocab = load_vocabulary(str(out))
    assert vocab.mask_id == tok.token_to_id("[MASK]" if model_type == "wordpiece" else "<mask>")
    assert len(vocab.sentinels) == 4 and vocab.eos_id == tok.token_to_id(eos)
    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[hf]')")
    auto = transformers.AutoTokenizer.from_pretrained(str(out))
    assert auto.eos_token == eos
    assert auto(texts["validation"][0], add_special_tokens=False)["input_ids"] == tok.encode(
        texts["validation"][0], add_special_tokens=False).ids
