"""`corpus estimate`: the sample it draws, the projection's arithmetic, and on the shared crawl
the projection for the whole input from a 25% sample against the CPU of the measured build:
within 40% (issue 43 asks 20%, which this machine's run-to-run noise does not let one test
check reliably on an input this small; see the test; in instructions, which carry no such
noise, the projection is within 0.1% of the build: the last test checks 20% there)."""
import gzip
import json
import math
import shutil
import statistics
import sys

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.corpus.config import build_config
from c4forge.corpus.estimate import (
    EngineRun,
    PartCost,
    Sample,
    draw_sample,
    estimate,
    interval,
    project,
    run_engine,
    unit_hash,
)
from c4forge.corpus.read.records import iter_records
from c4forge.corpus.text.urls import normalize_url
from tests.conftest import ROOT, shared_path

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
DEMO_BADWORDS = ROOT / "corpus" / "data" / "demo-badwords"


def urls_of(path):
    return [normalize_url(r.header("WARC-Target-URI")) for r in iter_records(str(path))
            if r.type == "conversion"]


def test_the_sample_is_the_pages_whose_url_hashes_low_split_in_disjoint_parts(tmp_path):
    config = build_config("c4", badwords=str(DEMO_BADWORDS))
    sample = draw_sample([str(SAMPLE)], 0.5, 3, str(tmp_path), config)
    everything = urls_of(SAMPLE)
    expected = sorted(u for u in everything if unit_hash(u) < 0.5)
    parts = [urls_of(p) for p in sample.parts]
    assert sorted(u for part in parts for u in part) == expected
    for g, part in enumerate(parts):  # each part is one slice of the hash range
        assert all(int(unit_hash(u) / 0.5 * 3) == g for u in part)
    assert sample.part_pages == [len(p) for p in parts] and sample.input_pages == len(everything)
    tiny = urls_of(sample.tiny)
    assert len(tiny) == 20 and set(tiny) <= set(expected)
    # the records are written back whole: every sampled page's text is the original's
    original = {(r.header("WARC-Target-URI"), r.body) for r in iter_records(str(SAMPLE))}
    for path in sample.parts:
        for record in iter_records(path):
            assert (record.header("WARC-Target-URI"), record.body) in original
    with gzip.open(sample.parts[0]) as handle:
        assert handle.read(8) == b"WARC/1.0"


def test_projection_arithmetic():
    sample = Sample("f", ["a", "b"], "t", [10, 10], [1000, 1000], 80, 8000, 2, 4)
    assert sample.scale == 8000 / 2000 * 4 / 2
    parts = [PartCost(1.0, 2, 100, 1000), PartCost(1.2, 3, 120, 1000)]

    def run(cpu, wall, rss):
        return EngineRun(cpu=cpu, wall=wall, peak_rss=rss, documents=5, output_bytes=500)

    # one tiny run costs 4 s more CPU than its neighbours: the median of the rounds'
    # differences (2.0, -1.8, 2.0) leaves it out
    tiny = [run(5.0, 6.0, 100), run(9.0, 6.5, 110), run(5.0, 6.0, 105)]
    whole = [run(7.0, 7.0, 300), run(7.2, 7.0, 290), run(7.0, 7.0, 280)]
    est = project(sample, parts, tiny, whole, "DirectRunner", None, 0.25)
    assert est.fixed_cpu_seconds == 5.0
    assert est.cpu_seconds.value == pytest.approx(5.0 + 2.0 * 8)
    assert est.wall_seconds.value == pytest.approx(6.0 + 1.0 * 8)
    assert est.peak_memory_bytes == 100 + 200 * 8 and est.memory_grows
    assert est.documents.value == pytest.approx(40) and est.output_bytes.value == pytest.approx(4000)
    # the interval: the parts' spread (t(1) x sd/mean/sqrt(2)) and the runs' spread, both scaled
    low, high = interval(16.0, [0.001, 0.0012])
    assert low < 16.0 < high
    error = statistics.stdev([2.0, -1.8, 2.0]) / math.sqrt(3)
    half = math.hypot(high - 16.0, 2 * error * 8)
    assert est.cpu_seconds.high == pytest.approx(5.0 + 16.0 + half)
    assert est.cpu_seconds.low == pytest.approx(5.0 + max(0.0, 16.0 - half))
    # wall: the sample's runs agree, the tiny ones differ by 0.5 s once
    _, wall_high = interval(8.0, [0.001, 0.0012])
    wall_half = math.hypot(wall_high - 8.0, 2 * statistics.stdev([1.0, 0.5, 1.0]) / math.sqrt(3) * 8)
    assert est.wall_seconds.high == pytest.approx(6.0 + 8.0 + wall_half) and wall_half > wall_high - 8.0
    bounded = project(sample, parts, tiny, whole, "flink-local", 2, 0.25)
    assert bounded.peak_memory_bytes == 300 and not bounded.memory_grows
    assert json.loads(json.dumps(est.to_dict()))["core_hours"]["value"] == pytest.approx(21 / 3600)


