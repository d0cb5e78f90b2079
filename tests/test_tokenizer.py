"""tokenizer train / encode / inspect on real corpora, and every bad input of the issue."""
import json
import re
import shutil

import numpy as np
import pytest
import sentencepiece as spm
from click.testing import CliRunner

from c4forge.cli.tokenizer import cli
from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.document import Document
from c4forge.corpus.output.shards import write_corpus
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.formats import iter_token_documents, read_token_manifest
from c4forge.tokenizer.inspect import inspect_tokenizer
from c4forge.tokenizer.train import TokenizerConfig, TokenizerError, load_tokenizer, train_tokenizer
from tests.conftest import ROOT, shared_path

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"


def make_corpus(directory, docs, preset="c4"):
    return write_corpus(str(directory), docs, {"config": {"preset": preset}, "counters": {}})


@pytest.fixture(scope="module")
def shared_corpora(tmp_path_factory):
    """The c4 and c4-noclean corpora of ../shared/data/crawl, written in one process."""
    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    root = tmp_path_factory.mktemp("corpora")
    c4 = run_chain(crawl, build_config("c4", badwords=str(shared_path("badwords"))), Counters())
    noclean = run_chain(crawl, build_config("c4-noclean"), Counters())
    make_corpus(root / "c4", c4)
    make_corpus(root / "noclean", noclean, "c4-noclean")
    return root, c4, noclean


@pytest.fixture(scope="module")
def sample_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    docs = run_chain([str(SAMPLE)], build_config("c4", badwords=str(ROOT / "corpus/data/demo-badwords")),
                     Counters())
    make_corpus(root / "c4", docs)
    return root / "c4", docs


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_8k_vocab_round_trips_every_held_out_document(shared_corpora, tmp_path, model_type):
    root, c4, noclean = shared_corpora
    info = train_tokenizer(str(root / "c4"), str(tmp_path / "tok"),
                           TokenizerConfig(model_type=model_type, vocab_size=8000))
    sp, _ = load_tokenizer(str(tmp_path / "tok"))
    assert sp.get_piece_size() == 8000 and info["sample"]["documents"] == len(c4)
    assert [sp.id_to_piece(i) for i in range(6)] == ["<pad>", "<s>", "</s>", "<unk>", "<mask>", "\n"]
    trained_on = {d.url for d in c4}
    held_out = [d.text for d in noclean if d.url not in trained_on]
    held_out.append(shared_path("clean", "wikitext2-test.raw").read_text(encoding="utf-8"))
    assert len(held_out) > 100
    failures = [t[:60] for t in held_out if sp.decode(sp.encode(t)) != t]
    assert failures == []
    assert all(sp.unk_id() not in sp.encode(t) for t in held_out)


def test_token_shards_round_trip(shared_corpora, tmp_path):
    root, c4, _ = shared_corpora
    train_tokenizer(str(root / "c4"), str(tmp_path / "tok"), TokenizerConfig(vocab_size=4000))
    manifest = encode_corpus(str(root / "c4"), str(tmp_path / "tok"), str(tmp_path / "ids"), workers=2,
                             max_docs_per_shard=100, log=lambda *_: None)
    sp, info = load_tokenizer(str(tmp_path / "tok"))
    from c4forge.corpus.output.shards import iter_corpus_documents

    texts = [d["text"] for d in iter_corpus_documents(str(root / "c4"), "train")]
    docs = list(iter_token_documents(str(tmp_path / "ids"), "train"))
    assert len(docs) == len(texts) == manifest["splits"]["train"]["documents"]
    for ids, text in zip(docs, texts):
        assert ids.dtype == np.uint16
        assert ids.tolist() == sp.encode(text) + [2]
    train = manifest["splits"]["train"]
    assert train["tokens"] == sum(len(d) for d in docs)
    assert train["bytes"] == sum(len(t.encode("utf-8")) for t in texts)
    assert 2.5 < train["bytes_per_token"] < 6
    assert len(train["shards"]) >= 2  # the work was split


