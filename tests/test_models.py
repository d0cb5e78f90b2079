"""The models behind the objectives: document masking (packed logits equal each document run
alone) for the decoder, the prefix LM, the encoder and the encoder-decoder; and each objective
trains on the shared crawl's c4 tokens to well below its starting loss and a unigram baseline."""
import math

import numpy as np
import pytest
import torch

from c4forge.train.config import ModelConfig, build_train_config
from c4forge.train.models import LM, Encoder, EncoderDecoder, build_model

CONFIG = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, max_seq_len=64,
                     rmsnorm="torch", rope="torch", swiglu="torch", cross_entropy="torch")
DOCS = [[5, 9, 12, 7, 33], [8, 8, 21], [40, 41, 42, 43, 44, 45]]


def packed(doc_list, pad_to=None):
    ids = [t for d in doc_list for t in d]
    doc = [k for k, d in enumerate(doc_list) for _ in d]
    pos = [p for d in doc_list for p in range(len(d))]
    if pad_to:
        extra = pad_to - len(ids)
        ids, doc, pos = ids + [0] * extra, doc + [-1] * extra, pos + [0] * extra
    return torch.tensor([ids]), torch.tensor([doc]), torch.tensor([pos])


@pytest.mark.parametrize("kind", ["decoder", "prefix", "encoder"])
def test_packed_logits_equal_each_document_alone(kind):
    torch.manual_seed(0)
    model = (Encoder if kind == "encoder" else LM)(CONFIG).eval()
    prefix = [2, 1, 4]  # per-document prefix lengths for the prefix LM
    ids, doc, pos = packed(DOCS, pad_to=16)
    bid = torch.zeros_like(ids)
    if kind == "prefix":
        start = 0
        for d, k in zip(DOCS, prefix):
            bid[0, start:start + k] = 1
            start += len(d)
    with torch.no_grad():
        together = model(ids, doc, pos, bidirectional=bid if kind == "prefix" else None)
        start = 0
        for d, k in zip(DOCS, prefix):
            x = torch.tensor([d])
            alone_bid = torch.zeros_like(x)
            alone_bid[0, :k] = 1
            alone = model(x, torch.zeros_like(x), torch.arange(len(d))[None],
                          bidirectional=alone_bid if kind == "prefix" else None)
            torch.testing.assert_close(together[0, start:start + len(d)], alone[0], rtol=1e-5, atol=1e-5)
            start += len(d)
    # the masks matter: a causal decoder's first token ignores what follows, an encoder's does not
    with torch.no_grad():
        changed = ids.clone()
        changed[0, 1] = 60  # inside the first document's prefix (2 tokens)
        after = model(changed, doc, pos, bidirectional=bid if kind == "prefix" else None)
    moved = not torch.allclose(after[0, 0], together[0, 0])
    assert moved == (kind in ("encoder", "prefix"))


def test_encoder_decoder_packed_equals_each_document_alone():
    torch.manual_seed(0)
    model = EncoderDecoder(CONFIG).eval()
    inputs = [[5, 9, 12, 7], [8, 3], [40, 41, 42, 43, 44]]
    targets = [[2, 11, 13], [2, 17, 18, 19], [2, 50]]
    enc_ids, enc_doc, enc_pos = packed(inputs, pad_to=14)
    dec_ids, dec_doc, dec_pos = packed(targets, pad_to=12)
    with torch.no_grad():
        together = model(enc_ids, enc_doc, enc_pos, dec_ids, dec_doc, dec_pos)
        start = 0
        for src, tgt in zip(inputs, targets):
            e, t = torch.tensor([src]), torch.tensor([tgt])
            alone = model(e, torch.zeros_like(e), torch.arange(len(src))[None],
                          t, torch.zeros_like(t), torch.arange(len(tgt))[None])
            torch.testing.assert_close(together[0, start:start + len(tgt)], alone[0], rtol=1e-5, atol=1e-5)
            start += len(tgt)
        assert torch.isfinite(together).all()  # padding decoder rows included
    assert model.num_parameters() > LM(CONFIG).num_parameters() * 1.8  # T5's 2P


def test_encoder_decoder_loss_counts_target_tokens():
    model = EncoderDecoder(CONFIG)
    enc_ids, enc_doc, enc_pos = packed([[5, 9, 12], [8, 3]], pad_to=8)
    dec_ids, dec_doc, dec_pos = packed([[2, 11], [2, 17, 18]], pad_to=8)
    targets = torch.full_like(dec_ids, -100)
    targets[0, :5] = torch.tensor([11, 2, 17, 18, 2])
    loss, n = model(enc_ids, enc_doc, enc_pos, dec_ids, dec_doc, dec_pos, targets)
    assert int(n) == 5 and float(loss.detach()) / 5 == pytest.approx(math.log(64), rel=0.1)
    loss.backward()
    assert model.encoder[0].attn.wq.weight.grad.abs().sum() > 0  # gradients reach the encoder


