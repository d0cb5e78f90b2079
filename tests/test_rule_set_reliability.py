"""Today's rule sets held to the C4 chain's standard (issue 73): every declared setting checked
where it is declared (a walk over all of them, not a hand-picked list), a setting of a step the
chain does not hold refused, every artefact a build needs opened in the submitting process
with the one-line error `corpus clean` gives (never a Beam traceback), a cut model refused in
bounded memory, a download checked before it is cached, and every error naming its file."""
from __future__ import annotations

import dataclasses
import gzip
import io
import math
import subprocess
import sys
import tarfile
import typing

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.core.settings import ConfigError, rule_problem
from c4forge.corpus.chain.chains import CHAINS
from c4forge.corpus.config import CorpusConfig, build_config
from c4forge.corpus.output.samples import SampleOptions
from c4forge.corpus.read.options import ReadOptions
from c4forge.corpus.steps import REGISTRY
from tests.conftest import ROOT

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
LISTS = str(ROOT / "tests" / "data" / "url-lists")


def _numeric(annotation) -> type | None:
    """int or float for a number field (Optional or not), else None."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    return args[0] if len(args) == 1 and args[0] in (int, float) else None


def declared_settings():
    """(key prefix, settings type, preset whose chain holds the step) for every step and for the
    reader and the samples: every setting a user can give."""
    for name, step in REGISTRY.items():
        if name == "read":
            continue
        preset = next(p for p, chain in (("c4", CHAINS["c4"]), ("fineweb", CHAINS["fineweb"])) if name in chain)
        yield name, step.settings, preset
    yield "read", ReadOptions, "c4"
    yield "rule_samples", SampleOptions, "c4"


def every_number():
    for prefix, kind, preset in declared_settings():
        hints = typing.get_type_hints(kind)
        for field in dataclasses.fields(kind):
            number = _numeric(hints[field.name])
            if number is not None:
                yield pytest.param(prefix, field, number, preset, id=f"{prefix}.{field.name}")


@pytest.mark.parametrize("prefix,field,number,preset", list(every_number()))
def test_every_number_setting_has_a_rule_and_refuses_what_is_meaningless(prefix, field, number, preset):
    """NaN, inf and words never; a negative number where its rule says so (datatrove's -1 'off'
    is the only negative any setting takes); a fraction where a whole number is meant."""
    rule = field.metadata.get("rule")
    assert rule is not None, f"{prefix}.{field.name} is a number without a rule beside it"
    key = f"{prefix}.{field.name}"
    for bad in ("nan", "inf", "-inf", "many"):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            build_config(preset, overrides=[f"{key}={bad}"])
    if rule_problem(-1, rule) is None:
        assert rule.says.startswith("-1 (off)"), key
        build_config(preset, overrides=[f"{key}=-1"])
    else:
        with pytest.raises(ConfigError, match=f"{key}=-1"):
            build_config(preset, overrides=[f"{key}=-1"])
    if number is int:
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            build_config(preset, overrides=[f"{key}=2.5"])


def test_every_other_setting_refuses_a_value_of_the_wrong_kind():
    for prefix, kind, preset in declared_settings():
        hints = typing.get_type_hints(kind)
        for field in dataclasses.fields(kind):
            key, annotation = f"{prefix}.{field.name}", hints[field.name]
            if annotation is bool:
                with pytest.raises(ConfigError, match="true/false"):
                    build_config(preset, overrides=[f"{key}=maybe"])
            elif typing.get_origin(annotation) is tuple:
                with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
                    build_config(preset, updates={prefix: {field.name: {"a": 1}}})
            elif annotation in (str, typing.Optional[str]) and field.name not in ("input_format", "extractor"):
                with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
                    build_config(preset, updates={prefix: {field.name: ["a", "b"]}})
    assert CorpusConfig().validation_per_mille == 1
    with pytest.raises(ConfigError, match="validation_per_mille=1001"):
        build_config("c4", overrides=["validation_per_mille=1001"])


@pytest.mark.parametrize("setting,says", [
    ("gopher-repetition.top_n_grams=2", "top_n_grams=.*expected a list of \\[int, float\\] items"),
    ("gopher-repetition.top_n_grams=[[2, 1.5]]", r"\(2, 1.5\) must be \(n, share\)"),
    ("gopher-repetition.dup_n_grams=[[0, 0.1]]", r"\(0, 0.1\) must be \(n, share\)"),
    ("gopher-quality.min_doc_words=200000", "min_doc_words=200000 > gopher-quality.max_doc_words"),
    ("gopher-quality.min_stop_words=9", "stop_words holds 8"),
    ("gopher-quality.max_symbol_word_ratio=nan", "must be a finite number"),
    ("gopher-repetition.dup_line_frac=-0.3", "must be a share in \\(0, 1\\]"),
    ("fineweb-quality.short_line_thr=-1", "must be between 0 and 1"),
    ("fineweb-quality.char_duplicates_ratio=nan", "must be a finite number"),
])
def test_settings_that_would_switch_a_rule_off_or_drop_everything_are_refused(setting, says):
    preset = "fineweb" if setting.startswith("fineweb") else "gopher"
    with pytest.raises(ConfigError, match=says):
        build_config(preset, overrides=[setting])


def test_a_setting_of_a_step_the_chain_does_not_hold_names_the_chains_that_do():
    with pytest.raises(ConfigError, match="c4-quality: set by --set, .*chain \\(c4\\) does not hold it.*fineweb"):
        build_config("c4-noclean", overrides=["c4_quality.on=true"])
    with pytest.raises(ConfigError, match="bad-words: set by --badwords.*chain \\(gopher\\)"):
        build_config("gopher", badwords=BADWORDS)
    with pytest.raises(ConfigError, match="clean-page: set by preset c4-noclean"):
        build_config("c4-noclean", overrides=["chain=gopher"])
    result = CliRunner().invoke(corpus_cli, ["clean", SAMPLE, "--jsonl", "x.jsonl", "--preset", "c4-noclean",
                                             "--set", "c4_quality.on=true"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def bad_inputs(tmp_path) -> dict[str, tuple[list[str], str]]:
    """Each bad artefact a build may be given: its settings and what its one line says."""
    broken = tmp_path / "sets"
    broken.mkdir()
    (broken / "good.txt").write_text("a line of text long enough to give several thirteen word n-grams "
                                     "for the index to hold and more words after them\n")
    (broken / "bad.jsonl.gz").write_bytes(b"this is not gzip at all")
    short = tmp_path / "short.txt"
    short.write_text("too short\n")
    notes = tmp_path / "model.bin"
    notes.write_text("a text file, not a model\n")
    blank = tmp_path / "blank-lists"
    blank.mkdir()
    (blank / "banned_words.txt").write_text("\n\n")
    (blank / "banned_subwords.txt").write_text("\n")
    return {
        "missing set": (["decontaminate.on=true", f"decontaminate.sets=x={tmp_path / 'nope.txt'}"],
                        "nope.txt is not a file or folder"),
        "unreadable file in a set's folder": (["decontaminate.on=true", f"decontaminate.sets=x={broken}"],
                                              "cannot read .*bad.jsonl.gz"),
        "empty set": (["decontaminate.on=true", f"decontaminate.sets=x={short}"], "holds no text of 13 words"),
        "text file as the classifier": (["quality-classifier.on=true", f"quality-classifier.model={notes}"],
                                        "model.bin is not a whole fastText model file"),
        "lists of blank lines": (["url-filter.on=true", f"url-filter.lists={blank}"], "no block list entry found"),
        "unknown category": (["url-filter.on=true", f"url-filter.lists={LISTS}", "url-filter.categories=adlt"],
                             "'adlt' is not a folder of .*adult"),
    }


@pytest.mark.parametrize("case", ["missing set", "unreadable file in a set's folder", "empty set",
                                  "text file as the classifier", "lists of blank lines", "unknown category"])
@pytest.mark.parametrize("command", ["clean", "build", pytest.param("flink-local", marks=pytest.mark.slow)])
def test_a_bad_artefact_is_one_line_before_any_work_in_clean_and_build(tmp_path, monkeypatch, command, case):
    """`corpus clean`, `corpus build` (the DirectRunner) and, in make test-slow, flink-local: the
    submitting process opens what the steps load before any engine starts."""
    monkeypatch.chdir(tmp_path)
    settings, says = bad_inputs(tmp_path)[case]
    out = ["--jsonl", "out.jsonl"] if command == "clean" else ["-o", "out"]
    if command == "flink-local":
        command, out = "build", [*out, "--runner", "flink-local", "--workers", "1"]
    args = [command, SAMPLE, *out, "--badwords", BADWORDS, *[f"--set={s}" for s in settings]]
    result = subprocess.run([sys.executable, "-m", "c4forge.cli.corpus", *args], capture_output=True, text=True,
                            timeout=300)
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("WARNING: ")]
    assert result.returncode in (1, 2) and len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("Error: ") and "Traceback" not in result.stderr
    import re

    assert re.search(says, lines[0]), lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.jsonl").exists()


def test_a_blank_line_in_a_block_list_is_said_and_read_as_datatrove_reads_it(tmp_path, caplog):
    from c4forge.corpus.steps.url_filter import UrlBlocklist, load_lists

    (tmp_path / "banned_words.txt").write_text("casino\n\n")
    (tmp_path / "banned_subwords.txt").write_text("\npoker\n")
    with caplog.at_level("WARNING"):
        lists = load_lists(str(tmp_path))
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "banned_words.txt has a blank line: it drops every URL that ends in a character other" in said
    assert "banned_subwords.txt has a blank line: it would match every URL" in said
    block = UrlBlocklist(lists)
    assert block.reason("https://example.org/page/") == "hard_blacklisted"  # datatrove's verdict too
    assert block.reason("https://example.org/page") is None
    assert block.reason("https://example.org/videopoker") == "blacklisted_subword"


def _tarball(files: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(f"lists/{name}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return data.getvalue()


def test_a_download_is_checked_before_it_is_cached_and_a_bad_cached_copy_is_fetched_again(
        tmp_path, monkeypatch, local_server):
    from c4forge.corpus.assets import downloads
    from c4forge.corpus.steps.url_filter import UrlListsUnavailable, load_lists

    monkeypatch.setenv("C4FORGE_CACHE", str(tmp_path / "cache"))
    served = tmp_path / "served"
    served.mkdir()
    (served / "lists.tar.gz").write_text("<!doctype html><html>Service unavailable</html>")
    base, log = local_server(served)
    url = f"{base}/lists.tar.gz"
    with pytest.raises(downloads.BadDownload, match=f"{url} did not serve what it should .*nothing was cached"):
        load_lists(url)
    assert not list((tmp_path / "cache").rglob("*"))[1:]  # at most the empty folder
    (served / "lists.tar.gz").write_bytes(_tarball({"domains": b"bad.example\n"}))  # the server is fixed
    assert load_lists(url).domains == {"bad.example"} and log.count("/lists.tar.gz") == 2
    # a cached download that no longer checks out (an older release cached an error page)
    cached = next(p for p in (tmp_path / "cache" / "url-lists").iterdir() if p.is_file())
    cached.write_text("<html>stale</html>")
    assert downloads.cached_download(url, "url-lists", check=lambda data: gzip.decompress(data)) != b""
    assert log.count("/lists.tar.gz") == 3 and cached.read_bytes()[:2] == b"\x1f\x8b"
    with pytest.raises(UrlListsUnavailable, match="not a directory of block lists"):
        load_lists(str(tmp_path / "nowhere"))


def test_a_cut_language_id_model_is_refused_in_bounded_memory(tmp_path):
    """Regression: a truncated .ftz grew memory without bound (7-12 GB in under a minute) in
    fastText's loader; under a 1.5 GB address-space cap it is now a one-line error."""
    from c4forge.corpus.langid.lid176 import default_model_path

    whole = open(default_model_path(), "rb").read()
    (tmp_path / "cut.ftz").write_bytes(whole[: len(whole) // 2])
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
            "from c4forge.cli.corpus import main; main(sys.argv[1:])")
    result = subprocess.run([sys.executable, "-c", code, "clean", SAMPLE, "--jsonl", str(tmp_path / "x.jsonl"),
                             "--lid-model", str(tmp_path / "cut.ftz")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        "Error: language-id.model: cut.ftz is not a whole fastText model file (the file ends early)"]
    assert math.isfinite(len(whole))
