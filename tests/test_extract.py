"""WARC input: HTTP checks, charset decoding and main-text extraction on real WARC records
(../shared/data/crawl/warc and crawl-extra), every fault a counted skip that keeps the good
records around it."""
import threading
import time

import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.extract.html import (
    Skip,
    decode_html,
    extract_main_text,
    extract_response,
    html_bytes,
    response_text,
    run_with_time_limit,
)
from c4forge.corpus.read.options import ReadOptions
from c4forge.corpus.read.records import iter_records
from c4forge.corpus.read.sniff import InputFormatError
from c4forge.corpus.read.wet import iter_crawl_documents
from tests.conftest import shared_path
from tests.wetfiles import gzip_member, record, wet_file

WARC_OPTIONS = ReadOptions(input_format="warc")


def responses(path):
    return [r for r in iter_records(str(path)) if r.type == "response"]


@pytest.fixture(scope="module")
def cc_sample():
    return responses(shared_path("crawl", "warc", "cc-2020-34-sample.warc.gz"))


def http_block(status: str, headers: dict, payload: bytes) -> bytes:
    head = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


def warc_response(url: str, block: bytes, extra: str = "") -> bytes:
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: 2020-08-01T00:00:00Z\r\n{extra}Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(block)}\r\n\r\n").encode()
    return head + block + b"\r\n\r\n"


ARTICLE = ("<html><head><title>A page</title></head><body><nav>Home | About | Login</nav>"
           "<article><h1>The river in spring</h1>"
           + "".join(f"<p>Paragraph {i} describes how the river rises every spring when the snow "
                     f"melts in the mountains and the valley floods for several weeks.</p>" for i in range(6))
           + "</article><footer>Copyright 2020, all rights reserved.</footer></body></html>")


def test_declared_charsets_decode_real_pages(cc_sample):
    """windows-1251 and gb2312 pages of a real CC WARC: decoded with the header's charset, and
    the same text when the header says nothing (the <meta> tag or detection finds it)."""
    checked = 0
    for rec in cc_sample:
        payload, charset = html_bytes(rec.body, rec.header, 4 << 20)
        if charset.lower() not in ("windows-1251", "gb2312"):
            continue
        text, used = decode_html(payload, charset)
        assert text == payload.decode(charset)
        script = "\u0400-\u04ff" if charset.lower() == "windows-1251" else "\u4e00-\u9fff"
        import re
        assert len(re.findall(f"[{script}]", text)) > 100, "the page's own script decoded"
        assert "\ufffd" not in text
        undeclared, _ = decode_html(payload, "")
        assert undeclared == text or undeclared.encode("utf-8", "replace") == text.encode("utf-8", "replace")
        checked += 1
    assert checked >= 3


def test_meta_charset_wins_over_detection_and_a_wrong_header_falls_through():
    html = ('<html><head><meta charset="windows-1252"></head><body>'
            '<p>Caf\u00e9 cr\u00e8me \u2014 na\u00efve</p></body></html>')
    payload = html.encode("cp1252")
    assert decode_html(payload, "")[0] == html  # the <meta> tag
    assert decode_html(payload, "utf-8")[0] == html  # a header charset that does not decode
    utf8 = html.replace("windows-1252", "utf-8").encode("utf-8")
    assert decode_html(utf8, "")[0] == html.replace("windows-1252", "utf-8")


def test_http_faults_are_named_skips():
    headers = {"Content-Type": "text/html; charset=utf-8"}
    ok = http_block("200 OK", headers, ARTICLE.encode())
    assert html_bytes(ok, lambda name: "", 1 << 20)[1] == "utf-8"
    cases = {
        "http_status:404": http_block("404 Not Found", headers, b"<html>gone</html>"),
        "content_type": http_block("200 OK", {"Content-Type": "image/png"}, b"\x89PNG..."),
        "truncated": http_block("200 OK", {**headers, "Content-Length": "99999"}, ARTICLE.encode()),
        "html_too_large": http_block("200 OK", headers, b"<p>" + b"x" * 5000 + b"</p>"),
        "not_http": b"garbage without a status line",
    }
    for reason, block in cases.items():
        with pytest.raises(Skip) as caught:
            html_bytes(block, lambda name: "", 4000)
        assert caught.value.reason == reason
    with pytest.raises(Skip, match="truncated"):
        html_bytes(ok, lambda name: "length" if name == "WARC-Truncated" else "", 1 << 20)
    import gzip as gz
    packed = http_block("200 OK", {**headers, "Content-Encoding": "gzip"}, gz.compress(ARTICLE.encode()))
    assert html_bytes(packed, lambda name: "", 1 << 20)[0] == ARTICLE.encode()