def unigram_entropy(targets: np.ndarray) -> float:
    """Nats per target token of the best context-free guess: the targets' own frequencies."""
    counts = np.bincount(targets[targets >= 0])
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


# Steps and width per objective: enough to leave the unigram plateau on held-out documents with
# a margin (MLM learns from 15% of the tokens only: it needs the most).
BUDGET = {"causal": (400, 128), "prefix_lm": (400, 128), "span": (400, 128), "denoise": (400, 128),
          "mlm": (600, 128)}


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["causal", "prefix_lm", "mlm", "span", "denoise"])
def test_each_objective_learns_on_the_shared_crawl(objective, crawl_tokens, tmp_path):
    import contextlib

    from c4forge.train.checkpoint import load_model
    from c4forge.train.data import PackedLoader, TokenDocuments
    from c4forge.train.trainer import evaluate_loss, make_objective, to_device
    from c4forge.train.trainer import train as run_training

    steps, width = BUDGET[objective]
    settings = [f"data.train={crawl_tokens}", f"out_dir={tmp_path / 'run'}", "data.seq_len=128",
                "data.batch_size=16", f"model.d_model={width}", "model.n_layers=2", "model.n_heads=4",
                "progress=false", f"steps={steps}", "log_every=100", f"checkpoint_every={steps}",
                "optim.warmup_steps=10", f"objective={objective}",
                # the encoder-decoder with one layer per stack: the decoder's parameter count
                "model.encoder_layers=1", "model.decoder_layers=1"]
    config = build_train_config(overrides=settings)
    docs = TokenDocuments(crawl_tokens, "train")
    tok = docs.manifest["tokenizer"]["path"]
    fresh = build_model(config.model.__class__(**{**config.model.__dict__, "vocab_size": docs.vocab_size}),
                        objective)

    held_out = TokenDocuments(crawl_tokens, "validation")  # documents training never sees

    def val(model):
        loader = PackedLoader(held_out, 128, 16, "concat", seed=123, objective=make_objective(config, tok, 7))
        return evaluate_loss(model, loader, 6, torch.device("cpu"), contextlib.nullcontext)["loss"]

    start = val(fresh)
    run_training(config, log=lambda *_: None)
    trained, _ = load_model(str(tmp_path / "run"))
    end = val(trained)
    loader = PackedLoader(held_out, 128, 16, "concat", seed=123, objective=make_objective(config, tok, 7))
    batches = [to_device(b, "cpu")["targets"].numpy() for _, b in zip(range(6), loader)]
    baseline = unigram_entropy(np.concatenate([b.ravel() for b in batches]))
    print(f"{objective}: start {start:.3f}, after {steps} steps {end:.3f}, unigram {baseline:.3f}")
    assert start > math.log(docs.vocab_size) - 0.5  # an untrained model is near uniform
    assert end < start - 1.5
    # below the entropy of the targets' own token frequencies: the best any context-free
    # predictor could do on these very targets
    assert end < baseline - 0.1


@pytest.mark.parametrize("objective", ["mlm", "span", "prefix_lm"])
def test_train_eval_and_export_per_objective(objective, sample_tokens, tmp_path):
    """`train run objective=...` then `train eval`: the objective's own loss on token shards;
    text and zero-shot tasks only for left-to-right models; export only for decoders."""
    import json

    from click.testing import CliRunner

    from c4forge.cli.train import cli

    run = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", f"data.train={sample_tokens}", f"out_dir={run}", "data.seq_len=32",
                                      "data.batch_size=2", "model.d_model=32", "model.n_layers=1", "model.n_heads=2",
                                      "progress=false", "steps=3", f"objective={objective}"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "eval.json"
    result = CliRunner().invoke(cli, ["eval", "-i", str(run), "--data", sample_tokens, "--split", "train", "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    entry = data["data"][sample_tokens]
    assert data["objective"] == objective and entry[f"{objective}_loss"] > 0 and f"objective {objective}" in result.output
    assert ("bits_per_byte" in entry) == (objective == "prefix_lm")
    text = tmp_path / "t.txt"
    text.write_text("Some text.\n")
    result = CliRunner().invoke(cli, ["eval", "-i", str(run), "--data", str(text)])
    assert (result.exit_code == 0) == (objective == "prefix_lm"), result.output
    if objective != "prefix_lm":
        assert "does not score text left to right" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["export", "-i", str(run), "-o", str(tmp_path / "hf")])
    assert (result.exit_code == 0) == (objective == "prefix_lm"), result.output
    if objective != "prefix_lm":
        assert "no transformers class" in result.output


def test_unknown_objective_is_a_config_error():
    from c4forge.core.settings import ConfigError

    with pytest.raises(ConfigError, match="objective"):
        build_train_config(overrides=["objective=electra"])
    with pytest.raises(ConfigError, match="noise_density"):
        build_train_config(overrides=["masking.noise_density=1.5"])
