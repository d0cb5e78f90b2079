"""Evaluation: bits per byte, zero-shot scoring mechanics, and the eval CLI."""
import json
import math

import pytest
import torch
from click.testing import CliRunner

from c4forge.cli.train import cli
from c4forge.train.checkpoint import load_model
from c4forge.train.config import build_train_config
from c4forge.train.evaluation.evaluate import (
    _split_pair,
    continuation_logprobs,
    eval_tokens,
    read_hellaswag,
)
from c4forge.train.trainer import train
from tests.conftest import shared_path
from tests.test_train_loop import settings


@pytest.fixture(scope="module")
def trained(tokens, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    train(build_train_config(overrides=settings(tokens, out, "steps=30", "checkpoint_every=30")), log=lambda *_: None)
    return out


def test_eval_tokens_bits_per_byte_consistent(trained, tokens):
    model, config = load_model(str(trained))
    result = eval_tokens(model, tokens, "train", 32)
    manifest = json.load(open(f"{tokens}/manifest.json"))
    assert result["bytes"] == manifest["splits"]["train"]["bytes"]
    assert math.isclose(result["bits_per_byte"], result["loss"] * result["tokens"] / math.log(2) / result["bytes"],
                        rel_tol=1e-3)
    assert math.isclose(result["perplexity"], math.exp(result["loss"]), rel_tol=1e-3)


def test_continuation_scores_match_full_forward(trained):
    model, _ = load_model(str(trained))
    context, continuation = [5, 9, 12], [7, 8]
    (lp, greedy), = continuation_logprobs(model, [(context, continuation)], seq_len=32)
    full = torch.tensor([[2] + context + continuation])
    with torch.no_grad():
        logits = model(full[:, :-1], torch.zeros_like(full[:, :-1]), torch.arange(full.shape[1] - 1)[None])
    logprobs = torch.log_softmax(logits, -1)[0]
    expected = logprobs[3, 7] + logprobs[4, 8]
    assert math.isclose(lp, float(expected), rel_tol=1e-4)
    # batching with padding does not change scores
    batch = continuation_logprobs(model, [(context, continuation), ([1] * 10, [4])], seq_len=32, batch_size=2)
    assert math.isclose(batch[0][0], lp, rel_tol=1e-4)


def test_split_pair_keeps_the_boundary(trained, tokens):
    from c4forge.tokenizer.kinds import TokenizerSpec, open_tokenizer

    tok_dir = json.load(open(f"{tokens}/manifest.json"))["tokenizer"]["path"]
    sp = open_tokenizer(TokenizerSpec(tok_dir))
    ctx, cont = _split_pair(sp, "The council met on Tuesday", " afternoon")
    assert sp.decode(ctx + cont) == "The council met on Tuesday afternoon" and cont


def test_task_files_and_eval_cli(trained, tmp_path):
    eval_dir = shared_path("eval")
    items = read_hellaswag(str(eval_dir / "hellaswag_val_full.txt.bz2"))
    assert len(items) == 10042 and all(len(i["choices"]) == 4 and 0 <= i["gold"] < 4 for i in items)
    out = tmp_path / "results.json"
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(trained), "--tasks", "all",
                                      "--eval-dir", str(eval_dir), "--limit", "8",
                                      "--data", str(shared_path("clean", "wikitext2-test.raw")), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert set(data["tasks"]) == {"lambada", "hellaswag", "piqa", "arc_easy", "winogrande", "copa", "blimp"}
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in data["tasks"].values())
    assert data["tasks"]["blimp"]["items"] == 67 * 8
    wiki = next(iter(data["data"].values()))
    assert wiki["bits_per_byte"] > 0 and "| task | accuracy | items |" in result.output
    bad = CliRunner().invoke(cli, ["eval", "--checkpoint", str(tmp_path)])
    assert bad.exit_code != 0 and "no checkpoint" in bad.output


@pytest.mark.hf
def test_export_to_transformers_llama_matches_logits(trained, tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[hf]')")
    from c4forge.train.export import export_hf

    out = export_hf(str(trained), str(tmp_path / "hf"))
    hf = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    tok = transformers.AutoTokenizer.from_pretrained(out)  # the fast tokenizer.json, by default
    ours, _ = load_model(str(trained))
    text = "The council met on Tuesday to discuss the budget for the new library."
    ids = tok(text, add_special_tokens=False)["input_ids"]
    x = torch.tensor([[2] + ids])
    with torch.no_grad():
        theirs = hf(x).logits
        mine = ours(x, torch.zeros_like(x), torch.arange(x.shape[1])[None])
    # The whole softmax matches (no padding rows in the export): log-probabilities are equal.
    torch.testing.assert_close(theirs, mine, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(theirs.log_softmax(-1), mine.log_softmax(-1), rtol=1e-5, atol=1e-5)
    assert hf.config.tie_word_embeddings and hf.config.vocab_size == ours.config.vocab_size == len(tok)
    assert tok(text)["input_ids"] == [2] + ids  # the document start training put first


def test_blimp_tie_counts_for_the_good_sentence_as_in_lm_eval(trained, tokens):
    """lm-eval-harness takes the argmax of (good, bad): on equal scores, the good one."""
    from c4forge.tokenizer.kinds import TokenizerSpec, open_tokenizer
    from c4forge.train.evaluation.evaluate import score_blimp

    sp = open_tokenizer(TokenizerSpec(json.load(open(f"{tokens}/manifest.json"))["tokenizer"]["path"]))
    model, _ = load_model(str(trained))
    same = [{"sentence_good": "The cat sleeps.", "sentence_bad": "The cat sleeps."}]
    assert score_blimp(model, sp, same, 32, "cpu") == 1.0


def test_continuous_task_metrics_follow_from_the_log_likelihoods(monkeypatch):
    """correct_prob is the gold choice's probability normalised over the choices (summed
    log-likelihoods), correct_bits_per_byte the gold continuation's nats / (ln 2 x its UTF-8
    bytes, joining space included); accuracy keeps lm-eval-harness's acc_norm rule."""
    import c4forge.train.evaluation.evaluate as evaluate

    logprobs = iter([-2.0, -1.0, -6.0, -3.0, -3.0])  # item 0: 3 choices; item 1: 2 choices

    def fake(model, pairs, seq_len, **kwargs):
        return [(next(logprobs), False) for _ in pairs]

    class Piece:
        eos_id = 2

        def encode(self, text):
            return [ord(c) for c in text]

    monkeypatch.setattr(evaluate, "continuation_logprobs", fake)
    items = [{"query": "Q", "choices": ["ab", "c", "dddd"], "gold": 0},
             {"query": "R", "choices": ["xy", "zz"], "gold": 1}]
    out = evaluate.score_choices(None, Piece(), items, 64, "cpu")
    # per-character: item 0 -> -1.0, -1.0, -1.5 (tie: first wins, gold 0); item 1 -> tie: first (0) != gold 1
    assert out["accuracy"] == 0.5
    p0 = math.exp(-2) / (math.exp(-2) + math.exp(-1) + math.exp(-6))
    assert out["correct_prob"] == pytest.approx((p0 + 0.5) / 2)
    assert out["correct_bits_per_byte"] == pytest.approx((2.0 + 3.0) / (math.log(2) * (3 + 3)))
