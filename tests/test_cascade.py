"""The cascade extractor (corpus/extract/html.py: cascade_text) and its router (corpus/extract/router.py):
deterministic routing, trafilatura's text on the pages sent slow, resiliparse's elsewhere, and
a slow path that never costs a page."""
import dataclasses
import json
import math
import time

import pytest

import c4forge.corpus.extract.html as extract
import c4forge.corpus.extract.router as router_module
from c4forge.core.counters import Counters
from c4forge.corpus.extract.html import cascade_text, fast_pass, response_text
from c4forge.corpus.extract.router import ROUTER_FILE, ROUTER_FILES, Router, load_router, page_signals
from c4forge.corpus.read.options import ReadOptions
from c4forge.corpus.read.wet import iter_crawl_documents
from tests.test_extract import ARTICLE, http_block, warc_response
from tests.wetfiles import wet_file

URL = "https://example.org/river"
FORUM = ("<html><head><title>Help with my bike</title></head><body><nav>Forum index | Login</nav>"
         + "".join(f"<div class=post><span>user{i}</span><p>Reply {i}: try the chain.</p></div>" for i in range(8))
         + "</body></html>")


def signals(html=ARTICLE, url=URL):
    fast, full, title = fast_pass(html)
    return page_signals(html, url, title, fast, full)


def always(slow: bool) -> Router:
    return dataclasses.replace(load_router(), threshold=-math.inf if slow else math.inf)


@pytest.mark.parametrize("slow", ["trafilatura", "rs-trafilatura"])
def test_the_shipped_routers_read_every_signal_and_round_trip(tmp_path, slow):
    router = load_router(slow)
    assert router.features == tuple(signals())  # file and signal code agree, in order
    assert len(router.mean) == len(router.scale) == len(router.coef) == len(router.features)
    assert all(s > 0 for s in router.scale) and router.version
    path = tmp_path / "router.json"
    path.write_text(router.to_json())
    assert Router.from_file(path) == router
    trained = json.loads(ROUTER_FILES[slow].read_text())["trained"]
    assert trained["script"] == "scripts/train_extract_router.py" and "tune half" in trained["data"]
    assert trained.get("slow", "trafilatura") == slow
    assert ROUTER_FILES["trafilatura"] == ROUTER_FILE


def test_routing_is_deterministic_and_prefers_large_gain_per_cost():
    router = load_router()
    a, b = signals(ARTICLE), signals(FORUM, "https://example.org/forum/t/bike")
    assert router.score(a) == router.score(dict(a)) and router.sends_slow(a) == router.sends_slow(a)
    assert router.score(a) != router.score(b)
    # the same predicted gain costs more on a larger page: a lower score
    bigger = dict(a, log_html_chars=a["log_html_chars"] + 2)
    gain = router.score(a) * math.exp(router.cost_exponent * a["log_html_chars"])
    if gain > 0:
        assert router.score(bigger) < router.score(a)


def test_a_page_sent_slow_gets_trafilaturas_text_and_others_resiliparses(monkeypatch):
    slow_text, fast_text = extract._trafilatura(FORUM, URL), extract._resiliparse(FORUM, URL)
    assert slow_text != fast_text
    for slow, expected, kept in ((True, slow_text, "kept_slow"), (False, fast_text, "kept_fast")):
        monkeypatch.setattr(router_module, "load_router", lambda *_, slow=slow: always(slow))
        counters = Counters()
        assert cascade_text(FORUM, URL, 5.0, counters.inc_fn("r")) == expected
        assert extract.cascade(FORUM, URL, 5.0) == (expected, "trafilatura" if slow else "resiliparse")
        assert counters[f"r/extract:{kept}"] == 1
        assert counters["r/extract:routed_slow"] == int(slow)