def test_a_slow_extractor_is_cut_off_in_the_main_thread_and_in_a_worker_thread():
    def slow():
        time.sleep(5)
        return "never"

    started = time.perf_counter()
    with pytest.raises(Skip, match="extract_timeout"):
        run_with_time_limit(slow, 0.2)
    assert time.perf_counter() - started < 2
    outcome = {}

    def worker():
        try:
            run_with_time_limit(slow, 0.2)
        except Skip as skip:
            outcome["reason"] = skip.reason

    thread = threading.Thread(target=worker)
    started = time.perf_counter()
    thread.start()
    thread.join(3)
    assert outcome == {"reason": "extract_timeout"} and time.perf_counter() - started < 2
    assert run_with_time_limit(lambda: "fast", 1.0) == "fast"


@pytest.mark.parametrize("extractor", ["trafilatura", "resiliparse"])
def test_main_text_drops_navigation_and_footer(extractor):
    text = extract_main_text(ARTICLE, "https://example.org/river", extractor)
    assert "Paragraph 3 describes how the river rises" in text
    assert "Home | About" not in text and "Copyright 2020" not in text


def test_a_warc_file_with_every_fault_keeps_the_good_pages(tmp_path, monkeypatch):
    """Good pages around a 404, a PNG, a truncated body, a huge page, a page that makes the
    extractor raise and request/metadata records: the good ones all come through, every other
    record is a named count."""
    import c4forge.corpus.extract.html as extract

    headers = {"Content-Type": "text/html; charset=utf-8"}
    good = [warc_response(f"https://example.org/good/{i}", http_block("200 OK", headers,
                          ARTICLE.replace("river", f"river{i}").encode())) for i in range(3)]
    records = [
        good[0],
        warc_response("https://example.org/missing", http_block("404 Not Found", headers, b"<html>no</html>")),
        record("https://example.org/req", b"GET / HTTP/1.1\r\n\r\n", rtype="request"),
        warc_response("https://example.org/logo.png", http_block("200 OK", {"Content-Type": "image/png"}, b"\x89PNG")),
        good[1],
        warc_response("https://example.org/cut", http_block("200 OK", headers, ARTICLE.encode()),
                      extra="WARC-Truncated: length\r\n"),
        warc_response("https://example.org/huge", http_block("200 OK", headers, b"<p>" + b"word " * 400_000 + b"</p>")),
        warc_response("https://example.org/boom", http_block("200 OK", headers, b"<html><p>BOOM page</p></html>")),
        record("https://example.org/meta", b"fetchTimeMs: 12", rtype="metadata"),
        good[2],
    ]
    path = tmp_path / "mixed.warc.gz"
    path.write_bytes(wet_file(records))
    real = extract.extract_main_text

    def flaky(html, url="", extractor="trafilatura"):
        if "BOOM" in html:
            raise RuntimeError("extractor bug")
        return real(html, url, extractor)

    monkeypatch.setattr(extract, "extract_main_text", flaky)
    counters = Counters()
    docs = list(iter_crawl_documents(str(path), counters.inc_fn("r"), ReadOptions(
        input_format="warc", extractor="trafilatura", max_html_bytes=1 << 20)))
    assert [d.url for d in docs] == [f"https://example.org/good/{i}" for i in range(3)]
    assert all("river" in d.text and "Home | About" not in d.text for d in docs)
    got = {k.split("/", 1)[1]: v for k, v in counters.as_dict().items()}
    for reason in ("http_status:404", "content_type", "truncated", "html_too_large", "extract_error",
                   "record_type:request", "record_type:metadata", "record_type:warcinfo"):
        assert got.get(f"skipped:{reason}") == 1, (reason, got)
    assert got["passed"] == 3
    # auto reads WET text and WARC responses alike; wet ignores the responses
    # read as WET, a file of WARC responses is refused by name (it used to yield 0 documents)
    with pytest.raises(InputFormatError, match="--input-format warc"):
        list(iter_crawl_documents(str(path), Counters().inc_fn("r"), ReadOptions(input_format="wet")))


