"""Usage before work (issue 42): every command checks all its arguments and settings before any
network or disk work, so a usage error is exit 2 whatever else is wrong. Each case gives one
command a bad argument beside inputs that only the network could serve (a closed port, gs://)
or, for commands that read local directories only, a local folder that is not what they need,
and an output that does not exist yet: the command must answer exit 2 with the argument's
message, open no connection, and create nothing."""
from __future__ import annotations

import socket

import pytest

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.cli.langid import self_check_command as langid_cli
from c4forge.cli.tokenizer import cli as tokenizer_cli
from c4forge.cli.train import cli as train_cli
from tests.test_output_safety import invoke

REMOTE_CRAWL = "http://127.0.0.1:9/crawl/CC-MAIN-x.warc.wet.gz"
REMOTE_DIR = "gs://c4forge-no-such-bucket/dir"

CASES = {
    "corpus build": (corpus_cli, ["build", "-i", REMOTE_CRAWL, "--preset", "c4", "-o", "{new}/c",
                                  "--set", "max_page_chars=abc"], "expected float"),
    "corpus build runner": (corpus_cli, ["build", "-i", REMOTE_CRAWL, "--preset", "c4", "-o", "{new}/c",
                                         "--runner", "NoSuchRunner"], "unknown runner"),
    "corpus clean": (corpus_cli, ["clean", "-i", REMOTE_CRAWL, "-o", "{new}/c", "--set", "near_dedupe=false"],
                     "unknown setting"),
    "corpus estimate": (corpus_cli, ["estimate", "-i", REMOTE_CRAWL, "--set", "languages=en", "--set",
                                     "lid_treshold=2"], "unknown setting"),
    "corpus export": (corpus_cli, ["export", "-i", "{empty}", "-o", "{new}/e", "--format", "orc"],
                      "Invalid value for '--format'"),
    "corpus inspect": (corpus_cli, ["inspect", REMOTE_DIR, REMOTE_DIR + "2", REMOTE_DIR + "3",
                                    "-o", "{new}/r.html"], "one corpus directory, or two"),
    "corpus show": (corpus_cli, ["show", "-i", REMOTE_DIR, "-n", "-1"], "-n"),
    "corpus stats": (corpus_cli, ["stats", "-i", REMOTE_DIR, REMOTE_DIR + "2"], "one corpus"),
    "tokenizer train": (tokenizer_cli, ["train", "-i", "{empty}", "-o", "{new}/t", "--set", "vocab_sise=600"],
                        "unknown setting"),
    "tokenizer encode": (tokenizer_cli, ["encode", "-i", "{empty}", "--tokenizer", "{empty}",
                                         "-o", "{new}/x", "--workers", "0"], "--workers"),
    "tokenizer inspect": (tokenizer_cli, ["inspect", REMOTE_DIR, "--text", "{new}/missing.txt"], "missing.txt"),
    "train ablate": (train_cli, ["ablate", "--config", "{spec}", "--set", "nosuchkey=1"], "unknown setting"),
    "train eval": (train_cli, ["eval", "-i", "{empty}", "--data", REMOTE_DIR + "-tokens", "--tasks", "nosuchtask",
                               "-o", "{new}/eval.json"], "nosuchtask"),
    "train export": (train_cli, ["export", "-i", "{empty}", "-o", "{new}/e", "--tokenizer", "{new}/tok"],
                     "does not exist"),
    "train finetune": (train_cli, ["finetune", "-i", "{empty}", "--task", "nosuchtask", "--glue-dir", "{glue}",
                                   "-o", "{new}/ft.json"], "nosuchtask"),
    "train lm-eval-tasks": (train_cli, ["lm-eval-tasks", "--eval-dir", "{glue}", "-o", "{new}/lm",
                                        "--tasks", "nosuchtask"], "nosuchtask"),
    "langid": (langid_cli, ["--self-check", "--model", "{new}/lid.176.bin"], "does not exist"),
    "train run": (train_cli, ["run", "--set", f"data.train={REMOTE_DIR}", "out_dir={new}/r", "--set", "steps=abc"],
                  "expected int"),
}


@pytest.fixture
def no_network(monkeypatch):
    """Every attempt to connect is recorded and refused."""
    attempts: list = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bad_argument_is_exit_2_before_any_network_or_disk_work(name, tmp_path, no_network):
    cli, args, said = CASES[name]
    glue = tmp_path / "glue"
    glue.mkdir()
    spec = tmp_path / "ablation.yaml"
    spec.write_text(f"inputs: [{REMOTE_CRAWL}]\nout_dir: {tmp_path / 'new' / 'abl'}\n"
                    "train: {max_tokens: 100}\nvariants: {c4: {}, c4-noclean: {preset: c4-noclean}}\n")
    empty = tmp_path / "empty"  # a local folder holding nothing (not a corpus, run or tokenizer)
    empty.mkdir()
    new = tmp_path / "new"
    args = [a.format(new=new, spec=spec, glue=glue, empty=empty) for a in args]
    result = invoke(cli, args)
    assert result.exit_code == 2, f"{name}: exit {result.exit_code}: {result.output}"
    assert said in result.output, f"{name}: {result.output}"
    assert not no_network, f"{name} tried the network before reporting the usage error"
    assert not new.exists(), f"{name} created {sorted(p.name for p in new.rglob('*'))}"
