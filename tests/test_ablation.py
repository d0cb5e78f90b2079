"""`train ablate` at a reduced size: the whole chain on the embedded sample, the report files,
and re-runs that reuse finished work (the CI check of `make demo`'s last step)."""
import json

import yaml
from click.testing import CliRunner

from tests.conftest import ROOT
from train.ablation import verdict
from c4forge.cli.train import cli


def small_config(tmp_path):
    spec = yaml.safe_load((ROOT / "configs" / "ablation-demo.yaml").read_text())
    spec["inputs"] = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    spec["badwords"] = str(ROOT / "corpus" / "data" / "demo-badwords")
    spec["out_dir"] = str(tmp_path / "ablation")
    spec["variants"] = {"c4": {"preset": "c4"}, "c4-noclean": {"preset": "c4-noclean"}}
    spec["tokenizer"]["vocab_size"] = 600
    spec["train"]["max_tokens"] = 8 * 128 * 6
    spec["train"]["eval_every"] = 3
    spec["seeds"] = [0, 1]
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_ablation_report_and_reuse(tmp_path):
    config = small_config(tmp_path)
    first = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert first.exit_code == 0, first.output
    report = tmp_path / "ablation" / "report"
    for name in ("report.md", "results.json", "loss_curves.png", "final_metrics.png"):
        assert (report / name).stat().st_size > 0
    results = json.loads((report / "results.json").read_text())
    assert set(results["variants"]) == {"c4", "c4-noclean"}
    metric = results["variants"]["c4"]["metrics"]["c4 validation bits/byte"]
    assert len(metric["values"]) == 2 and metric["mean"] > 0
    text = (report / "report.md").read_text()
    assert "| c4 | c4 |" in text and "## Result" in text and "![loss_curves.png]" in text
    # the same tokenizer for both variants
    manifests = [json.loads((tmp_path / "ablation" / "tokens" / v / "manifest.json").read_text()) for v in ("c4", "c4-noclean")]
    assert manifests[0]["tokenizer"]["model_sha256"] == manifests[1]["tokenizer"]["model_sha256"]
    second = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert second.exit_code == 0
    for stage in ("corpus c4: reusing", "tokenizer: reusing", "tokens c4-noclean: reusing",
                  "run c4 seed 1: reusing", "eval c4-noclean seed 0: reusing"):
        assert stage in second.output


def test_verdict_wording():
    summary = {"variants": {
        "a": {"metrics": {"m": {"mean": 1.0, "std": 0.01, "values": [0.99, 1.0, 1.01]}}},
        "b": {"metrics": {"m": {"mean": 1.2, "std": 0.01, "values": [1.19, 1.2, 1.21]}}},
        "c": {"metrics": {"m": {"mean": 1.005, "std": 0.05, "values": [0.95, 1.0, 1.065]}}}}}
    assert "a is lower (better) by 0.2000" in verdict(summary, "m", "a", "b")
    assert "beyond seed noise" in verdict(summary, "m", "a", "b")
    assert "within seed noise" in verdict(summary, "m", "a", "c")
    assert "seeds per variant would separate it" in verdict(summary, "m", "a", "c")


def test_bad_ablation_configs(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"inputs": ["x"], "variants": {"c4": {}}, "train": {}, "out_dir": "o"}))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert result.exit_code != 0 and "at least two variants" in result.output
    path.write_text(yaml.safe_dump({"inputs": ["x"], "variants": {"a": {}, "b": {}}, "train": {}, "out_dir": "o"}))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert "max_tokens" in result.output


def test_ablation_with_t5_span_objective(tmp_path):
    """configs/ablation-span-demo.yaml at a reduced size: encoder-decoder runs, the span loss on
    each variant's validation split in the report, texts and tasks skipped with a reason."""
    spec = yaml.safe_load((ROOT / "configs" / "ablation-span-demo.yaml").read_text())
    assert spec["objective"] == "span"
    spec["inputs"] = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    spec["badwords"] = str(ROOT / "corpus" / "data" / "demo-badwords")
    spec["out_dir"] = str(tmp_path / "ablation")
    spec["tokenizer"]["vocab_size"] = 600
    spec["train"]["max_tokens"] = 8 * 128 * 6
    spec["train"]["eval_every"] = 3
    spec["eval"] = {"texts": [str(ROOT / "corpus" / "data" / "demo-badwords")]}
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert result.exit_code == 0, result.output
    assert "does not score text left to right" in result.output
    report = tmp_path / "ablation" / "report"
    results = json.loads((report / "results.json").read_text())
    assert results["objective"] == "span"
    metric = results["variants"]["c4"]["metrics"]["c4-noclean validation span loss"]
    assert len(metric["values"]) == 2 and 0 < metric["mean"] < 7
    text = (report / "report.md").read_text()
    assert "Objective span" in text and "c4 vs c4-noclean" in text
    config = json.loads((tmp_path / "ablation" / "runs" / "c4" / "seed-0" / "metrics.jsonl").read_text().splitlines()[0])
    assert "loss" in config
    from train.checkpoint import load_model

    model, saved = load_model(str(tmp_path / "ablation" / "runs" / "c4" / "seed-0"))
    assert saved["objective"] == "span" and type(model).__name__ == "EncoderDecoder"


def test_variants_may_read_their_own_inputs(tmp_path):
    """A variant's own `inputs:` (WET for one, WARC for the other) replace the shared ones."""
    from train.ablation import build_corpora, load_ablation

    spec = yaml.safe_load((ROOT / "configs" / "ablation-demo.yaml").read_text())
    other = tmp_path / "other.warc.wet.gz"
    from tests.wetfiles import page, record, wet_file

    other.write_bytes(wet_file([record(f"https://other.example/{i}", page(i) + " Unique text number "
                                       f"{i} about gardens.") for i in range(4)]))
    spec["inputs"] = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    spec["badwords"] = str(ROOT / "corpus" / "data" / "demo-badwords")
    spec["out_dir"] = str(tmp_path / "ablation")
    spec["variants"] = {"a": {"preset": "c4-noclean"}, "b": {"preset": "c4-noclean", "inputs": [str(other)]}}
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec))
    loaded = load_ablation(str(path))
    corpora = build_corpora(loaded, lambda *_: None)
    manifests = {v: json.loads((tmp_path / "ablation" / "corpora" / v / "_manifest.json").read_text()) for v in corpora}
    assert manifests["b"]["inputs"] == [str(other)]
    assert manifests["a"]["inputs"] == spec["inputs"]
    assert manifests["b"]["counters"]["split-wet-file/passed"] == 4
