"""Today's rule sets (corpus/steps/gopher_*.py, fineweb_quality.py, c4_quality.py, url_filter.py,
pii.py, quality_classifier.py) and the presets built on them:
each rule on texts worked out by hand; the `gopher` and `fineweb` presets giving the same
documents and counters in both runners (and on Flink, in make test-slow); and, in make test-slow,
every verdict equal to datatrove 0.10's own on every page of the shared crawl."""
import glob
import json
import os
import subprocess

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import ConfigError, build_config
from c4forge.corpus.document import Document
from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.rules import quality
from c4forge.corpus.steps import c4_quality, fineweb_quality, gopher_quality, gopher_repetition
from c4forge.corpus.steps.pii import format_pii
from c4forge.corpus.steps.quality_classifier import ClassifierFilter
from c4forge.corpus.steps.url_filter import UrlBlocklist, UrlListsUnavailable, load_lists, parse_list
from c4forge.corpus.text.words import count_sentences, split_into_words
from c4forge.pipelines.build import counters_of
from c4forge.pipelines.c4 import c4_pages
from tests.conftest import ROOT, flink_local_or_skip, shared_path

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
LISTS = str(ROOT / "tests" / "data" / "url-lists")
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
CLASSIFIER = str(ROOT / "tests" / "data" / "quality-classifier.ftz")
TEST_LISTS = [f"url-filter.lists={LISTS}", "url-filter.categories=adult"]

PROSE = ("The committee met on Tuesday to discuss the proposal. Members of the public were invited "
         "to share their views, and many did so with care. The chair thanked everyone for coming "
         "and said that a decision would be made at the next meeting of the full council. ") * 2


VARIED = ("Rivers shape the land they cross. Over centuries, water carves valleys, moves sediment "
          "and builds deltas where it meets the sea. Farmers have long settled on floodplains because "
          "the soil there is rich, although floods bring danger as well as fertility. Engineers now "
          "build levees and dams to control that risk, but each structure changes how a river "
          "behaves downstream, sometimes in ways that nobody expected when the work began.")


def test_words_are_spacys_tokens_stripped():
    assert split_into_words("Hello, world!  It's 3.5 km.\n\nOK") == (
        "Hello", ",", "world", "!", "It", "'s", "3.5", "km", ".", "OK")
    assert count_sentences("One here. Two here! Three?") == 3
    assert count_sentences("no end mark") == 1


def test_gopher_quality_each_rule():
    assert gopher_quality.gopher_quality_reason(PROSE, gopher_quality.GopherQuality()) is None
    assert gopher_quality.gopher_quality_reason("Too short to count.", gopher_quality.GopherQuality()) == "gopher_short_doc"
    long_words = " ".join(["extraordinarily"] * 60) + " the and"
    assert gopher_quality.gopher_quality_reason(long_words, gopher_quality.GopherQuality()) == "gopher_above_avg_threshold"
    hashes = PROSE + " #" * 40
    assert gopher_quality.gopher_quality_reason(hashes, gopher_quality.GopherQuality()) == "gopher_too_many_hashes"
    bullets = "\n".join(f"- item {i} of the list with the words" for i in range(20))
    assert gopher_quality.gopher_quality_reason(bullets, gopher_quality.GopherQuality()) == "gopher_too_many_bullets"
    no_stop = " ".join(["data science model training"] * 20)
    assert gopher_quality.gopher_quality_reason(no_stop, gopher_quality.GopherQuality()) == "gopher_enough_stop_words"
    # a rule switched off (None) lets its pages through to the next rule
    off = gopher_quality.GopherQuality(min_doc_words=None, min_stop_words=None)
    assert gopher_quality.gopher_quality_reason("Too short to count.", off) is None


def test_gopher_repetition_each_rule():
    rules = gopher_repetition.GopherRepetition()
    assert gopher_repetition.gopher_repetition_reason(VARIED, rules) is None
    assert gopher_repetition.gopher_repetition_reason("same line\n" * 10 + "other", rules) == "dup_line_frac"
    paragraphs = "\n\n".join(["a paragraph repeated"] * 4 + ["x", "y", "z", "w"])
    assert gopher_repetition.gopher_repetition_reason(paragraphs, rules) == "dup_para_frac"
    assert quality.duplicated_ngram_chars("a b c d e a b c d e".split(), 5) == 5
    assert quality.top_ngram_chars("to be or not to be".split(), 2) == len("to be") * 2
    assert gopher_repetition.gopher_repetition_reason("", rules) == "empty"


