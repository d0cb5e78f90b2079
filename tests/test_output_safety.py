"""Outputs that never destroy what they do not own, and inputs refused before work (issue 27,
one regression test per case that failed): user files inside run and report directories, a --jsonl file overwritten, WARC/WET mismatches
read as zero documents, --strict that passed a truncated input, catch-all messages, odd paths,
and the output swap killed at every step."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.cli.tokenizer import cli as tokenizer_cli
from c4forge.cli.train import cli as train_cli
from tests.conftest import ROOT, flink_local_or_skip, shared_path
from tests.test_train_loop import settings

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
ONE_PROCESS = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def invoke(cli, args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def cli_run(*args, env=None, timeout=600):
    """A console script in a child process (for the messages a user sees and kill tests)."""
    return subprocess.run([sys.executable, "-m", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **(env or {})}, timeout=timeout)


# ------------------------------------------------------------------ 1. run directories

def test_train_run_overwrite_keeps_user_files_inside_the_run_folders(tokens, tmp_path):
    run = tmp_path / "run"
    args = ["run", "--set", *settings(tokens, run, "steps=2", "checkpoint_every=1"), "-q"]
    assert invoke(train_cli, args).exit_code == 0
    for folder in ("checkpoints", "tokenizer", "tensorboard"):
        (run / folder / "my-notes.txt").write_text("mine\n")
    (run / "README-mine.md").write_text("mine\n")
    old_steps = sorted(p.name for p in (run / "checkpoints").glob("step-*"))
    assert old_steps == ["step-000001", "step-000002"]
    result = invoke(train_cli, ["run", "--overwrite", "--set",
                                *settings(tokens, run, "steps=1", "checkpoint_every=1"), "-q"])
    assert result.exit_code == 0, result.output
    for folder in ("checkpoints", "tokenizer", "tensorboard"):
        assert (run / folder / "my-notes.txt").read_text() == "mine\n", folder
    assert (run / "README-mine.md").read_text() == "mine\n"
    # the old run's own files went: only the new run's one checkpoint is there
    assert sorted(p.name for p in (run / "checkpoints").glob("step-*")) == ["step-000001"]
    assert len([json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]) == 1


# ------------------------------------------------------------------ 2. report directories

def test_ablate_refuses_a_report_directory_that_holds_user_files(tmp_path):
    report = tmp_path / "mine"
    report.mkdir()
    (report / "report.md").write_text("my own report\n")
    spec = tmp_path / "a.yaml"
    spec.write_text(json.dumps({"inputs": [str(SAMPLE)], "out_dir": str(tmp_path / "abl"),
                                "train": {"max_tokens": 100},
                                "variants": {"c4": {}, "c4-noclean": {"preset": "c4-noclean"}}}))
    result = invoke(train_cli, ["ablate", "--config", spec, "-o", report])
    assert result.exit_code == 1 and "holds no c4forge ablation report" in result.output
    assert (report / "report.md").read_text() == "my own report\n"
    assert not (tmp_path / "abl").exists()  # refused before any work


def test_report_directory_adopts_a_legacy_report_and_replaces_only_its_files(tmp_path):
    from c4forge.ablation.report import REPORT_MANIFEST, check_report_dir
    from c4forge.core.outdir import OutputError

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "results.json").write_text(json.dumps({"variants": {}, "objective": "causal", "seeds": [0]}))
    (legacy / "report.md").write_text("old\n")
    (legacy / "loss_curves.png").write_bytes(b"png")
    check_report_dir(str(legacy))
    assert json.loads((legacy / REPORT_MANIFEST).read_text())["files"] == [
        "loss_curves.png", "report.md", "results.json"]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "results.json").write_text(json.dumps({"variants": {}, "objective": "causal", "seeds": [0]}))
    (mixed / "notes.txt").write_text("mine\n")
    with pytest.raises(OutputError, match="holds no c4forge ablation report"):
        check_report_dir(str(mixed))
    assert (mixed / "notes.txt").read_text() == "mine\n"


# ------------------------------------------------------------------ 3. --jsonl files

def test_clean_jsonl_never_overwrites_a_user_file(tmp_path):
    mine = tmp_path / "mine.jsonl"
    mine.write_text("my notes, not JSON\n")
    base = ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "--jsonl", mine, "-q"]
    result = invoke(corpus_cli, base)
    assert result.exit_code == 1 and "already exists; pass --overwrite" in result.output
    result = invoke(corpus_cli, [*base, "--overwrite"])
    assert result.exit_code == 1 and "not a `corpus clean --jsonl` output" in result.output
    assert mine.read_text() == "my notes, not JSON\n"
    ours = tmp_path / "ours.jsonl"
    assert invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "--jsonl", ours, "-q"]).exit_code == 0
    first = ours.read_text()
    assert invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "--jsonl", ours, "-q"]).exit_code == 1
    assert invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "--jsonl", ours, "-q",
                               "--overwrite"]).exit_code == 0
    assert ours.read_text() == first


# ------------------------------------------------------------------ 4. WARC read as WET and back

@pytest.mark.parametrize("command", ["clean", "build"])
def test_a_warc_file_read_as_wet_is_refused_naming_the_flag(command, tmp_path):
    warc = shared_path("crawl", "warc", "cc-2024-22-whirlwind.warc.gz")
    extra = ONE_PROCESS if command == "build" else []
    result = invoke(corpus_cli, [command, "-i", warc, "--preset", "c4-noclean", "-o", tmp_path / "out",
                                 "-q", *extra])
    assert result.exit_code == 2, result.output
    assert "--input-format warc" in result.output and "WARC response records" in result.output
    assert not (tmp_path / "out").exists()


def test_a_wet_file_read_as_warc_is_refused_naming_the_flag(tmp_path):
    result = invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "--input-format",
                                 "warc", "-o", tmp_path / "out", "-q"])
    assert result.exit_code == 2 and "--input-format wet" in result.output


def test_the_reader_refuses_a_mismatch_on_its_own(tmp_path):
    """Remote files are not sniffed up front: the reader stops at the third WARC response, or at
    the end of a file that had responses and no WET record."""
    from c4forge.corpus.read.options import ReadOptions
    from c4forge.corpus.read.sniff import InputFormatError
    from c4forge.corpus.read.wet import iter_file_documents

    warc = shared_path("crawl", "warc", "cc-2024-22-whirlwind.warc.gz")
    counted = {}
    with pytest.raises(InputFormatError, match="--input-format warc"):
        list(iter_file_documents(str(warc), lambda n, a=1: counted.update({n: counted.get(n, 0) + a}),
                                 ReadOptions(input_format="wet")))
    assert counted["skipped:record_type:response"] == 1  # this file holds one response
    many = shared_path("crawl", "warc", "cc-2020-34-sample.warc.gz")
    counted.clear()
    with pytest.raises(InputFormatError):
        list(iter_file_documents(str(many), lambda n, a=1: counted.update({n: counted.get(n, 0) + a}),
                                 ReadOptions(input_format="wet")))
    assert counted["skipped:record_type:response"] == 3  # stopped early, not at the end


def test_a_run_that_writes_no_document_warns_with_the_biggest_loss(tmp_path):
    result = invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "--languages", "bo",  # Tibetan: none in the sample
                                 "-o", tmp_path / "out"])
    assert result.exit_code == 0
    assert "warning: 0 documents written; the biggest loss is language-filter/filtered:ignored_language" \
        in result.output


# ------------------------------------------------------------------ 5. --strict

@pytest.mark.parametrize("command", ["clean", "build"])
def test_strict_fails_on_a_truncated_input_and_leaves_the_output_unchanged(command, tmp_path):
    cut = tmp_path / "cut.warc.wet.gz"
    data = SAMPLE.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    extra = ONE_PROCESS if command == "build" else []
    args = [command, "-i", SAMPLE, cut, "--preset", "c4-noclean", "-o", out, "-q", *extra]
    assert invoke(corpus_cli, args).exit_code == 0  # default: a counted skip
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = invoke(corpus_cli, [*args, "--strict", "--overwrite"])
    assert result.exit_code == 1 and "skipped:truncated_gzip" in result.output, result.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    help_text = invoke(corpus_cli, [command, "--help"]).output
    assert "skipped:truncated_gzip" in help_text and "skipped:unreadable_file" in help_text


# ------------------------------------------------------------------ 6. catch-all messages

def test_flex_attention_without_cuda_is_refused_when_the_config_is_read(tokens, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: flex attention is allowed")
    result = invoke(train_cli, ["run", "--set", *settings(tokens, tmp_path / "run", "model.attention=flex")])
    assert result.exit_code == 2
    assert "model.attention=flex needs a CUDA GPU" in result.output and "NotImplementedError" not in result.output
    assert not (tmp_path / "run").exists()


def test_inspect_text_that_is_not_utf8_is_a_clear_error(sample_tokens, tmp_path):
    manifest = json.loads((Path(sample_tokens) / "manifest.json").read_text())
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\xff\xfe\x80 binary")
    result = invoke(tokenizer_cli, ["inspect", manifest["tokenizer"]["path"], "--text", binary])
    assert result.exit_code == 1 and "is not UTF-8 text" in result.output
    assert "UnicodeDecodeError" not in result.output


def test_missing_eval_files_are_named_before_any_work(tmp_path):
    spec = tmp_path / "a.yaml"
    spec.write_text(json.dumps({"inputs": [str(SAMPLE)], "out_dir": str(tmp_path / "abl"),
                                "train": {"max_tokens": 100},
                                "variants": {"c4": {}, "c4-noclean": {"preset": "c4-noclean"}},
                                "eval": {"texts": ["no/such/wiki.test.raw"]}}))
    result = invoke(train_cli, ["ablate", "--config", spec])
    assert result.exit_code == 1 and "eval.texts[0]: no/such/wiki.test.raw is not a file" in result.output
    assert "Errno" not in result.output and not (tmp_path / "abl").exists()
    result = invoke(train_cli, ["lm-eval-tasks", "--eval-dir", tmp_path, "-o", tmp_path / "tasks",
                                "--tasks", "copa"])
    assert result.exit_code == 1 and "copa.jsonl not found (--eval-dir)" in result.output
    assert "Errno" not in result.output


def test_an_unwritable_output_is_one_line_with_the_path(sample_corpus, tmp_path):
    result = invoke(tokenizer_cli, ["train", "-i", sample_corpus, "--vocab-size", "600",
                                    "-o", "/proc/c4forge-test-tokenizer"])
    assert result.exit_code == 1
    assert result.output.startswith("Error:") and "/proc/c4forge-test-tokenizer" in result.output
    assert "FileNotFoundError" not in result.output and len(result.output.strip().splitlines()) == 1


# ------------------------------------------------------------------ 7. advice that fits

def test_too_small_a_vocabulary_for_the_characters_says_to_grow_it(tmp_path):
    from c4forge.corpus.document import Document
    from c4forge.corpus.output.shards import write_corpus
    from c4forge.tokenizer.train import TokenizerConfig, TokenizerError, train_tokenizer

    rng = __import__("random").Random(0)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]
    docs = [Document(url=f"http://zh.example/{i}", text="".join(rng.choice(chars) for _ in range(60)))
            for i in range(400)]
    write_corpus(str(tmp_path / "zh"), docs, {"config": {}})
    with pytest.raises(TokenizerError) as caught:
        train_tokenizer(str(tmp_path / "zh"), str(tmp_path / "tok"),
                        TokenizerConfig(vocab_size=1000, character_coverage=1.0))
    message = str(caught.value)
    assert "Use a larger --vocab-size, or a lower --character-coverage" in message
    assert "smaller --vocab-size" not in message


# ------------------------------------------------------------------ 8. odd paths

def test_output_paths_are_resolved_up_front_like_mkdir_p(sample_corpus, tmp_path, monkeypatch):
    from c4forge.core.io import output_path

    monkeypatch.chdir(tmp_path)
    assert output_path("runs/missing/../r2") == "runs/r2"
    (tmp_path / "runs").mkdir()
    result = invoke(tokenizer_cli, ["train", "-i", sample_corpus, "--vocab-size", "600",
                                    "-o", "runs/missing/../tok", "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "tok" / "tokenizer.model").exists()
    assert not (tmp_path / "runs" / "missing").exists()
    result = invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", "c4-noclean", "-q",
                                 "--jsonl", "out/missing/../docs.jsonl"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "docs.jsonl").stat().st_size > 0


# ------------------------------------------------------------------ 9. killed at every step

SWAP_STEPS = ["staged", "pointed", "placed", "superseded-removed", "final", "done"]


def corpus_rows(directory: Path) -> tuple[str, int]:
    """(preset, documents) of a complete corpus: every listed shard exists and the rows read
    equal the manifest's counts; anything else fails the test."""
    from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest

    manifest = read_manifest(str(directory))
    for split, info in manifest["splits"].items():
        assert sum(1 for _ in iter_corpus_documents(str(directory), split)) == info["documents"], split
    return manifest["config"]["preset"], sum(s["documents"] for s in manifest["splits"].values())


