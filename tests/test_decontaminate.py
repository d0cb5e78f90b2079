"""Decontamination (corpus/rules/decontaminate.py): evaluation passages planted in real pages are
found (whatever their case and punctuation), 12 shared words are not a 13-gram, the lines a
match touches are the ones removed, both runners agree, and the rule samples mark the match."""
import bz2
import gzip
import json

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import ConfigError, build_config
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Reservoir, SampleOptions
from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.rules.decontaminate import (
    EvalIndex,
    EvalSetError,
    decontaminate,
    line_fates,
    overlapping_words,
    read_units,
)
from c4forge.pipelines.build import counters_of
from c4forge.pipelines.c4 import c4_pages
from tests.conftest import ROOT, shared_path
from tests.wetfiles import record, wet_file

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
DEMO_BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]
PASSAGE = ("The castle was built in the twelfth century by the first duke of the region, who "
           "chose the hill because it overlooked both the river crossing and the old road.")


def eval_files(tmp_path):
    """A text set (one passage a line) and a JSONL set (strings in records), compressed."""
    text = tmp_path / "wiki.raw.bz2"
    text.write_bytes(bz2.compress(f"\n{PASSAGE}\nShort line.\n".encode()))
    records = tmp_path / "qa.jsonl.gz"
    with gzip.open(records, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"query": "Which of these is a mammal that lives in the sea and "
                                          "breathes air through a blowhole on its head?",
                                 "choices": ["a dolphin", "a shark"], "gold": 0}) + "\n")
    return {"wiki": str(text), "qa": str(records)}


def index_of(tmp_path, n=13, action="drop-page"):
    sets = tuple(f"{name}={path}" for name, path in eval_files(tmp_path).items())
    return EvalIndex.build(tuple(sets), n)


def real_page() -> Document:
    return next(p for p in iter_file_documents(SAMPLE) if len(p.text.split("\n")) >= 6)


def test_units_are_json_strings_and_text_lines(tmp_path):
    files = eval_files(tmp_path)
    assert list(read_units(files["wiki"])) == [PASSAGE + "\n", "Short line.\n"]
    assert "a dolphin" in list(read_units(files["qa"]))
    assert len(list(read_units(str(tmp_path)))) == 2 + 3  # a folder: every file in it
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(EvalSetError, match="bad.jsonl:1: not JSON"):
        list(read_units(str(tmp_path / "bad.jsonl")))


def test_a_planted_passage_is_found_whatever_its_case_and_punctuation(tmp_path):
    index = index_of(tmp_path)
    page = real_page()
    assert decontaminate(page, index).kept  # the real page alone is clean
    planted = page.replace(text=page.text + "\n" + PASSAGE.upper().replace(",", " ;"))
    verdict = decontaminate(planted, index)
    assert verdict.outcome == "filtered:contaminated"
    counts = {c.name: c.n for c in verdict.counts}
    assert counts["pages:wiki"] == 1 and counts["ngrams:wiki"] == len(PASSAGE.split()) - 13 + 1
    # twelve words in common are not a 13-gram
    twelve = " ".join(PASSAGE.split()[:12])
    assert decontaminate(page.replace(text=page.text + "\n" + twelve), index).kept
    assert decontaminate(page.replace(text=page.text + "\n" + twelve), index_of(tmp_path, n=12)).outcome \
        == "filtered:contaminated"


def test_drop_lines_removes_only_the_lines_a_match_touches(tmp_path):
    index = index_of(tmp_path, action="drop-lines")
    page = real_page()
    half = len(PASSAGE.split()) // 2
    first, second = " ".join(PASSAGE.split()[:half]), " ".join(PASSAGE.split()[half:])
    planted = page.replace(text=page.text + "\n" + first + "\n" + second + "\nA clean closing line.")
    verdict = decontaminate(planted, index, "drop-lines")
    assert verdict.page.text == page.text + "\nA clean closing line."  # the match spans two lines
    assert {c.name: c.n for c in verdict.counts}["line-filtered:wiki"] == 2
    lines, fates, trigger = line_fates(planted.text, index, "drop-lines")
    assert [i for i, f in enumerate(fates) if f] == [len(lines) - 3, len(lines) - 2] and trigger is None
    only = Document(url="u", text=PASSAGE)
    assert decontaminate(only, index, "drop-lines").outcome == "filtered:contaminated"