def test_fineweb_quality_each_rule():
    rules = fineweb_quality.FineWebQuality()
    assert fineweb_quality.fineweb_quality_reason(VARIED, rules) is None
    assert fineweb_quality.fineweb_quality_reason(VARIED + " ", rules) == "line_punct_ratio"  # lines are not stripped
    assert fineweb_quality.fineweb_quality_reason("no punctuation here at all\n" * 3, rules) == "line_punct_ratio"
    short = "\n".join([f"Short {i}." for i in range(5)] + [VARIED])
    assert fineweb_quality.fineweb_quality_reason(short, rules) == "short_line_ratio"
    assert fineweb_quality.fineweb_quality_reason("\n \n", rules) == "empty"


def test_c4_quality_as_fineweb_ran_it():
    kept = c4_quality.c4_quality(c4_quality.C4Quality(), Document(text=PROSE + "\nnav\nSee our privacy policy here now."))
    assert kept.page.text == PROSE.strip()
    assert c4_quality.c4_quality(c4_quality.C4Quality(),
                                 Document(text=PROSE + "\nvar x = {a: 1} in code")).outcome == "filtered:curly_bracket"
    assert c4_quality.c4_quality(c4_quality.C4Quality(),
                                 Document(text="One sentence only here.")).outcome == "filtered:too_few_sentences"


def test_pii_replaces_emails_and_public_ips_the_same_on_every_run():
    page = Document(text="Mail jane.doe@uni.edu or ops@example.net; host 8.8.8.8, lan 192.168.1.2.")
    verdict = format_pii(page)
    text = verdict.page.text
    assert "jane.doe@uni.edu" not in text and "ops@example.net" not in text
    assert "8.8.8.8" not in text and "192.168.1.2" in text  # private addresses stay
    assert {c.name: c.n for c in verdict.counts} == {"emails": 2, "ips": 1}
    assert format_pii(page).page.text == text  # no state across pages
    untouched = Document(text="Nothing to replace here.")
    assert format_pii(untouched).page is untouched


def test_url_filter_each_reason_with_the_shipped_lists():
    lists = load_lists(LISTS, ("adult",))
    block = UrlBlocklist(lists)
    assert block.reason("https://en.wikipedia.org/wiki/Cat") == "domain"
    assert block.reason("https://blog3.example.com/post/1") == "subdomain"
    assert block.reason("https://www.spektrum.de/x") == "domain"  # the UT1 category folder
    assert block.reason("https://www.mdavis.xyz/supermarket/") == "url"
    assert block.reason("https://shop.test/fashion/item") == "hard_blacklisted"
    assert block.reason("https://www.financescout24.de/kredit/autokredit") == "soft_blacklisted"
    assert block.reason("https://news.test/coronavirusupdate") == "blacklisted_subword"
    assert block.reason("https://blog1.example.com/post/1") is None
    # datatrove's list grammar: '#' lines are comments, an empty line is the empty word
    assert parse_list(["#x\n", "Foo-Bar\n", "\n"]) == {"foobar", ""}
    with pytest.raises(UrlListsUnavailable, match="no block list"):
        load_lists(str(ROOT / "docs"))


def test_the_presets_name_their_chain_and_refuse_an_unknown_one():
    from c4forge.corpus.chain.chains import FINEWEB_CHAIN, GOPHER_CHAIN

    assert build_config("fineweb").chain == FINEWEB_CHAIN and build_config("gopher").chain == GOPHER_CHAIN
    fineweb = build_config("fineweb")
    assert fineweb.settings_of("language-id").threshold == 0.65 and fineweb.runs("pii")
    assert not build_config("c4").runs("gopher-quality")
    with pytest.raises(ConfigError, match="name a chain|no step named 'refinedweb'"):
        build_config("c4", overrides=["chain=refinedweb"])


def _both_runners(paths, config):
    counters = Counters()
    local = run_chain(paths, config, counters)
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create(paths), config)
    assert_that(pages | beam.Map(lambda p: (p.url, p.text, p.near_dup_cluster_size)),
                equal_to([(d.url, d.text, d.near_dup_cluster_size) for d in local]))
    result = pipeline.run()
    result.wait_until_finish()
    assert {k: v for k, v in counters_of(result).items() if not k.startswith("output/")} == counters.as_dict()
    return local, counters.as_dict()


@pytest.mark.parametrize("preset", ["gopher", "fineweb"])
def test_presets_give_the_same_corpus_in_both_runners(preset):
    paths = [SAMPLE, *sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))[:1]]
    config = build_config(preset, overrides=TEST_LISTS)
    local, counters = _both_runners(paths, config)
    assert local
    namespaces = {name.split("/")[0] for name in counters}
    assert {"gopher-quality", "gopher-repetition"} <= namespaces
    if preset == "fineweb":
        assert {"url-filter", "c4-quality", "fineweb-quality", "pii"} <= namespaces
        assert counters["url-filter/filtered:domain"] > 0 and counters["language-filter/passed"] > 0