@pytest.fixture(scope="module")
def two_corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-corpora")
    for preset in ("c4-noclean", "c4"):
        proc = cli_run("c4forge.cli.corpus", "build", "-i", SAMPLE, "--preset", preset, "--badwords",
                       BADWORDS, "-o", root / preset, "-q", *ONE_PROCESS)
        assert proc.returncode == 0, proc.stderr
    return root


@pytest.mark.slow
@pytest.mark.parametrize("step", SWAP_STEPS)
def test_corpus_build_overwrite_killed_at_each_swap_step(two_corpora, tmp_path, step):
    import shutil

    target = tmp_path / "corpus"
    shutil.copytree(two_corpora / "c4-noclean", target)
    (target / "notes.txt").write_text("mine\n")
    old = corpus_rows(target)
    proc = cli_run("c4forge.cli.corpus", "build", "-i", SAMPLE, "--preset", "c4", "--badwords", BADWORDS,
                   "-o", target, "--overwrite", "-q", *ONE_PROCESS, env={"C4FORGE_SWAP_CRASH_AT": step})
    assert proc.returncode == 99, proc.stderr[-2000:]
    found = corpus_rows(target)
    assert found == (old if step == "staged" else corpus_rows(two_corpora / "c4"))
    assert (target / "notes.txt").read_text() == "mine\n"
    # the next run finishes the job and leaves only the corpus's own files (and the user's)
    proc = cli_run("c4forge.cli.corpus", "build", "-i", SAMPLE, "--preset", "c4", "--badwords", BADWORDS,
                   "-o", target, "--overwrite", "-q", *ONE_PROCESS)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from c4forge.corpus.output.shards import CORPUS_KIND, read_manifest

    names = {p.name for p in target.iterdir()}
    assert names == set(CORPUS_KIND.files_of(read_manifest(str(target)))) | {"_manifest.json", "notes.txt"}


