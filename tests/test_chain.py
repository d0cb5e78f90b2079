"""The chain as data (corpus/chain/chains.py): a page step declared in one place runs, and counts, in
both runners; the skeleton is enforced; the planning pass fuses what it should; what help
texts, docs and reports say of the order comes from the list."""
import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from c4forge.core.counters import Counters
from c4forge.corpus.chain import chains as chain
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.chain.step import Scope, Step, page_step
from c4forge.corpus.chain.verdict import drop, keep
from c4forge.corpus.config import build_config
from c4forge.corpus.output.report import manifest_stats, page_flow
from c4forge.corpus.steps import REGISTRY
from c4forge.pipelines.build import counters_of
from c4forge.pipelines.c4 import c4_pages, fusions
from c4forge.pipelines.pages import BeamJob
from tests.conftest import ROOT

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
DEMO_BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def _few_lines(settings, page):
    """The toy rule, one function and no counting code: a page of fewer than 8 lines goes; the
    rest lose their last line."""
    lines = page.text.split("\n")
    if len(lines) < 8:
        return drop("few_lines")
    return keep(page.replace(text="\n".join(lines[:-1])))


TOY = page_step("toy", _few_lines, "toy rule", namespace="toy-filter")
C4 = chain.steps_of(chain.C4_CHAIN)


def _both_runners(with_toy):
    config = build_config("c4", badwords=DEMO_BADWORDS)
    counters = Counters()
    local = run_chain([SAMPLE], config, counters, chain=with_toy)
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create([SAMPLE]), config, chain=with_toy)
    assert_that(pages | beam.Map(lambda p: (p.url, p.text, p.near_dup_cluster_size)),
                equal_to([(d.url, d.text, d.near_dup_cluster_size) for d in local]))
    result = pipeline.run()
    result.wait_until_finish()
    return local, counters.as_dict(), counters_of(result)


@pytest.mark.newest_beam
@pytest.mark.parametrize("after", ["clean-page", "bad-words", "length"])
def test_a_page_step_added_in_one_place_runs_and_counts_in_both_runners(after):
    """Before URL dedup (the engine runs it where it reads), between URL dedup and line dedup
    (the engine runs it before the URL groups and counts it for the winner only) and after the
    line join: the same documents and counters from `corpus clean`'s chain and the Beam graph."""
    with_toy = chain.with_step(TOY, after=after, chain=C4)
    local, local_counters, beam_counters = _both_runners(with_toy)
    baseline = run_chain([SAMPLE], build_config("c4", badwords=DEMO_BADWORDS), Counters())
    toy_counters = {k: v for k, v in beam_counters.items() if k.startswith("toy-filter/")}
    assert toy_counters["toy-filter/filtered:few_lines"] > 0
    assert toy_counters["toy-filter/passed"] > 0
    assert toy_counters == {k: v for k, v in local_counters.items() if k.startswith("toy-filter/")}
    assert {k: v for k, v in beam_counters.items() if not k.startswith("output/")} == local_counters
    stats = manifest_stats({"counters": beam_counters, "config": {"preset": "c4"}})  # corpus stats
    assert {"step": "toy-filter", "rule": "filtered:few_lines", "unit": "pages",
            "count": toy_counters["toy-filter/filtered:few_lines"]} in stats["removed"]
    assert "toy-filter" in [step["step"] for step in stats["bytes_per_step"]]
    assert 0 < len(local) < len(baseline)
    assert {d.text for d in local} != {d.text for d in baseline}
    if after == "bad-words":  # the last page step: every kept page lost exactly its last line
        before = {d.url: d.text for d in baseline}
        assert all(before[d.url].startswith(d.text + "\n") for d in local)


def test_the_chain_rules_are_checked():
    exact, url, length = REGISTRY["exact-dedup"], REGISTRY["url-dedup"], REGISTRY["length"]
    no_exact = tuple(s for s in C4 if s is not exact)
    with pytest.raises(chain.ChainError, match="first corpus-wide"):
        chain.with_step(exact, after="length", chain=no_exact)
    with pytest.raises(chain.ChainError, match="after near-dedup"):
        chain.check_chain((*C4, TOY))
    with pytest.raises(chain.ChainError, match="reads once"):
        chain.with_step(chain.READ, after="length", chain=C4)
    with pytest.raises(chain.ChainError, match="no step named"):
        chain.with_step(TOY, after="nope", chain=C4)
    with pytest.raises(chain.ChainError, match="named twice"):
        chain.with_step(length, after="bad-words", chain=C4)
    # without URL dedup in the chain, a corpus-wide step may come first
    no_urls = tuple(s for s in no_exact if s is not url)
    assert chain.with_step(exact, after="length", chain=no_urls)[2] is exact
    # a chain as the config names it: a misspelt step says what it may have meant
    with pytest.raises(chain.ChainError, match="did you mean 'bad-words'"):
        build_config("c4", overrides=["chain=length,bad_word"])
    with pytest.raises(chain.ChainError, match="after near-dedup"):
        build_config("c4", overrides=["chain=length,near-dedup,bad-words"])
    assert build_config("c4", overrides=["chain=read,length,language-id"]).chain == ("length", "language-id")