def _shared_pages() -> list[Document]:
    pages = []
    for folder in ("crawl", "crawl-extra"):
        for path in sorted(glob.glob(str(shared_path(folder) / "*.wet.gz"))):
            pages.extend(iter_file_documents(path))
    return pages


@pytest.mark.slow
def test_every_filter_alone_equals_datatrove_on_every_real_page(tmp_path):
    """Each filter run alone on every page of the shared crawl and crawl-extra keeps and drops
    exactly the pages datatrove 0.10's filter keeps and drops, reason by reason (datatrove in
    .venv-peers: `make bench` makes it, or `make peers`); the quality classifier gives
    datatrove's FastTextClassifierFilter's verdicts and scores."""
    if not PEERS_PYTHON.exists() or subprocess.run(
            [str(PEERS_PYTHON), "-c", "import datatrove, spacy, tldextract"], capture_output=True).returncode:
        pytest.skip("datatrove 0.10 with spaCy and tldextract is not in .venv-peers (make peers)")
    pages = _shared_pages()
    assert len(pages) > 4000
    with open(tmp_path / "pages.jsonl", "w", encoding="utf-8") as handle:
        for page in pages:
            handle.write(json.dumps({"url": page.url, "text": page.text}) + "\n")
    subprocess.run([str(PEERS_PYTHON), str(ROOT / "tests" / "datatrove_oracle.py"),
                    str(tmp_path / "pages.jsonl"), LISTS, str(tmp_path / "theirs.json"), CLASSIFIER],
                   check=True, timeout=3000,  # datatrove copies the model under HF_HOME
                   env={**os.environ, "PYTHONWARNINGS": "ignore", "HF_HOME": str(tmp_path / "hf")})
    theirs = json.loads((tmp_path / "theirs.json").read_text(encoding="utf-8"))
    ours = {
        "gopher_quality": [gopher_quality.gopher_quality_reason(p.text, gopher_quality.GopherQuality()) for p in pages],
        "gopher_repetition": [gopher_repetition.gopher_repetition_reason(p.text, gopher_repetition.GopherRepetition()) for p in pages],
        "fineweb_quality": [fineweb_quality.fineweb_quality_reason(p.text, fineweb_quality.FineWebQuality()) for p in pages],
        "url_filter": _url_reasons(pages, LISTS),
        "url_filter_integrated": _url_reasons(pages, str(tmp_path / "integrated")),
    }
    for name, mine in ours.items():
        differ = [(pages[i].url, mine[i], theirs[name][i]) for i in range(len(pages)) if mine[i] != theirs[name][i]]
        assert not differ, f"{name}: {len(differ)} pages differ, e.g. {differ[:3]}"
        assert any(r is not None for r in mine) and any(r is None for r in mine), name  # both verdicts seen
    c4 = [c4_quality.c4_quality(c4_quality.C4Quality(), p) for p in pages]
    expected = [{"text": v.page.text} if v.kept else {"reason": v.outcome.split(":", 1)[1]} for v in c4]
    differ = [p.url for p, a, b in zip(pages, expected, theirs["c4_quality"]) if a != b]
    assert not differ, f"c4_quality: {len(differ)} pages differ, e.g. {differ[:3]}"
    changed = [format_pii(p).page.text != p.text for p in pages]
    assert changed == theirs["pii_changed"] and any(changed)
    classifier = ClassifierFilter(CLASSIFIER, "hq", 0.5)
    verdicts = [classifier(p) for p in pages]
    assert [v.kept for v in verdicts] == [t["kept"] for t in theirs["classifier"]]
    assert any(v.kept for v in verdicts) and not all(v.kept for v in verdicts)
    assert [classifier.score(p.text) for p in pages] == [min(1.0, t["score"]) for t in theirs["classifier"]]


def _url_reasons(pages, lists: str) -> list:
    block = UrlBlocklist(load_lists(lists))
    return [block.reason(page.url) for page in pages]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["gopher", "fineweb"])
def test_presets_on_flink_give_the_one_process_corpus(tmp_path, preset):
    from c4forge.corpus.output.shards import read_manifest, read_shard, shard_paths
    from c4forge.pipelines.build import run_build
    flink_local_or_skip("the preset engine test")
    paths = [SAMPLE, *sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))]
    config = build_config(preset, overrides=TEST_LISTS)
    counters = Counters()
    local = run_chain(paths, config, counters)
    out = str(tmp_path / "out")
    run_build(paths, out, config, runner="flink-local", workers=2, log=lambda *_: None)
    built = sorted((row["url"], row["text"]) for split in ("train", "validation")
                   for path in shard_paths(out, split) for row in read_shard(path, ["url", "text"]).to_pylist())
    assert built == sorted((d.url, d.text) for d in local) and built
    manifest = read_manifest(out)
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == counters.as_dict()
