"""The model-based quality filter (corpus/steps/quality_classifier.py) with the project's own small classifier
(tests/data/quality-classifier.ftz, scripts/train_quality_classifier.py): the score is the
model's probability of the positive label, the threshold drops and counts, the score reaches the
shards' ``quality_score`` column (read back in pyarrow and duckdb; HF datasets in
tests/test_hf_environment.py) only in builds that ran it, and both runners agree."""
import json

import apache_beam as beam
import duckdb
import fasttext
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import ConfigError, build_config
from c4forge.corpus.output.shards import read_shard, shard_paths
from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.rules import clean as clean_rules
from c4forge.corpus.steps.quality_classifier import ClassifierFilter, model_text
from c4forge.pipelines.build import counters_of
from c4forge.pipelines.c4 import c4_pages
from tests.conftest import ROOT, shared_path

MODEL = str(ROOT / "tests" / "data" / "quality-classifier.ftz")
SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
DEMO_BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def classifier_settings(threshold: float) -> list[str]:
    return ["quality_classifier.on=true", f"quality_classifier.model={MODEL}",
            f"quality_classifier.threshold={threshold}"]


def test_the_score_is_the_probability_of_the_positive_label():
    """As DCLM reads its classifier: P(hq), i.e. 1 - P(cc) for a two-label model; the page goes
    to fastText on one line, stripped."""
    model = fasttext.load_model(MODEL)
    scorer = ClassifierFilter(MODEL)
    pages = list(iter_file_documents(SAMPLE))[:40]
    for page in pages:
        labels, probs = model.predict(model_text(page.text), k=2)
        found = dict(zip(labels, probs))
        assert scorer.score(page.text) == pytest.approx(min(1.0, found["__label__hq"]), abs=1e-7)
        assert scorer.score(page.text) == pytest.approx(1 - found["__label__cc"], abs=3e-5)
    assert model_text(" a\nb\n ") == "a b"
    scores = [scorer.score(p.text) for p in pages]
    assert 0.0 <= min(scores) < max(scores) <= 1.0


def test_the_classifier_prefers_main_text_to_the_same_pages_boilerplate():
    """What it was trained for (main text vs whole page), on pages it never saw: the shared
    crawl's pages cleaned by C4's rules score higher than the same pages as crawled."""
    scorer = ClassifierFilter(MODEL)
    raw, cleaned = [], []
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for page in iter_file_documents(str(path)):
            verdict = clean_rules.clean_page(page, clean_rules.PageRules())
            if verdict.kept and verdict.page.text != page.text:
                raw.append(scorer.score(page.text))
                cleaned.append(scorer.score(verdict.page.text))
    assert len(raw) > 200
    higher = sum(c > r for c, r in zip(cleaned, raw)) / len(raw)
    assert higher > 0.6, f"cleaned text scored higher on only {higher:.0%} of {len(raw)} pages"


def test_the_threshold_drops_and_counts_and_the_runners_agree():
    config = build_config("c4-noclean", overrides=classifier_settings(0.5))
    counters = Counters()
    local = run_chain([SAMPLE], config, counters)
    found = counters.as_dict()
    settings = config.settings_of("quality-classifier")
    scorer = ClassifierFilter(settings.model, settings.label, settings.threshold)
    assert found["quality-classifier/filtered:low_score"] > 0 and found["quality-classifier/passed"] > 0
    assert found["quality-classifier/passed"] == len(local)
    assert all(d.quality_score == scorer.score(d.text) >= 0.5 for d in local)

    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create([SAMPLE]), config)
    assert_that(pages | beam.Map(lambda p: (p.url, p.text, p.quality_score)),
                equal_to([(d.url, d.text, d.quality_score) for d in local]))
    result = pipeline.run()
    result.wait_until_finish()
    assert {k: v for k, v in counters_of(result).items() if not k.startswith("output/")} == found


def _shard_tables(out):
    return [read_shard(path) for split in ("train", "validation")
            for path in shard_paths(str(out), split)]


@pytest.mark.parametrize("command,shard_format", [("clean", "arrow"), ("build", "parquet")])
def test_the_score_column_is_written_only_where_the_classifier_ran(tmp_path, command, shard_format):
    common = [SAMPLE, "--badwords", DEMO_BADWORDS, "--format", shard_format, "-q"]
    if command == "build":
        common = ["-i", *common, "--runner", "DirectRunner"]
    plain, scored = tmp_path / "plain", tmp_path / "scored"
    for out, extra in ((plain, []), (scored, [a for s in classifier_settings(0.0) for a in ("--set", s)])):
        result = CliRunner().invoke(cli, [command, *common, "-o", str(out), *extra])
        assert result.exit_code == 0, result.output[-2000:]
    for table in _shard_tables(plain):
        assert "quality_score" not in table.column_names
        assert "columns" not in json.loads(table.schema.metadata[b"c4forge"])
    tables = _shard_tables(scored)
    assert tables and all(t.column_names[-1] == "quality_score" for t in tables)
    scores = [s for t in tables for s in t.column("quality_score").to_pylist()]
    assert None not in scores and len(set(scores)) > 10
    assert json.loads(tables[0].schema.metadata[b"c4forge"])["columns"] == ["quality_score"]
    # a top fraction, as docs/corpus.md selects it: Parquet shards natively, Arrow IPC streams
    # read by pyarrow (duckdb's core reads no Arrow IPC without an extension)
    train = f"read_parquet('{scored}/data/train-*.parquet')" if shard_format == "parquet" else "arrow_train"
    if shard_format == "arrow":
        arrow_train = pa.concat_tables(pa.ipc.open_stream(str(p)).read_all()  # noqa: F841 (duckdb reads it)
                                       for p in sorted(scored.glob("train-*.arrow")))
    top = duckdb.sql(f"""SELECT url, quality_score FROM {train}
                         WHERE quality_score >= (SELECT quantile_cont(quality_score, 0.9)
                                                 FROM {train})""").fetchall()
    ranked = sorted((s for path in shard_paths(str(scored), "train")
                     for s in read_shard(path).column("quality_score").to_pylist()), reverse=True)
    assert 0 < len(top) <= len(ranked) // 10 + 2 and min(s for _, s in top) >= ranked[len(top)] - 1e-6


def test_bad_classifier_settings_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match="name the fastText model file"):
        build_config("c4", overrides=["quality_classifier.on=true"])
    with pytest.raises(ConfigError, match="no such file"):
        build_config("c4", overrides=["quality_classifier.on=true", "quality_classifier.model=missing.bin"])
    with pytest.raises(ConfigError, match=r"'good' is not a label .* \(it gives cc, hq\)"):
        build_config("c4", overrides=[*classifier_settings(0.5), "quality_classifier.label=good"])
    with pytest.raises(ConfigError, match="between 0 and 1"):
        build_config("c4", overrides=classifier_settings(1.5))
    result = CliRunner().invoke(cli, ["clean", SAMPLE, "-o", str(tmp_path / "o"), "--set",
                                      "quality_classifier.on=true", "-q"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
