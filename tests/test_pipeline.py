"""The Beam pipeline: exact documents and counters, equality with the single-process chain,
bad files inside a build, atomic re-runs, and reading a Common Crawl slice over http."""
import gzip
import shutil

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.dedup.line_dedup import owner_of
from c4forge.corpus.output.shards import (
    iter_corpus_documents,
    read_manifest,
    shard_info,
    shard_paths,
    write_corpus,
)
from c4forge.pipelines.build import BuildError, counters_of, run_build
from c4forge.pipelines.c4 import c4_pages
from tests.conftest import ROOT, shared_path
from tests.wetfiles import record, wet_file

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
DEMO_BADWORDS = ROOT / "corpus" / "data" / "demo-badwords"
IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def article(topic, extra=""):
    return "\n".join([
        "Home | About | Contact",
        f"The {topic} committee met on Tuesday to agree the plan for next year.",
        f"Members of the {topic} group said the budget had been spent carefully.",
        f"A public meeting about the {topic} plans will be held in the town hall.",
        "This site uses cookies to give you the best experience on our website.",
    ] + ([extra] if extra else []))


def crawl_files(tmp_path):
    """Two files: a page revisited across files, an exact copy on another host, a shared menu."""
    a = [record("http://a.example.com/one", article("garden"), date="2019-01-01T00:00:00Z"),
         record("http://b.example.com/two", article("library"), date="2019-01-02T00:00:00Z")]
    b = [record("https://www.a.example.com/one/", article("garden", "An update was added later to the page."),
                date="2020-05-05T00:00:00Z"),
         record("http://copy.example.net/two", article("library"), date="2019-01-03T00:00:00Z"),
         record("http://c.example.com/three", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.")]
    paths = []
    for name, records in (("a.warc.wet.gz", a), ("b.warc.wet.gz", b)):
        path = tmp_path / name
        path.write_bytes(wet_file(records))
        paths.append(str(path))
    return paths


def config(**settings):
    return build_config("c4", badwords=str(DEMO_BADWORDS), **settings)


def test_test_pipeline_exact_documents_and_counters(tmp_path):
    paths = crawl_files(tmp_path)
    cfg = config()
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create(paths), cfg)
    garden = article("garden", "An update was added later to the page.").split("\n")[1:4]
    library = article("library").split("\n")[1:4]
    expected = [
        # the newest crawl of the revisited page, menu and cookie lines cleaned away
        ("https://www.a.example.com/one/", "\n".join(garden + ["An update was added later to the page."])),
        # of the two identical library pages, the line owner (smallest md5(url)) keeps the text
        (owner_of(["http://b.example.com/two", "http://copy.example.net/two"]), "\n".join(library)),
    ]
    assert_that(pages | beam.Map(lambda p: (p.url, p.text)), equal_to(expected))
    result = pipeline.run()
    result.wait_until_finish()
    counters = counters_of(result)
    assert counters["split-wet-file/passed"] == 5
    assert counters["duplicate-url-filter/filtered"] == 1
    assert counters["clean-page/filtered:loremipsum"] == 1
    assert counters["clean-page/line-filtered:policy"] == 3
    assert counters["dedupe-lines/filtered:empty"] == 1  # the copy lost every line to its owner


def test_equally_new_crawls_of_a_url_keep_the_same_record_in_any_order_and_folder(tmp_path):
    """Regression (CI of session 10): of two crawls of one URL with one timestamp, the kept one
    followed the input's order, so the pinned build changed with the folder the crawl sat in.
    Now the smaller record id (md5 of file *name* and offset) wins, in both chains, whatever the
    order of the inputs and whichever folder sorts first."""
    from c4forge.corpus.text.urls import record_id

    date = "2019-01-01T00:00:00Z"
    texts = {"x": article("garden", "This copy was read from the file named x."),
             "y": article("garden", "This copy was read from the file named y.")}
    paths = {}
    for name, folder in (("x", "z-folder"), ("y", "a-folder")):  # path order != name order
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / f"{name}.warc.wet.gz"
        path.write_bytes(wet_file([record("http://a.example.com/one", texts[name], date=date)]))
        paths[name] = str(path)
    offset = len(wet_file([]))  # the record follows the warcinfo member in both files
    winner = min("xy", key=lambda name: record_id(f"{name}.warc.wet.gz", offset))
    expected = texts[winner].split("\n")[-1]
    cfg = config(dedupe_lines=False)
    for order in (["x", "y"], ["y", "x"]):
        docs = run_chain([paths[n] for n in order], cfg, Counters())
        assert [d.text.split("\n")[-1] for d in docs] == [expected]
        pipeline = BeamTestPipeline(argv=IN_MEMORY)
        pages = c4_pages(pipeline | beam.Create([paths[n] for n in order]), cfg)
        assert_that(pages | beam.Map(lambda p: (p.text.split("\n")[-1], p.source)),
                    equal_to([(expected, paths[winner])]))
        pipeline.run().wait_until_finish()


def test_build_equals_single_process_chain_on_sample(tmp_path):
    cfg = config()
    out = tmp_path / "corpus"
    manifest = run_build([str(SAMPLE)], str(out), cfg, log=lambda *_: None, shard_format="parquet",
                         docs_per_shard=50)
    counters = Counters()
    docs = run_chain([str(SAMPLE)], cfg, counters)
    local = {d.url: d for d in docs}
    built = list(iter_corpus_documents(str(out), "train")) + list(iter_corpus_documents(str(out), "validation"))
    assert len(built) == len(local) == manifest["counters"]["near-dedup/passed"]
    for doc in built:
        mine = local[doc["url"]]
        assert (doc["text"], doc["near_dup_cluster_size"]) == (mine.text, mine.near_dup_cluster_size)
    # The same rows, every column, in the same shards as the single-process writer's Arrow files.
    write_corpus(str(tmp_path / "single"), docs, {"config": cfg.to_dict()}, docs_per_shard=50)
    for split in ("train", "validation"):
        beam_paths = shard_paths(str(out), split)
        assert [p.replace(".parquet", ".arrow").rsplit("/", 1)[1] for p in beam_paths] == \
            [p.rsplit("/", 1)[1] for p in shard_paths(str(tmp_path / "single"), split)]
        assert list(iter_corpus_documents(str(out), split)) == list(iter_corpus_documents(str(tmp_path / "single"), split))
    assert manifest["shard_format"] == "parquet"
    assert shard_info(shard_paths(str(out), "train")[0])["config_hash"] == manifest["config_hash"]
    expected = counters.as_dict()
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == expected
    assert manifest["splits"]["train"]["documents"] + manifest["splits"]["validation"]["documents"] == len(built)
    assert manifest["versions"]["apache-beam"]


def test_clean_and_build_write_the_same_bytes_from_relative_paths(tmp_path, monkeypatch):
    """Regression: `corpus build` gave its workers absolute paths, so its documents' ``source``
    was absolute (``corpus clean``: as given) and its shards hashed the config with an absolute
    ``--badwords`` while the manifest hashed it as given."""
    shutil.copy(SAMPLE, tmp_path / "sample.warc.wet.gz")
    shutil.copytree(DEMO_BADWORDS, tmp_path / "words")
    monkeypatch.chdir(tmp_path)
    common = ["-i", "sample.warc.wet.gz", "--preset", "c4", "--badwords", "words", "-q"]
    for command in ("build", "clean"):
        result = CliRunner().invoke(cli, [command, *common, "-o", command])
        assert result.exit_code == 0, result.output
    for split in ("train", "validation"):
        built, cleaned = shard_paths("build", split), shard_paths("clean", split)
        assert [p.split("/")[-1] for p in built] == [p.split("/")[-1] for p in cleaned]
        for a, b in zip(built, cleaned):
            assert open(a, "rb").read() == open(b, "rb").read(), a
    manifest = read_manifest("build")
    assert manifest["config"]["bad-words"]["lists"] == "words"
    assert shard_info(shard_paths("build", "train")[0])["config_hash"] == manifest["config_hash"] \
        == read_manifest("clean")["config_hash"]
    assert {d["source"] for d in iter_corpus_documents("build", "train")} == {"sample.warc.wet.gz"}


def test_rerun_refuses_then_overwrites_and_failures_leave_output(tmp_path, monkeypatch):
    out = tmp_path / "corpus"
    run_build([str(SAMPLE)], str(out), config(near_dedup=False), log=lambda *_: None,
              beam_args=IN_MEMORY)
    first = read_manifest(str(out))
    with pytest.raises(BuildError, match="already holds a c4forge corpus"):
        run_build([str(SAMPLE)], str(out), config(), log=lambda *_: None, beam_args=IN_MEMORY)
    # A pipeline that fails in a worker (a rule raising) leaves the old corpus as it was.
    from c4forge.corpus.steps import clean_page as clean_step

    def broken(page, rules):
        raise RuntimeError("a rule failed")

    with monkeypatch.context() as patched:
        patched.setattr(clean_step, "clean_page", broken)
        with pytest.raises(BuildError, match="unchanged"):
            run_build([str(SAMPLE)], str(out), config(), overwrite=True, log=lambda *_: None,
                      beam_args=IN_MEMORY)
    assert read_manifest(str(out)) == first
    assert sum(1 for _ in iter_corpus_documents(str(out))) == first["splits"]["train"]["documents"]
    run_build([str(SAMPLE)], str(out), config(), overwrite=True, log=lambda *_: None, beam_args=IN_MEMORY)
    assert read_manifest(str(out))["config"]["near-dedup"]["on"] is True
    assert not list(out.glob(".c4forge-staging-*"))  # the failed run's staging is cleaned up too


def test_bad_files_inside_a_build_are_counted(tmp_path, local_server):
    good = crawl_files(tmp_path)
    corrupt = tmp_path / "corrupt.warc.wet.gz"
    data = bytearray(wet_file([record("http://x.example.com/1", article("harbour"))] * 3))
    data[len(data) // 2:len(data) // 2 + 16] = b"\x00" * 16
    corrupt.write_bytes(bytes(data))
    base, _ = local_server(tmp_path)
    inputs = good + [str(corrupt), f"{base}/missing.warc.wet.gz"]
    manifest = run_build(inputs, str(tmp_path / "out"), config(), log=lambda *_: None, beam_args=IN_MEMORY)
    counters = manifest["counters"]
    assert counters["split-wet-file/skipped:unreadable_file"] == 1
    assert counters["split-wet-file/skipped:corrupt_gzip_member"] >= 1
    urls = {d["url"] for d in iter_corpus_documents(str(tmp_path / "out"))}
    assert "https://www.a.example.com/one/" in urls


def test_crawl_slice_over_http(tmp_path, local_server):
    crawl = shared_path("crawl")
    listing_dir = tmp_path / "crawl-data" / "CC-MAIN-2019-30"
    segment = tmp_path / "crawl-data" / "CC-MAIN-2019-30" / "segments" / "1" / "wet"
    segment.mkdir(parents=True)
    names = ["cc-2019-30-dolma.warc.wet.gz", "web-readability.warc.wet.gz", "cc-2024-22-whirlwind.warc.wet.gz"]
    for name in names:
        shutil.copy(crawl / name, segment / name)
    listing = "\n".join(f"crawl-data/CC-MAIN-2019-30/segments/1/wet/{n}" for n in names) + "\n"
    (listing_dir / "wet.paths.gz").write_bytes(gzip.compress(listing.encode()))
    base, log = local_server(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["build", "--crawl", "CC-MAIN-2019-30", "--files", "1:3",
                                      "--cc-base-url", base, "-o", str(out), "--preset", "c4-noclean",
                                      "--direct_running_mode=in_memory", "--direct_num_workers=1"])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(str(out))
    assert [i.rsplit("/", 1)[1] for i in manifest["inputs"]] == names[1:3]
    assert manifest["counters"]["split-wet-file/passed"] == 131
    assert any("wet.paths.gz" in line for line in log)


def test_crawl_warc_slice_over_http(tmp_path, local_server):
    """--crawl with --input-format warc reads the dump's warc.paths.gz and extracts the HTML."""
    warc_dir = shared_path("crawl", "warc")
    segment = tmp_path / "crawl-data" / "CC-MAIN-2020-34" / "segments" / "1" / "warc"
    segment.mkdir(parents=True)
    shutil.copy(warc_dir / "cc-2020-34-sample.warc.gz", segment / "sample.warc.gz")
    listing = "crawl-data/CC-MAIN-2020-34/segments/1/warc/sample.warc.gz\n"
    (tmp_path / "crawl-data" / "CC-MAIN-2020-34" / "warc.paths.gz").write_bytes(gzip.compress(listing.encode()))
    base, log = local_server(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["build", "--crawl", "CC-MAIN-2020-34", "--input-format", "warc",
                                      "--cc-base-url", base, "-o", str(out), "--preset", "c4-noclean",
                                      "--languages", "", "--direct_running_mode=in_memory",
                                      "--direct_num_workers=1"])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(str(out))
    assert manifest["counters"]["split-wet-file/passed"] == 16
    assert any("warc.paths.gz" in line for line in log) and not any("wet.paths.gz" in line for line in log)


def test_stats_and_show(tmp_path):
    out = tmp_path / "corpus"
    run_build([str(SAMPLE)], str(out), config(), log=lambda *_: None, beam_args=IN_MEMORY)
    stats = CliRunner().invoke(cli, ["stats", str(out)])
    assert stats.exit_code == 0 and "| clean-page | filtered:loremipsum | 4 | pages |" in stats.output
    assert "| dedupe-lines | line-filtered:global_duplicate |" in stats.output
    show = CliRunner().invoke(cli, ["show", str(out), "-n", "2"])
    assert show.exit_code == 0 and show.output.count("--- http") == 2
    missing = CliRunner().invoke(cli, ["stats", str(tmp_path)])
    assert missing.exit_code != 0 and "no _manifest.json" in missing.output


def test_build_equals_chain_on_shared_crawl(tmp_path):
    """Multi-process DirectRunner over all real pages: same documents and counters as one
    process (guards against lost elements, seen with Beam's multi-threading mode)."""
    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    cfg = build_config("c4", badwords=str(shared_path("badwords")))
    manifest = run_build(crawl, str(tmp_path / "c4"), cfg, log=lambda *_: None,
                         beam_args=["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    counters = Counters()
    local = {d.url: d.text for d in run_chain(crawl, cfg, counters)}
    built = {d["url"]: d["text"] for s in ("train", "validation") for d in iter_corpus_documents(str(tmp_path / "c4"), s)}
    assert built == local and len(built) > 300
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == counters.as_dict()
    # The single-process writer produces the very same shard files.
    from c4forge.corpus.output.shards import write_corpus

    docs = run_chain(crawl, cfg, Counters())
    write_corpus(str(tmp_path / "local"), docs, {"config": cfg.to_dict(), "counters": {}})
    for name in read_manifest(str(tmp_path / "c4"))["splits"]["train"]["files"]:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "c4" / name).read_bytes()


def test_beam_build_from_warc_equals_the_chain(tmp_path):
    """WARC input through Beam's worker processes (extraction in SDK worker threads, where the
    time limit runs in a helper thread): the same documents and counters as one process."""
    warcs = [str(shared_path("crawl", "warc", "cc-2020-34-sample.warc.gz")),
             str(shared_path("crawl", "warc", "cc-2024-22-whirlwind.warc.gz"))]
    cfg = build_config("c4-warc", badwords=str(shared_path("badwords")), languages="",
                       overrides=["clean=false"])
    manifest = run_build(warcs, str(tmp_path / "warc"), cfg, log=lambda *_: None,
                         beam_args=["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    counters = Counters()
    local = {d.url: d.text for d in run_chain(warcs, cfg, counters)}
    built = {d["url"]: d["text"] for s in ("train", "validation") for d in iter_corpus_documents(str(tmp_path / "warc"), s)}
    assert built == local and len(built) >= 10
    assert {k: v for k, v in manifest["counters"].items() if not k.startswith("output/")} == counters.as_dict()
    assert manifest["extraction"]["extractor"] == "cascade"  # the WARC default
    assert counters["split-wet-file/extract:kept_fast"] > 0  # the router ran in Beam's workers too


def test_corpus_package_never_imports_beam():
    import subprocess
    import sys

    code = ("import importlib, pkgutil, sys, corpus\n"
            "for m in pkgutil.iter_modules(corpus.__path__):\n"
            "    importlib.import_module('corpus.' + m.name)\n"
            "print('apache_beam' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_crawl_listing_errors(local_server, tmp_path):
    from c4forge.corpus.read.commoncrawl import CrawlListingError, parse_slice, wet_urls

    assert parse_slice("2:5") == slice(2, 5) and parse_slice("3") == slice(0, 3)
    with pytest.raises(CrawlListingError, match="A:B"):
        parse_slice("x:y")
    with pytest.raises(CrawlListingError, match="CC-MAIN-2019-30"):
        wet_urls("2019-30")
    base, _ = local_server(tmp_path)
    with pytest.raises(CrawlListingError, match="cannot read the WET listing"):
        wet_urls("CC-MAIN-2019-30", "0:1", base)


def test_direct_runner_warns_before_a_build_too_big_for_memory(tmp_path, monkeypatch):
    import c4forge.pipelines.build as build

    logged = []
    monkeypatch.setattr(build, "available_memory", lambda: 10 ** 8)  # 100 MB free
    run_build([str(SAMPLE)], str(tmp_path / "out"), config(), log=logged.append, beam_args=IN_MEMORY)
    assert any(line.startswith("warning: the DirectRunner keeps every shuffle in memory")
               for line in logged)
    monkeypatch.setattr(build, "available_memory", lambda: 10 ** 12)
    logged.clear()
    run_build([str(SAMPLE)], str(tmp_path / "out2"), config(), log=logged.append, beam_args=IN_MEMORY)
    assert not any("warning" in line for line in logged)
    # the estimate: 0.25 GB per process + 3.5 (one process) or 4.5 (multi-processing) bytes per
    # byte of text; gzip inputs count 2.3x
    assert build.direct_runner_memory({"a.wet.gz": 10 ** 9}, 2) == pytest.approx(0.75e9 + 10.35e9)
    assert build.direct_runner_memory({"a.wet": 10 ** 9}, 1, "in_memory") == pytest.approx(0.25e9 + 3.5e9)


def test_direct_runner_never_tries_prism(tmp_path, monkeypatch):
    """Beam's DirectRunner first tries to download Prism and switch to it; ours runs the
    FnApiRunner it documents (offline the attempt failed; online it changed the engine)."""
    from apache_beam.runners.portability import prism_runner

    def refuse(*_args, **_kwargs):
        raise AssertionError("PrismRunner constructed")

    monkeypatch.setattr(prism_runner.PrismRunner, "__init__", refuse)
    manifest = run_build([str(SAMPLE)], str(tmp_path / "out"), config(), log=lambda *_: None,
                         beam_args=["--direct_num_workers=1"])
    assert manifest["build"]["runner"] == "DirectRunner" and manifest["splits"]["train"]["documents"] > 100


def test_direct_runner_mode_follows_the_machine():
    from c4forge.pipelines.build import direct_runner_defaults

    assert direct_runner_defaults([], 2) == ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
    assert direct_runner_defaults([], 16) == ["--direct_running_mode=multi_processing", "--direct_num_workers=16"]
    assert direct_runner_defaults(["--direct_num_workers=4"], 2) == [
        "--direct_num_workers=4", "--direct_running_mode=multi_processing"]
    assert direct_runner_defaults(["--direct_running_mode", "in_memory"], 8) == [
        "--direct_running_mode", "in_memory", "--direct_num_workers=1"]


@pytest.mark.parametrize("max_lines", [1_000_000, 3])
def test_line_claims_combined_in_the_dofn_pick_every_lines_owner(max_lines):
    """ClaimLinesFn emits one claim per distinct line per bundle (from finish_bundle, or when
    its buffer is full: max_lines=3 drains it after every page), batched by line bucket;
    after the grouping LineOwnersFn names every line's owner as LineOwners does (the smallest
    md5(url)) with the index of the line's first occurrence in the owner's page, batched by the
    owner's page bucket, and no line is lost or named twice."""
    from c4forge.corpus.dedup import digest_records, line_claims
    from c4forge.corpus.dedup.line_dedup import LineOwners, line_key, line_keys, url_rank
    from c4forge.corpus.document import Document
    from c4forge.pipelines.dofns import digest_bucket
    from c4forge.pipelines.twins.line_dedup import ClaimLinesFn, LineOwnersFn

    lines = [f"Line number {i} of a page that shares some of its lines." for i in range(12)]
    pages = [Document(url=f"http://site{p}.example/{p}", text="\n".join(lines[p:p + 5] + lines[p % 3::4]))
             for p in range(9)]
    owners = LineOwners()
    for page in pages:
        owners.add(page)
    expected = set()
    for page in pages:
        keys = list(line_keys(page))
        expected |= {(url_rank(page.url), keys.index(key)) for key in owners.owned_by(page)}
    assert len(expected) == len({line_key(line) for p in pages for line in p.text.split("\n")})
    assert any(index > 0 for _, index in expected)
    def unbatch(element):
        bucket, batch = element
        owners = digest_records.join(batch, line_claims.OWNER)
        raw = owners.tobytes()
        ranks = [raw[i:i + 16] for i in range(0, len(raw), line_claims.OWNER.itemsize)]
        assert all(digest_bucket(rank, 4) == bucket for rank in ranks)
        return list(zip(ranks, owners["index"].tolist()))

    with BeamTestPipeline(argv=IN_MEMORY) as p:
        got = (p | beam.Create(pages)
               | beam.ParDo(ClaimLinesFn(max_lines=max_lines, buckets=3))
               | beam.GroupByKey()
               | beam.ParDo(LineOwnersFn(buckets=4))
               | beam.FlatMap(unbatch))
        assert_that(got, equal_to(sorted(expected)))


@pytest.mark.parametrize("how", [["--runner", "apache_beam.runners.dask.dask_runner.DaskRunner"],
                                 ["--runner=DaskRunner"]])
def test_dask_runner_is_refused_before_anything_is_written(tmp_path, how):
    """The DaskRunner drops finish_bundle output (line claims, MinHash batches): refused in one
    line, by either name, and the output directory is never created."""
    result = CliRunner().invoke(cli, ["build", "-i", str(SAMPLE), "-o", str(tmp_path / "out"),
                                      "--badwords", str(DEMO_BADWORDS), *how])
    assert result.exit_code != 0
    assert "DaskRunner is not supported" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.newest_beam
def test_build_output_and_counters_unchanged_from_the_pinned_fingerprint(tmp_path):
    """Byte-for-byte the same rows in the same shard files, and the same counters, as the build
    recorded in tests/golden/ before the Beam wiring was batched (issue 29): the shared crawl and
    two renamed copies, so line ownership crosses copies."""
    import json

    from tests.build_golden import GOLDEN, GOLDEN_COPIES, build_shared_crawl

    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    found = build_shared_crawl(str(tmp_path), crawl, str(shared_path("badwords")), GOLDEN_COPIES)
    pinned = json.loads(GOLDEN.read_text())
    assert found["counters"] == pinned["counters"]
    assert found["files"] == pinned["files"] and len(found["files"]) >= 3
    assert found["rule_samples"] == pinned["rule_samples"] is not None


@pytest.mark.parametrize("overrides,buckets,batch_bytes", [
    ([], 1, None),                        # every batch in one bucket
    ([], 7, 1),                           # a batch flushed after every item
    (["dedupe_urls=false"], 5, 4096),     # claims and keyed pages from ClaimLinesFn/KeyPagesFn
    (["dedupe_lines=false"], 3, 4096),    # URL winners joined to their pages, no line owners
])
def test_batched_shuffles_keep_documents_and_counters(tmp_path, monkeypatch, overrides, buckets, batch_bytes):
    """Candidates, pages, winners, claims and owners cross the shuffles in batches by bucket
    (issue 29): any bucket count and any batch size, with URL dedup, line dedup or both, gives
    the single-process chain's documents and counters (the revisited page of crawl_files keeps
    its newest crawl)."""
    from c4forge.pipelines import dofns

    if batch_bytes is not None:
        monkeypatch.setattr(dofns, "BATCH_BYTES", batch_bytes)
    cfg = build_config("c4", badwords=str(DEMO_BADWORDS), overrides=overrides)
    paths = crawl_files(tmp_path) + [str(SAMPLE)]
    pipeline = BeamTestPipeline(argv=IN_MEMORY)
    pages = c4_pages(pipeline | beam.Create(paths), cfg, buckets=buckets)
    counters = Counters()
    expected = sorted((d.url, d.text, d.near_dup_cluster_size) for d in run_chain(paths, cfg, counters))
    assert len(expected) > 20
    assert_that(pages | beam.Map(lambda p: (p.url, p.text, p.near_dup_cluster_size)), equal_to(expected))
    result = pipeline.run()
    result.wait_until_finish()
    assert counters_of(result) == counters.as_dict()


def test_batcher_flushes_at_its_limit_and_keeps_order():
    from c4forge.pipelines.dofns import Batcher

    batcher = Batcher(limit=10)
    assert batcher.add(1, "a", 4) == [] and batcher.add(2, "b", 4) == [] and batcher.add(1, "c", 1) == []
    assert batcher.add(1, "d", 1) == [(1, ["a", "c", "d"]), (2, ["b"])]  # 10 bytes: all out
    assert batcher.drain() == [] and batcher.add(3, "e", 1) == [] and batcher.drain() == [(3, ["e"])]
