"""Rule samples (corpus/output/samples.py): what every rule did to a hash-chosen set of pages, recorded
during the build. The explanations agree with the rules on every real page; tracing never
changes a document or a counter; the reservoir's merge does not depend on how the events were
split or ordered; and `corpus clean` writes the same bytes as the pinned `corpus build`
(tests/golden/; the engine tests hold Flink and Spark to the same pin)."""
import hashlib
import json
import random
from collections import Counter

import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.chain.verdict import count_verdict
from c4forge.corpus.config import build_config
from c4forge.corpus.dedup.line_dedup import LineOwners, keep_owned_lines, sentence_check
from c4forge.corpus.dedup.line_dedup import line_fates as dedup_fates
from c4forge.corpus.dedup.near_dedup import doc_id
from c4forge.corpus.output.samples import (
    DROP,
    GAP,
    KEEP,
    Reservoir,
    Sample,
    SampleOptions,
    dumps,
    page_key,
    read_samples,
    traced_key,
)
from c4forge.corpus.output.shards import export_corpus, iter_corpus_documents, read_manifest, write_corpus
from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.rules.clean import PageRules, clean_page, line_fates
from c4forge.corpus.text.urls import normalize_url
from tests.conftest import ROOT, shared_path

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
DEMO_BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")


def _crawl_pages():
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        yield from iter_file_documents(str(path))


def _counted(verdict) -> Counter:
    """The counters a verdict makes in its step's namespace."""
    counts: Counter = Counter()
    count_verdict(lambda name, amount=1: counts.update({name: amount}), None, 0, verdict)
    return counts


def test_clean_line_fates_agree_with_clean_page_on_every_real_page():
    """Every line-filtered counter clean_page fires equals the lines line_fates gives that
    reason; the page is dropped by a line exactly when line_fates names one, and the lines kept
    are clean_page's lines."""
    rules = PageRules()
    pages = dropped_by_line = 0
    for page in _crawl_pages():
        pages += 1
        verdict = clean_page(page, rules)
        cleaned, counts = verdict.page, _counted(verdict)
        lines, fates, trigger = line_fates(page.text, rules)
        assert len(lines) == len(page.text.splitlines())
        reasons = Counter(f for f in (fates if trigger is None else fates[:trigger]) if f)
        assert reasons == Counter({k: v for k, v in counts.items() if k.startswith("line-filtered:")}), page.url
        page_drop = counts["filtered:loremipsum"] or counts["filtered:squigglybracket"]
        assert (trigger is not None) == bool(page_drop), page.url
        dropped_by_line += trigger is not None
        if cleaned is not None:
            assert fates.count(None) == counts["line-passed"]
    assert pages > 1500 and dropped_by_line > 10


def test_line_dedup_fates_agree_with_keep_owned_lines():
    config = build_config("c4", near_dedup=False)
    pages = [v.page for v in (clean_page(p) for p in _crawl_pages()) if v.kept]
    owners = LineOwners()
    for page in pages:
        owners.add(page)
    global_lines = 0
    for page in pages:
        owned = owners.owned_by(page)
        verdict = keep_owned_lines(page, owned, sentence_check(config))
        kept, counts = verdict.page, _counted(verdict)
        lines, fates, trigger = dedup_fates(page, owned)
        assert trigger is None
        assert Counter(f for f in fates if f) == Counter(
            {k: v for k, v in counts.items() if k.startswith("line-filtered:")})
        if kept is not None:
            assert "\n".join(line for line, fate in zip(lines, fates) if fate is None) == kept.text
        global_lines += fates.count("line-filtered:global_duplicate")
    assert global_lines > 300


