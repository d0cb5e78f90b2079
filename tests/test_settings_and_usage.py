"""Settings and usage (issue 31): settings that fail loudly and alike everywhere, one command per
output directory, Beam runner options checked before anything is written, export permissions,
a command missing its extra, machine-readable outputs that follow their schemas. (The Docker /
wheel test is tests/test_packaging.py; the one-liners of other tools, tests/test_other_tools.py.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.cli.tokenizer import cli as tokenizer_cli
from c4forge.cli.train import cli as train_cli
from tests.conftest import ROOT
from tests.test_output_safety import SAMPLE, invoke
from tests.test_train_loop import settings


@pytest.mark.parametrize("command", [
    [corpus_cli, "clean", "-i", SAMPLE, "-o", "{tmp}/c", "--set", "near_dedupe=false"],
    [tokenizer_cli, "train", "-i", "{corpus}", "-o", "{tmp}/t", "--set", "vocab_sise=600"],
    [train_cli, "run", "--set", "data.train={tokens}", "out_dir={tmp}/r", "--set", "stesp=3"],
    [train_cli, "run", "--set", "data.train={tokens}", "out_dir={tmp}/r", "--set", "steps=abc"],
])
def test_unknown_or_ill_typed_settings_are_usage_errors_everywhere(command, sample_corpus, tokens, tmp_path):
    cli, *args = command
    args = [str(a).format(tmp=tmp_path, corpus=sample_corpus, tokens=tokens) for a in args]
    result = invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "unknown setting" in result.output or "expected int" in result.output
    if "unknown setting" in result.output:
        assert "did you mean" in result.output
    assert not any(tmp_path.iterdir())  # refused before any work


def test_ablate_refuses_unknown_keys_before_any_work(tmp_path):
    spec = tmp_path / "a.yaml"
    spec.write_text(json.dumps({"inputs": [str(SAMPLE)], "out_dir": str(tmp_path / "abl"),
                                "train": {"max_tokens": 100},
                                "variants": {"c4": {}, "c4-noclean": {"preset": "c4-noclean"}}}))
    for setting, said in [("nosuchkey=1", "unknown setting 'nosuchkey'"),
                          ("train.optim.lrr=1", "did you mean 'lr'"),
                          ("variants.c4.set.near_dedupe=false", "did you mean 'near_dedup'"),
                          ("tokenizer.vocab_sise=8", "did you mean 'vocab_size'")]:
        result = invoke(train_cli, ["ablate", "--config", spec, "--set", setting])
        assert result.exit_code == 2 and said in result.output, (setting, result.output)
    assert not (tmp_path / "abl").exists()


def test_a_second_command_on_a_busy_directory_is_refused(tmp_path):
    target = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from c4forge.core.locks import lock_directory; "
         f"lock_directory({str(target)!r}); print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "-o", target])
        assert result.exit_code == 2 and f"is in use by PID {holder.pid}" in result.output
        assert not target.exists()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "-o", target, "-q"]).exit_code == 0


@pytest.mark.parametrize("runner_args,said", [
    (["--runner", "NoSuchRunner"], "unknown runner"),
    (["--runner", "DataflowRunner"], "needs --project ... --region ... --temp_location"),
    (["--runner", "FlinkRunner"], "needs --flink_master"),
    (["--runner", "SparkRunner"], "needs --spark_master_url"),
])
def test_runner_options_are_checked_before_anything_is_created(runner_args, said, tmp_path):
    out = tmp_path / "new" / "corpus"
    result = invoke(corpus_cli, ["build", "-i", SAMPLE, "--preset", "c4-noclean", "-o", out, *runner_args])
    assert result.exit_code == 2 and said in result.output, result.output
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("runner_args,said", [
    (["--runner", "NoSuchRunner"], "unknown runner"),
    (["--runner", "flink-local", "--flink_master", "[local]"], "starts its own engine"),
    (["--workers", "2"], "--workers applies to"),
])
def test_runner_usage_errors_come_before_the_bad_word_download(runner_args, said, tmp_path, monkeypatch):
    """Preset c4 without --badwords downloads the lists; offline that fails with exit 1. A bad
    runner must still be the usage error (exit 2) it is when the lists are local."""
    from c4forge.corpus.steps import bad_words as badwords

    monkeypatch.setattr(badwords, "EN_BADWORDS_URL", "http://127.0.0.1:9/en")
    monkeypatch.setattr(badwords, "BADWORDS_URL", "http://127.0.0.1:9/{lang}")
    out = tmp_path / "new" / "corpus"
    result = invoke(corpus_cli, ["build", "-i", SAMPLE, "--preset", "c4", "-o", out, *runner_args])
    assert result.exit_code == 2 and said in result.output, result.output
    assert not (tmp_path / "new").exists()


def test_a_failed_write_leaves_no_empty_output_directory_of_its_own(tmp_path):
    from c4forge.core.outdir import OutputKind, claim, writing

    kind = OutputKind("thing", "thing.json", "thing", lambda m: [])
    created = tmp_path / "fresh"
    with pytest.raises(RuntimeError):
        with writing(claim(str(created), kind, overwrite=False)):
            raise RuntimeError("the pipeline failed")
    assert not created.exists()  # we made it, it was left empty: removed
    users = tmp_path / "users"
    users.mkdir()  # the user's own empty directory stays
    with pytest.raises(RuntimeError):
        with writing(claim(str(users), kind, overwrite=False)):
            raise RuntimeError("the pipeline failed")
    assert users.is_dir() and not any(users.iterdir())


def test_export_files_follow_the_umask(tokens, tmp_path):
    run, export = tmp_path / "run", tmp_path / "hf"
    assert invoke(train_cli, ["run", "--set", *settings(tokens, run, "steps=1"), "-q"]).exit_code == 0
    previous = os.umask(0o022)
    try:
        assert invoke(train_cli, ["export", "-i", run, "-o", export, "-q"]).exit_code == 0
    finally:
        os.umask(previous)
    modes = {p.name: p.stat().st_mode & 0o777 for p in export.iterdir() if p.is_file()}
    assert modes["model.safetensors"] == 0o644 and set(modes.values()) == {0o644}, modes


def _main_without(module: str, cli: str, args: list, cwd=ROOT):
    """A console script run with ``module`` blocked (as in an install without its extra)."""
    code = (f"import sys; sys.modules[{module!r}] = None; from c4forge.cli.{cli} import main; "
            f"main({[str(a) for a in args]!r})")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.mark.parametrize("module,cli,args,package,extra", [
    ("torch", "train", ["eval", "-i", "{tmp}", "--data", "{tmp}"], "torch", "train"),
    ("apache_beam", "corpus", ["build", "-i", str(SAMPLE), "-o", "{tmp}/out"], "apache-beam", "beam"),
    ("apache_beam", "corpus", ["estimate", "-i", str(SAMPLE)], "apache-beam", "beam"),
], ids=["train-eval-without-torch", "build-without-beam", "estimate-without-beam"])
def test_a_command_missing_its_extra_names_the_extra(tmp_path, module, cli, args, package, extra):
    """A command whose extra is not installed (its module blocked in the child process) says in
    one line which extra to install, exit 2, before any work."""
    proc = _main_without(module, cli, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"Error: this command needs the {package} package, which the [{extra}] "
                                   f"extra installs: pip install 'c4forge[{extra}]'")
    assert not (tmp_path / "out").exists()


def test_the_corpus_stage_in_one_process_needs_no_beam(tmp_path):
    """`corpus clean`, `stats`, `show` and `inspect` run where apache-beam is not installed."""
    out = tmp_path / "c4"
    steps = [["clean", str(SAMPLE), "-o", str(out), "--badwords", str(ROOT / "corpus/data/demo-badwords"), "-q"],
             ["stats", str(out)], ["show", str(out), "-n", "1"],
             ["inspect", str(out), "-o", str(tmp_path / "inspect.html")]]
    for args in steps:
        proc = _main_without("apache_beam", "corpus", args)
        assert proc.returncode == 0, (args[0], proc.stderr[-1500:])
    assert (tmp_path / "inspect.html").exists()


def test_machine_readable_outputs_follow_their_schemas(sample_tokens, tokens, tmp_path):
    from c4forge.core.schemas import problems
    from c4forge.corpus.output.report import manifest_stats
    from c4forge.corpus.output.shards import read_manifest

    corpus = Path(sample_tokens).parent / "corpus"
    result = invoke(corpus_cli, ["stats", corpus, "--json"])
    assert result.exit_code == 0
    stats = json.loads(result.output)
    assert problems("corpus-stats", stats) == []
    assert stats == json.loads(json.dumps(manifest_stats(read_manifest(str(corpus)))))
    assert problems("corpus-manifest", json.loads((corpus / "_manifest.json").read_text())) == []
    assert problems("token-manifest", json.loads((Path(sample_tokens) / "manifest.json").read_text())) == []
    run = tmp_path / "run"
    assert invoke(train_cli, ["run", "--set", *settings(tokens, run, "steps=1"), "-q"]).exit_code == 0
    result = invoke(train_cli, ["eval", "-i", run, "--data", tokens, "--split", "train", "--json",
                                "-o", tmp_path / "eval.json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert problems("eval-results", printed) == [] and printed["data"][tokens]["tokens"] > 0
    assert json.loads((tmp_path / "eval.json").read_text()) == printed


def test_a_manifest_that_breaks_its_schema_is_one_line_on_read(sample_tokens, tmp_path):
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(Path(sample_tokens).parent / "corpus", corpus)
    manifest = json.loads((corpus / "_manifest.json").read_text())
    manifest["splits"]["train"]["documents"] = "many"
    (corpus / "_manifest.json").write_text(json.dumps(manifest))
    result = invoke(corpus_cli, ["stats", corpus])
    assert result.exit_code == 1
    assert "does not follow the corpus manifest schema: splits/train/documents: 'many' is not of type " \
           "'integer'" in result.output


@pytest.mark.parametrize("text", ["?\n", "1: 2\n", "null: x\n"])
def test_a_settings_key_that_is_not_text_is_a_usage_error(text, tmp_path):
    """Fuzz finding (tests/fuzz/findings/settings-13342784): YAML ``?`` is the mapping
    {None: None}; naming the unknown key fed None to difflib (TypeError)."""
    from c4forge.core.settings import ConfigError, load_yaml_mapping
    from c4forge.corpus.config import build_config
    from c4forge.train.config import build_train_config

    path = tmp_path / "settings.yaml"
    path.write_text(text)
    mapping = load_yaml_mapping(str(path))
    for build in (lambda: build_config("c4", updates=mapping), lambda: build_train_config(base=mapping)):
        with pytest.raises(ConfigError, match="a setting's name is text"):
            build()


@pytest.mark.parametrize("words", [["model.d_model=64", "model=small"], ["model=small", "model.d_model=64"],
                                   ["m=x", "m.r=y"], ["m.r=y", "m=x"]])
def test_a_name_set_as_a_value_and_as_a_group_is_a_usage_error(words):
    """Fuzz finding (tests/fuzz/findings/settings-1fbd932f): ``m=x m.r=y`` raised TypeError
    ('str' object does not support item assignment) while nesting the words; the other order
    silently dropped the group."""
    from c4forge.core.settings import ConfigError, parse_overrides

    with pytest.raises(ConfigError, match="is set to a value|is a group of settings"):
        parse_overrides(words)


def test_a_list_typed_as_yaml_on_the_command_line_is_the_list_and_a_bad_label_is_refused(tmp_path):
    """Regression: `--set languages=[]` became the one label '[]', and the language filter then
    silently kept no page at all; now a bracketed list is read as YAML reads it, and a label
    that no fastText model can give is the one-line usage error, before any work."""
    from c4forge.core.settings import ConfigError
    from c4forge.corpus.config import build_config

    assert build_config("c4", overrides=["languages=[]"]).settings_of("language-id").languages == ()
    assert build_config("c4", overrides=["languages=[en, 'de']"]).settings_of("language-id").languages == ("en", "de")
    with pytest.raises(ConfigError, match=r"'\[en' is not a label the language-ID model gives"):
        build_config("c4", overrides=["languages=[en"])
    result = invoke(corpus_cli, ["build", "-i", str(SAMPLE), "-o", str(tmp_path / "out"),
                                 "--set", "languages=en;de"])
    assert result.exit_code == 2 and "'en;de' is not a label the language-ID model gives" in result.output
    assert not (tmp_path / "out").exists()


def fasttext_dictionary_file(path, labels, words=("the", "a")):
    """A whole fastText model file (magic, version, args, dictionary, an empty input matrix, a
    zero output matrix): what model_labels reads and the layout check accepts; enough to name a
    model's labels in a config, not to predict with."""
    import struct

    entries = [(w, 0) for w in words] + [(f"__label__{label}", 1) for label in labels]
    head = struct.pack("<ii", 0x2F4F16BA, 12) + struct.pack("<12i", 2, *range(1, 12)) + struct.pack("<d", 1e-4)
    head += struct.pack("<iiiqq", len(entries), len(words), len(labels), 100, -1)
    for word, kind in entries:
        head += word.encode() + b"\0" + struct.pack("<qb", 1, kind)
    head += struct.pack("<?qq", False, 0, 2) + struct.pack("<?qq", False, len(labels), 2) + bytes(8 * len(labels))
    path.write_bytes(head)
    return path


