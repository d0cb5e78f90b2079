"""The page store (pipelines/store.py): pages parked on disk read back byte for byte by their
spots, a clear error when their file is gone or cut short, carried and parked references read
back alike, and a build that parks pages writes the bytes, counters and rule samples of one that
carries them through the shuffles."""
import json
import os
import random
import subprocess
import sys

import pytest

from c4forge.corpus.config import build_config
from c4forge.corpus.document import Document, from_bytes, to_bytes
from c4forge.corpus.output.shards import read_manifest
from c4forge.pipelines import store
from c4forge.pipelines.build import PARKED_PAGES, run_build
from c4forge.pipelines.engines.workers.worker_boot import pin_to_free_core
from c4forge.pipelines.store import INLINE, PageRef, PageStore, ParkingReader, ParkingWriter, Spot
from tests.conftest import ROOT
from tests.test_pipeline import DEMO_BADWORDS, SAMPLE, crawl_files
from tests.wetfiles import record, wet_file

SUBJECTS = ["The garden committee", "A local teacher", "The river authority", "Our library team",
            "The town council", "A young farmer"]
VERBS = ["planned", "discussed", "reviewed", "described", "approved", "measured"]
OBJECTS = ["the new bridge", "the summer festival", "the school budget", "the water supply",
           "the old market", "the bus timetable"]
TAILS = ["before the winter began", "after a long meeting", "with the help of volunteers",
         "during the spring season", "in front of many residents", "without any delay"]


def sentence(i: int) -> str:
    return f"{SUBJECTS[i % 6]} {VERBS[i // 6 % 6]} {OBJECTS[i // 36 % 6]} {TAILS[i // 216 % 6]}."


def near_duplicates(tmp_path, copies: int = 4) -> str:
    """A WET file of ``copies`` pages on different hosts that differ in one sentence per line:
    no line is shared (line dedup keeps them all), Jaccard about 0.9 (near-dedup keeps one)."""
    pages = []
    for k in range(copies):
        lines = [" ".join(sentence(line * 12 + j) for j in range(11)) + " " + sentence(400 + 7 * k + line)
                 for line in range(4)]
        pages.append(record(f"http://host{k}.example.org/story", "\n".join(lines)))
    path = tmp_path / "near.warc.wet.gz"
    path.write_bytes(wet_file(pages))
    return str(path)


def document(i: int) -> Document:
    text = "\n".join(f"line {i}.{j} " + "é" * (i % 7) + "word " * (i * 13 % 90) for j in range(1 + i % 5))
    return Document(url=f"https://example.org/{i}", normalized_url=f"example.org/{i}", text=text,
                    timestamp="2019-07-01T00:00:00Z", content_length=str(len(text)), content_type="text/plain",
                    language="en", language_score=0.9, source="x.wet.gz", offset=i)


def page(i: int) -> bytes:
    return to_bytes(document(i), compress=True)


def test_parked_pages_come_back_byte_for_byte_in_any_order(tmp_path):
    folder = str(tmp_path / "parked")
    pages = [page(i) for i in range(60)]
    spots = []
    for part in (pages[:25], pages[25:]):  # two bundles: two files
        writer = ParkingWriter(folder)
        spots += [writer.put(p) for p in part]
        writer.close()
    assert len(os.listdir(folder)) == 2
    for spot, packed in zip(spots, pages):
        assert Spot.from_bytes(spot).length == len(packed)
    order = list(range(len(pages)))
    random.Random(7).shuffle(order)
    reader = ParkingReader(folder, max_open=1)  # every switch of file closes the other
    assert reader.fetch_all([spots[i] for i in order]) == [pages[i] for i in order]
    assert [reader.fetch(spots[i]) for i in order] == [pages[i] for i in order]
    reader.close()


@pytest.mark.parametrize("parked", [False, True])
def test_a_store_gives_back_its_pages_with_their_cluster_sizes(tmp_path, parked):
    """Carried or parked, a PageRef reads back as the page it was made from, with the cluster
    size set on the reference; it crosses a shuffle as a plain tuple."""
    kept = PageStore(str(tmp_path / "parked")) if parked else INLINE
    writer = kept.writer()
    refs = [kept.page_ref(document(i), writer) for i in range(12)]
    writer.close()
    assert all((ref.url, ref.normalized_url, ref.text_size) == (document(i).url, document(i).normalized_url,
                                                                document(i).text_size())
               for i, ref in enumerate(refs))
    assert len(refs[0].ref) == (28 if parked else len(to_bytes(document(0), True)))
    refs = [PageRef._make(tuple(ref._replace(cluster_size=1 + i % 3))) for i, ref in enumerate(refs)]
    reader = kept.reader()
    back = [from_bytes(data) for data in reader.pages(refs[::-1])][::-1]
    reader.close()
    assert [(d.url, d.text, d.near_dup_cluster_size) for d in back] == \
        [(document(i).url, document(i).text, 1 + i % 3) for i in range(12)]
    assert kept.compression is (not parked)


def test_a_parked_file_gone_or_cut_short_is_a_clear_error(tmp_path):
    folder = str(tmp_path / "parked")
    writer = ParkingWriter(folder)
    first, second = writer.put(page(1)), writer.put(page(2))
    writer.close()
    (path,) = [os.path.join(folder, name) for name in os.listdir(folder)]
    with open(path, "r+b") as handle:
        handle.truncate(len(page(1)) + 3)
    reader = ParkingReader(folder)
    assert reader.fetch(first) == page(1)
    with pytest.raises(ValueError, match="file ends early"):
        reader.fetch(second)
    reader.close()
    os.remove(path)
    with pytest.raises(FileNotFoundError, match="parked pages .* are gone"):
        ParkingReader(folder).fetch(first)