@pytest.mark.slow
@pytest.mark.parametrize("step", SWAP_STEPS)
def test_tokenizer_encode_overwrite_killed_at_each_swap_step(two_corpora, sample_tokens, tmp_path, step):
    import numpy as np

    from c4forge.tokenizer.formats import iter_shards, read_token_manifest

    tokenizer = json.loads((Path(sample_tokens) / "manifest.json").read_text())["tokenizer"]["path"]

    def encode(corpus, env=None):
        return cli_run("c4forge.cli.tokenizer", "encode", "-i", two_corpora / corpus, "--tokenizer",
                       tokenizer, "-o", tmp_path / "ids", "--overwrite", "--workers", "1", "-q", env=env)

    def complete() -> tuple[str, int]:
        manifest = read_token_manifest(str(tmp_path / "ids"))
        total = 0
        for split, info in manifest["splits"].items():
            shards = list(iter_shards(str(tmp_path / "ids"), split, manifest))
            assert sum(len(s) for s in shards) == info["documents"]
            assert all(np.asarray(s.tokens).size for s in shards)
            total += info["documents"]
        return manifest["corpus"]["preset"], total

    assert encode("c4-noclean").returncode == 0
    old = complete()
    proc = encode("c4", env={"C4FORGE_SWAP_CRASH_AT": step})
    assert proc.returncode == 99, proc.stderr[-2000:]
    preset, documents = complete()
    assert (preset, documents) == old if step == "staged" else preset == "c4"


