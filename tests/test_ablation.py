"""`train ablate` at a reduced size: the whole chain on the embedded sample, the report files,
and re-runs that reuse finished work (the CI check of `make demo`'s last step)."""
import dataclasses
import json
import random
import statistics

import pytest
import yaml
from click.testing import CliRunner

from c4forge.ablation import verdict
from c4forge.ablation.spec import AblationSpec, EvalSpec, Variant
from c4forge.cli.train import cli
from tests.conftest import ROOT


def small_config(tmp_path):
    spec = yaml.safe_load((ROOT / "configs" / "ablation-demo.yaml").read_text())
    spec["inputs"] = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    spec["badwords"] = str(ROOT / "corpus" / "data" / "demo-badwords")
    spec["out_dir"] = str(tmp_path / "ablation")
    spec["variants"] = {"c4": {"preset": "c4"}, "c4-noclean": {"preset": "c4-noclean"}}
    spec["tokenizer"]["vocab_size"] = 600
    spec["train"]["max_tokens"] = 8 * 128 * 6
    spec["train"]["eval_every"] = 3
    spec["seeds"] = [0, 1]
    # a held-out text for a headline metric (any text drawn from no variant serves the mechanics)
    spec["eval"] = {"texts": [str(ROOT / "docs" / "architecture.md")]}
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_ablation_report_and_reuse(tmp_path):
    config = small_config(tmp_path)
    first = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert first.exit_code == 0, first.output
    report = tmp_path / "ablation" / "report"
    for name in ("report.md", "results.json", "loss_curves.png", "final_metrics.png"):
        assert (report / name).stat().st_size > 0
    results = json.loads((report / "results.json").read_text())
    assert set(results["variants"]) == {"c4", "c4-noclean"}
    metric = results["variants"]["c4"]["metrics"]["c4 validation bits/byte"]
    assert len(metric["values"]) == 2 and metric["mean"] > 0
    text = (report / "report.md").read_text()
    assert "| c4 | c4 |" in text and "## Result" in text and "![loss_curves.png]" in text
    # how much of each variant's train text the evaluation sets overlap (issue 54)
    overlap = results["overlap"]
    assert set(overlap["variants"]) == {"c4", "c4-noclean"} and overlap["n"] == 13
    assert all(v["words"] > 0 and v["documents"] > 0 for v in overlap["variants"].values())
    assert "## Overlap with the evaluation sets" in text
    # every headline test's signal-to-noise ratio, recomputed here from results.json (issue 40)
    snr_rows = [line for line in text.splitlines() if line.startswith("| c4-noclean - c4 on ")]
    assert snr_rows and "Most signal: **" in text
    for row in snr_rows:
        metric = row.split(" on ", 1)[1].rsplit(" |", 2)[0]
        a, b = (results["variants"][v]["metrics"][metric] for v in ("c4", "c4-noclean"))
        diffs = [y - x for x, y in zip(a["values"], b["values"])]
        snr = abs(statistics.fmean(diffs)) / statistics.stdev(diffs)
        assert float(row.rsplit("|", 2)[1]) == pytest.approx(snr, abs=0.006)
    # the same tokenizer for both variants
    manifests = [json.loads((tmp_path / "ablation" / "tokens" / v / "manifest.json").read_text()) for v in ("c4", "c4-noclean")]
    assert manifests[0]["tokenizer"]["model_sha256"] == manifests[1]["tokenizer"]["model_sha256"]
    second = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert second.exit_code == 0
    for stage in ("corpus c4: reusing", "tokenizer: reusing", "tokens c4-noclean: reusing",
                  "run c4 seed 1: reusing", "eval c4-noclean seed 0: reusing"):
        assert stage in second.output
    assert results["budget"] == "tokens" and "token budget" in text
    # an evaluation stored by older scoring code is recomputed, not reused (stale GLUE numbers)
    stored = tmp_path / "ablation" / "runs" / "c4" / "seed-0" / "eval.json"
    old = json.loads(stored.read_text())
    stored.write_text(json.dumps({**old, "recipe": old["recipe"] - 1}))
    third = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert third.exit_code == 0
    assert "eval c4 seed 0: done" in third.output and "eval c4 seed 1: reusing" in third.output
    # the same ablation with matched bytes shares corpora, tokenizer and tokens, trains its own
    # runs, and its report sets both budgets side by side (issue 28); so does the token report
    fourth = CliRunner().invoke(cli, ["ablate", "--config", str(config), "--set", "budget=bytes"])
    assert fourth.exit_code == 0, fourth.output
    assert "tokens c4: reusing" in fourth.output and "run c4 seed 0: reusing" not in fourth.output
    # the tokenizer's variant is the byte budget's reference: its byte-matched run would train
    # exactly the token-matched run's steps, so that run is copied (with its evaluation), not
    # trained again
    for seed in (0, 1):
        assert f"run c4-noclean seed {seed}: copied" in fourth.output
        assert f"eval c4-noclean seed {seed}: reusing" in fourth.output
    twin, copy = (tmp_path / "ablation" / runs / "c4-noclean" / "seed-0" for runs in ("runs", "runs-bytes"))
    latest = (twin / "checkpoints" / "latest").read_text().strip()
    for name in ("model.pt", "trainer.pt"):
        assert (copy / "checkpoints" / latest / name).read_bytes() == (twin / "checkpoints" / latest / name).read_bytes()
    copied_eval = json.loads((copy / "eval.json").read_text())
    assert copied_eval["checkpoint"].startswith(str(copy)) and copied_eval["texts"] == json.loads((twin / "eval.json").read_text())["texts"]
    assert (tmp_path / "ablation" / "runs-bytes" / "c4-noclean" / "seed-1" / "eval.json").exists()
    by_bytes = (tmp_path / "ablation" / "report-bytes" / "report.md").read_text()
    assert "## Matched tokens vs matched bytes" in by_bytes
    assert "| bytes-matched | tokens-matched |" in by_bytes
    rows = [line for line in by_bytes.splitlines() if line.startswith("| architecture.md bits/byte | c4-noclean - c4 |")]
    assert len(rows) == 1 and rows[0].count("p = ") == 2
    fifth = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert fifth.exit_code == 0 and "run c4 seed 0: reusing" in fifth.output
    by_tokens = json.loads((report / "results.json").read_text())
    assert set(by_tokens["other_budgets"]) == {"bytes"}
    assert "| tokens-matched | bytes-matched |" in (report / "report.md").read_text()
    # other training settings retrain the runs, and a retrained run is evaluated again: its
    # checkpoint has the same path as before, so the path alone must not keep the old scores
    settings = ["--set", "train.optim.lr=0.002"]
    sixth = CliRunner().invoke(cli, ["ablate", "--config", str(config), "--set", "budget=bytes", *settings])
    assert sixth.exit_code == 0, sixth.output
    assert "run c4 seed 0: reusing" not in sixth.output and "eval c4 seed 0: done" in sixth.output
    assert "run c4-noclean seed 0: copied" not in sixth.output  # no finished twin with these settings
    # and the other way round: byte-matched first, then the token-matched run copies its twin;
    # another variant is copied only where its byte budget comes to the same tokens
    seventh = CliRunner().invoke(cli, ["ablate", "--config", str(config), *settings])
    assert seventh.exit_code == 0 and "run c4-noclean seed 1: copied" in seventh.output
    by_bytes = json.loads((tmp_path / "ablation" / "report-bytes" / "results.json").read_text())
    same = by_bytes["variants"]["c4"]["train_tokens"] == yaml.safe_load(config.read_text())["train"]["max_tokens"]
    assert ("run c4 seed 1: copied" in seventh.output) == same
    # a third seed under bytes only: the report says why it has no matched-budgets table
    eighth = CliRunner().invoke(cli, ["ablate", "--config", str(config), "--set", "budget=bytes", *settings,
                                      "--set", "seeds=[0,1,2]"])
    assert eighth.exit_code == 0, eighth.output
    by_bytes = (tmp_path / "ablation" / "report-bytes" / "report.md").read_text()
    assert "| bytes-matched | tokens-matched |" not in by_bytes
    assert "Not shown: this ablation's tokens-matched runs are evaluated for seed(s) 0, 1 of this report's 0, 1, 2" in by_bytes