def test_sample_is_deterministic_and_seeded(sample_corpus, tmp_path):
    corpus, _ = sample_corpus
    small = dict(vocab_size=600, sample_bytes=20_000)
    a = train_tokenizer(str(corpus), str(tmp_path / "a"), TokenizerConfig(**small))
    b = train_tokenizer(str(corpus), str(tmp_path / "b"), TokenizerConfig(**small))
    c = train_tokenizer(str(corpus), str(tmp_path / "c"), TokenizerConfig(seed=7, **small))
    assert a["model_sha256"] == b["model_sha256"] and a["sample"] == b["sample"]
    assert a["sample"] != c["sample"]
    assert 20_000 <= a["sample"]["bytes"] < 30_000


def test_t5_sentinels(sample_corpus, tmp_path):
    corpus, _ = sample_corpus
    info = train_tokenizer(str(corpus), str(tmp_path / "t"), TokenizerConfig(vocab_size=800, t5_sentinels=4))
    sp, _ = load_tokenizer(str(tmp_path / "t"))
    assert [sp.piece_to_id(f"<extra_id_{i}>") for i in range(4)] == [6, 7, 8, 9]
    assert info["special_ids"]["<extra_id_3>"] == 9
    assert 8 in sp.encode("a <extra_id_2> b")  # a sentinel is always one piece


def test_empty_corpus_is_a_clear_error(tmp_path):
    make_corpus(tmp_path / "empty", [])
    with pytest.raises(TokenizerError, match="no documents"):
        train_tokenizer(str(tmp_path / "empty"), str(tmp_path / "tok"))
    assert not (tmp_path / "tok").exists()


def test_empty_document_is_skipped_in_training_and_encoded_as_eos(sample_corpus, tmp_path):
    _, docs = sample_corpus
    empty = Document(url="http://empty.example.com/", normalized_url="empty.example.com", text="",
                     language="en", language_score=1.0)
    make_corpus(tmp_path / "c", docs + [empty])
    info = train_tokenizer(str(tmp_path / "c"), str(tmp_path / "tok"), TokenizerConfig(vocab_size=800))
    assert info["sample"]["empty_documents"] == 1
    encode_corpus(str(tmp_path / "c"), str(tmp_path / "tok"), str(tmp_path / "ids"), workers=1,
                  log=lambda *_: None)
    assert [2] in [d.tolist() for d in iter_token_documents(str(tmp_path / "ids"), "train")]


def test_vocab_larger_than_the_sample_supports(sample_corpus, tmp_path):
    corpus, _ = sample_corpus
    with pytest.raises(TokenizerError, match="cannot support"):
        train_tokenizer(str(corpus), str(tmp_path / "tok"), TokenizerConfig(model_type="unigram", vocab_size=50_000))
    assert not (tmp_path / "tok").exists()
    assert not list(tmp_path.glob(".tok.tmp-*"))
    with pytest.raises(TokenizerError, match="too small"):
        train_tokenizer(str(corpus), str(tmp_path / "tok"), TokenizerConfig(vocab_size=100))


