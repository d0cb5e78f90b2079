"""A user's own steps (corpus/chain/step.py ``user_step``): a filter written in a module outside the
repository, named in the config as ``package.module:function`` (or a Step of its own, with
settings), runs in `corpus clean`, on the DirectRunner (one process, and worker processes that
import the module), on flink-local (make test-slow) and in an ablation variant; the documents and
counters are the same everywhere, the manifest records the module and a hash of its source, and
a module that cannot be imported is a one-line usage error before any work."""
import hashlib
import json
import sys

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.core.counters import Counters
from c4forge.core.settings import ConfigError
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest
from c4forge.pipelines.build import run_build
from tests.conftest import ROOT, flink_local_or_skip

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
DEMO_BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
IN_MEMORY = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
PROCESSES = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
pytestmark = pytest.mark.newest_beam  # also on the newest Beam (.venv-hf); flink-local in .venv

MODULE = '''"""Two filters of a user's own, outside c4forge, with the one import a step's author needs."""
from c4forge.corpus.chain import UNIT_INTERVAL, drop, keep, page_step, setting, step_settings


def short_lines(page):
    """Pages whose lines are short on average."""
    lines = page.text.split("\\n")
    if sum(len(line) for line in lines) / len(lines) < 80:
        return False, "short_lines"
    return True


@step_settings
class DigitShare:
    on: bool = True
    max_share: float = setting(0.5, UNIT_INTERVAL)


def digit_share(settings, page):
    share = sum(c.isdigit() for c in page.text) / max(1, len(page.text))
    return drop("digits") if share > settings.max_share else keep(page)


DIGITS = page_step("digit-share", digit_share, "[too many digits]", settings=DigitShare, flow="few digits")
PLAIN = page_step("plain-digits", digit_share, settings=DigitShare)  # no flow=: its row is its name
'''
CHAIN = ("chain=length,url-dedup,clean-page,line-dedup,language-id,my_filters:short_lines,bad-words,"
         "my_filters:DIGITS,near-dedup")