@pytest.mark.slow
def test_sequential_seeds_add_rounds_and_reuse_every_finished_seed(tmp_path):
    """`train ablate --until-decided --max-seeds 3` from a 2-seed spec: the first look is at 2
    seeds; an undecided headline test adds seed 2 (every run of the first round reused), and the
    report says which look decided or that none did, with the plan's boundaries."""
    config = small_config(tmp_path)
    first = CliRunner().invoke(cli, ["ablate", "--config", str(config)])
    assert first.exit_code == 0, first.output
    result = CliRunner().invoke(cli, ["ablate", "--config", str(config), "--until-decided", "--max-seeds", "3"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "ablation" / "report" / "results.json").read_text())
    outcome = summary["sequential"]
    assert outcome["plan"]["looks"] == [2, 3] and len(outcome["plan"]["levels"]) == 2
    for seed in (0, 1):
        assert f"run c4 seed {seed}: reusing" in result.output
        assert f"eval c4-noclean seed {seed}: reusing" in result.output
    if all(t["decided"] for t in outcome["tests"]):  # decided at the first look: nothing added
        assert outcome["seeds"] == 2 and "seed 2" not in result.output
    else:
        assert outcome["seeds"] == 3 and "run c4 seed 2: " in result.output
        assert "undecided at 2 seeds" in result.output
    text = (tmp_path / "ablation" / "report" / "report.md").read_text()
    assert "## Sequential seeds" in text and "obrien-fleming-type alpha spending" in text
    # the Result section gives each test's sequential verdict beside the fixed-design t-test,
    # which it calls descriptive (the 5-seed span example had "significant" beside "undecided")
    result_section = text.split("## Result")[1].split("## Sequential seeds")[0]
    assert "read it as descriptive" in result_section
    last = outcome["tests"][0]["looks"][-1]
    state = "decided" if outcome["tests"][0]["decided"] else "undecided"
    assert f"**Sequential verdict: {state} at {last['seeds']} seeds (p = {last['p']:.3g}" in result_section
    # the headline test's differences in the report come from the same seeds as results.json
    test = outcome["tests"][0]
    values = {v: dict(zip(summary["variants"][v]["metrics"][test["metric"]]["seeds"],
                          summary["variants"][v]["metrics"][test["metric"]]["values"])) for v in (test["a"], test["b"])}
    diffs = [values[test["b"]][s] - values[test["a"]][s] for s in values[test["a"]]]
    assert test["difference"] == pytest.approx(sum(diffs) / len(diffs))
    again = CliRunner().invoke(cli, ["ablate", "--config", str(config), "--until-decided", "--max-seeds", "3"])
    assert again.exit_code == 0
    units = [line for line in again.output.splitlines()
             if line.startswith(("corpus ", "tokenizer:", "tokens ", "run ", "eval ", "held-out "))]
    assert units and all(": reusing" in line for line in units)

