"""The training loop: exact resume, SIGTERM, NaN stop, config mismatch, DDP == one process, and
learning below the unigram entropy on real data."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import write_corpus
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.train import TokenizerConfig, train_tokenizer
from c4forge.train.checkpoint import CheckpointError, latest_checkpoint
from c4forge.train.config import build_train_config
from c4forge.train.trainer import TrainingError, train
from tests.conftest import ROOT, shared_path

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"


def settings(tokens, out, *extra):
    return ["data.train=" + tokens, f"out_dir={out}", "data.seq_len=32", "data.batch_size=4",
            "model.d_model=32", "model.n_layers=2", "model.n_heads=2", "progress=false",
            "log_every=1", "optim.warmup_steps=2", *extra]


def losses(out):
    with open(os.path.join(out, "metrics.jsonl")) as handle:
        return {r["step"]: r["loss"] for r in map(json.loads, handle)}


def test_resume_gives_identical_losses(tokens, tmp_path):
    full = tmp_path / "full"
    train(build_train_config(overrides=settings(tokens, full, "steps=12", "checkpoint_every=6")), log=lambda *_: None)
    part = tmp_path / "part"
    os.makedirs(part / "checkpoints")
    shutil.copytree(full / "checkpoints" / "step-000006", part / "checkpoints" / "step-000006")
    (part / "checkpoints" / "latest").write_text("step-000006\n")
    train(build_train_config(overrides=settings(tokens, part, "steps=12", "checkpoint_every=6")),
          resume=True, log=lambda *_: None)
    a, b = losses(full), losses(part)
    assert sorted(b) == list(range(7, 13))
    assert [a[s] for s in range(7, 13)] == [b[s] for s in range(7, 13)]


def test_checkpoint_from_another_config_is_refused(tokens, tmp_path):
    out = tmp_path / "run"
    train(build_train_config(overrides=settings(tokens, out, "steps=2", "checkpoint_every=2")), log=lambda *_: None)
    with pytest.raises(CheckpointError, match="model.d_model"):
        train(build_train_config(overrides=settings(tokens, out, "steps=4", "model.d_model=64")),
              resume=True, log=lambda *_: None)


def test_checkpoints_load_with_weights_only(tokens, tmp_path):
    import torch

    out = tmp_path / "run"
    train(build_train_config(overrides=settings(tokens, out, "steps=2", "checkpoint_every=2")), log=lambda *_: None)
    path = latest_checkpoint(str(out / "checkpoints"))
    for name in ("model.pt", "optimizer.pt", "trainer.pt"):
        torch.load(os.path.join(path, name), weights_only=True)
    assert not [p for p in os.listdir(out / "checkpoints") if ".tmp" in p]


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tokens, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(TrainingError, match="loss is (nan|inf)"):
        train(build_train_config(overrides=settings(tokens, out, "steps=50", "checkpoint_every=1",
                                                    "optim.lr=1e12", "optim.warmup_steps=1",
                                                    "optim.grad_clip=1e30")), log=lambda *_: None)
    good = latest_checkpoint(str(out / "checkpoints"))
    assert good is not None
    import torch

    state = torch.load(os.path.join(good, "model.pt"), weights_only=True)
    assert all(torch.isfinite(t).all() for t in state.values())


def test_profile_steps_report_where_the_last_steps_spent_their_time(tokens, tmp_path):
    out = tmp_path / "run"
    train(build_train_config(overrides=settings(tokens, out, "steps=4", "profile_steps=2")), log=lambda *_: None)
    text = (out / "profile.txt").read_text()
    assert text.startswith("profiled steps: 2; wall ")
    assert "host-device synchronisations per step" in text
    assert "aten::mm" in text or "aten::addmm" in text  # the operator table, matmuls in it
    assert len(losses(out)) == 4  # profiling changes nothing the run logs


def test_busy_seconds_counts_overlapping_kernels_once():
    from c4forge.train.profiling import busy_seconds

    assert busy_seconds([(5.0, 6.0), (0.0, 2.0), (1.0, 3.0), (1.5, 2.5)]) == 4.0
    assert busy_seconds([]) == 0.0


def test_a_run_that_fails_before_its_first_checkpoint_leaves_nothing_that_blocks_its_retry(tokens, tmp_path):
    """Regression (the README tour): validation data that is not there yet failed the run after
    it had claimed its directory (manifest, tokenizer copy), and the retry was refused."""
    from c4forge.core.errors import C4forgeError

    missing = tmp_path / "not-encoded-yet"
    out = tmp_path / "run"
    config = build_train_config(overrides=settings(tokens, out, "steps=2", f"data.validation={missing}",
                                                            "data.validation_split=train"))
    with pytest.raises(C4forgeError, match="manifest"):
        train(config, log=lambda *_: None)
    assert not out.exists()  # the run created it: removed
    mine = tmp_path / "mine"
    mine.mkdir()  # an empty directory of the user's
    with pytest.raises(C4forgeError, match="manifest"):
        train(build_train_config(overrides=settings(tokens, mine, "steps=2", f"data.validation={missing}",
                                                 "data.validation_split=train")),
              log=lambda *_: None)
    assert mine.is_dir() and not os.listdir(mine)  # as it was
    shutil.copytree(tokens, missing)
    train(config, log=lambda *_: None)  # the same command, no --overwrite
    assert latest_checkpoint(str(out / "checkpoints"))
    with pytest.raises(CheckpointError, match="already holds"):  # a run that checkpointed stays
        train(config, log=lambda *_: None)


@pytest.mark.parametrize("sig,code,said", [(signal.SIGTERM, 0, "stop requested"), (signal.SIGINT, 130, "interrupted")],
                         ids=["sigterm", "ctrl-c"])
def test_a_signal_saves_and_stops(tokens, tmp_path, sig, code, said):
    """SIGTERM (preemption) and Ctrl-C finish the step and checkpoint; Ctrl-C then exits 130,
    as interrupted commands do."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "c4forge.cli.train", "run", *settings(tokens, out, "steps=100000", "checkpoint_every=100000")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline:
        if (out / "metrics.jsonl").exists() and len((out / "metrics.jsonl").read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == code, output
    assert said in output and "checkpoint saved at step" in output
    saved = latest_checkpoint(str(out / "checkpoints"))
    step = int(os.path.basename(saved).split("-")[1])
    assert step >= 3 and step == max(losses(out))


def test_ddp_two_processes_match_one_process(tokens, tmp_path):
    one = tmp_path / "one"
    train(build_train_config(overrides=settings(tokens, one, "steps=4", "data.batch_size=4")), log=lambda *_: None)
    two = tmp_path / "two"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29517",
           "-m", "c4forge.cli.train", "run", *settings(tokens, two, "steps=4", "data.batch_size=2")]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    a, b = losses(one), losses(two)
    assert sorted(a) == sorted(b) == [1, 2, 3, 4]
    np.testing.assert_allclose([a[s] for s in a], [b[s] for s in a], rtol=1e-4)