def _random_samples(rng: random.Random, n: int) -> list:
    rules = ["clean-page/line-filtered:no_endmark", "near-dedup/filtered", "language-filter/filtered:low_confidence"]
    return [Sample(rng.choice(rules), rng.getrandbits(64) >> rng.choice([0, 60]), f"http://x/{rng.randrange(50)}",
                   "page", {"chars": rng.randrange(9)}) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_reservoir_merge_does_not_depend_on_split_order_or_repeats(seed):
    """The smallest K of a union = the smallest K of its parts' smallest K, in any order, with
    parts repeated (a retried bundle): the property that makes engines agree."""
    rng = random.Random(seed)
    events = _random_samples(rng, 600)  # keys with many ties (>> 60): the order's tie-breaks decide
    whole = Reservoir(7).extend(events)
    parts = [Reservoir(7) for _ in range(rng.randrange(2, 9))]
    for event in events:
        rng.choice(parts).add(event)
    parts += rng.sample(parts, 2)  # some parts written twice
    rng.shuffle(parts)
    merged = Reservoir(7)
    for part in parts:
        merged.extend(Sample.from_wire(w) for w in json.loads(json.dumps(part.to_wire())))
    options = SampleOptions(per_rule=7)
    assert dumps(merged.document(options)) == dumps(whole.document(options))
    for rule, kept in whole.rules.items():
        orders = sorted({e.order() for e in events if e.rule == rule})
        assert [order for order, _ in kept] == orders[:7]


def test_pages_are_traced_by_a_seeded_hash_of_the_url():
    urls = [f"https://example.com/{i}" for i in range(4000)]
    options = SampleOptions(rate=0.25)
    traced = [u for u in urls if traced_key(u, options) is not None]
    assert 0.21 < len(traced) / len(urls) < 0.29
    assert traced == [u for u in urls if traced_key(u, options) is not None]  # deterministic
    other = [u for u in urls if traced_key(u, SampleOptions(rate=0.25, seed=7)) is not None]
    assert 0.21 < len(other) / len(urls) < 0.29 and set(other) != set(traced)
    assert page_key("https://example.com/1") != page_key("https://example.com/1", seed=1)
    assert all(traced_key(u, SampleOptions(rate=1.0)) is not None for u in urls[:100])
    assert all(traced_key(u, SampleOptions(rate=0.0)) is None for u in urls[:100])


def test_tracing_changes_no_document_and_no_counter():
    config = build_config("c4", badwords=DEMO_BADWORDS, overrides=["rule_samples.rate=1"])
    plain_counters, traced_counters = Counters(), Counters()
    plain = run_chain([SAMPLE], config, plain_counters)
    samples = Reservoir(config.rule_samples.per_rule)
    traced = run_chain([SAMPLE], config, traced_counters, samples=samples)
    assert traced == plain and traced_counters.as_dict() == plain_counters.as_dict()
    assert len(samples.rules) >= 10


def _check_samples(document: dict, manifest: dict, directory: str) -> None:
    """What a user reads in the samples is true of the corpus and of the rules."""
    counters = manifest["counters"]
    kept_ids = {doc_id(normalize_url(d["url"])): d["url"] for s in ("train", "validation")
                for d in iter_corpus_documents(directory, s, ("url",))}
    rate, per_rule = document["rate"], document["per_rule"]
    assert manifest["rule_samples"]["samples"] == sum(len(r["samples"]) for r in document["rules"])
    for rule in document["rules"]:
        name, samples = rule["rule"], rule["samples"]
        assert counters.get(name, 0) >= len(samples) > 0, name  # a rule that fired, never more than it did
        assert len(samples) <= per_rule
        keys = [int(s["key"], 16) for s in samples]
        assert keys == sorted(keys) and all(k < rate * 2 ** 64 for k in keys)
        for s in samples:
            marks = [mark for _, mark in s.get("lines", [])]
            assert set(marks) <= {KEEP, DROP, GAP}
            dropped = [line for line, mark in s.get("lines", []) if mark == DROP]
            if s["kind"] == "lines":
                assert 1 <= len(dropped) <= s["removed"]
            if name == "clean-page/line-filtered:no_endmark":
                assert not any(line.endswith((".", "?", "!", '"')) and not line.endswith("...")
                               for line in dropped if "[" not in line)
            if name == "clean-page/line-filtered:too_short":
                assert all(len(line.split()) < 5 for line in dropped if "[" not in line)
            if name == "clean-page/filtered:squigglybracket":
                assert len(dropped) == 1 and "{" in dropped[0]
            if s["kind"] == "near":
                assert int(s["kept_id"]) in kept_ids
                assert doc_id(normalize_url(s["url"])) not in kept_ids
            if s["kind"] == "url":
                assert all(d["timestamp"] <= s["kept"]["timestamp"] for d in s["dropped"])


def test_clean_writes_the_samples_the_pinned_build_wrote(tmp_path):
    """`corpus clean`'s samples of the pinned input are byte for byte the pinned `corpus build`'s
    (tests/golden/), which the DirectRunner, Flink and Spark tests check their builds against."""
    from tests.build_golden import GOLDEN, GOLDEN_COPIES, copies_of

    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    inputs = copies_of(crawl, GOLDEN_COPIES, str(tmp_path))
    config = build_config("c4", badwords=str(shared_path("badwords")))
    counters = Counters()
    samples = Reservoir(config.rule_samples.per_rule)
    docs = run_chain(inputs, config, counters, samples=samples)
    manifest = {"config": config.to_dict(), "counters": counters.as_dict()}
    write_corpus(str(tmp_path / "c4"), docs, manifest, docs_per_shard=100,
                 samples=samples.document(config.rule_samples))
    written = (tmp_path / "c4" / "_rule-samples.json").read_bytes()
    assert hashlib.sha256(written).hexdigest() == json.loads(GOLDEN.read_text())["rule_samples"]
    document = read_samples(written.decode("utf-8"))
    _check_samples(document, read_manifest(str(tmp_path / "c4")), str(tmp_path / "c4"))
    rules = {r["rule"] for r in document["rules"]}
    assert {"clean-page/line-filtered:no_endmark", "dedupe-lines/line-filtered:global_duplicate",
            "language-filter/filtered:ignored_language"} <= rules


def test_demo_build_samples_every_rule_that_fired_and_export_keeps_them(tmp_path):
    """rate 1 traces every page: every page-dropping rule that fired has a sample; exporting to
    Parquet carries the file; per_rule=0 writes none."""
    from c4forge.pipelines.build import run_build

    config = build_config("c4", badwords=DEMO_BADWORDS, overrides=["rule_samples.rate=1"])
    manifest = run_build([SAMPLE], str(tmp_path / "c4"), config, log=lambda *_: None)
    document = read_samples((tmp_path / "c4" / "_rule-samples.json").read_text())
    _check_samples(document, manifest, str(tmp_path / "c4"))
    sampled = {r["rule"] for r in document["rules"]}
    fired = {name for name, n in manifest["counters"].items() if n and "/filtered" in name
             and not name.startswith(("badwords-filter-", "split-wet-file/", "output/"))}
    assert fired and fired <= sampled
    assert {"near-dedup/filtered", "duplicate-url-filter/filtered"} <= sampled
    exported = export_corpus(str(tmp_path / "c4"), str(tmp_path / "parquet"), "parquet")
    assert exported["rule_samples"] == manifest["rule_samples"]
    assert (tmp_path / "parquet" / "_rule-samples.json").read_bytes() == (tmp_path / "c4" / "_rule-samples.json").read_bytes()
    # the leading underscore keeps the file out of directory scans (pyarrow, Spark, datasets),
    # as the manifest's does: a scan of the folder reads the shards alone
    import pyarrow.dataset

    scanned = pyarrow.dataset.dataset(str(tmp_path / "parquet"), format="parquet").count_rows()
    assert scanned == sum(split["documents"] for split in exported["splits"].values()) > 100
    # polars and duckdb skip nothing in a folder: the shards' own folder holds nothing else
    import duckdb
    import polars

    shards = str(tmp_path / "parquet" / "data")
    assert polars.scan_parquet(shards).collect().height == scanned
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{shards}/*')").fetchall() == [(scanned,)]
    off = build_config("c4", badwords=DEMO_BADWORDS, overrides=["rule_samples.per_rule=0"])
    manifest = run_build([SAMPLE], str(tmp_path / "off"), off, log=lambda *_: None)
    assert "rule_samples" not in manifest and not (tmp_path / "off" / "_rule-samples.json").exists()
    assert not list((tmp_path / "off").glob(".rule-samples*"))