def test_a_label_the_language_id_model_never_gives_is_refused(tmp_path):
    """Regression: `--set languages=null` was taken as the label 'null' (so was any word that
    looks like a label): the filter then kept no page at all. A label is checked against the
    labels of the model in use (lid.176's 176 by default; GlotLID's eng_Latn with GlotLID)."""
    from c4forge.core.settings import ConfigError
    from c4forge.corpus.config import build_config
    from c4forge.corpus.langid.lid176 import model_labels

    assert len(model_labels()) == 176 and {"en", "de", "zh"} <= model_labels()
    for word in ("null", "eng_Latn", "english"):
        with pytest.raises(ConfigError, match=f"'{word}' is not a label the language-ID model gives"):
            build_config("c4", overrides=[f"languages=en,{word}"])
    glotlid = fasttext_dictionary_file(tmp_path / "glotlid.bin", ["eng_Latn", "deu_Latn"])
    config = build_config("c4", overrides=[f"lid_model={glotlid}", "languages=eng_Latn,deu_Latn"])
    assert config.settings_of("language-id").languages == ("eng_Latn", "deu_Latn")
    with pytest.raises(ConfigError, match="'en' is not a label"):
        build_config("c4", overrides=[f"lid_model={glotlid}", "languages=en"])
    result = invoke(corpus_cli, ["clean", str(SAMPLE), "--jsonl", str(tmp_path / "x.jsonl"), "--set", "languages=null"])
    assert result.exit_code == 2 and not (tmp_path / "x.jsonl").exists()