def test_pairing_statement_says_what_data_seed_shares():
    from c4forge.ablation.report import pairing_statement

    assert "document orders do not pair" in pairing_statement(AblationSpec(train={}))
    fixed = pairing_statement(AblationSpec(train={"data_seed": 3}))
    assert "`data_seed` 3" in fixed and "same permutation" in fixed


def test_verdict_comes_from_a_paired_test():
    summary = {"variants": {
        "a": {"metrics": {"m": {"mean": 1.0, "std": 0.01, "values": [0.99, 1.0, 1.01], "seeds": [0, 1, 2]}}},
        "b": {"metrics": {"m": {"mean": 1.2, "std": 0.01, "values": [1.19, 1.2, 1.21], "seeds": [0, 1, 2]}}},
        "c": {"metrics": {"m": {"mean": 1.005, "std": 0.05, "values": [0.95, 1.0, 1.065], "seeds": [0, 1, 2]}}}}}
    text = verdict(summary, "m", "a", "b")
    assert "a is lower (better) by 0.2000" in text and "significant at 0.05" in text
    assert "paired t-test over 3 seeds" in text and "CI [" in text
    assert "not significant" in verdict(summary, "m", "a", "c")
    assert "seeds per variant would be needed" in verdict(summary, "m", "a", "c")


