"""`tokenizer encode --runner` (issue 79): the token stage as a Beam pipeline gives the local
path's token shards byte for byte (DirectRunner here; flink-local in make test-slow), and a
failed pipeline leaves no output behind."""
import os

import pytest
from click.testing import CliRunner

pytest.importorskip("apache_beam", reason="the [beam] extra is not installed")

from c4forge.cli.tokenizer import cli  # noqa: E402
from c4forge.pipelines.encode import run_encode  # noqa: E402
from c4forge.tokenizer.encode import encode_corpus  # noqa: E402
from c4forge.tokenizer.formats import read_token_manifest  # noqa: E402
from c4forge.tokenizer.train import TokenizerConfig, train_tokenizer  # noqa: E402
from tests.conftest import flink_local_or_skip  # noqa: E402
from tests.test_tokenizer_kinds import QUIET, byte_level_bpe, crawl_corpus  # noqa: E402, F401 - the fixture


def shard_bytes(directory) -> dict[str, bytes]:
    return {name: open(os.path.join(directory, name), "rb").read()
            for name in sorted(os.listdir(directory)) if name != "manifest.json"}


@pytest.fixture(scope="module")
def tokenizers(crawl_corpus, tmp_path_factory):  # noqa: F811 - the fixture imported above
    root, corpus, texts = crawl_corpus
    work = tmp_path_factory.mktemp("beam-encode")
    byte_level_bpe(texts["train"], vocab_size=1200).save(str(work / "bpe.json"))
    train_tokenizer(corpus, str(work / "sp"), TokenizerConfig(vocab_size=800, t5_sentinels=0))
    return work, corpus


@pytest.mark.newest_beam
@pytest.mark.parametrize("name", ["bpe.json", "sp"])
def test_direct_runner_shards_equal_the_local_paths(tokenizers, tmp_path, name):
    work, corpus = tokenizers
    local = encode_corpus(corpus, str(work / name), str(tmp_path / "local"), workers=2, **QUIET)
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(work / name),
                                      "-o", str(tmp_path / "beam"), "--workers", "2",
                                      "--runner", "DirectRunner"])
    assert result.exit_code == 0, result.output
    assert shard_bytes(tmp_path / "beam") == shard_bytes(tmp_path / "local")
    assert len(shard_bytes(tmp_path / "local")) >= 4  # several shards, both splits
    beam = read_token_manifest(str(tmp_path / "beam"))
    assert beam["splits"] == local["splits"] and beam["tokenizer"] == local["tokenizer"]
    assert beam["runner"] == "DirectRunner" and beam["mode"] == "beam"
    assert not [n for n in os.listdir(tmp_path / "beam") if n.endswith(".stats.json") or n.startswith(".")]


@pytest.mark.newest_beam
def test_a_failing_worker_leaves_no_output(tokenizers, tmp_path):
    """A corpus shard damaged after planning: the worker fails, the output does not exist."""
    import shutil

    work, corpus = tokenizers
    damaged = tmp_path / "corpus"
    shutil.copytree(corpus, damaged)
    shard = next(p for p in damaged.iterdir() if p.name.startswith("validation-") and p.suffix == ".arrow")
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(Exception, match="not a readable corpus shard|unchanged"):
        run_encode(str(damaged), str(work / "bpe.json"), str(tmp_path / "out"), runner="DirectRunner",
                   workers=2, **QUIET)
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_beam_options_without_a_runner_are_a_usage_error(tokenizers, tmp_path):
    work, corpus = tokenizers
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(work / "bpe.json"),
                                      "-o", str(tmp_path / "x"), "--flink_master=localhost:8081"])
    assert result.exit_code == 2 and "Beam options go with --runner" in result.output
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(work / "bpe.json"),
                                      "-o", str(tmp_path / "x"), "--runner", "FlinkRunner"])
    assert result.exit_code == 2 and "--flink_master" in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_flink_local_shards_equal_the_local_paths(tokenizers, tmp_path):
    flink_local_or_skip("tokenizer encode --runner flink-local")
    work, corpus = tokenizers
    encode_corpus(corpus, str(work / "bpe.json"), str(tmp_path / "local"), workers=2, **QUIET)
    result = CliRunner().invoke(cli, ["encode", "-i", corpus, "--tokenizer", str(work / "bpe.json"),
                                      "-o", str(tmp_path / "flink"), "--workers", "2",
                                      "--runner", "flink-local"])
    assert result.exit_code == 0, result.output
    assert shard_bytes(tmp_path / "flink") == shard_bytes(tmp_path / "local")
    assert read_token_manifest(str(tmp_path / "flink"))["runner"] == "flink-local"
