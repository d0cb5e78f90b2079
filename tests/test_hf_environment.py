"""The one environment of everything current (.venv-hf: `pip install ".[test-hf]"`, i.e. the base
+ [beam,tokenizer,train,hf] + datasets 5, transformers 5, lm-eval 0.4, numpy 2.3+, pyarrow 24+): it
resolves with `pip check` clean, and the whole loop runs in it, from `corpus build` on the
DirectRunner of the newest Beam to lm-eval on an export, beside the tools users train with."""
import importlib.metadata as metadata
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.cli.tokenizer import cli as tokenizer_cli
from c4forge.cli.train import cli as train_cli
from tests.conftest import CURRENT, ROOT, shared_path

pytestmark = [pytest.mark.hf,
              pytest.mark.skipif(not CURRENT, reason="checks the environment of current releases (.venv-hf)")]


def version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in metadata.version(name).split(".")[:2])


def test_current_releases_in_one_environment_with_pip_check_clean():
    assert version("apache-beam") >= (2, 77) and version("numpy") >= (2, 3) and version("pyarrow") >= (24, 0)
    assert version("datasets") >= (5, 0) and version("transformers") >= (5, 0)
    assert version("lm_eval") >= (0, 4)
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_engines_say_which_beam_release_they_need_before_any_work(tmp_path):
    """The job-server jars c4forge pins are 2.62.0's: on this release flink-local is one line
    naming it, and the SDK harness's cap stands aside (pipelines/engines/workers/sdk_harness.py)."""
    from c4forge.pipelines.engines.workers import sdk_harness

    result = CliRunner().invoke(corpus_cli, ["build", "-i", str(ROOT / "corpus/data/sample.warc.wet.gz"),
                                             "-o", str(tmp_path / "out"), "--runner", "flink-local"])
    assert result.exit_code == 2 and "pip install 'apache-beam==2.62.0'" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    assert "not a release it was measured on" in sdk_harness.applies()


def run(cli, *args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output[-3000:]
    return result


def test_corpus_to_lm_eval_end_to_end_in_one_environment(tmp_path):
    """corpus build (DirectRunner) -> tokenizer train/encode -> train run/eval/export -> lm-eval on
    the export and HF datasets on a corpus shard, all in this environment."""
    import datasets
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    corpus, tok, ids, runs, hf = (tmp_path / n for n in ("c4", "tok", "ids", "run", "hf"))
    run(corpus_cli, "build", "-i", ROOT / "corpus/data/sample.warc.wet.gz", "-o", corpus,
        "--badwords", ROOT / "corpus/data/demo-badwords", "-q")
    run(tokenizer_cli, "train", "-i", corpus, "--vocab-size", "700", "-o", tok, "-q")
    run(tokenizer_cli, "encode", "-i", corpus, "--tokenizer", tok, "-o", ids, "-q")
    run(train_cli, "run", "-o", runs, "--set", f"data.train={ids}", "--set", "data.seq_len=64",
        "--set", "model.d_model=64", "--set", "model.n_layers=2", "--set", "model.n_heads=2",
        "--set", "steps=20", "-q")
    scores = json.loads(run(train_cli, "eval", "-i", runs, "--data", ids, "--split", "train", "--json").stdout)
    assert scores["data"][str(ids)]["tokens"] > 0
    run(train_cli, "export", "-i", runs, "-o", hf, "-q")

    loaded = datasets.load_dataset("arrow", data_dir=str(corpus), cache_dir=str(tmp_path / "hf-cache"))
    manifest = json.loads((corpus / "_manifest.json").read_text())
    assert loaded["train"].num_rows == manifest["splits"]["train"]["documents"]

    tasks = tmp_path / "tasks"
    run(train_cli, "lm-eval-tasks", "--eval-dir", shared_path("eval"), "-o", tasks, "--tasks", "copa",
        "--limit", "10")
    model = HFLM(pretrained=str(hf), dtype="float32", batch_size=8, device="cpu", max_length=64)
    out = simple_evaluate(model=model, tasks=["c4forge_copa"], task_manager=TaskManager(include_path=str(tasks)),
                          num_fewshot=0)
    assert 0.0 <= out["results"]["c4forge_copa"]["acc_norm,none"] <= 1.0


def test_the_quality_score_column_reads_in_hf_datasets(tmp_path):
    """A corpus built with the quality classifier (corpus/steps/quality_classifier.py) loads in HF datasets with
    its ``quality_score`` column, the scores the shards hold, ready to select a top fraction."""
    import datasets
    import pyarrow as pa

    out = tmp_path / "scored"
    run(corpus_cli, "clean", ROOT / "corpus/data/sample.warc.wet.gz", "-o", out,
        "--badwords", ROOT / "corpus/data/demo-badwords", "-q", "--set", "quality_classifier.on=true",
        "--set", f"quality_classifier.model={ROOT / 'tests/data/quality-classifier.ftz'}")
    loaded = datasets.load_dataset("arrow", data_dir=str(out), cache_dir=str(tmp_path / "hf-cache"))["train"]
    assert loaded.features["quality_score"].dtype == "float32"
    shards = sorted(out.glob("train-*.arrow"))
    written = [s for p in shards for s in pa.ipc.open_stream(str(p)).read_all().column("quality_score").to_pylist()]
    assert sorted(loaded["quality_score"]) == sorted(written) and len(set(written)) > 10
    top = loaded.filter(lambda row: row["quality_score"] >= sorted(written)[-len(written) // 10])
    assert 0 < top.num_rows <= len(written) // 10 + 1