def test_two_seeds_at_2_4_standard_errors_is_not_a_verdict():
    """The landed rule called 2 seeds "beyond seed noise" at 2.4 standard errors; a paired
    t-test with one degree of freedom gives p = 0.25 there."""
    summary = {"variants": {
        "a": {"metrics": {"m": {"mean": 1.0, "std": 0.0, "values": [1.0, 1.0], "seeds": [0, 1]}}},
        "b": {"metrics": {"m": {"mean": 1.12, "std": 0.0, "values": [1.05, 1.19], "seeds": [0, 1]}}}}}
    # paired differences 0.05 and 0.19: mean 0.12, standard error 0.07 -> t = 1.71
    text = verdict(summary, "m", "a", "b")
    assert "not significant" in text and "p = 0.3" in text
    higher = {"variants": {v: {"metrics": {"g": {**e["metrics"]["m"], "higher_is_better": True}}}
                           for v, e in summary["variants"].items()}}
    assert "b is higher (better)" in verdict(higher, "g", "a", "b")


def test_t_statistics_come_from_scipy_and_match_the_textbook():
    from scipy import stats

    from c4forge.train.stats import compare, t_quantile

    assert t_quantile(0.975, 3) == pytest.approx(3.182446, rel=1e-6)  # printed t tables
    a, b = {0: 1.0, 1: 1.2, 2: 0.9}, {0: 1.3, 1: 1.4, 2: 1.25}
    result = compare(a, b)
    diffs = [0.3, 0.2, 0.35]
    mean, sd = sum(diffs) / 3, stats.tstd(diffs)
    assert result["difference"] == pytest.approx(mean)
    assert result["t"] == pytest.approx(mean / (sd / 3 ** 0.5))
    assert result["p"] == pytest.approx(2 * stats.t.sf(mean / (sd / 3 ** 0.5), 2))
    half = 4.302653 * sd / 3 ** 0.5  # t(0.975, 2)
    assert (result["low"], result["high"]) == (pytest.approx(mean - half), pytest.approx(mean + half))
    c = {3: 1.3, 4: 1.4, 5: 1.25, 6: 1.1}
    welch = compare(a, c)
    assert welch["p"] == pytest.approx(stats.ttest_ind(list(c.values()), list(a.values()), equal_var=False).pvalue)
    assert "Welch" in welch["test"] and 2 < welch["df"] < 5
    assert compare({0: 1.0}, {0: 2.0}) is None
    same = compare({0: 1.0, 1: 2.0}, {0: 1.5, 1: 2.5})  # constant difference: no spread
    assert same["p"] == 0.0 and same["significant"]


def test_seeds_at_80_percent_power_equal_the_noncentral_t():
    """The smallest n whose paired t-test has power >= 0.8, from scipy's noncentral t, equals
    seeds_for_power (statsmodels); known case: effect size 1.0 at alpha 0.05 needs 10."""
    from scipy import stats

    from c4forge.train.stats import seeds_for_power

    def power(n, d, alpha=0.05):
        crit = stats.t.ppf(1 - alpha / 2, n - 1)
        nct = stats.nct(n - 1, d * n ** 0.5)
        return nct.sf(crit) + nct.cdf(-crit)

    assert seeds_for_power(1.0, 1.0) == 10
    for mean, sd in [(0.3, 0.2), (0.0171, 0.0414), (1.0, 2.0), (0.5, 0.9)]:
        n = seeds_for_power(mean, sd)
        assert power(n, mean / sd) >= 0.8 > power(n - 1, mean / sd) or n == 2
    assert seeds_for_power(0.0, 1.0) is None and seeds_for_power(1.0, 0.0) is None
    # 80% power needs about twice the seeds of "the observed mean just reaches p < 0.05"
    assert seeds_for_power(0.0171, 0.0414) > 40


