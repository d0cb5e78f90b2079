"""benchmarks/distinct_inputs.py makes the scale-up inputs of `make bench`: copies of a real crawl
whose text differs across copies while each copy keeps the crawl's structure. Checked here on the
shared crawl (crawl/*.wet.gz, 1,832 real pages) as the 1x base: the single-process C4 chain on
copy 1 removes the same shares of pages, lines and bytes at every rule as on the real crawl
(copy 0), and almost none of copy 1's kept lines are lines of copy 0."""
import sys

import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from c4forge.corpus.read.records import iter_records
from tests.conftest import ROOT, shared_path

sys.path.insert(0, str(ROOT / "benchmarks"))
import distinct_inputs  # noqa: E402

# Not marked slow: issue 43 wants the generator validated in `make test`.

# Largest difference between a copy and the real crawl, in percentage points of the quantity a
# counter is a part of (pages read, lines into clean_page, bytes read). Measured on this base
# (copies 1 and 2): at most 0.82 points, all of it non-English pages that LID still calls
# non-English but below the confidence threshold (low_confidence 1.80% -> 2.40%/2.62%,
# ignored_language 57.59% -> 56.82%/56.88%); every share of English pages and of what is kept
# within 0.25 points.
TOLERANCE_POINTS = 1.0
KEPT_TOLERANCE_POINTS = 0.35


def shares(counters: dict) -> dict:
    """Every counter as a percentage of its whole: pages of the pages read, lines of the lines
    clean_page was given, bytes of the bytes read."""
    pages = counters["split-wet-file/passed"]
    lines = sum(v for k, v in counters.items() if k.startswith("clean-page/line-"))
    read = counters["too-long-filter/bytes-in"]
    out = {}
    for name, value in counters.items():
        if "wet-file" in name or name.startswith("split-wet-file/skipped"):
            continue
        whole = read if name.endswith(("bytes-in", "bytes-out")) else lines if "/line-" in name else pages
        out[name] = 100.0 * value / whole
    return out


def test_distinct_copy_keeps_every_rule_share_and_shares_no_text(tmp_path):
    base = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    files = distinct_inputs.distinct_copies(2, base)
    copies = {k: [f for f in files if f"copy-{k:03d}" in f] for k in (0, 1)}
    assert [len(c) for c in copies.values()] == [len(base), len(base)]
    # copy 0 is the real crawl, byte for byte
    for original, copy in zip(base, copies[0]):
        assert open(original, "rb").read() == open(copy, "rb").read()
    # every page of copy 1 is a page of the base under a renamed host, with other text
    urls = [r.headers.get("WARC-Target-URI") for r in iter_records(copies[1][0]) if r.type == "conversion"]
    assert urls and all(u.split("://", 1)[1].startswith("c1.") for u in urls)

    config = build_config("c4", badwords=str(shared_path("badwords")))
    counted, kept = {}, {}
    for k, paths in copies.items():
        counters = Counters()
        kept[k] = run_chain(paths, config, counters)
        counted[k] = counters.as_dict()
    assert set(counted[0]) == set(counted[1])
    real, copy = shares(counted[0]), shares(counted[1])
    worst = max(real, key=lambda name: abs(real[name] - copy[name]))
    assert abs(real[worst] - copy[worst]) <= TOLERANCE_POINTS, (worst, real[worst], copy[worst])
    for name in ("language-filter/passed:en", "badwords-filter/passed", "near-dedup/passed",
                 "near-dedup/bytes-out", "dedupe-lines/line-passed"):
        assert abs(real[name] - copy[name]) <= KEPT_TOLERANCE_POINTS, (name, real[name], copy[name])
    assert counted[1]["language-filter/passed:en"] > 0.9 * counted[0]["language-filter/passed:en"]
    assert counted[1]["badwords-filter/filtered"] == pytest.approx(counted[0]["badwords-filter/filtered"], abs=3)

    # the text itself differs: of copy 1's kept lines, under 0.5% are lines copy 0 kept
    real_lines = {line for doc in kept[0] for line in doc.text.split("\n")}
    copy_lines = [line for doc in kept[1] for line in doc.text.split("\n")]
    shared_lines = sum(line in real_lines for line in copy_lines)
    assert len(copy_lines) > 5_000
    assert shared_lines / len(copy_lines) < 0.005, shared_lines