def test_usage_errors():
    runner = CliRunner()
    result = runner.invoke(cli, ["estimate", "-i", str(SAMPLE), "--workers", "2"])
    assert result.exit_code == 2 and "--workers applies to" in result.output
    result = runner.invoke(cli, ["estimate", "-i", str(SAMPLE), "--sample", "0"])
    assert result.exit_code == 2
    result = runner.invoke(cli, ["estimate"])
    assert result.exit_code == 2 and "give --input files or --crawl" in result.output


@pytest.mark.slow
@pytest.mark.alone  # CPU seconds: a test process beside it distorts them (Makefile: test-slow)
def test_a_quarter_sample_projects_the_whole_shared_crawl_within_40_percent(tmp_path):
    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    config = build_config("c4", badwords=str(shared_path("badwords")))
    # the measured build, once before the estimate and twice after; the median, as the
    # estimate takes the median of its runs
    first = run_engine(crawl, str(tmp_path), config, "DirectRunner", None)
    result = estimate(crawl, config, fraction=0.25, groups=4, rounds=5)
    second = run_engine(crawl, str(tmp_path), config, "DirectRunner", None)
    third = run_engine(crawl, str(tmp_path), config, "DirectRunner", None)
    builds = [first.cpu, second.cpu, third.cpu]
    measured = statistics.median(builds)
    projected = result.cpu_seconds.value
    print(f"projected {projected:.1f} s ({result.cpu_seconds.low:.1f}-{result.cpu_seconds.high:.1f}), "
          f"measured {' / '.join(f'{b:.1f}' for b in builds)} s; documents "
          f"{result.documents.value:.0f} vs {first.documents}")
    # Within 40%, not issue 43's 20%: on this kind of machine (a shared VM) the same process
    # costs +-10% CPU run to run (a pure-Python loop too: 1.87-2.40 s), and on this small input
    # (fixed cost ~5 of ~12 s) the projection multiplies the sample's marginal cost (median
    # sample - median tiny build) by ~4: errors of -21% and +37% were seen here with 3 rounds.
    # 40% still fails a projection without its fixed cost (about +120%) and one without its
    # scale-up (about -46%, near the bound: a weak check of that one). The method's own error
    # is measured without that noise in `make bench` (section estimate): in instructions under
    # valgrind, the same projection of this input is 1% high.
    assert abs(projected - measured) <= 0.4 * measured
    assert 0.2 < result.sample_pages / result.input_pages < 0.3
    assert result.input_pages == 1832
    assert abs(result.documents.value - first.documents) <= 0.3 * first.documents


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind (Debian package) counts the instructions")
def test_a_quarter_sample_projects_the_whole_shared_crawl_within_20_percent_in_instructions(monkeypatch, tmp_path):
    """Issue 43's bound, checked where the machine's CPU noise cannot decide it: the same
    projection (pipelines/estimate.project) applied to instruction counts of the tiny, sample
    and whole builds (valgrind, every process; about 5 minutes with bench_estimate's warm-up
    build). Measured 2026-11-27: +2.9% (10.43 G tiny, 15.46 G sample, 30.37 G whole). Fails a
    projection without its fixed cost (about +85%) or without its scale-up (about -55%).
    Numba's compile cache starts empty, as on CI's fresh clone: the count must not depend on
    which build compiled the MinHash kernels (CI failed at -49% so, before the warm-up)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba-cache"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_estimate

    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    config = build_config("c4", badwords=str(shared_path("badwords")))
    counted = bench_estimate.in_instructions(crawl, config)
    print(counted)
    assert abs(counted["error"]) <= 0.2
    # the two wrong projections the bound must reject
    assert counted["sample"] * counted["scale"] > 1.2 * counted["whole"]
    assert counted["sample"] < 0.8 * counted["whole"]