def test_holm_adjustment_matches_hand_computed_values():
    from statsmodels.stats.multitest import multipletests

    from c4forge.train.stats import holm

    # sorted 0.01, 0.03, 0.04 -> 0.01*3, max(0.03*2, 0.03), max(0.04*1, 0.06)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    ps = [0.0067, 0.55, 0.13, 0.43, 0.36, 0.29]
    assert holm(ps) == pytest.approx(list(multipletests(ps, method="holm")[1]))
    assert holm([]) == [] and holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def test_bad_ablation_configs(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"inputs": ["x"], "variants": {"c4": {}}, "train": {}, "out_dir": "o"}))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert result.exit_code != 0 and "at least two variants" in result.output
    path.write_text(yaml.safe_dump({"inputs": ["x"], "variants": {"a": {}, "b": {}}, "train": {}, "out_dir": "o"}))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert "max_tokens" in result.output


@pytest.mark.slow
def test_ablation_with_t5_span_objective(tmp_path):
    """configs/ablation-span-demo.yaml at a reduced size: encoder-decoder runs, the span loss on
    each variant's validation split and on the held-out text in the report."""
    spec = yaml.safe_load((ROOT / "configs" / "ablation-span-demo.yaml").read_text())
    assert spec["objective"] == "span"
    spec["inputs"] = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    spec["badwords"] = str(ROOT / "corpus" / "data" / "demo-badwords")
    spec["out_dir"] = str(tmp_path / "ablation")
    spec["tokenizer"]["vocab_size"] = 600
    spec["train"]["max_tokens"] = 8 * 128 * 6
    spec["train"]["eval_every"] = 3
    spec["budget"] = "bytes"  # the same text for every variant, not the same tokens
    from tests.conftest import shared_path

    glue = {"tasks": ["sst2"], "glue_dir": str(shared_path("eval", "glue")), "seeds": [0],
            "set": {"max_train": 300, "max_eval": 100, "sst2": {"epochs": 1}}}
    heldout_text = tmp_path / "wiki-head.raw"  # the first 20 KB of WikiText-2's test set
    heldout_text.write_bytes(shared_path("clean", "wikitext2-test.raw").read_bytes()[:20_000])
    spec["eval"] = {"texts": [str(heldout_text)], "tasks": ["copa"], "glue": glue}
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert result.exit_code == 0, result.output
    assert "does not score text left to right" in result.output
    report = tmp_path / "ablation" / "report-bytes"  # a byte-budget report
    results = json.loads((report / "results.json").read_text())
    assert results["objective"] == "span"
    metric = results["variants"]["c4"]["metrics"]["c4-noclean validation span loss"]
    assert len(metric["values"]) == 2 and 0 < metric["mean"] < 7
    text = (report / "report.md").read_text()
    assert "Objective span" in text and "## GLUE against its reference rows" in text
    assert results["budget"] == "bytes" and "byte budget" in text
    variants = results["variants"]
    batch_tokens = 8 * 128
    target = 8 * 128 * 6 * variants["c4-noclean"]["bytes_per_token"]
    for entry in variants.values():
        assert entry["train_tokens"] % batch_tokens == 0
        assert abs(entry["train_tokens"] * entry["bytes_per_token"] - target) <= batch_tokens * entry["bytes_per_token"]
    # GLUE is the headline for an encoder-decoder; the validation loss gets no verdict
    glue_average = results["variants"]["c4"]["metrics"]["GLUE average"]
    assert glue_average["headline"] and len(glue_average["values"]) == 2 and 0 < glue_average["mean"] <= 100
    # GLUE verdicts only when pretraining beats random init beyond noise; the tiny demo
    # runs do not, and the report says so instead of comparing the variants on it
    reference = results["glue_reference"]
    assert set(reference) == {"majority", "tfidf", "random_init"}
    assert set(reference["random_init"]) == {"0", "1"} and 0 <= reference["tfidf"]["average"] <= 100
    assert ("c4 vs c4-noclean**: On GLUE average" in text) != ("GLUE carries no signal at this scale" in text)
    result_section = text.split("## Result")[1].split("## Charts")[0]
    assert "validation span loss" not in result_section
    # the held-out headline of a span run: its own loss on the text encoded with the shared
    # tokenizer, one value per seed, compared in the verdicts (issue 28)
    heldout = results["variants"]["c4"]["metrics"]["wiki-head.raw span loss"]
    assert heldout["headline"] and len(heldout["values"]) == 2 and 0 < heldout["mean"] < 10
    assert "On wiki-head.raw span loss" in result_section
    encoded = json.loads((tmp_path / "ablation" / "heldout" / "wiki-head" / "manifest.json").read_text())
    assert encoded["splits"]["validation"]["documents"] == 1 and encoded["corpus"]["text_sha256"]
    config = json.loads((tmp_path / "ablation" / "runs-bytes" / "c4" / "seed-0" / "metrics.jsonl").read_text().splitlines()[0])
    assert "loss" in config
    from c4forge.train.checkpoint import load_model

    model, saved = load_model(str(tmp_path / "ablation" / "runs-bytes" / "c4" / "seed-0"))
    assert saved["objective"] == "span" and type(model).__name__ == "EncoderDecoder"


