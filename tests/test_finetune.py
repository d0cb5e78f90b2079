"""GLUE fine-tuning: the metrics equal scikit-learn's and scipy's, T5's GLUE average, a tiny
checkpoint fine-tunes above chance on a slice of SST-2 (deterministic given its seed), every
model kind classifies, and bad tasks or splits are one-line errors."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from c4forge.cli.train import cli
from c4forge.train.evaluation.finetune.glue import GlueError, load_split
from c4forge.train.evaluation.finetune.metrics import (
    accuracy,
    f1_binary,
    glue_average,
    matthews,
    pearson,
    spearman,
    task_metrics,
    task_score,
)
from tests.conftest import shared_path


def test_metrics_equal_sklearn_and_scipy():
    sklearn = pytest.importorskip("sklearn.metrics")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.integers(0, 2, 200).tolist()
        p = [a if rng.random() < 0.7 else 1 - a for a in y]
        assert accuracy(y, p) == pytest.approx(sklearn.accuracy_score(y, p))
        assert f1_binary(y, p) == pytest.approx(sklearn.f1_score(y, p))
        assert matthews(y, p) == pytest.approx(sklearn.matthews_corrcoef(y, p))
        x = rng.normal(size=100)
        z = (x + rng.normal(size=100)).round(1)  # rounded: ties for Spearman's average ranks
        assert pearson(x.tolist(), z.tolist()) == pytest.approx(stats.pearsonr(x, z)[0])
        assert spearman(x.round(1).tolist(), z.tolist()) == pytest.approx(stats.spearmanr(x.round(1), z)[0])
    assert matthews([1, 1, 1], [1, 1, 1]) == 0.0 == sklearn.matthews_corrcoef([1, 1, 1], [1, 1, 1])


def test_glue_average_as_t5_computes_it():
    # multi-metric tasks are averaged first, then every task counts once
    scores = {"mrpc": task_score({"f1": 90.0, "accuracy": 86.0}), "stsb": task_score({"pearson": 88.0, "spearman": 86.0}),
              "cola": task_score({"mcc": 50.0}), "sst2": task_score({"accuracy": 92.0})}
    assert scores["mrpc"] == 88.0 and scores["stsb"] == 87.0
    assert glue_average(scores) == pytest.approx((88 + 87 + 50 + 92) / 4)
    assert set(task_metrics("mrpc", [1, 0, 1], [1, 1, 1])) == {"f1", "accuracy"}
    assert task_metrics("cola", [1, 0], [1, 0]) == {"mcc": 100.0}


def test_missing_split_and_unknown_task_are_clear_errors(tmp_path):
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "train.jsonl").write_text('{"sentence": "good", "label": 1}\n')
    with pytest.raises(GlueError, match="no validation split"):
        load_split(str(tmp_path), "sst2", "validation")
    with pytest.raises(GlueError, match="unknown GLUE task"):
        load_split(str(tmp_path), "qnli", "train")
    (tmp_path / "sst2" / "validation.jsonl").write_text('{"text": "no sentence field"}\n')
    with pytest.raises(GlueError, match="not a sst2 row"):
        load_split(str(tmp_path), "sst2", "validation")
    result = CliRunner().invoke(cli, ["finetune", "-i", str(tmp_path), "--task", "qnli", "--glue-dir", str(tmp_path)])
    assert result.exit_code != 0 and "unknown GLUE task" in result.output and "Traceback" not in result.output


def tiny_run(tokens, out, objective):
    result = CliRunner().invoke(cli, ["run", f"data.train={tokens}", f"out_dir={out}", "data.seq_len=32",
                                      "data.batch_size=4", "model.d_model=32", "model.n_layers=1",
                                      "model.n_heads=2", "progress=false", "steps=3", f"objective={objective}"])
    assert result.exit_code == 0, result.output
    return out


def test_a_tiny_checkpoint_finetunes_above_chance_on_sst2(sample_tokens, tmp_path):
    glue = shared_path("eval", "glue")
    run = tiny_run(sample_tokens, tmp_path / "run", "causal")
    out = tmp_path / "glue.json"
    args = ["finetune", "-i", str(run), "--task", "sst2", "--glue-dir", str(glue), "--seeds", "0",
            "--set", "max_train=1200", "--set", "max_eval=300", "--set", "sst2.epochs=3", "--set", "lr=1e-3",
            "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    accuracy_ = data["tasks"]["sst2"]["metrics"]["accuracy"]["mean"]
    # 300 validation sentences: chance is 50 +- 2.9 (one standard error)
    assert accuracy_ > 58, accuracy_
    assert "GLUE average (T5)" in result.output and data["glue_average"] == pytest.approx(accuracy_)
    again = CliRunner().invoke(cli, args[:-2] + ["-o", str(tmp_path / "again.json")])
    assert again.exit_code == 0
    assert json.loads((tmp_path / "again.json").read_text())["runs"][0]["metrics"] == data["runs"][0]["metrics"]


@pytest.mark.parametrize("objective", ["mlm", "span", "prefix_lm"])
def test_every_model_kind_classifies(sample_tokens, tmp_path, objective):
    """Encoder (mean pool), encoder-decoder (decoder start state), prefix LM (last token): a
    regression task (STS-B) and a pair task run end to end with finite, in-range metrics."""
    from c4forge.train.evaluation.finetune.run import FinetuneConfig, finetune_task

    glue = shared_path("eval", "glue")
    run = tiny_run(sample_tokens, tmp_path / "run", objective)
    config = FinetuneConfig(lr=1e-3, epochs=1, max_train=64, max_eval=64, batch_size=16, min_steps=0)
    stsb = finetune_task(str(run), "stsb", str(glue), config, seed=0)
    assert set(stsb["metrics"]) == {"pearson", "spearman"}
    assert all(-100 <= v <= 100 for v in stsb["metrics"].values())
    rte = finetune_task(str(run), "rte", str(glue), config, seed=0)
    assert 0 <= rte["metrics"]["accuracy"] <= 100 and rte["validation_examples"] == 64


def test_lr_sweep_reports_the_best_mean_and_the_spread(monkeypatch):
    import c4forge.train.evaluation.finetune.run as run

    fake = {(1e-4, 0): 70.0, (1e-4, 1): 72.0, (1e-3, 0): 80.0, (1e-3, 1): 76.0}

    def finetune_task(checkpoint, task, glue_dir, config, seed, device="cpu", progress=None):
        score = fake[(config.lr, seed)]
        return {"task": task, "seed": seed, "lr": config.lr, "metrics": {"accuracy": score}, "score": score,
                "seconds": 0.0}

    monkeypatch.setattr(run, "finetune_task", finetune_task)
    configs = {"sst2": run.FinetuneConfig(epochs=1)}
    result = run.run_glue("ckpt", ["sst2"], "glue", configs, [0, 1], [1e-4, 1e-3], log=lambda *_: None)
    sst2 = result["tasks"]["sst2"]
    assert sst2["lr"] == 1e-3 and sst2["score"]["mean"] == 78.0
    assert sst2["score"]["std"] == pytest.approx(np.std([80, 76], ddof=1))
    assert sst2["lr_sweep"] == {"0.0001": 71.0, "0.001": 78.0} and result["glue_average"] == 78.0