def test_a_build_that_parks_pages_writes_what_carrying_them_writes(tmp_path, monkeypatch):
    """The DirectRunner build parks the pages its reader cleans and those near-dedup hashes
    (local staging) and writes the shards, counters and rule samples (every page traced:
    dropped near-duplicates are read back for their samples) of the same build with the pages
    carried through the shuffles."""
    parked, put = [], []
    page_ref, put_bytes = PageStore.page_ref, ParkingWriter.put
    monkeypatch.setattr(PageStore, "page_ref",
                        lambda self, page, writer: (self.parks and parked.append(1)) or page_ref(self, page, writer))
    monkeypatch.setattr(ParkingWriter, "put", lambda self, packed: put.append(1) or put_bytes(self, packed))
    cfg = build_config("c4", badwords=str(DEMO_BADWORDS), overrides=["rule_samples.rate=1"])
    paths = crawl_files(tmp_path) + [str(SAMPLE), near_duplicates(tmp_path)]
    results = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("C4FORGE_PARK_PAGES", mode)
        out = tmp_path / f"park-{mode}"
        manifest = run_build(paths, str(out), cfg, log=lambda *_: None, docs_per_shard=7)
        assert not (out / PARKED_PAGES).exists()
        files = sorted(name for name in os.listdir(out) if not name.startswith("_"))
        results[mode] = ({name: (out / name).read_bytes() for name in files}, manifest["counters"],
                         json.loads((out / "_rule-samples.json").read_text()))
        if mode == "1":
            assert manifest["counters"]["near-dedup/filtered"] >= 1
            assert len(parked) == manifest["counters"]["near-dedup/passed"] + \
                manifest["counters"]["near-dedup/filtered"] > 20
            # the reader parks every page it cleaned, the revisited page's older crawl included
            assert len(put) > 2 * len(parked)
            parked.clear()
            put.clear()
    assert not parked and not put  # C4FORGE_PARK_PAGES=0 parks nothing
    assert results["1"] == results["0"] and len(results["1"][0]) >= 4
    assert any(rule["rule"] == "near-dedup/filtered" and rule["samples"] for rule in results["1"][2]["rules"])
    assert read_manifest(str(tmp_path / "park-1"))["splits"] == read_manifest(str(tmp_path / "park-0"))["splits"]


def test_parking_is_off_where_staging_is_not_a_local_path(monkeypatch):
    from c4forge.pipelines.build import parking_folder

    monkeypatch.delenv("C4FORGE_PARK_PAGES", raising=False)
    assert parking_folder("gs://bucket/out/.staging") is None
    assert parking_folder("/data/out/.staging") == os.path.join("/data/out/.staging", PARKED_PAGES)
    monkeypatch.setenv("C4FORGE_PARK_PAGES", "0")
    assert parking_folder("/data/out/.staging") is None
    assert store.SUFFIX == ".pages"


def test_workers_each_claim_a_core_of_their_own(tmp_path):
    """SDK workers of a managed engine bind a core each (pipelines/engines/workers/worker_boot.py); once every
    core of the affinity set is claimed, a worker stays unbound."""
    cores = sorted(os.sched_getaffinity(0))
    script = ("import os, sys; from c4forge.pipelines.engines.workers.worker_boot import pin_to_free_core; "
              "core = pin_to_free_core(sys.argv[1]); print(core, sorted(os.sched_getaffinity(0)))")
    seen = []
    for _ in range(len(cores) + 1):
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "claims")], check=True,
                             capture_output=True, text=True, cwd=ROOT).stdout.split(" ", 1)
        seen.append((out[0], out[1].strip()))
    assert [core for core, _ in seen[:-1]] == [str(c) for c in cores]
    assert all(affinity == f"[{core}]" for core, affinity in seen[:-1])
    assert seen[-1] == ("None", str(cores))
    assert pin_to_free_core  # imported here: the module is what the boot script runs


@pytest.mark.parametrize("overrides", [[], ["pii.on=true"]])
def test_parked_pages_read_back_as_documents_and_through_later_page_steps(tmp_path, overrides):
    """c4_pages with a parking folder: the end of the chain read back as Documents (``UnrefFn``),
    and with a page step after near-dedup (PII, which rewrites pages), that step run on the
    read-back pages: the documents and counters of the one-process chain."""
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    from c4forge.core.counters import Counters
    from c4forge.corpus.chain.local import run_chain
    from c4forge.pipelines.build import counters_of
    from c4forge.pipelines.c4 import c4_pages
    from tests.test_chain import IN_MEMORY

    cfg = build_config("c4", badwords=str(DEMO_BADWORDS), overrides=overrides)
    paths = crawl_files(tmp_path) + [str(SAMPLE), near_duplicates(tmp_path)]
    counters = Counters()
    expected = sorted((d.url, d.text, d.near_dup_cluster_size) for d in run_chain(paths, cfg, counters))
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create(paths), cfg, parking=str(tmp_path / "parked"))
    assert_that(pages | beam.Map(lambda p: (p.url, p.text, p.near_dup_cluster_size)), equal_to(expected))
    result = pipeline.run()
    result.wait_until_finish()
    assert counters_of(result) == counters.as_dict()
    assert any(size > 1 for _, _, size in expected)
    assert len(os.listdir(tmp_path / "parked")) >= 2  # the reader's files and near-dedup's
    assert any(name.startswith("pii/") for name in counters.as_dict()) == bool(overrides)