@pytest.mark.parametrize("fault", ["raises", "times out", "returns nothing"])
@pytest.mark.parametrize("slow", ["trafilatura", "rs-trafilatura"])
def test_a_failing_slow_extractor_keeps_the_fast_text(monkeypatch, fault, slow):
    """Also for cascade-rs: a page rs-trafilatura fails on keeps resiliparse's text, counted
    (the slow extractor is replaced, so this runs where rs-trafilatura is not installed)."""
    def broken(html, url):
        if fault == "raises":
            raise RuntimeError(f"{slow} bug")
        if fault == "times out":
            time.sleep(3)
        return ""

    monkeypatch.setattr(router_module, "load_router", lambda *_: always(True))
    monkeypatch.setattr(extract, "_trafilatura" if slow == "trafilatura" else "_rs_trafilatura", broken)
    counters = Counters()
    started = time.perf_counter()
    text, extractor = extract.cascade(ARTICLE, URL, 0.5, counters.inc_fn("r"), slow)
    assert text == extract._resiliparse(ARTICLE, URL) and "Paragraph 3" in text
    assert extractor == "resiliparse"  # the document says whose text it kept
    assert time.perf_counter() - started < 2.5
    assert counters["r/extract:slow_failed"] == counters["r/extract:kept_fast"] == 1


def test_a_crashing_fast_pass_is_a_counted_skip_and_the_good_pages_are_kept(tmp_path, monkeypatch):
    headers = {"Content-Type": "text/html; charset=utf-8"}
    pages = [ARTICLE.replace("river", f"river{i}") for i in range(3)]
    pages.insert(1, "<html><body><p>BOOM page</p></body></html>")
    path = tmp_path / "pages.warc.gz"
    path.write_bytes(wet_file([warc_response(f"https://example.org/{i}", http_block(
        "200 OK", headers, page.encode())) for i, page in enumerate(pages)]))
    real = extract.fast_pass

    def flaky(html):
        if "BOOM" in html:
            raise RuntimeError("parser bug")
        return real(html)

    monkeypatch.setattr(extract, "fast_pass", flaky)
    counters = Counters()
    docs = list(iter_crawl_documents(str(path), counters.inc_fn("r"), ReadOptions(input_format="warc")))
    assert [d.url for d in docs] == ["https://example.org/0", "https://example.org/2", "https://example.org/3"]
    assert counters["r/skipped:extract_error"] == 1
    assert counters["r/extract:kept_fast"] + counters["r/extract:kept_slow"] == 3
    assert counters["r/extract:routed_slow"] == counters["r/extract:kept_slow"] + counters["r/extract:slow_failed"]


def test_response_text_with_the_cascade_is_the_default_and_bounded_in_time(monkeypatch):
    assert ReadOptions().extractor == "cascade"
    monkeypatch.setattr(extract, "fast_pass", lambda html: time.sleep(3) or ("", "", ""))
    counters = Counters()
    block = http_block("200 OK", {"Content-Type": "text/html"}, ARTICLE.encode())
    assert response_text(block, URL, lambda n: "", "cascade", 0.5, 1 << 20, counters.inc_fn("r")) is None
    assert counters["r/skipped:extract_timeout"] == 1


def test_corpus_build_help_documents_every_extractor():
    from click.testing import CliRunner

    from c4forge.cli.corpus import cli

    for command in ("build", "clean"):
        help_text = CliRunner().invoke(cli, [command, "--help"]).output
        for name in extract.EXTRACTORS:
            assert name in help_text, (command, name)
        assert "[default: cascade]" in " ".join(help_text.split())


class _RouteByPageSize:
    """A router that sends the larger pages slow (8 of the shared WARC crawl's 17), by a
    property of the page alone: the same decision in every runner."""

    version = "test: by page size"

    def __init__(self, slow: str = "trafilatura") -> None:
        self.slow = slow

    def sends_slow(self, signals) -> bool:
        return signals["log_html_chars"] > 9.9