def test_tiny_model_learns_below_unigram_entropy(tmp_path):
    """Real pages (the shared crawl's c4 corpus): one epoch of a tiny model ends with a
    validation loss far below the unigram cross-entropy of the same tokens."""
    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    docs = run_chain(crawl, build_config("c4", badwords=str(shared_path("badwords"))), Counters())
    held = docs[::10]
    held_urls = {d.url for d in held}
    write_corpus(str(tmp_path / "train"), [d for d in docs if d.url not in held_urls], {"config": {}, "counters": {}})
    write_corpus(str(tmp_path / "val"), held, {"config": {}, "counters": {}})
    train_tokenizer(str(tmp_path / "train"), str(tmp_path / "tok"), TokenizerConfig(vocab_size=2000))
    for name in ("train", "val"):
        encode_corpus(str(tmp_path / name), str(tmp_path / "tok"), str(tmp_path / f"{name}-ids"),
                      workers=1, log=lambda *_: None)
    # unigram cross-entropy: token frequencies of train (add-one), evaluated on validation (nats)
    from c4forge.tokenizer.formats import iter_token_documents

    train_ids = np.concatenate(list(iter_token_documents(str(tmp_path / "train-ids"), "train")))
    val_ids = np.concatenate(list(iter_token_documents(str(tmp_path / "val-ids"), "train")))
    counts = np.bincount(train_ids, minlength=2000) + 1.0
    unigram = float(-np.log(counts[val_ids] / counts.sum()).mean())
    last = train(build_train_config(overrides=[
        f"data.train={tmp_path / 'train-ids'}", f"data.validation={tmp_path / 'val-ids'}",
        "data.validation_split=train", f"out_dir={tmp_path / 'run'}", "data.seq_len=128",
        "data.batch_size=16", "steps=250", "eval_every=250", "eval_batches=30", "progress=false",
        "optim.lr=3e-3", "log_every=50"]), log=lambda *_: None)
    assert last["val_loss"] < unigram - 0.6, (last["val_loss"], unigram)


