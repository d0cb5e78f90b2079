"""`train run`, `train eval` and `train export` on token shards of a user's tokenizer (issue 79):
a Hugging Face byte-level BPE (GPT-2's recipe) trained here on the shared crawl's c4 corpus."""
import json
import shutil

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from c4forge.cli.train import cli as train_cli
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.formats import iter_token_documents, read_token_manifest
from c4forge.train.checkpoint import load_model
from tests.test_tokenizer_kinds import QUIET, byte_level_bpe, crawl_corpus  # noqa: F401 - the fixture
from tests.test_train_loop import settings


@pytest.fixture(scope="module")
def bpe_tokens(crawl_corpus, tmp_path_factory):  # noqa: F811 - the fixture imported above
    root, corpus, texts = crawl_corpus
    work = tmp_path_factory.mktemp("bpe-run")
    (work / "gpt2-like").mkdir()
    tok = byte_level_bpe(texts["train"], vocab_size=1500)
    tok.save(str(work / "gpt2-like" / "tokenizer.json"))
    encode_corpus(corpus, str(work / "gpt2-like"), str(work / "ids"), workers=2, **QUIET)
    return work, texts


def test_train_eval_and_export_on_a_byte_level_bpe(bpe_tokens):
    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[hf]')")
    work, texts = bpe_tokens
    ids, run = str(work / "ids"), work / "run"
    result = CliRunner().invoke(train_cli, ["run", "--set", *settings(ids, run, "steps=20", "checkpoint_every=20",
                                                                      "data.validation=" + ids)])
    assert result.exit_code == 0, result.output
    metrics = [json.loads(line) for line in open(run / "metrics.jsonl")]
    assert max(m["step"] for m in metrics) == 20 and all(np.isfinite(m["loss"]) for m in metrics if "loss" in m)
    model, config = load_model(str(run))
    manifest = read_token_manifest(ids)
    assert model.config.vocab_size >= manifest["tokenizer"]["vocab_size"] == 1500
    # the run keeps a copy of the user's file: eval and export work after the original is gone
    assert (run / "tokenizer" / "tokenizer.json").read_bytes() == (work / "gpt2-like" / "tokenizer.json").read_bytes()
    shutil.move(work / "gpt2-like", work / "moved")
    try:
        check_eval_and_export(transformers, work, run, ids, model, manifest, texts)
    finally:
        shutil.move(work / "moved", work / "gpt2-like")


def check_eval_and_export(transformers, work, run, ids, model, manifest, texts):
    result = CliRunner().invoke(train_cli, ["eval", "-i", str(run), "--data", ids, "--json"])
    assert result.exit_code == 0, result.output
    scored = json.loads(result.output)["data"][ids]
    assert np.isfinite(scored["loss"]) and scored["tokens"] > 0 and 0 < scored["bits_per_byte"] < 20

    out = work / "hf"
    result = CliRunner().invoke(train_cli, ["export", "-i", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "tokenizer.json").read_bytes() == (run / "tokenizer" / "tokenizer.json").read_bytes()
    tok = transformers.AutoTokenizer.from_pretrained(str(out))
    eos = manifest["eos_id"]
    assert tok.eos_token_id == eos
    for text, shard in zip(texts["validation"], iter_token_documents(ids, "validation")):
        assert tok(text, add_special_tokens=False)["input_ids"] + [eos] == shard.tolist()
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(out)).eval()
    x = torch.tensor([[eos] + tok(texts["validation"][0][:300], add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(hf(x).logits, model(x, torch.zeros_like(x), torch.arange(x.shape[1])[None]),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("objective, lacking", [("mlm", "neither <mask> nor [MASK]"),
                                                ("span", "T5 sentinels <extra_id_N>")])
def test_an_objective_needing_tokens_the_tokenizer_lacks_is_one_line(bpe_tokens, objective, lacking):
    work, _ = bpe_tokens
    run = work / f"run-{objective}"
    result = CliRunner().invoke(train_cli, ["run", "--set", *settings(str(work / "ids"), run, "steps=2",
                                                                      f"objective={objective}")])
    assert result.exit_code == 1, result.output
    assert lacking in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