def test_train_run_killed_while_checkpointing_resumes_from_a_complete_checkpoint(tokens, tmp_path):
    from c4forge.train.checkpoint import latest_checkpoint

    run = tmp_path / "run"
    base = ["c4forge.cli.train", "run", "--set", *settings(tokens, run, "checkpoint_every=1"), "-q"]
    assert cli_run(*base, "steps=1").returncode == 0
    for step in ("written", "placed"):
        proc = cli_run(*base, "steps=2", "--resume", env={"C4FORGE_CHECKPOINT_CRASH_AT": step})
        assert proc.returncode == 99, proc.stderr[-2000:]
        latest = latest_checkpoint(str(run / "checkpoints"))
        assert latest and Path(latest).name == "step-000001"  # the pointer moves last
        assert all((Path(latest) / f).is_file() for f in ("model.pt", "optimizer.pt", "trainer.pt"))
    proc = cli_run(*base, "steps=2", "--resume")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(latest_checkpoint(str(run / "checkpoints"))).name == "step-000002"


def test_a_checkpoint_set_aside_while_rewritten_is_still_the_latest(tmp_path):
    """Killed between setting a step's old copy aside and renaming the new one in: the pointer
    names a missing folder; the complete copy set aside is found and put back."""
    from c4forge.train.checkpoint import latest_checkpoint

    checkpoints = tmp_path / "checkpoints"
    aside = checkpoints / "step-000003.tmp-0a1b2c3d"
    aside.mkdir(parents=True)
    for name in ("model.pt", "optimizer.pt", "trainer.pt"):
        (aside / name).write_bytes(b"x")
    (checkpoints / "latest").write_text("step-000003\n")
    assert latest_checkpoint(str(checkpoints)) == str(checkpoints / "step-000003")
    assert (checkpoints / "step-000003" / "trainer.pt").exists() and not aside.exists()
    (checkpoints / "step-000003" / "trainer.pt").unlink()
    (checkpoints / "latest").write_text("step-000004\n")
    assert latest_checkpoint(str(checkpoints)) is None  # nothing complete to fall back on