JSON_COMMANDS = {("corpus", "stats"), ("corpus", "estimate"), ("tokenizer", "inspect"), ("train", "eval")}


def test_every_json_output_is_json_alone_on_stdout(sample_tokens, tokens, tmp_path):
    """Regression: `corpus estimate --json` printed its progress lines on standard output before
    the JSON, so `| jq` failed. Every command with --json (the list is checked against the CLIs)
    prints the JSON alone on stdout, its notes on stderr."""
    groups = {"corpus": corpus_cli, "tokenizer": tokenizer_cli, "train": train_cli}
    found = {(name, sub) for name, group in groups.items() for sub, command in group.commands.items()
             if any("--json" in p.opts for p in command.params)}
    assert found == JSON_COMMANDS
    corpus = Path(sample_tokens).parent / "corpus"
    run = tmp_path / "run"
    assert invoke(train_cli, ["run", "--set", *settings(tokens, run, "steps=1"), "-q"]).exit_code == 0
    calls = {("corpus", "stats"): [corpus],
             ("corpus", "estimate"): ["-i", SAMPLE, "--groups", "2", "--badwords", ROOT / "corpus/data/demo-badwords"],
             ("tokenizer", "inspect"): [Path(sample_tokens).parent / "tok"],
             ("train", "eval"): ["-i", run, "--data", tokens, "--split", "train"]}
    for (name, sub), args in calls.items():
        result = invoke(groups[name], [sub, *args, "--json"])
        assert result.exit_code == 0, (sub, result.output[-2000:])
        assert isinstance(json.loads(result.stdout), dict), (sub, result.stdout[:300])
    # estimate's notes pass through the filter of Beam's stderr (a file descriptor): a real process
    proc = subprocess.run([sys.executable, "-m", "c4forge.cli.corpus", "estimate",
                           *map(str, calls[("corpus", "estimate")]), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sampling 5.0% of the pages" in proc.stderr and json.loads(proc.stdout)["input_pages"] == 171