def test_tokenizer_dirs_that_do_not_fit(sample_corpus, tmp_path):
    corpus, _ = sample_corpus
    train_tokenizer(str(corpus), str(tmp_path / "a"), TokenizerConfig(vocab_size=700))
    train_tokenizer(str(corpus), str(tmp_path / "b"), TokenizerConfig(vocab_size=900))
    # a model file from another training run
    shutil.copy(tmp_path / "b" / "tokenizer.model", tmp_path / "a" / "tokenizer.model")
    with pytest.raises(TokenizerError, match="not the model"):
        encode_corpus(str(corpus), str(tmp_path / "a"), str(tmp_path / "ids"), log=lambda *_: None)
    assert not (tmp_path / "ids").exists()
    # not a tokenizer at all (a corpus directory)
    with pytest.raises(TokenizerError, match="holds no tokenizer c4forge knows"):
        encode_corpus(str(corpus), str(corpus), str(tmp_path / "ids"), log=lambda *_: None)
    # re-encoding into a directory made with another tokenizer needs --overwrite
    encode_corpus(str(corpus), str(tmp_path / "b"), str(tmp_path / "ids"), workers=1, log=lambda *_: None)
    train_tokenizer(str(corpus), str(tmp_path / "c"), TokenizerConfig(vocab_size=800))
    with pytest.raises(TokenizerError, match="a different tokenizer"):
        encode_corpus(str(corpus), str(tmp_path / "c"), str(tmp_path / "ids"), log=lambda *_: None)
    before = read_token_manifest(str(tmp_path / "ids"))
    assert before["tokenizer"]["vocab_size"] == 900
    encode_corpus(str(corpus), str(tmp_path / "c"), str(tmp_path / "ids"), workers=1, overwrite=True,
                  log=lambda *_: None)
    assert read_token_manifest(str(tmp_path / "ids"))["tokenizer"]["vocab_size"] == 800


def test_inspect_on_held_out_text(shared_corpora, tmp_path):
    root, _, _ = shared_corpora
    train_tokenizer(str(root / "c4"), str(tmp_path / "tok"), TokenizerConfig(vocab_size=8000))
    text = shared_path("clean", "wikitext2-test.raw").read_text(encoding="utf-8")
    report = inspect_tokenizer(str(tmp_path / "tok"), text)
    assert report["round_trip_exact"] and report["unk_tokens"] == 0
    assert 3.0 < report["bytes_per_token"] < 4.5 and 1.2 < report["tokens_per_word"] < 2.0
    assert 0 < report["byte_fallback_share"] < 0.05
    # the figures docs/tokenizer.md quotes are these
    quoted = re.search(r"gives\s+([\d.]+) bytes/token,\s+([\d.]+) tokens/word,\s+([\d.]+)% byte-fallback",
                       (ROOT / "docs" / "tokenizer.md").read_text())
    assert quoted, "docs/tokenizer.md no longer quotes the WikiText-2 figures"
    assert quoted.groups() == (str(report["bytes_per_token"]), str(report["tokens_per_word"]),
                               f"{100 * report['byte_fallback_share']:.3f}"), report
    out = CliRunner().invoke(cli, ["inspect", str(tmp_path / "tok"), "--text",
                                   str(shared_path("clean", "wikitext2-test.raw"))])
    assert out.exit_code == 0 and "round trip decode(encode(text)) == text: True" in out.output


def test_cli_train_encode(sample_corpus, tmp_path):
    corpus, _ = sample_corpus
    runner = CliRunner()
    out = runner.invoke(cli, ["train", "--corpus", str(corpus), "--vocab-size", "700", "-o", str(tmp_path / "tok")])
    assert out.exit_code == 0, out.output
    again = runner.invoke(cli, ["train", "--corpus", str(corpus), "--vocab-size", "700", "-o", str(tmp_path / "tok")])
    assert again.exit_code != 0 and "--overwrite" in again.output
    enc = runner.invoke(cli, ["encode", "--corpus", str(corpus), "--tokenizer", str(tmp_path / "tok"),
                              "-o", str(tmp_path / "ids")])
    assert enc.exit_code == 0 and "bytes/token" in enc.output
    manifest = json.loads((tmp_path / "ids" / "manifest.json").read_text())
    assert manifest["dtype"] == "<u2" and manifest["eos_id"] == 2