# ------------------------------------------------------------------ a user's file at a new shard's name
# (issue 83, point 1): --overwrite removes only what the old manifest lists, and a name the new
# output is about to write, held by a file the old output does not list, is refused the same way:
# one line, exit 1, nothing changed (the user's file, the old corpus, no staging folder left).

USER_FILE_CASES = {
    # old format -> new format, the user's file at the name the new output takes, extra flags
    "arrow-to-parquet": ("arrow", "parquet", "data/train-00000-of-00001.parquet", []),
    "arrow-to-two-arrow-shards": ("arrow", "arrow", "train-00001-of-00002.arrow", ["--num-shards", "2"]),
    "parquet-to-arrow": ("parquet", "arrow", "train-00000-of-00001.arrow", []),
}


def tree_bytes(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def corpus_command(runner: str, target: Path, fmt: str, extra: list[str], overwrite: bool) -> list:
    if runner == "clean":
        args = ["clean", SAMPLE, "--badwords", BADWORDS, "-o", target, "--format", fmt, "-q"]
    else:
        args = ["build", "-i", SAMPLE, "--badwords", BADWORDS, "-o", target, "--format", fmt, "-q",
                *extra, *({"direct": ONE_PROCESS, "flink-local": ["--runner", "flink-local",
                                                               "--workers", "1"]}[runner])]
    return args + (["--overwrite"] if overwrite else [])


def check_a_users_file_at_a_new_shards_name_is_never_replaced(runner, case, tmp_path):
    old_format, new_format, name, extra = USER_FILE_CASES[case]
    if runner == "clean" and extra:
        pytest.skip("corpus clean writes one shard per split (no --num-shards)")
    target = tmp_path / "a1"
    proc = cli_run("c4forge.cli.corpus", *corpus_command(runner, target, old_format, [], False))
    assert proc.returncode == 0, proc.stderr[-2000:]
    mine = target / name
    mine.parent.mkdir(exist_ok=True)
    mine.write_bytes(b"my own file, not a shard\n")
    before = tree_bytes(target)
    proc = cli_run("c4forge.cli.corpus", *corpus_command(runner, target, new_format, extra, True))
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr[-2000:]
    assert name in lines[0] and "did not write" in lines[0], lines[0]
    assert tree_bytes(target) == before  # the user's file, the old corpus: byte for byte
    assert not [p for p in target.iterdir() if p.name.startswith(".c4forge-staging")]


@pytest.mark.parametrize("case", sorted(USER_FILE_CASES))
@pytest.mark.parametrize("runner", ["clean", "direct"])
def test_a_users_file_at_a_new_shards_name_is_never_replaced(runner, case, tmp_path):
    check_a_users_file_at_a_new_shards_name_is_never_replaced(runner, case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(USER_FILE_CASES))
def test_a_users_file_at_a_new_shards_name_is_never_replaced_on_flink_local(case, tmp_path):
    flink_local_or_skip("the overwrite test")
    check_a_users_file_at_a_new_shards_name_is_never_replaced("flink-local", case, tmp_path)


def test_commit_refuses_a_stranger_at_a_new_name_before_touching_anything(tmp_path):
    from c4forge.core.outdir import OutputError, OutputKind, write_directory

    kind = OutputKind("thing", "_m.json", "thing", lambda m: list(m.get("files", [])))
    def fill(names):
        def write(staging):
            for name in names:
                Path(staging, name).parent.mkdir(exist_ok=True)
                Path(staging, name).write_text("new\n")
            return {"format": "thing", "files": names}
        return write

    write_directory(str(tmp_path / "d"), kind, False, fill(["a"]))
    (tmp_path / "d" / "b").write_text("mine\n")
    (tmp_path / "d" / "sub").write_text("mine too\n")  # a file where the new output wants a folder
    before = tree_bytes(tmp_path / "d")
    for names in (["a", "b"], ["sub/c"]):
        with pytest.raises(OutputError, match="did not write"):
            write_directory(str(tmp_path / "d"), kind, True, fill(names))
        assert tree_bytes(tmp_path / "d") == before
    write_directory(str(tmp_path / "d"), kind, True, fill(["a", "c"]))  # a listed name is replaced
    assert (tmp_path / "d" / "b").read_text() == "mine\n"