SETTINGS = [CHAIN, "digit-share.max_share=0.005"]


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """my_filters.py in a folder of its own, the working directory (as a user runs commands)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my_filters.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PYTHONPATH", "")  # exported by the resolution, for the worker processes
    # as a fresh process: no step resolved from another test's my_filters (its module is gone)
    monkeypatch.setattr("c4forge.corpus.chain.chains._USER_STEPS", {})
    yield folder / "my_filters.py"
    sys.modules.pop("my_filters", None)


def config():
    return build_config("c4", badwords=DEMO_BADWORDS, overrides=SETTINGS)


def test_a_users_steps_run_and_count_the_same_in_clean_and_on_the_direct_runner(tmp_path, user_module):
    counters = Counters()
    local = run_chain([SAMPLE], config(), counters)
    found = counters.as_dict()
    assert found["short-lines/filtered:short_lines"] > 0 and found["short-lines/passed"] > 0
    assert found["digit-share/filtered:digits"] > 0 and found["digit-share/passed"] == len(local)
    baseline = run_chain([SAMPLE], build_config("c4", badwords=DEMO_BADWORDS), Counters())
    assert 0 < len(local) < len(baseline)
    for mode in (IN_MEMORY, PROCESSES):  # worker processes import the module themselves
        out = tmp_path / f"built-{len(mode[0])}-{mode[1][-1]}"
        manifest = run_build([SAMPLE], str(out), config(), log=lambda *_: None, beam_args=mode)
        assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == found
        built = sorted((d["url"], d["text"]) for split in ("train", "validation")
                       for d in iter_corpus_documents(str(out), split))
        assert built == sorted((d.url, d.text) for d in local)
    steps = {step["step"]: step for step in read_manifest(str(out))["steps"]}
    source = hashlib.sha256(user_module.read_bytes()).hexdigest()
    assert steps["short-lines"]["module"] == steps["digit-share"]["module"] == "my_filters"
    assert steps["short-lines"]["sha256"] == steps["digit-share"]["sha256"] == source
    assert steps["language-id"]["module"] == "c4forge.corpus.steps.language_id"
    assert manifest["config"]["chain"][5] == "my_filters:short_lines"
    assert manifest["config"]["digit-share"] == {"on": True, "max_share": 0.005}


def test_a_users_step_in_the_cli_stats_and_inspect(tmp_path, user_module):
    runner = CliRunner()
    result = runner.invoke(cli, ["clean", "-i", SAMPLE, "--badwords", DEMO_BADWORDS, "-o", "out",
                                 *[f"--set={s}" for s in SETTINGS], "-q"])
    assert result.exit_code == 0, result.output
    stats = runner.invoke(cli, ["stats", "out", "--json"])
    flow = list(json.loads(stats.output)["page_flow"])
    assert flow.index("short-lines") == flow.index("language") + 1  # the chain's own order
    assert flow.index("few digits") == flow.index("bad words") + 1
    report = runner.invoke(cli, ["inspect", "out", "--text"])
    assert report.exit_code == 0 and "short-lines/filtered:short_lines" in report.output


# One --set puts a user's step after language ID in the c4 chain (the chain extended, not retyped).
AFTER_LANGUAGE_ID = "chain.after.language-id=my_filters:short_lines"


def test_one_set_puts_a_users_step_after_language_id_in_the_c4_chain(tmp_path, user_module):
    from c4forge.corpus.chain.chains import C4_CHAIN

    extended = build_config("c4", badwords=DEMO_BADWORDS, overrides=[AFTER_LANGUAGE_ID])
    at = C4_CHAIN.index("language-id") + 1
    assert extended.chain == (*C4_CHAIN[:at], "my_filters:short_lines", *C4_CHAIN[at:])
    result = CliRunner().invoke(cli, ["clean", "-i", SAMPLE, "--badwords", DEMO_BADWORDS, "-o", "out",
                                      "--set", AFTER_LANGUAGE_ID, "-q"])
    assert result.exit_code == 0, result.output
    cleaned = sorted(d["text"] for split in ("train", "validation") for d in iter_corpus_documents("out", split))
    counters = read_manifest("out")["counters"]
    assert counters["short-lines/filtered:short_lines"] > 0
    assert counters["short-lines/passed"] == counters["badwords-filter/passed"] + counters.get(
        "badwords-filter/filtered", 0)  # it runs between language ID and bad words
    manifest = run_build([SAMPLE], str(tmp_path / "built"), extended, log=lambda *_: None, beam_args=PROCESSES)
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == \
        {k: v for k, v in counters.items() if not k.startswith("output/")}
    assert sorted(d["text"] for split in ("train", "validation")
                  for d in iter_corpus_documents(str(tmp_path / "built"), split)) == cleaned
    appended = build_config("gopher", overrides=["chain.before.gopher-quality=my_filters:PLAIN"]).chain
    assert appended[appended.index("my_filters:PLAIN") + 1] == "gopher-quality"
    with pytest.raises(ConfigError, match="chain.after.no-such-step: the chain has no step"):
        build_config("c4", overrides=["chain.after.no-such-step=my_filters:short_lines"])
    with pytest.raises(ConfigError, match="near-dedup ends a chain"):  # c4,STEP: the c4 chain, then STEP
        build_config("c4", overrides=["chain=c4,my_filters:short_lines"])


def test_a_page_step_without_flow_has_its_name_as_its_page_flow_row(tmp_path, user_module):
    result = CliRunner().invoke(cli, ["clean", "-i", SAMPLE, "--badwords", DEMO_BADWORDS, "--jsonl", "o.jsonl",
                                      "--set", "chain.after.bad-words=my_filters:PLAIN"])
    assert result.exit_code == 0, result.output
    flow = next(line for line in result.output.splitlines() if line.startswith("pages:"))
    assert "-> bad words " in flow and "-> plain-digits " in flow.split("-> bad words ", 1)[1]


def test_a_step_that_cannot_be_imported_is_a_one_line_error_before_any_work(tmp_path, user_module):
    with pytest.raises(ConfigError, match="cannot import no_such_module .*No module named"):
        build_config("c4", overrides=["chain=length,no_such_module:keep_all"])
    with pytest.raises(ConfigError, match="has no 'nothing_here'"):
        build_config("c4", overrides=["chain=length,my_filters:nothing_here"])
    with pytest.raises(ConfigError, match="digit-share.max_share=2.0: must be between 0 and 1"):
        build_config("c4", overrides=[CHAIN, "digit-share.max_share=2"])
    result = CliRunner().invoke(cli, ["build", "-i", SAMPLE, "-o", "never", "--set",
                                      "chain=length,no_such_module:keep_all"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "cannot import no_such_module" in result.output and not (tmp_path / "mine" / "never").exists()


def test_a_users_step_in_an_ablation_variant(user_module):
    from c4forge.ablation.spec import load_ablation, variant_config

    spec_file = user_module.parent / "spec.yaml"
    spec_file.write_text(f"""name: mine
out_dir: out
inputs: [{SAMPLE}]
badwords: {DEMO_BADWORDS}
variants:
  c4: {{preset: c4}}
  digits: {{preset: c4, set: {{chain: [length, url-dedup, clean-page, line-dedup, language-id,
                                    bad-words, 'my_filters:DIGITS', near-dedup],
                            digit-share.max_share: 0.01}}}}
  gopher: {{preset: gopher}}
train: {{model_preset: tiny, max_tokens: 1000}}
""", encoding="utf-8")
    spec = load_ablation(str(spec_file))
    digits = variant_config(spec, "digits")
    assert digits.runs("digit-share") and digits.settings_of("digit-share").max_share == 0.01
    assert digits.settings_of("bad-words").lists == DEMO_BADWORDS
    assert not variant_config(spec, "gopher").runs("bad-words")  # the spec's lists go where they run


@pytest.mark.slow
def test_a_users_steps_on_flink_local(tmp_path, user_module):
    flink_local_or_skip("the user-step engine test")
    counters = Counters()
    local = run_chain([SAMPLE], config(), counters)
    out = tmp_path / "flink"
    manifest = run_build([SAMPLE], str(out), config(), runner="flink-local", workers=2, log=lambda *_: None)
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == counters.as_dict()
    assert sorted(d["text"] for split in ("train", "validation") for d in iter_corpus_documents(str(out), split)) \
        == sorted(d.text for d in local)
    extended = build_config("c4", badwords=DEMO_BADWORDS, overrides=[AFTER_LANGUAGE_ID])
    counters = Counters()
    local = run_chain([SAMPLE], extended, counters)
    out = tmp_path / "flink-after-language-id"
    manifest = run_build([SAMPLE], str(out), extended, runner="flink-local", workers=2, log=lambda *_: None)
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == counters.as_dict()
    assert sorted(d["text"] for split in ("train", "validation") for d in iter_corpus_documents(str(out), split)) \
        == sorted(d.text for d in local)