def test_plan_leaves_out_what_the_config_turns_off():
    full = chain.plan(build_config("c4", badwords=DEMO_BADWORDS))
    assert [s.name for s in full.first] == ["length"]
    assert [(seg.step.name, [s.name for s in seg.after]) for seg in full.wide] == [
        ("url-dedup", ["clean-page"]),  # no paragraph filter, no exact dedup in c4
        ("line-dedup", ["language-id", "bad-words"]),
        ("near-dedup", [])]
    noclean = chain.plan(build_config("c4-noclean"))
    assert [seg.step.name for seg in noclean.wide] == ["url-dedup"]
    assert [s.name for s in noclean.wide[0].after] == ["language-id"]
    exact = chain.plan(build_config("c4-noclean", dedupe_exact=True))
    assert [seg.step.name for seg in exact.wide] == ["url-dedup", "exact-dedup"]
    assert exact.wide[0].after == ()


def test_the_planning_pass_decides_every_fusion():
    """pipelines/c4.py ``fusions``: URL dedup's groups claim lines only for a line dedup right
    after it, which then takes them; URL dedup runs its later page steps where it reads; the
    stores: parked for URL dedup and near-dedup when the build has a folder, carried otherwise."""
    def decided(config, parking=None):
        job = BeamJob(config, parking=parking)
        return {stage.segment.step.name: stage.fusion for stage in fusions(chain.plan(config), job)}

    from c4forge.pipelines.pages import Fused

    c4 = decided(build_config("c4", badwords=DEMO_BADWORDS), parking="/tmp/parked")
    assert c4["url-dedup"].fused == {Fused.PAGE_STEPS_AT_READER, Fused.CLAIM_LINES_IN_URL_GROUPS}
    assert c4["line-dedup"].fused == {Fused.LINES_CLAIMED_AT_URL_JOIN}
    assert c4["url-dedup"].store.parks and c4["near-dedup"].store.parks and not c4["line-dedup"].store.parks
    assert not decided(build_config("c4", badwords=DEMO_BADWORDS))["near-dedup"].store.parks
    gopher = decided(build_config("gopher"))  # exact dedup between URL dedup and near-dedup
    assert gopher["url-dedup"].fused == {Fused.PAGE_STEPS_AT_READER} and not gopher["exact-dedup"].fused
    lines_first = decided(build_config("c4", badwords=DEMO_BADWORDS, dedupe_urls=False))
    assert not lines_first["line-dedup"].fused
    assert Step is not None and Scope.PAGE  # (the record and its scopes: corpus/chain/step.py)


def test_help_docs_and_reports_state_the_order_of_the_list():
    from c4forge.cli.corpus import BUILD_HELP, CLEAN_HELP

    order = chain.describe()
    assert order.startswith("read WET") and "bad words -> " in order
    assert order in CLEAN_HELP and order in BUILD_HELP
    from scripts.render_docs import SECTIONS, rendered

    section = next(s for s in SECTIONS if s.name == "chain-table")
    text = section.doc.read_text(encoding="utf-8")
    assert chain.markdown_table() in text and rendered(text, section) == text, \
        "docs/corpus.md's chain table is out of date: run make docs"
    counters = {"split-wet-file/passed": 10, "too-long-filter/passed": 9,
                "badwords-filter/passed": 3, "badwords-filter/soft-passed": 2, "near-dedup/passed": 4}
    assert page_flow(counters) == {"read": 10, "length ok": 9, "bad words": 5, "near dedup": 4}
    # in the chain's own order: Gopher's quality before its repetition, as the chain runs them
    gopher = {"split-wet-file/passed": 10, "gopher-repetition/passed": 5, "gopher-quality/passed": 7}
    assert list(page_flow(gopher, chain.GOPHER_CHAIN)) == ["read", "gopher quality", "gopher repetition"]
    assert list(page_flow(gopher, chain.FINEWEB_CHAIN)) == ["read", "gopher repetition", "gopher quality"]