@pytest.mark.hf
def test_variants_may_read_their_own_inputs(tmp_path):
    """A variant's own `inputs:` (WET for one, WARC for the other) replace the shared ones. The
    ablation's corpus stage needs no Beam: this runs in the current-HF environment too."""
    from c4forge.ablation import build_corpora, load_ablation

    spec = yaml.safe_load((ROOT / "configs" / "ablation-demo.yaml").read_text())
    other = tmp_path / "other.warc.wet.gz"
    from tests.wetfiles import page, record, wet_file

    other.write_bytes(wet_file([record(f"https://other.example/{i}", page(i) + " Unique text number "
                                       f"{i} about gardens.") for i in range(4)]))
    spec["inputs"] = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    spec["badwords"] = str(ROOT / "corpus" / "data" / "demo-badwords")
    spec["out_dir"] = str(tmp_path / "ablation")
    spec["variants"] = {"a": {"preset": "c4-noclean"}, "b": {"preset": "c4-noclean", "inputs": [str(other)]}}
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec))
    loaded = load_ablation(str(path))
    corpora = build_corpora(loaded, lambda *_: None)
    manifests = {v: json.loads((tmp_path / "ablation" / "corpora" / v / "_manifest.json").read_text()) for v in corpora}
    assert manifests["b"]["inputs"] == [str(other)]
    assert manifests["a"]["inputs"] == spec["inputs"]
    assert manifests["b"]["counters"]["split-wet-file/passed"] == 4
    # Regression: a variant whose settings changed since the last run is rebuilt in place (it
    # used to stop with "already holds a c4forge corpus; pass --overwrite").
    logged = []
    loaded = dataclasses.replace(loaded, variants={
        **loaded.variants, "a": Variant(preset="c4-noclean", set={"max_page_chars": 5000})})
    build_corpora(loaded, logged.append)
    assert any(line.startswith("corpus a: built") for line in logged)
    assert any(line.startswith("corpus b: reusing") for line in logged)
    manifest = json.loads((tmp_path / "ablation" / "corpora" / "a" / "_manifest.json").read_text())
    assert manifest["config"]["length"]["max_chars"] == 5000


