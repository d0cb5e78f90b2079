"""A step that fails, built-in or a user's, fails like a built-in rule's bad setting (issue 83,
point 2): one line naming the step, its module, the page's URL and input file and the exception,
exit 1, the old output intact, on `corpus clean`, `corpus estimate`, the DirectRunner (one process
and worker processes) and flink-local (make test-slow); the traceback behind C4FORGE_DEBUG=1. A
step that returns something that is not a decision (None, a page whose text is None) says so."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from c4forge.cli.common import TracebackBlocks
from c4forge.core.counters import Counters
from c4forge.corpus.chain.loop import StepFailure, StepLoop, step_failure_in
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import keep
from c4forge.corpus.config import build_config
from c4forge.corpus.document import Document
from tests.conftest import ROOT, flink_local_or_skip

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
BAD_URL = "https://mirror.example.net/river-cleanup"  # the sample's third record
pytestmark = pytest.mark.newest_beam  # also on the newest Beam (.venv-hf): its workers log differently
MODULE = f'''"""Steps of a user's that fail."""


def boom(page):
    """Fails on one page."""
    if page.url == "{BAD_URL}":
        1 / 0
    return True


def none_step(page):
    return None


def none_text(page):
    return page.replace(text=None)
'''
RUNNERS = {
    "clean": ["clean", SAMPLE],
    "direct": ["build", "-i", SAMPLE, "--runner=DirectRunner", "--direct_running_mode=in_memory",
               "--direct_num_workers=1"],
    "direct-processes": ["build", "-i", SAMPLE, "--runner=DirectRunner",
                         "--direct_running_mode=multi_processing", "--direct_num_workers=2"],
    "flink-local": ["build", "-i", SAMPLE, "--runner", "flink-local", "--workers", "1"],
}
PROBLEMS = {"boom": "ZeroDivisionError: division by zero",
            "none_step": "returned NoneType None",
            "none_text": "returned a page whose text is NoneType"}


@pytest.fixture
def users_folder(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "bad_steps.py").write_text(MODULE, encoding="utf-8")
    return folder


def corpus(folder, *args, env=None):
    return subprocess.run([sys.executable, "-m", "c4forge.cli.corpus", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT.parent), **(env or {})})


def old_corpus(folder):
    proc = corpus(folder, "clean", SAMPLE, "--set", "chain=length,language-id", "-o", "out", "-q")
    assert proc.returncode == 0, proc.stderr
    return {p.name: p.read_bytes() for p in (folder / "out").iterdir()}


def check_one_line(proc, function, url=BAD_URL):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    step = function.replace("_", "-")
    assert f"step {step} (bad_steps:{function}" in lines[0] and "bad_steps.py" in lines[0], lines[0]
    assert url in lines[0] and "sample.warc.wet.gz" in lines[0], lines[0]
    assert PROBLEMS[function] in lines[0], lines[0]


@pytest.mark.parametrize("function", sorted(PROBLEMS))
@pytest.mark.parametrize("runner", ["clean", "direct", "direct-processes"])
def test_a_failing_step_is_one_line_naming_step_module_and_page(runner, function, users_folder):
    before = old_corpus(users_folder)
    proc = corpus(users_folder, *RUNNERS[runner], "--set", f"chain=length,language-id,bad_steps:{function}",
                  "-o", "out", "--overwrite", "-q")
    check_one_line(proc, function, BAD_URL if function == "boom" else "https://")
    assert {p.name: p.read_bytes() for p in (users_folder / "out").iterdir()} == before


@pytest.mark.slow
@pytest.mark.parametrize("function", ["boom", "none_text"])
def test_a_failing_step_is_one_line_on_flink_local(function, users_folder):
    flink_local_or_skip("the step failure test")
    before = old_corpus(users_folder)
    proc = corpus(users_folder, *RUNNERS["flink-local"], "--set",
                  f"chain=length,language-id,bad_steps:{function}", "-o", "out", "--overwrite", "-q")
    check_one_line(proc, function, BAD_URL if function == "boom" else "https://")
    assert {p.name: p.read_bytes() for p in (users_folder / "out").iterdir()} == before


def test_estimate_names_the_failing_step(users_folder):
    proc = corpus(users_folder, "estimate", SAMPLE, "--set", "chain=length,language-id,bad_steps:boom")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error")]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(errors) == 1 and "step boom (bad_steps:boom" in errors[0] and BAD_URL in errors[0], errors


def test_the_traceback_is_behind_c4forge_debug(users_folder):
    proc = corpus(users_folder, "clean", SAMPLE, "--set", "chain=length,bad_steps:boom", "-o", "out",
                  "-q", env={"C4FORGE_DEBUG": "1"})
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "1 / 0" in proc.stderr
    assert "StepFailure: step boom" in proc.stderr


def test_a_built_in_steps_failure_names_its_module():
    def broken(settings, page):
        raise KeyError("a model's label")

    broken.__module__ = "c4forge.corpus.steps.language_id"
    loop = StepLoop([page_step("language-id", broken)], build_config("c4"))
    page = Document(url="https://a.example/x", text="words", source="crawl/a.wet.gz", offset=7)
    with pytest.raises(StepFailure) as caught:
        loop.run(page, Counters().inc_fn)
    assert str(caught.value) == ("step language-id (c4forge.corpus.steps.language_id) failed on "
                                 "https://a.example/x (crawl/a.wet.gz, record at byte 7): "
                                 "KeyError: \"a model's label\"")
    assert isinstance(caught.value.__cause__, KeyError)
    fine = StepLoop([page_step("keep", lambda s, p: keep(p))], build_config("c4"))
    assert fine.run(page, Counters().inc_fn) is page


def test_the_line_is_found_in_what_each_runner_reports():
    line = "step boom (bad_steps:boom) failed on u (f): ZeroDivisionError: division by zero"
    assert step_failure_in(StepFailure(line + " [while running 'read, [Fails]']")) == line
    worker = RuntimeError(f"Pipeline failed\nTraceback (most recent call last):\n  File x\n"
                          f"c4forge.corpus.chain.loop.StepFailure: {line} [while running 'x']\n\n")
    assert step_failure_in(worker) == line
    assert step_failure_in(RuntimeError("ZeroDivisionError: division by zero")) is None


def test_worker_tracebacks_of_a_step_failure_are_held_back_and_others_pass():
    failing = [b"Traceback (most recent call last):\n", b'  File "x.py", line 1\n', b"ZeroDivisionError: x\n",
               b"\n", b"The above exception was the direct cause of the following exception:\n", b"\n",
               b"Traceback (most recent call last):\n", b"  File y\n",
               b"c4forge.corpus.chain.loop.StepFailure: step boom ...\n", b"\n"]
    other = [b"Traceback (most recent call last):\n", b"  File z\n", b"ValueError: not ours\n"]
    logged = [b"ERROR:apache_beam.runners.common:step boom ... failed\n", *failing]
    stream = [b"before\n", *logged, b"after\n", b"ERROR:x:alone\n", *other, b"ERROR:y:last\n"]
    blocks = TracebackBlocks("StepFailure")
    shown = [line for raw in stream for line in blocks.feed(raw)] + blocks.close()
    assert shown == [b"before\n", b"after\n", b"ERROR:x:alone\n", *other, b"ERROR:y:last\n"]
    debug = TracebackBlocks(None)
    assert [line for raw in stream for line in debug.feed(raw)] + debug.close() == stream


# ------------------------------------------------------------------ checks of the submitting process
# (issue 83, point 6): the word splitter's rules file and self-check are loaded in the preflight of
# every runner, so a damaged file is one line naming it before any work, not a worker's traceback.

DAMAGED_RULES = {"not JSON": "{\"rules\": [", "no rules": "{}", "a bad regex": None}


@pytest.mark.parametrize("damage", sorted(DAMAGED_RULES))
@pytest.mark.parametrize("command", ["clean", "build", "estimate"])
def test_a_damaged_word_rules_file_is_one_line_before_any_work(command, damage, tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from c4forge.cli.corpus import cli
    from c4forge.corpus.text import en_words, page_words, words

    page_words.chunk_table()  # what an earlier test of this worker leaves: a table of the good splitter
    text = DAMAGED_RULES[damage]
    if text is None:
        data = json.loads(en_words.RULES_FILE.read_text(encoding="utf-8"))
        data["prefix"] = "(unclosed"
        text = json.dumps(data)
    rules = tmp_path / "spacy-en-tokenizer.json"
    rules.write_text(text, encoding="utf-8")
    monkeypatch.setattr(en_words, "RULES_FILE", rules)
    words.english_words.cache_clear()
    try:
        args = {"clean": ["clean", SAMPLE, "-o", str(tmp_path / "out")],
                "build": ["build", "-i", SAMPLE, "-o", str(tmp_path / "out"), "--runner=DirectRunner",
                          "--direct_running_mode=in_memory", "--direct_num_workers=1"],
                "estimate": ["estimate", SAMPLE]}[command]
        result = CliRunner().invoke(cli, [*args, "--preset", "gopher", "--set", "url-filter.on=false", "-q"])
    finally:
        words.english_words.cache_clear()
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output[-3000:]
    assert "the word splitter's rules file" in lines[0] and "spacy-en-tokenizer.json" in lines[0], lines[0]
    assert "is damaged" in lines[0] and not (tmp_path / "out").exists()