def test_a_run_from_two_ranks_resumes_on_one(tokens, tmp_path):
    """Pre-empted on 2 ranks x batch 2, resumed on 1 rank x batch 4 (same global batch): the
    losses after the resume are those of an uninterrupted single-process run. A constant
    learning rate after warm-up (min_lr_ratio=1) keeps the schedule independent of steps."""
    common = ("optim.min_lr_ratio=1", "checkpoint_every=2")
    whole = tmp_path / "whole"
    train(build_train_config(overrides=settings(tokens, whole, "steps=4", "data.batch_size=4", *common)),
          log=lambda *_: None)
    moved = tmp_path / "moved"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29523",
           "-m", "c4forge.cli.train", "run", *settings(tokens, moved, "steps=2", "data.batch_size=2", *common)]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    said = []
    train(build_train_config(overrides=settings(tokens, moved, "steps=4", "data.batch_size=4", *common)),
          resume=True, log=said.append)
    assert not any("global batch changed" in line for line in said)
    a, b = losses(whole), losses(moved)
    assert sorted(b) == [1, 2, 3, 4]
    np.testing.assert_allclose([a[s] for s in (3, 4)], [b[s] for s in (3, 4)], rtol=1e-4)
    # another global batch: said, and the run goes on from the same sequence
    later = []
    train(build_train_config(overrides=settings(tokens, moved, "steps=5", "data.batch_size=2", *common)),
          resume=True, log=later.append)
    assert any("global batch changed from 4 to 2" in line for line in later)
    with open(os.path.join(moved, "metrics.jsonl")) as handle:
        tokens_seen = [json.loads(line)["tokens"] for line in handle]
    assert tokens_seen[-2:] == [4 * 4 * 32, 4 * 4 * 32 + 2 * 32]


def test_tensorboard_by_default_and_wandb_offline_when_asked(tokens, tmp_path, monkeypatch):
    """Every logged step reaches metrics.jsonl, TensorBoard and (logging.wandb=true) a wandb run
    written offline under RUN/wandb; a resumed run continues the same wandb run id."""
    out = tmp_path / "run"
    train(build_train_config(overrides=settings(tokens, out, "steps=4")), log=lambda *_: None)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    steps = {e.step: e.value for e in events.Scalars("loss")}
    assert steps.keys() == losses(out).keys()
    assert all(abs(steps[s] - losses(out)[s]) < 1e-5 for s in steps)

    wandb = pytest.importorskip("wandb", reason="wandb is optional (pip install wandb)")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    # wandb's offline file is a binary log read by its Go core only: spy on the calls we make
    # to the real Run (which still writes it).
    calls = []
    real_log = wandb.sdk.wandb_run.Run.log

    def spy(self, data, step=None, **kwargs):
        calls.append((step, dict(data)))
        return real_log(self, data, step=step, **kwargs)

    monkeypatch.setattr(wandb.sdk.wandb_run.Run, "log", spy)
    logged = tmp_path / "logged"
    train(build_train_config(overrides=settings(tokens, logged, "steps=3", "checkpoint_every=3",
                                                "logging.wandb=true", "logging.wandb_mode=offline",
                                                "logging.tensorboard=false")), log=lambda *_: None)
    assert not (logged / "tensorboard").exists()
    runs = sorted((logged / "wandb").glob("offline-run-*"))
    run_id = (logged / "wandb-id").read_text().strip()
    assert len(runs) == 1 and runs[0].name.endswith(run_id)
    assert [step for step, _ in calls] == [1, 2, 3]
    assert all(abs(data["loss"] - losses(logged)[step]) < 1e-9 for step, data in calls)
    assert (runs[0] / f"run-{run_id}.wandb").stat().st_size > 0
    train(build_train_config(overrides=settings(tokens, logged, "steps=5", "logging.wandb=true",
                                                "logging.wandb_mode=offline")),
          resume=True, log=lambda *_: None)
    assert (logged / "wandb-id").read_text().strip() == run_id
    assert all(f"-{run_id}" in r.name for r in (logged / "wandb").glob("offline-run-*"))
    assert [step for step, _ in calls] == [1, 2, 3, 4, 5]
    assert wandb.__version__