def test_model_loads_in_hf_transformers_with_same_ids(shared_corpora, tmp_path):
    """transformers 4's sentencepiece classes on the raw tokenizer.model (transformers 5 has no
    such classes: it loads our tokenizer.json, tests/test_hf_tokenizer.py, in both)."""
    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[hf]')")
    if int(transformers.__version__.split(".")[0]) >= 5:
        pytest.skip("transformers 5 loads tokenizer.json, not sentencepiece's model (tests/test_hf_tokenizer.py)")
    root, c4, _ = shared_corpora
    train_tokenizer(str(root / "c4"), str(tmp_path / "tok"), TokenizerConfig(vocab_size=8000))
    model = str(tmp_path / "tok" / "tokenizer.model")
    sp = spm.SentencePieceProcessor(model_file=model)
    llama = transformers.LlamaTokenizer(vocab_file=model, legacy=True, add_bos_token=False)
    t5 = transformers.T5Tokenizer(vocab_file=model, legacy=True, extra_ids=0)
    texts = [d.text for d in c4[:50]] + [shared_path("clean", "wikitext2-test.raw").read_text()[:50_000]]
    for text in texts:
        ours = sp.encode(text)
        assert llama(text, add_special_tokens=False)["input_ids"] == ours
        assert t5(text, add_special_tokens=False)["input_ids"] == ours
    assert llama.convert_tokens_to_ids(["<pad>", "<s>", "</s>", "<unk>", "<mask>"]) == [0, 1, 2, 3, 4]


def test_text_file_encodes_as_one_document_that_round_trips(sample_corpus, tmp_path):
    """encode_text_file (held-out texts for span/BART/MLM ablations): one document with EOS in
    the validation split, ids equal to encoding the text directly, bytes counted; an empty file
    is a clear error and leaves nothing; an existing directory is refused without overwrite."""
    from c4forge.tokenizer.encode import encode_text_file

    corpus, docs = sample_corpus
    train_tokenizer(str(corpus), str(tmp_path / "tok"), TokenizerConfig(vocab_size=800))
    sp, info = load_tokenizer(str(tmp_path / "tok"))
    text = "\n".join(d.text for d in docs[:5]) + "\n"
    (tmp_path / "held.raw").write_text(text, encoding="utf-8")
    manifest = encode_text_file(str(tmp_path / "held.raw"), str(tmp_path / "tok"), str(tmp_path / "out"))
    split = manifest["splits"]["validation"]
    assert split["documents"] == 1 and split["bytes"] == len(text.encode("utf-8"))
    [ids] = list(iter_token_documents(str(tmp_path / "out"), "validation"))
    assert list(ids) == sp.encode(text) + [info["special_ids"]["</s>"]]
    assert read_token_manifest(str(tmp_path / "out"))["corpus"]["text_file"].endswith("held.raw")
    with pytest.raises(TokenizerError):
        encode_text_file(str(tmp_path / "held.raw"), str(tmp_path / "tok"), str(tmp_path / "out"))
    (tmp_path / "empty.raw").write_text("  \n")
    with pytest.raises(TokenizerError, match="no text"):
        encode_text_file(str(tmp_path / "empty.raw"), str(tmp_path / "tok"), str(tmp_path / "e"))
    assert not (tmp_path / "e").exists()


def test_encode_and_inspect_show_the_training_corpus_as_given_not_absolute(sample_corpus, tmp_path, monkeypatch):
    """Regression: `tokenizer encode`'s note and `tokenizer inspect` printed the corpus the
    tokenizer was trained on as an absolute path (stored so in its settings)."""
    import shutil

    corpus, docs = sample_corpus
    shutil.copytree(corpus, tmp_path / "c4")
    make_corpus(tmp_path / "other", docs[: len(docs) // 2])
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["train", "-i", "c4", "--vocab-size", "700", "-o", "tok"]).exit_code == 0
    enc = runner.invoke(cli, ["encode", "-i", "other", "--tokenizer", "tok", "-o", "ids"])
    shown = runner.invoke(cli, ["inspect", "tok"])
    assert enc.exit_code == 0 and shown.exit_code == 0, enc.output + shown.output
    assert "the tokenizer was trained on c4, not on this corpus" in enc.output
    assert "trained on c4:" in shown.output
    assert str(tmp_path) not in enc.output + shown.output