def test_corpus_clean_on_a_real_cc_warc_with_the_c4_warc_preset(tmp_path):
    import json

    from click.testing import CliRunner

    from c4forge.cli.corpus import cli

    warc = shared_path("crawl", "warc", "cc-2020-34-sample.warc.gz")
    out = tmp_path / "corpus"
    result = CliRunner().invoke(cli, ["clean", "-i", str(warc), "--preset", "c4-warc", "--languages", "",
                                      "--badwords-fraction", "0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["extraction"]["extractor"] == "cascade"  # the WARC default
    assert "router 1" in manifest["extraction"]["extractor_version"]
    kept = manifest["counters"]
    assert kept["split-wet-file/extract:kept_fast"] + kept.get("split-wet-file/extract:kept_slow", 0) >= 16
    stats = CliRunner().invoke(cli, ["stats", str(out)])
    assert stats.exit_code == 0 and "| HTML extraction (cascade) | pages |" in stats.output
    assert "extract:kept_fast" in stats.output
    counters = manifest["counters"]
    assert counters["split-wet-file/passed"] == 16
    assert counters["split-wet-file/skipped:record_type:request"] == 17
    result = CliRunner().invoke(cli, ["clean", "-i", str(warc), "--input-format", "warc", "--extractor",
                                      "resiliparse", "--languages", "", "--badwords-fraction", "0",
                                      "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "_manifest.json").read_text())
    assert manifest["extraction"]["extractor"] == "resiliparse"


def test_response_text_counts_undecodable_and_empty_pages():
    counters = Counters()
    block = http_block("200 OK", {"Content-Type": "text/html"}, b"<html><body></body></html>")
    text = response_text(block, "https://e.org/", lambda n: "", "trafilatura", 5.0, 1 << 20, counters.inc_fn("r"))
    assert not text  # nothing to extract: the reader counts filtered:no_content
    assert gzip_member(b"x")  # the helper module is shared with the WET tests


def test_urls_from_keeps_the_same_pages_as_another_file(tmp_path):
    """read.urls_from: only pages whose URL is in the given crawl file (or URL list) pass."""
    from c4forge.corpus.read.wet import url_set
    from tests.wetfiles import page

    wet = tmp_path / "a.warc.wet.gz"
    wet.write_bytes(wet_file([record(f"https://example.org/{i}", page(i)) for i in range(5)]))
    listing = tmp_path / "urls.txt"
    listing.write_text("https://example.org/1\nhttp://example.org/3\n")
    counters = Counters()
    docs = list(iter_crawl_documents(str(wet), counters.inc_fn("r"), ReadOptions(urls_from=str(listing))))
    assert [d.url for d in docs] == ["https://example.org/1", "https://example.org/3"]
    assert counters.as_dict()["r/skipped:not_in_urls_from"] == 3
    assert len(url_set(str(wet))) == 5  # a crawl file gives its records' URLs


def _rs_or_skip():
    from c4forge.corpus.extract.html import missing_extractor

    missing = missing_extractor("rs-trafilatura")
    if missing:
        pytest.skip(f"optional extractor: {missing}")


def test_rs_trafilatura_extracts_real_pages_line_by_line_and_a_failing_page_is_a_counted_skip(
        tmp_path, monkeypatch):
    """rs-trafilatura (optional, built from source: docs/dependencies.md) through the record path:
    real WCXB pages give main text with paragraphs on lines of their own (what the C4 line rules
    need); a page it raises on is `skipped:extract_error` and the pages around it come through."""
    _rs_or_skip()
    import rs_trafilatura

    records = responses(shared_path("crawl-extra", "wcxb-dev.warc.gz"))[:40]
    counters = Counters()
    texts = [extract_response(r.body, r.header("WARC-Target-URI"), r.header, "rs-trafilatura", 10.0,
                              4 << 20, counters.inc_fn("r")) for r in records]
    found = [t for t in texts if t is not None]
    assert len(found) >= 35 and all(t.extractor == "rs-trafilatura" for t in found)
    assert sum(t.text.count("\n") >= 3 for t in found) >= 30  # paragraphs, not one run-on line
    real = rs_trafilatura.extract
    bad_url = records[1].header("WARC-Target-URI")

    def flaky(html, url=None, **kwargs):
        if url == bad_url:
            raise RuntimeError("rs-trafilatura panicked")
        return real(html, url=url, **kwargs)

    monkeypatch.setattr(rs_trafilatura, "extract", flaky)
    counters = Counters()
    again = [extract_response(r.body, r.header("WARC-Target-URI"), r.header, "rs-trafilatura", 10.0,
                              4 << 20, counters.inc_fn("r")) for r in records[:3]]
    assert again[1] is None and counters.as_dict() == {"r/skipped:extract_error": 1}
    assert [a.text for a in (again[0], again[2])] == [texts[0].text, texts[2].text]


def test_an_optional_extractor_that_is_not_installed_is_a_one_line_config_error(monkeypatch):
    import c4forge.corpus.extract.html as extract
    from c4forge.core.settings import ConfigError
    from c4forge.corpus.config import build_config

    monkeypatch.setitem(extract.OPTIONAL, "rs-trafilatura", "no_such_module_c4forge")
    with pytest.raises(ConfigError, match="pip install rs-trafilatura") as error:
        build_config("c4-warc", overrides=["read.extractor=rs-trafilatura"])
    assert "\n" not in str(error.value)
    build_config("c4", overrides=["read.extractor=rs-trafilatura"])  # WET input: no extractor runs