def _first_batch_and_weights(tokens, out, *extra):
    from c4forge.train.trainer import Trainer

    trainer = Trainer(build_train_config(overrides=settings(tokens, out, "steps=2", *extra)),
                      log=lambda *_: None)
    batch = next(iter(trainer.loader))
    weights = next(trainer.model.parameters()).detach().clone()
    return np.asarray(batch.input_ids), weights


def test_data_seed_fixes_the_document_order_and_leaves_the_weights_to_seed(tokens, tmp_path):
    """Issue 28: with data_seed, runs that differ only in seed read the same batches from
    different initial weights; without it, seed moves both."""
    import torch

    a_ids, a_w = _first_batch_and_weights(tokens, tmp_path / "a", "seed=0", "data_seed=7")
    b_ids, b_w = _first_batch_and_weights(tokens, tmp_path / "b", "seed=1", "data_seed=7")
    c_ids, c_w = _first_batch_and_weights(tokens, tmp_path / "c", "seed=1")
    d_ids, _ = _first_batch_and_weights(tokens, tmp_path / "d", "seed=7")
    assert np.array_equal(a_ids, b_ids)
    assert np.array_equal(a_ids, d_ids)  # data_seed 7 orders the data as seed 7 does
    assert not torch.equal(a_w, b_w)
    assert torch.equal(b_w, c_w)  # the weights follow seed alone
    assert not np.array_equal(b_ids, c_ids)


def test_copy_run_is_complete_after_an_interrupted_copy_and_keeps_a_users_file(tokens, tmp_path, monkeypatch):
    from c4forge.train import checkpoint

    source = tmp_path / "source"
    train(build_train_config(overrides=settings(tokens, source, "steps=4", "checkpoint_every=2")),
          meta={"stamp": 1}, log=lambda *_: None)
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="holds no c4forge training run"):
        checkpoint.copy_run(str(source), str(stranger), {"stamp": 2})
    assert os.listdir(stranger) == ["notes.txt"]
    target = tmp_path / "target"  # an earlier, shorter run with a user's file beside it
    train(build_train_config(overrides=settings(tokens, target, "steps=2", "checkpoint_every=2", "seed=7")),
          log=lambda *_: None)
    (target / "notes.txt").write_text("mine")
    copied = []

    def failing_copy(src, dst, *args, **kwargs):
        if len(copied) == 2:
            raise OSError("disk full")
        copied.append(src)
        return shutil.copy2(src, dst)

    monkeypatch.setattr(checkpoint.shutil, "copytree", lambda s, d: shutil.copytree(s, d, copy_function=failing_copy))
    monkeypatch.setattr(checkpoint.shutil, "copy2", failing_copy)
    with pytest.raises(OSError):
        checkpoint.copy_run(str(source), str(target), {"stamp": 2})
    assert (checkpoint.run_manifest(str(target)) or {}).get("meta") != {"stamp": 2}  # not taken for finished
    monkeypatch.undo()
    checkpoint.copy_run(str(source), str(target), {"stamp": 2})
    assert checkpoint.run_manifest(str(target))["meta"] == {"stamp": 2}
    assert checkpoint.run_written_paths(str(target)) == checkpoint.run_written_paths(str(source))
    for rel in checkpoint.run_written_paths(str(source)):
        src, dst = source / rel, target / rel
        if src.is_file():
            assert dst.read_bytes() == src.read_bytes(), rel
    assert latest_checkpoint(str(target / "checkpoints")).endswith("step-000004")
    assert (target / "notes.txt").read_text() == "mine"
