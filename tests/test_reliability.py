"""Bad input and faults, one test per case: nothing the project did not write is ever deleted,
every input named is read (or the command fails), the reader resynchronises after a lying
Content-Length, no name from data escapes an output directory, training never keeps a
non-finite checkpoint, and no user mistake gives a Python traceback."""
import gzip
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.cli.tokenizer import cli as tokenizer_cli
from c4forge.cli.train import cli as train_cli
from c4forge.core import outdir
from c4forge.core.counters import Counters
from c4forge.core.settings import ConfigError
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import (
    CORPUS_KIND,
    CorpusFormatError,
    iter_corpus_documents,
    read_manifest,
    write_corpus,
)
from c4forge.corpus.read.wet import iter_crawl_documents as wet_documents
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.train import CONFIG_FILE, TokenizerConfig, TokenizerError, train_tokenizer
from c4forge.train.config import build_train_config
from tests.conftest import ROOT
from tests.wetfiles import gzip_member, page, record, wet_file

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def invoke(cli, args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def user_dir(path, *names):
    """A directory of the user's own files, which no command may delete."""
    path.mkdir(parents=True, exist_ok=True)
    for name in names or ("notes.txt",):
        (path / name).write_text(f"user data {name}\n")
    return path


def assert_untouched(path, *names):
    for name in names or ("notes.txt",):
        assert (path / name).read_text() == f"user data {name}\n"


@pytest.fixture(scope="module")
def docs():
    return run_chain([str(SAMPLE)], build_config("c4", badwords=BADWORDS), Counters())


@pytest.fixture(scope="module")
def stages(tmp_path_factory, docs):
    """A corpus, a tokenizer, token shards and a 2-step run, made once for this module."""
    root = tmp_path_factory.mktemp("stages")
    write_corpus(str(root / "corpus"), docs, {"config": {"preset": "c4"}, "counters": {}})
    train_tokenizer(str(root / "corpus"), str(root / "tok"), TokenizerConfig(vocab_size=600))
    encode_corpus(str(root / "corpus"), str(root / "tok"), str(root / "ids"), workers=1,
                  log=lambda *_: None)
    run = root / "run"
    result = invoke(train_cli, ["run", *run_settings(root / "ids", run, "steps=2")])
    assert result.exit_code == 0, result.output
    return root


def run_settings(ids, out, *extra):
    return ["data.train=" + str(ids), f"out_dir={out}", "data.seq_len=32", "data.batch_size=4",
            "model.d_model=32", "model.n_layers=1", "model.n_heads=2", "progress=false",
            "checkpoint_every=1", "optim.warmup_steps=1", *extra]


# --------------------------------------------------------------------------- 1. output dirs

def test_tokenizer_train_refuses_a_foreign_directory(stages, tmp_path):
    target = user_dir(tmp_path / "mine", "notes.txt", "data.csv")
    result = invoke(tokenizer_cli, ["train", "--corpus", stages / "corpus", "--vocab-size", 600,
                                    "-o", target, "--overwrite"])
    assert result.exit_code != 0 and "refusing" in result.output
    assert_untouched(target, "notes.txt", "data.csv")


def test_tokenizer_train_in_the_working_directory_keeps_its_files(stages, tmp_path, monkeypatch):
    work = user_dir(tmp_path / "work")
    monkeypatch.chdir(work)
    result = invoke(tokenizer_cli, ["train", "--corpus", stages / "corpus", "--vocab-size", 600, "-o", "."])
    assert result.exit_code != 0
    assert_untouched(work)


def test_tokenizer_overwrite_removes_only_its_own_files(stages, tmp_path):
    target = tmp_path / "tok"
    train_tokenizer(str(stages / "corpus"), str(target), TokenizerConfig(vocab_size=600))
    user_dir(target)
    with pytest.raises(TokenizerError, match="pass --overwrite"):
        train_tokenizer(str(stages / "corpus"), str(target), TokenizerConfig(vocab_size=700))
    train_tokenizer(str(stages / "corpus"), str(target), TokenizerConfig(vocab_size=700), overwrite=True)
    assert json.loads((target / CONFIG_FILE).read_text())["vocab_size"] == 700
    assert_untouched(target)
    assert sorted(p.name for p in target.iterdir()) == sorted([
        CONFIG_FILE, "notes.txt", "tokenizer.model", "tokenizer.vocab", "tokenizer.json",
        "tokenizer_config.json", "special_tokens_map.json"])


def test_train_export_refuses_a_foreign_directory_and_replaces_its_own(stages, tmp_path):
    target = user_dir(tmp_path / "hf")
    result = invoke(train_cli, ["export", "--checkpoint", stages / "run", "-o", target])
    assert result.exit_code != 0 and "refusing" in result.output
    assert_untouched(target)
    fresh = tmp_path / "export"
    assert invoke(train_cli, ["export", "--checkpoint", stages / "run", "-o", fresh]).exit_code == 0
    user_dir(fresh)
    again = invoke(train_cli, ["export", "--checkpoint", stages / "run", "-o", fresh])
    assert again.exit_code != 0 and "--overwrite" in again.output
    assert invoke(train_cli, ["export", "--checkpoint", stages / "run", "-o", fresh,
                              "--overwrite"]).exit_code == 0
    assert_untouched(fresh)
    assert (fresh / "model.safetensors").exists()


def test_corpus_build_keeps_foreign_arrow_files(tmp_path):
    target = user_dir(tmp_path / "arrows", "mine.arrow")
    result = invoke(corpus_cli, ["build", "-i", SAMPLE, "-o", target, "--overwrite", *IN_MEMORY])
    assert result.exit_code != 0 and "refusing" in result.output
    assert_untouched(target, "mine.arrow")


def test_tokenizer_encode_keeps_foreign_bin_files(stages, tmp_path):
    target = user_dir(tmp_path / "bins", "weights.bin", "lookup.idx")
    result = invoke(tokenizer_cli, ["encode", "--corpus", stages / "corpus", "--tokenizer",
                                    stages / "tok", "-o", target, "--overwrite"])
    assert result.exit_code != 0 and "refusing" in result.output
    assert_untouched(target, "weights.bin", "lookup.idx")


def test_corpus_clean_needs_overwrite_and_keeps_other_files(stages, tmp_path):
    target = tmp_path / "corpus"
    shutil.copytree(stages / "corpus", target)
    user_dir(target)
    before = read_manifest(str(target))
    args = ["clean", SAMPLE, "-o", target, "--badwords", BADWORDS, "--preset", "c4-noclean"]
    refused = invoke(corpus_cli, args)
    assert refused.exit_code != 0 and "--overwrite" in refused.output
    assert read_manifest(str(target)) == before
    assert invoke(corpus_cli, args + ["--overwrite"]).exit_code == 0
    assert read_manifest(str(target))["config"]["preset"] == "c4-noclean"
    assert_untouched(target)
    listed = set(CORPUS_KIND.files_of(read_manifest(str(target))))
    assert {p.name for p in target.iterdir()} == listed | {"_manifest.json", "notes.txt"}


def test_train_run_refuses_another_run_without_resume_or_overwrite(stages, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(stages / "run", out)
    metrics = (out / "metrics.jsonl").read_text()
    refused = invoke(train_cli, ["run", *run_settings(stages / "ids", out, "steps=1")])
    assert refused.exit_code != 0 and "--resume" in refused.output
    assert (out / "metrics.jsonl").read_text() == metrics
    assert (out / "checkpoints" / "latest").read_text().strip() == "step-000002"
    user_dir(out)
    fresh = invoke(train_cli, ["run", *run_settings(stages / "ids", out, "steps=1"), "--overwrite"])
    assert fresh.exit_code == 0, fresh.output
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1]
    assert sorted(os.listdir(out / "checkpoints")) == ["latest", "step-000001"]
    assert_untouched(out)
    foreign = user_dir(tmp_path / "foreign")
    refused = invoke(train_cli, ["run", *run_settings(stages / "ids", foreign, "steps=1"), "--overwrite"])
    assert refused.exit_code != 0 and "refusing" in refused.output
    assert sorted(os.listdir(foreign)) == ["notes.txt"]


class Crash(BaseException):
    """Stands for the process dying at a step of the swap (nothing after it runs)."""


SWAP_STEPS = ["staged", "pointed", "placed", "superseded-removed", "final", "done"]


@pytest.mark.parametrize("step", SWAP_STEPS)
def test_swap_is_crash_safe_at_every_step(docs, tmp_path, step):
    target = tmp_path / "corpus"
    old_docs, new_docs = docs[: len(docs) // 2], docs
    write_corpus(str(target), old_docs, {"config": {"preset": "old"}, "counters": {}},
                 docs_per_shard=10)
    user_dir(target)

    def hook(name):
        if name == step:
            raise Crash(name)

    try:
        write_corpus(str(target), new_docs, {"config": {"preset": "new"}, "counters": {}},
                     docs_per_shard=7, overwrite=True, hook=hook)
    except Crash:
        pass
    manifest = read_manifest(str(target))
    expected = {"old": old_docs, "new": new_docs}[manifest["config"]["preset"]]
    assert manifest["config"]["preset"] == ("old" if step == "staged" else "new")
    urls = sorted(d["url"] for split in ("train", "validation") for d in iter_corpus_documents(str(target), split))
    assert urls == sorted(d.url for d in expected)
    assert_untouched(target)
    # The next run cleans up whatever the crash left, and nothing else.
    write_corpus(str(target), old_docs, {"config": {"preset": "again"}, "counters": {}}, overwrite=True)
    names = {p.name for p in target.iterdir()}
    assert names == set(CORPUS_KIND.files_of(read_manifest(str(target)))) | {"_manifest.json", "notes.txt"}


def test_killed_cli_swap_leaves_a_complete_corpus(stages, tmp_path):
    """The real process killed (os._exit) in the middle of placing files."""
    target = tmp_path / "corpus"
    shutil.copytree(stages / "corpus", target)
    env = dict(os.environ, C4FORGE_SWAP_CRASH_AT="placed")
    proc = subprocess.run([sys.executable, "-m", "c4forge.cli.corpus", "clean", str(SAMPLE), "-o",
                           str(target), "--overwrite", "--preset", "c4-noclean"],
                          env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 99, proc.stderr
    manifest = read_manifest(str(target))
    assert manifest["config"]["preset"] == "c4-noclean" and manifest.get("location")
    count = sum(1 for split in ("train", "validation") for _ in iter_corpus_documents(str(target), split))
    assert count == sum(s["documents"] for s in manifest["splits"].values())


# --------------------------------------------------------------------------- 2. inputs

def copies(tmp_path, n=3):
    """n crawl files with different pages (the sample's URLs rewritten per copy)."""
    raw = gzip.decompress(SAMPLE.read_bytes())
    paths = []
    for i in range(n):
        path = tmp_path / f"part-{i}.warc.wet.gz"
        path.write_bytes(gzip.compress(raw.replace(b"://", f"://c{i}.".encode())))
        paths.append(path)
    return paths


def test_corpus_build_reads_every_path_after_one_input_flag(tmp_path):
    paths = copies(tmp_path)
    out = tmp_path / "out"
    result = invoke(corpus_cli, ["build", "-i", *paths, "-o", out, "--preset", "c4-noclean", *IN_MEMORY])
    assert result.exit_code == 0, result.output
    assert read_manifest(str(out))["counters"]["split-wet-file/wet-file"] == 3
    assert len(read_manifest(str(out))["inputs"]) == 3


@pytest.mark.parametrize("flag", ["--presett", "--lid-treshold"])
def test_misspelled_build_flags_are_usage_errors(tmp_path, flag):
    result = invoke(corpus_cli, ["build", "-i", SAMPLE, flag, "c4", "-o", tmp_path / "o"])
    assert result.exit_code == 2 and flag in result.output
    assert not (tmp_path / "o").exists()


def test_directories_expand_and_dangling_links_fail(tmp_path):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    copies(crawl, 2)
    out = tmp_path / "out.jsonl"
    result = invoke(corpus_cli, ["clean", crawl, "--jsonl", out, "--preset", "c4-noclean"])
    assert result.exit_code == 0 and "2 input file(s)" in result.output
    (tmp_path / "empty").mkdir()
    result = invoke(corpus_cli, ["clean", tmp_path / "empty", "--jsonl", out])
    assert result.exit_code != 0 and "no crawl files" in result.output
    os.symlink(tmp_path / "gone.wet.gz", tmp_path / "link.wet.gz")
    for cli, args in ((corpus_cli, ["clean", tmp_path / "link.wet.gz", "--jsonl", out]),
                      (corpus_cli, ["build", "-i", tmp_path / "link.wet.gz", "-o", tmp_path / "b"])):
        result = invoke(cli, args)
        assert result.exit_code != 0 and "dangling" in result.output


def test_clean_skips_an_unreadable_file_and_strict_fails(tmp_path, monkeypatch):
    import c4forge.corpus.read.records as records
    import c4forge.corpus.read.wet as wet

    good, unreadable = copies(tmp_path, 2)
    real = records.open_raw  # the reader's opening layer, as the record reader calls it

    def open_raw(path, *args):
        if path == str(unreadable):
            raise wet.CrawlReadError(f"cannot open {path}: PermissionError: denied")
        return real(path, *args)

    monkeypatch.setattr(records, "open_raw", open_raw)
    out = tmp_path / "out.jsonl"
    alone = invoke(corpus_cli, ["clean", good, "--jsonl", out, "--preset", "c4-noclean"])
    expected = out.read_text()
    result = invoke(corpus_cli, ["clean", good, unreadable, "--jsonl", out, "--preset", "c4-noclean",
                                 "--counters", tmp_path / "counters.json", "--overwrite"])
    assert alone.exit_code == 0 and result.exit_code == 0, result.output
    assert out.read_text() == expected  # every good record kept
    counters = json.loads((tmp_path / "counters.json").read_text())["counters"]
    assert counters["split-wet-file/skipped:unreadable_file"] == 1
    out.unlink()
    strict = invoke(corpus_cli, ["clean", good, unreadable, "--jsonl", out, "--preset", "c4-noclean", "--strict"])
    assert strict.exit_code == 1 and "--strict: input file(s) skipped or cut short: 1 skipped:unreadable_file" in strict.output
    assert not out.exists()


def test_clean_keeps_good_records_before_an_io_error(tmp_path, monkeypatch):
    path = copies(tmp_path, 1)[0]
    import c4forge.corpus.read.records as records
    import c4forge.corpus.read.wet as wet

    real = records.open_raw

    class Failing:
        def __init__(self, raw):
            self.raw, self.calls = raw, 0

        def read(self, n=-1):
            self.calls += 1
            if self.calls > 1:
                raise OSError(5, "Input/output error")
            return self.raw.read(2000)

        def close(self):
            self.raw.close()

    monkeypatch.setattr(records, "open_raw", lambda p, *args: Failing(real(p, *args)))
    counters = Counters()
    docs = list(wet.iter_file_documents(str(path), counters.inc_fn("r")))
    assert counters["r/skipped:read_error"] == 1
    assert docs, "documents read before the error are kept"


# --------------------------------------------------------------------------- 3. reader resync

def good(i):
    return record(f"http://example.com/{i}", page(i))


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("declared", ["88\u00b3", "\u0661\u0662", "12 ", "-5", ""])
def test_a_content_length_that_is_not_ascii_digits_loses_only_its_record(tmp_path, compressed, declared):
    """Fuzz finding (tests/fuzz/findings/records-4ee8de70): ``"88\u00b3".isdigit()`` is True but
    int() refuses it: the reader raised ValueError (a traceback) instead of skipping the record."""
    records = [good(i) for i in range(5)]
    body = page(2).encode()
    header = f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: http://example.com/odd\r\n" \
             f"Content-Length: {declared}\r\n\r\n".encode()
    records[2] = header + body + b"\r\n\r\n"
    data = wet_file(records) if compressed else b"".join(records)
    path = tmp_path / ("f.wet.gz" if compressed else "f.wet")
    path.write_bytes(data)
    counters = Counters()
    urls = [d.url for d in wet_documents(str(path), counters.inc_fn("r"))]
    assert urls == [f"http://example.com/{i}" for i in (0, 1, 3, 4)]
    assert any("skipped" in k for k in counters.as_dict()), counters.as_dict()


def test_a_response_whose_content_length_is_not_ascii_digits_is_extracted():
    from c4forge.corpus.extract.html import response_text

    block = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\xb3\r\n\r\n"
             b"<html><body><p>The committee met on Tuesday to agree the plan.</p></body></html>")
    text = response_text(block, "https://example.com/", lambda name: "", "resiliparse", timeout=5.0,
                         max_html_bytes=1 << 20, inc=Counters().inc_fn("r"))
    assert text == "The committee met on Tuesday to agree the plan."


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("claimed", [20_000_000, 200_000])
def test_lying_content_length_loses_only_its_record(tmp_path, compressed, claimed):
    records = [good(i) for i in range(130)]
    records[9] = record("http://example.com/liar", page(9), length=claimed)
    data = wet_file(records) if compressed else b"".join(records)
    path = tmp_path / ("f.wet.gz" if compressed else "f.wet")
    path.write_bytes(data)
    counters = Counters()
    urls = [d.url for d in wet_documents(str(path), counters.inc_fn("r"))]
    assert urls == [f"http://example.com/{i}" for i in range(130) if i != 9]
    skipped = {k: v for k, v in counters.as_dict().items() if "skipped" in k and "warcinfo" not in k}
    assert sum(skipped.values()) == 1, skipped


def test_lying_content_length_in_one_whole_file_member(tmp_path):
    records = [good(i) for i in range(50)]
    records[3] = record("http://example.com/liar", page(3), length=20_000_000)
    path = tmp_path / "one.wet.gz"
    path.write_bytes(gzip_member(b"".join(records)))
    urls = [d.url for d in wet_documents(str(path))]
    assert urls == [f"http://example.com/{i}" for i in range(50) if i != 3]


# --------------------------------------------------------------------------- 4. paths from data

def hostile_corpus(stages, tmp_path, mutate):
    target = tmp_path / "hostile"
    shutil.copytree(stages / "corpus", target)
    manifest = json.loads((target / "_manifest.json").read_text())
    mutate(manifest)
    (target / "_manifest.json").write_text(json.dumps(manifest))
    return target


def test_hostile_split_name_cannot_escape_the_token_directory(stages, tmp_path):
    def rename(manifest):
        manifest["splits"]["../../../x/PWNED"] = manifest["splits"].pop("train")

    corpus = hostile_corpus(stages, tmp_path, rename)
    out = tmp_path / "deep" / "a" / "ids"
    result = invoke(tokenizer_cli, ["encode", "--corpus", corpus, "--tokenizer", stages / "tok", "-o", out])
    assert result.exit_code != 0 and "unsafe split name" in result.output
    assert not list(tmp_path.rglob("*PWNED*"))


def test_manifest_file_entry_cannot_read_outside_the_corpus(stages, tmp_path):
    secret = tmp_path / "secret.arrow"
    shutil.copy(next((stages / "corpus").glob("train-*.arrow")), secret)

    def point_out(manifest):
        manifest["splits"]["train"]["files"] = ["../secret.arrow"]

    corpus = hostile_corpus(stages, tmp_path, point_out)
    result = invoke(corpus_cli, ["show", corpus])
    assert result.exit_code != 0 and "unsafe shard name" in result.output
    with pytest.raises(CorpusFormatError):
        list(iter_corpus_documents(str(corpus)))
    point = hostile_corpus(stages, tmp_path / "2", lambda m: m.update(location="../../etc"))
    with pytest.raises(CorpusFormatError, match="unsafe location"):
        list(iter_corpus_documents(str(point)))


def test_hostile_variant_and_pointer_names(tmp_path):
    import yaml

    from c4forge.ablation import AblationError, load_ablation
    from c4forge.train.checkpoint import CheckpointError, latest_checkpoint

    spec = {"inputs": [str(SAMPLE)], "out_dir": str(tmp_path / "abl"), "train": {"max_tokens": 100},
            "variants": {"c4": {}, "../../escaped": {}}}
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(AblationError, match="unsafe variant name"):
        load_ablation(str(path))
    result = invoke(train_cli, ["ablate", "--config", path])
    assert result.exit_code != 0 and not (tmp_path / "escaped").exists()
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "latest").write_text("../../somewhere\n")
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        latest_checkpoint(str(tmp_path / "ck"))


def test_check_name_rules():
    for name in ("train", "train-00000-of-00001.arrow", "c4-noclean", "seed_1.bin", "_rule-samples.json"):
        assert outdir.check_name(name) == name
    for name in ("..", "../x", "a/b", "a\\b", ".hidden", "", "x..y", "a b", "/abs", 7):
        with pytest.raises(outdir.OutputError):
            outdir.check_name(name)
    # a file an output lists may sit one folder down (a corpus's data/ of Parquet shards), no deeper
    assert outdir.check_listed("data/train-00000-of-00001.parquet") == "data/train-00000-of-00001.parquet"
    for name in ("../x", "data/../x", "a/b/c", "/abs", "data/", "./x", "data/.hidden", "a\\b/c", 7):
        with pytest.raises(outdir.OutputError):
            outdir.check_listed(name)


# --------------------------------------------------------------------------- 5. training

def test_nan_stop_never_keeps_a_non_finite_checkpoint(stages, tmp_path):
    out = tmp_path / "nan"
    result = invoke(train_cli, ["run", *run_settings(stages / "ids", out, "steps=30", "optim.lr=1e3",
                                                     "optim.warmup_steps=1", "optim.grad_clip=1e9")])
    assert result.exit_code != 0
    assert "not finite" in result.output or "loss is nan" in result.output.lower() or \
        "gradient norm" in result.output
    checkpoints = sorted(p for p in (out / "checkpoints").glob("step-*"))
    for checkpoint in checkpoints:
        for name in ("model.pt", "optimizer.pt"):
            state = torch.load(checkpoint / name, weights_only=True)
            tensors = list(state.values()) if name == "model.pt" else [
                t for s in state["state"].values() for t in s.values()]
            assert all(torch.isfinite(t).all() for t in tensors if t.is_floating_point())
    if checkpoints:
        assert checkpoints[-1].name in result.output
        resumed = invoke(train_cli, ["run", *run_settings(stages / "ids", out, "steps=30"), "--resume"])
        assert "Traceback" not in resumed.output
    else:
        assert "No checkpoint was written" in result.output


@pytest.mark.parametrize("setting,message", [
    ("data.batch_size=0", "data.batch_size=0: must be > 0"),
    ("steps=-5", "steps=-5: must be > 0"),
    ("optim.lr=-1", "optim.lr=-1.0: must be > 0"),
    ("data.seq_len=0", "data.seq_len=0"),
    ("optim.beta2=1.5", "between 0 and 1"),
    ("model.n_heads=3", "not divisible"),
])
def test_numeric_settings_are_validated(setting, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        build_train_config(overrides=["data.train=x", setting])


# --------------------------------------------------------------------------- 6. no tracebacks

def test_disk_full_in_corpus_clean_is_one_line(tmp_path, monkeypatch):
    import c4forge.corpus.output.shards as shards

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shards, "write_shard", full)
    result = invoke(corpus_cli, ["clean", SAMPLE, "-o", tmp_path / "c", "--preset", "c4-noclean"])
    assert result.exit_code == 1 and "No space left on device" in result.output
    assert not [p for p in (tmp_path / "c").iterdir()] if (tmp_path / "c").exists() else True


def test_build_output_that_is_a_file_or_unusable(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    result = invoke(corpus_cli, ["build", "-i", SAMPLE, "-o", afile, *IN_MEMORY])
    assert result.exit_code == 1 and "not a directory" in result.output
    result = invoke(corpus_cli, ["build", "-i", SAMPLE, "-o", afile / "sub", *IN_MEMORY])
    assert result.exit_code == 1 and "not a directory" in result.output
    assert afile.read_text() == "x"


def test_broken_tokenizer_files_are_one_line(stages, tmp_path):
    from c4forge.tokenizer.formats import file_sha256

    bad = tmp_path / "tok"
    shutil.copytree(stages / "tok", bad)
    (bad / "tokenizer.model").write_bytes(b"this is not a sentencepiece model")
    info = json.loads((bad / CONFIG_FILE).read_text())
    info["model_sha256"] = file_sha256(str(bad / "tokenizer.model"))
    (bad / CONFIG_FILE).write_text(json.dumps(info))
    args = ["encode", "--corpus", stages / "corpus", "--tokenizer", bad, "-o", tmp_path / "ids"]
    result = invoke(tokenizer_cli, args)
    assert result.exit_code == 1 and "not a SentencePiece model" in result.output
    (bad / CONFIG_FILE).write_text("{ not json")
    result = invoke(tokenizer_cli, args)
    assert result.exit_code == 1 and "not valid JSON" in result.output
    result = invoke(tokenizer_cli, ["inspect", bad])
    assert result.exit_code != 0


@pytest.mark.parametrize("damage", ["truncated", "random"])
@pytest.mark.parametrize("name", ["model.pt", "trainer.pt"])
def test_damaged_checkpoints_are_one_line_everywhere(stages, tmp_path, damage, name):
    run = tmp_path / "run"
    shutil.copytree(stages / "run", run)
    path = run / "checkpoints" / "step-000002" / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncated"
                     else np.random.default_rng(0).bytes(len(data)))
    outputs = [
        invoke(train_cli, ["run", *run_settings(stages / "ids", run, "steps=3"), "--resume"]),
        invoke(train_cli, ["eval", "--checkpoint", run, "--data", stages / "ids", "--split", "train"]),
        invoke(train_cli, ["export", "--checkpoint", run, "-o", tmp_path / "hf"]),
    ]
    for result in outputs:
        assert result.exit_code == 1, result.output
        assert "not a readable checkpoint file" in result.output
        assert "weights_only=False" not in result.output


def test_yaml_syntax_errors_are_one_line(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules:\n  min_words: [1, 2\n")
    for cli, args in ((corpus_cli, ["clean", SAMPLE, "--jsonl", tmp_path / "o.jsonl", "--config", broken]),
                      (corpus_cli, ["build", "-i", SAMPLE, "-o", tmp_path / "b", "--config", broken]),
                      (train_cli, ["run", "--config", broken]),
                      (train_cli, ["ablate", "--config", broken])):
        result = invoke(cli, args)
        assert result.exit_code != 0 and "not valid YAML" in result.output, result.output
        assert "line" in result.output


SUBCOMMANDS = [
    (corpus_cli, ["clean"]), (corpus_cli, ["build"]), (corpus_cli, ["stats"]), (corpus_cli, ["show"]),
    (tokenizer_cli, ["train"]), (tokenizer_cli, ["encode"]), (tokenizer_cli, ["inspect"]),
    (train_cli, ["run"]), (train_cli, ["eval"]), (train_cli, ["export"]), (train_cli, ["ablate"]),
]


@pytest.mark.parametrize("cli,command", SUBCOMMANDS, ids=lambda x: getattr(x, "name", None) or " ".join(x))
def test_every_subcommand_without_or_with_garbage_arguments(cli, command, tmp_path):
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\xff garbage \x89PNG")
    for args in ([], [garbage], ["--nonsense"], [garbage, "--config", garbage, "-o", garbage]):
        result = CliRunner().invoke(cli, command + [str(a) for a in args])
        assert result.exit_code != 0
        assert "Traceback" not in result.output
        assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), \
            f"{command} {args}: {result.exception!r}"