def test_overlapping_words_count_the_words_inside_shared_ngrams(tmp_path):
    index = index_of(tmp_path)
    text = "Some words before it. " + PASSAGE + " And some after."
    total, covered = overlapping_words(text, index)
    assert total == len(text.split()) and covered == {"wiki": len(PASSAGE.split())}
    assert overlapping_words("A clean text of a few words.", index)[1] == {}


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="is not NAME=PATH"):
        build_config("c4", overrides=["decontaminate.on=true", "decontaminate.sets=nopath"])
    with pytest.raises(ConfigError, match="choose drop-page, drop-lines"):
        build_config("c4", overrides=["decontaminate.action=drop-all"])
    with pytest.raises(ConfigError, match="needs decontaminate.sets"):
        build_config("c4", overrides=["decontaminate.on=true"])


def test_both_runners_drop_the_same_planted_pages_and_sample_the_match(tmp_path):
    """Real pages with an evaluation passage planted in some: the same documents and counters in
    `corpus clean` and the Beam graph, and the samples show the matched line."""
    planted = tmp_path / "planted.warc.wet.gz"
    planted.write_bytes(wet_file(
        record(p.url, p.text + ("\n" + PASSAGE if i % 7 == 3 else ""), p.timestamp)
        for i, p in enumerate(iter_file_documents(SAMPLE))))
    sets = ",".join(f"{name}={path}" for name, path in eval_files(tmp_path).items())
    config = build_config("c4", badwords=DEMO_BADWORDS,
                          overrides=["decontaminate.on=true", f"decontaminate.sets={sets}",
                                     "rule_samples.rate=1.0",
                                     "dedupe_lines=false"])  # line dedup would keep one copy only
    counters, samples = Counters(), Reservoir(20)
    local = run_chain([str(planted)], config, counters, samples=samples)
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create([str(planted)]), config)
    assert_that(pages | beam.Map(lambda p: (p.url, p.text)), equal_to([(d.url, d.text) for d in local]))
    result = pipeline.run()
    result.wait_until_finish()
    found = counters.as_dict()
    assert {k: v for k, v in counters_of(result).items() if not k.startswith("output/")} == found
    assert found["decontaminate/filtered:contaminated"] == found["decontaminate/pages:wiki"] > 3
    assert not any(PASSAGE in d.text for d in local)
    shown = samples.document(SampleOptions(rate=1.0))["rules"]
    rule = next(r for r in shown if r["rule"] == "decontaminate/filtered:contaminated")
    assert any(line == [PASSAGE, "drop"] for sample in rule["samples"] for line in sample["lines"])


def test_on_the_shared_crawl_the_evaluation_sets_are_indexed_and_counted():
    """The sets c4forge scores on, against the real pages: every set indexed, the step counts."""
    eval_dir = shared_path("eval")
    sets = [f"wikitext2={shared_path('clean') / 'wikitext2-test.raw'}",
            f"lambada={eval_dir / 'lambada_openai.jsonl'}", f"glue={eval_dir / 'glue'}"]
    index = EvalIndex.build(tuple(sets), 13)
    assert all(len(index.sets[name]) > 10_000 for name in ("wikitext2", "lambada", "glue"))
    pages = [p for path in sorted(shared_path("crawl").glob("*.wet.gz")) for p in iter_file_documents(str(path))]
    verdicts = [decontaminate(p, index) for p in pages]
    assert sum(v.kept for v in verdicts) > 0.95 * len(pages)  # the web is mostly not these sets
