"""Exact-text dedup, the corpus-wide step added through the extension point (corpus/chain/chains.py):
its two twins (corpus/dedup/exact_dedup.py, pipelines/twins/exact_dedup.py) and one line in the chain. The
contract: pages of the same normalised text keep their earliest crawl (equal times: the smallest
md5(url)); both runners, and an engine, give the same documents and counters wherever the step
sits in the chain."""
import gzip
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from c4forge.core.counters import Counters
from c4forge.corpus.chain import chains as chain
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.dedup.exact_dedup import text_key, winner_order
from c4forge.corpus.document import Document
from c4forge.corpus.read.records import iter_records
from c4forge.pipelines.build import counters_of
from c4forge.pipelines.c4 import c4_pages
from tests.conftest import ROOT
from tests.wetfiles import renamed_copy

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
DEMO_BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]
EXACT = chain.step_of("exact-dedup")
WITHOUT = tuple(s for s in chain.steps_of(chain.C4_CHAIN) if s is not EXACT)


def mirrored(tmp_path: Path) -> list[str]:
    """The sample crawl and a mirror of it (every host renamed, the text the same)."""
    mirror = tmp_path / "mirror.warc.wet.gz"
    with open(mirror, "wb") as handle:
        for record in iter_records(SAMPLE):
            handle.write(gzip.compress(renamed_copy(record, 1)))
    return [SAMPLE, str(mirror)]


def test_text_key_normalises_case_width_and_spacing():
    assert text_key("Hello  World.\nNext line") == text_key("hello world. next\tline ")
    assert text_key("ＡＢＣ") == text_key("abc")  # NFKC: full-width letters
    assert text_key("Hello world.") != text_key("Hello world!")


def test_the_earliest_crawl_wins_and_ties_do_not_depend_on_order():
    early = Document(url="http://b.example/", text="t", timestamp="2019-01-01T00:00:00Z")
    late = Document(url="http://a.example/", text="t", timestamp="2019-02-01T00:00:00Z")
    assert min([late, early], key=winner_order) is early
    twin = Document(url="http://a.example/", text="t", timestamp="2019-01-01T00:00:00Z")
    assert min([early, twin], key=winner_order) is min([twin, early], key=winner_order)


def _both_runners(paths, config, with_chain):
    counters = Counters()
    local = run_chain(paths, config, counters, chain=with_chain)
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create(paths), config, chain=with_chain)
    assert_that(pages | beam.Map(lambda p: (p.url, p.text, p.near_dup_cluster_size)),
                equal_to([(d.url, d.text, d.near_dup_cluster_size) for d in local]))
    result = pipeline.run()
    result.wait_until_finish()
    found = {k: v for k, v in counters_of(result).items() if not k.startswith("output/")}
    assert found == counters.as_dict()
    return local, counters.as_dict()


@pytest.mark.parametrize("after", ["clean-page", "line-dedup", "bad-words"])
def test_exact_dedup_anywhere_in_the_chain_gives_the_same_corpus_in_both_runners(tmp_path, after):
    """Between URL dedup and line dedup (the engine's URL groups then claim no lines), after
    line dedup, and just before near-dedup: both runners keep the same documents and count the
    same; the mirror's copies are the ones it drops where line dedup has not emptied them."""
    paths = mirrored(tmp_path)
    config = build_config("c4", badwords=DEMO_BADWORDS, dedupe_exact=True, near_dedup=False)
    local, counters = _both_runners(paths, config, chain.with_step(EXACT, after, WITHOUT))
    assert counters["exact-dedup/bytes-in"] > 0
    if after == "clean-page":  # before line dedup: every mirrored page is an exact copy
        assert counters["exact-dedup/filtered"] >= counters["exact-dedup/groups"] > 100
        assert (counters["exact-dedup/passed"] + counters["exact-dedup/filtered"]
                == counters["clean-page/passed"])
    assert not any(d.url.startswith(("http://c1.", "https://c1.")) and
                   any(e.text == d.text and e is not d for e in local) for d in local)


def test_exact_dedup_without_line_dedup_keeps_one_page_per_text(tmp_path):
    """c4-noclean has no line dedup: the mirror doubles every page until exact dedup halves it."""
    paths = mirrored(tmp_path)
    plain = run_chain(paths, build_config("c4-noclean"), Counters())
    config = build_config("c4-noclean", dedupe_exact=True)
    local, found = _both_runners(paths, config, chain.steps_of(chain.C4_CHAIN))
    texts = [text_key(d.text) for d in local]
    assert len(texts) == len(set(texts)) == len({text_key(d.text) for d in plain}) < len(plain)
    # every unique URL met it (it runs right after URL dedup here); language ID follows
    assert found["exact-dedup/passed"] + found["exact-dedup/filtered"] == found["duplicate-url-filter/passed"]
    assert found["exact-dedup/filtered"] >= len(plain) - len(local) > 100


@pytest.mark.slow
def test_exact_dedup_on_flink_gives_the_one_process_corpus(tmp_path):
    """The contract on an engine: --runner flink-local (2 workers) builds what corpus clean's
    chain keeps, every counter the same."""
    from c4forge.corpus.output.shards import read_manifest, read_shard, shard_paths
    from c4forge.pipelines.build import run_build
    from c4forge.pipelines.engines.jvm import jars

    try:
        jars.java_executable("the exact-dedup engine test")
        jars.fetch_jars(jars.load_lock("flink-1.19-job-server"))
    except jars.EngineError as exc:
        pytest.skip(f"flink unavailable here: {exc}")
    paths = mirrored(tmp_path)
    config = build_config("c4-noclean", dedupe_exact=True)
    counters = Counters()
    local = run_chain(paths, config, counters)
    run_build(paths, str(tmp_path / "out"), config, runner="flink-local", workers=2, log=lambda *_: None)
    manifest = read_manifest(str(tmp_path / "out"))
    built = sorted((row["url"], row["text"]) for split in ("train", "validation")
                   for path in shard_paths(str(tmp_path / "out"), split)
                   for row in read_shard(path, ["url", "text"]).to_pylist())
    assert built == sorted((d.url, d.text) for d in local)
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == counters.as_dict()
    assert counters["exact-dedup/filtered"] > 100
    assert manifest["build"]["runner"] == "flink-local" and manifest["build"]["engine"]["engine"] == "flink"