def test_every_document_names_its_extractor_the_same_in_clean_and_build(tmp_path, monkeypatch):
    """The manifest and each document record which extractor produced the text (issue 39), so a
    corpus can be ablated by extractor: on the shared WARC crawl with the cascade sending about
    half the pages slow, `corpus clean` and `corpus build` give every document the extractor
    the cascade chose for its page, and count them per split; a single extractor names itself."""
    from click.testing import CliRunner

    from c4forge.cli.corpus import cli
    from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest
    from c4forge.corpus.read.records import iter_records
    from tests.conftest import shared_path

    warc = sorted(str(p) for p in shared_path("crawl", "warc").glob("*.warc.gz"))
    monkeypatch.setattr(router_module, "load_router", _RouteByPageSize)
    expected = {}
    for path in warc:
        for record in iter_records(path):
            if record.type == "response":
                got = extract.extract_response(record.body, record.header("WARC-Target-URI"),
                                               record.header, "cascade", 10.0, 1 << 22)
                if got is not None:
                    expected[record.header("WARC-Target-URI")] = got.extractor
    common = ["-i", *warc, "--input-format", "warc", "--preset", "c4-noclean", "--set", "languages=", "-q"]
    found = {}
    for command in ("clean", "build"):
        result = CliRunner().invoke(cli, [command, *common, "-o", str(tmp_path / command)])
        assert result.exit_code == 0, result.output
        docs = [d for split in ("train", "validation")
                for d in iter_corpus_documents(str(tmp_path / command), split)]
        found[command] = {d["url"]: d["extractor"] for d in docs}
        assert found[command] == {url: expected[url] for url in found[command]}
        manifest = read_manifest(str(tmp_path / command))
        for split, entry in manifest["splits"].items():
            names = [d["extractor"] for d in iter_corpus_documents(str(tmp_path / command), split)]
            assert entry.get("extractors", {}) == {n: names.count(n) for n in set(names)}
    assert found["clean"] == found["build"]
    assert set(found["build"].values()) == {"resiliparse", "trafilatura"}
    result = CliRunner().invoke(cli, ["clean", *common, "--extractor", "resiliparse",
                                      "-o", str(tmp_path / "fast")])
    assert result.exit_code == 0, result.output
    assert {d["extractor"] for d in iter_corpus_documents(str(tmp_path / "fast"))} == {"resiliparse"}


def test_the_slow_budget_caps_every_prefix_of_a_file():
    budget = extract.SlowBudget(0.25)
    granted = []
    for n in range(1, 41):  # a router that wants every page slow
        budget.seen()
        granted.append(budget.allows())
        assert sum(granted) <= math.ceil(0.25 * n)
    assert sum(granted) == 10 and granted[0]  # the cap is reached, not undershot


def test_a_slow_budget_bounds_the_share_per_file_the_same_in_clean_and_build(tmp_path, monkeypatch):
    """read.max_slow_share: with a router that wants about half the pages slow, at most a
    quarter of each file's pages go slow (the rest counted extract:slow_over_budget), the same
    pages in `corpus clean` and `corpus build`."""
    from click.testing import CliRunner

    from c4forge.cli.corpus import cli
    from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest
    from tests.conftest import shared_path

    warc = sorted(str(p) for p in shared_path("crawl", "warc").glob("*.warc.gz"))
    monkeypatch.setattr(router_module, "load_router", _RouteByPageSize)
    common = ["-i", *warc, "--input-format", "warc", "--preset", "c4-noclean", "--set", "languages=",
              "--set", "read.max_slow_share=0.25", "-q"]
    found = {}
    for command in ("clean", "build"):
        result = CliRunner().invoke(cli, [command, *common, "-o", str(tmp_path / command)])
        assert result.exit_code == 0, result.output
        found[command] = {d["url"]: (d["extractor"], d["source"]) for split in ("train", "validation")
                          for d in iter_corpus_documents(str(tmp_path / command), split)}
        counters = read_manifest(str(tmp_path / command))["counters"]
        assert counters["split-wet-file/extract:slow_over_budget"] > 0
        pages = counters["split-wet-file/extract:kept_fast"] + counters["split-wet-file/extract:kept_slow"]
        assert counters["split-wet-file/extract:routed_slow"] <= sum(
            math.ceil(0.25 * n) for n in [pages])  # and per file, below
    assert found["clean"] == found["build"]
    by_file: dict = {}
    for extractor, source in found["build"].values():
        by_file.setdefault(source, []).append(extractor)
    for extractors in by_file.values():
        assert extractors.count("trafilatura") <= math.ceil(0.25 * len(extractors)) + 2
