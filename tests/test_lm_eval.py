"""lm-eval-harness on an export scores exactly what `train eval` scores: the same items (written
by `train lm-eval-tasks`), the same tokens, the same log-likelihoods, the same accuracy."""
import json

import pytest
from click.testing import CliRunner

from c4forge.cli.train import cli
from c4forge.train.checkpoint import load_model, run_tokenizer
from c4forge.train.config import build_train_config
from c4forge.train.trainer import train
from tests.conftest import shared_path
from tests.test_train_loop import settings

NEEDS_LM_EVAL = "lm-eval-harness runs in the current-HF environment (.venv-hf; `make test` runs it there)"


@pytest.fixture(scope="module")
def export(tokens, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    train(build_train_config(overrides=settings(tokens, out, "steps=40", "checkpoint_every=40")),
          log=lambda *_: None)
    hf = out.parent / (out.name + "-hf")
    result = CliRunner().invoke(cli, ["export", "--checkpoint", str(out), "-o", str(hf)])
    assert result.exit_code == 0, result.output
    return out, hf


def lm_eval_scores(hf, task_dir, names, max_length):
    """lm-eval-harness's results and samples (doc id, doc, responses) on the export. max_length:
    the window train eval scores in (its --seq-len, by default the training one); longer contexts
    are cut from the left by both."""
    pytest.importorskip("lm_eval", reason=NEEDS_LM_EVAL)
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    model = HFLM(pretrained=str(hf), dtype="float32", batch_size=16, device="cpu", max_length=max_length)
    out = simple_evaluate(model=model, tasks=list(names), task_manager=TaskManager(include_path=str(task_dir)),
                          log_samples=True, num_fewshot=0)
    samples = {task: [{"doc_id": s["doc_id"], "doc": s["doc"], "resps": s["resps"]} for s in found]
               for task, found in out["samples"].items()}
    return json.loads(json.dumps({"results": out["results"], "samples": samples}, default=str))


@pytest.mark.hf
def test_lm_eval_harness_equals_train_eval_on_copa_winogrande_and_lambada(export, tmp_path):
    import sentencepiece as spm

    from c4forge.train.evaluation.evaluate import (
        _joiner,
        _split_pair,
        continuation_logprobs,
        load_task,
        run_tasks,
    )

    pytest.importorskip("lm_eval", reason=NEEDS_LM_EVAL)
    run, hf = export
    eval_dir = shared_path("eval")
    task_dir = tmp_path / "tasks"
    result = CliRunner().invoke(cli, ["lm-eval-tasks", "--eval-dir", str(eval_dir), "-o", str(task_dir),
                                      "--tasks", "copa,winogrande,lambada", "--limit", "60", "--seed", "3"])
    assert result.exit_code == 0, result.output
    out = lm_eval_scores(hf, task_dir, ["c4forge_copa", "c4forge_winogrande", "c4forge_lambada"],
                         max_length=64)

    model, config = load_model(str(run))
    sp = run_tokenizer(str(run), config)
    ours = run_tasks(model, sp, str(eval_dir), ["copa", "winogrande", "lambada"], seq_len=64, limit=60, seed=3)
    assert ours["copa"]["items"] == len(out["samples"]["c4forge_copa"]) == 60
    assert ours["winogrande"]["items"] == len(out["samples"]["c4forge_winogrande"]) == 60
    assert out["results"]["c4forge_copa"]["acc_norm,none"] == pytest.approx(ours["copa"]["accuracy"], abs=1e-4)
    assert out["results"]["c4forge_winogrande"]["acc,none"] == pytest.approx(ours["winogrande"]["accuracy"], abs=1e-4)
    assert out["results"]["c4forge_lambada"]["acc,none"] == pytest.approx(ours["lambada"]["accuracy"], abs=1e-4)
    lambada = sorted(out["samples"]["c4forge_lambada"], key=lambda s: s["doc_id"])
    items = load_task(str(eval_dir), "lambada", 60, 3)
    pairs = [_split_pair(sp, i["context"], _joiner(i["context"]) + i["continuation"]) for i in items]
    mine = [lp for lp, _ in continuation_logprobs(model, pairs, seq_len=64)]
    assert max(abs(a - float(s["resps"][0][0][0])) for a, s in zip(mine, lambada)) < 1e-3

    # Item by item, every choice's log-likelihood is the same number (not just the same argmax).
    items = load_task(str(eval_dir), "copa", 60, 3)
    pairs = [_split_pair(sp, item["query"], _joiner(item["query"]) + choice)
             for item in items for choice in item["choices"]]
    mine = [lp for lp, _ in continuation_logprobs(model, pairs, seq_len=64)]
    samples = sorted(out["samples"]["c4forge_copa"], key=lambda s: s["doc_id"])
    theirs = [float(resp[0][0]) for s in samples for resp in s["resps"]]
    assert len(theirs) == len(mine) == 120
    assert max(abs(a - b) for a, b in zip(mine, theirs)) < 1e-3
    assert [s["doc"]["query"] for s in samples] == [i["query"] for i in items]

    # the tokenizer lm-eval used puts the document start first, as training did
    tok_ids = spm.SentencePieceProcessor(model_file=str(hf / "tokenizer.model")).encode("A test.")
    from transformers import AutoTokenizer
    assert AutoTokenizer.from_pretrained(str(hf))("A test.")["input_ids"] == [2] + tok_ids


def test_lm_eval_tasks_refuses_a_directory_it_did_not_write(tmp_path):
    (tmp_path / "mine.txt").write_text("user data")
    result = CliRunner().invoke(cli, ["lm-eval-tasks", "--eval-dir", str(shared_path("eval")),
                                      "-o", str(tmp_path), "--tasks", "copa"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert (tmp_path / "mine.txt").read_text() == "user data"


def test_lm_eval_tasks_write_the_items_train_eval_scores(tmp_path):
    from c4forge.train.evaluation.evaluate import load_task

    eval_dir = shared_path("eval")
    out = tmp_path / "tasks"
    result = CliRunner().invoke(cli, ["lm-eval-tasks", "--eval-dir", str(eval_dir), "-o", str(out),
                                      "--limit", "5"])
    assert result.exit_code == 0, result.output
    written = {p.name for p in out.iterdir()}
    for task in ["lambada", "hellaswag", "piqa", "arc_easy", "winogrande", "copa", "blimp"]:
        assert f"c4forge_{task}.yaml" in written and f"c4forge_{task}.jsonl" in written
    rows = [json.loads(line) for line in (out / "c4forge_hellaswag.jsonl").read_text().splitlines()]
    assert rows == load_task(str(eval_dir), "hellaswag", 5, 0)
    blimp = (out / "c4forge_blimp.jsonl").read_text().splitlines()
    assert len(blimp) == 67 * 5
    piqa = (out / "c4forge_piqa.yaml").read_text()
    assert "target_delimiter: ''" in piqa and "acc_norm" in piqa  # piqa's queries end in a space
    bad = CliRunner().invoke(cli, ["lm-eval-tasks", "--eval-dir", str(eval_dir), "-o", str(tmp_path / "x"),
                                   "--tasks", "copa,nope"])
    assert bad.exit_code != 0 and "unknown task" in bad.output