def test_byte_budget_matches_text_within_one_batch():
    """budget: bytes gives every variant the bytes of text max_tokens covers in the reference
    variant; rounded to whole batches, each run's text is within one batch of that target.
    budget: tokens (T5's protocol) gives everyone the same tokens."""
    from c4forge.ablation.spec import token_budgets

    bpt = {"c4": 3.85, "c4-noclean": 3.24, "c4-no-endmark": 3.63}
    batch = 16 * 128
    tokens = token_budgets("tokens", 1_228_800, bpt, "c4-noclean", batch)
    assert set(tokens.values()) == {1_228_800}
    by_bytes = token_budgets("bytes", 1_228_800, bpt, "c4-noclean", batch)
    target = 1_228_800 * 3.24
    assert by_bytes["c4-noclean"] == 1_228_800
    for name, n in by_bytes.items():
        assert n % batch == 0 and abs(n * bpt[name] - target) <= batch * bpt[name] / 2
    assert by_bytes["c4"] < by_bytes["c4-no-endmark"] < by_bytes["c4-noclean"]  # C4 packs more text per token
    assert token_budgets("bytes", 100, {"a": 1.0, "b": 50.0}, "a", 64)["b"] == 64  # at least one batch


def test_unknown_budget_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"inputs": ["x"], "variants": {"a": {}, "b": {}}, "out_dir": "o",
                                    "train": {"max_tokens": 1000}, "budget": "flops"}))
    result = CliRunner().invoke(cli, ["ablate", "--config", str(path)])
    assert result.exit_code != 0 and "budget 'flops'" in result.output and "Traceback" not in result.output


def test_zero_shot_accuracy_at_chance_is_reported_as_no_signal():
    """Issue 28: accuracies are tested against guessing (one-sided binomial, scipy), and a
    report whose tasks are all at chance says "no signal"."""
    from scipy.stats import binomtest

    from c4forge.ablation.report import task_signal_section
    from c4forge.train.evaluation.evaluate import chance_accuracy, load_task
    from tests.conftest import shared_path

    eval_dir = str(shared_path("eval"))
    assert chance_accuracy("winogrande", load_task(eval_dir, "winogrande", 50)) == 0.5
    assert chance_accuracy("hellaswag", load_task(eval_dir, "hellaswag", 50)) == 0.25
    assert chance_accuracy("lambada", []) == 0.0

    def summary(piqa: float) -> dict:
        return {"variants": {v: {"metrics": {"piqa accuracy": {"mean": piqa}}} for v in ("a", "b")}}

    spec = AblationSpec(eval=EvalSpec(tasks=("piqa",), eval_dir=eval_dir, limit=200), base=".")
    at_chance = "\n".join(task_signal_section(spec, summary(0.52)))
    assert "**No signal**" in at_chance
    assert f"0.520 (p = {binomtest(104, 200, 0.5, alternative='greater').pvalue:.2g})" in at_chance
    above = "\n".join(task_signal_section(spec, summary(0.60)))
    assert "**No signal**" not in above and "above chance" in above


def test_many_headline_tests_are_one_table_row_each_with_sentences_for_the_significant():
    """Six variants and three headline metrics are 45 tests: as sentences the extractor ablation's
    report ran to 180 bullets. Over SENTENCES_UP_TO they are table rows, and only the tests
    significant before correction get a sentence, with the count expected by chance beside them."""
    from c4forge.ablation.report import SENTENCES_UP_TO, comparison, verdict_table

    names = [f"v{i}" for i in range(6)]
    metrics = ["wikitext bits/byte", "copa correct bits/byte", "piqa correct prob"]

    def entry(i: int) -> dict:
        out = {}
        for k, metric in enumerate(metrics):
            # v5 is far worse on the first metric; everything else is seed noise
            noise = random.Random(100 * i + k)
            values = [3.0 + (0.5 if (i == 5 and k == 0) else 0.0) + noise.gauss(0, 0.02) for _ in range(3)]
            out[metric] = {"mean": statistics.fmean(values), "std": statistics.stdev(values), "values": values,
                           "seeds": [0, 1, 2], "higher_is_better": metric.endswith("prob"), "headline": True}
        return {"metrics": out}

    summary = {"variants": {n: entry(i) for i, n in enumerate(names)}}
    tests = [(m, a, b) for m in metrics for a in names for b in names if a < b]
    assert len(tests) == 45 > SENTENCES_UP_TO
    raw = [comparison(summary, *t) for t in tests]
    lines = verdict_table(summary, tests, raw, {i: min(1.0, r["p"] * len(tests)) for i, r in enumerate(raw)})
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| metric")]
    assert len(rows) == 45
    significant = [i for i, r in enumerate(raw) if r["significant"]]
    sentences = [line for line in lines if line.startswith("- **")]
    assert len(sentences) == len(significant) >= 5  # v5 against each of the others, at least
    assert all("v5" in s for s in sentences[:5])
    first = raw[tests.index(("wikitext bits/byte", "v0", "v5"))]
    assert f"| wikitext bits/byte | v0 | v5 | {first['difference']:+.4f} [" in "\n".join(rows)
    assert f"{len(significant)} of 45 (about 2.2 expected by chance alone" in "\n".join(lines)
    assert sentences[0].endswith(verdict(summary, *tests[significant[0]], holm_p=min(1.0, raw[significant[0]]["p"] * 45),
                                         family=45, result=raw[significant[0]]))


def test_glue_reference_rows_of_finished_seeds_are_reused_when_seeds_are_added(tmp_path, monkeypatch):
    """Sequential seeds add a seed at a time: the random-init GLUE row of every finished seed is
    kept (they were all fine-tuned again at each look: 5 minutes per look on the span example),
    and rows made with another recipe are not."""
    from c4forge.ablation import stages
    from c4forge.ablation.spec import GlueSpec

    fine_tuned, baselines = [], []

    def fake_glue(checkpoint, tasks, glue_dir, configs, seeds, log=None):
        fine_tuned.append(checkpoint)
        return {"tasks": {"sst2": {"score": {"mean": 50.0 + len(fine_tuned)}}}, "glue_average": 50.0 + len(fine_tuned)}

    def fake_rows(task, glue_dir, max_train, max_eval):
        baselines.append(task)
        return {"majority": {"score": 50.9}, "tfidf": {"score": 69.0}}

    monkeypatch.setattr(stages, "run_glue", fake_glue)
    monkeypatch.setattr(stages, "reference_rows", fake_rows)
    monkeypatch.setattr(stages, "latest_checkpoint", lambda folder: folder)
    glue = {"tasks": ["sst2"], "glue_dir": "glue", "seeds": [0]}

    def spec_for(seeds, lr=1e-3):
        written = {"glue": {**glue, "set": {"lr": lr}}}
        return AblationSpec(out_dir=str(tmp_path), seeds=tuple(seeds), train={"max_tokens": 100},
                            eval=EvalSpec(glue=GlueSpec(glue_dir="glue", set={"lr": lr}), written=written),
                            base=str(tmp_path))

    def runs(seeds):
        return {"c4": {s: str(tmp_path / f"seed-{s}") for s in seeds}}

    first = stages.glue_references(spec_for([0, 1, 2]), runs([0, 1, 2]), lambda message: None)
    assert len(fine_tuned) == 3 and baselines == ["sst2"]
    assert set(first["random_init"]) == {"0", "1", "2"} and first["tfidf"]["average"] == 69.0
    more = stages.glue_references(spec_for([0, 1, 2, 3]), runs([0, 1, 2, 3]), lambda message: None)
    assert len(fine_tuned) == 4 and fine_tuned[-1].endswith("seed-3/checkpoints") and baselines == ["sst2"]
    assert {s: more["random_init"][s] for s in "012"} == first["random_init"]
    fewer = stages.glue_references(spec_for([0, 1]), runs([0, 1]), lambda message: None)
    assert len(fine_tuned) == 4 and set(fewer["random_init"]) == {"0", "1"}  # rows of this report's seeds
    other = stages.glue_references(spec_for([0, 1], lr=2e-3), runs([0, 1]), lambda message: None)
    assert len(fine_tuned) == 6 and len(baselines) == 2 and set(other["random_init"]) == {"0", "1"}
