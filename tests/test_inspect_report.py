"""`corpus inspect` (issue 41): the report of C4 vs C4-unfiltered on the embedded sample, checked
against the corpora themselves: the page flow drawn, the pages one kept and the other did not,
the lines C4's rules removed struck out in their page, nothing loaded from the network."""
import html
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest, read_rule_samples
from tests.conftest import ROOT

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")


@pytest.fixture(scope="module")
def two_presets(tmp_path_factory):
    root = tmp_path_factory.mktemp("inspect")
    for preset in ("c4", "c4-noclean"):
        result = CliRunner().invoke(cli, ["clean", "-i", SAMPLE, "--preset", preset, "--badwords", BADWORDS,
                                          "-o", str(root / preset), "-q"])
        assert result.exit_code == 0, result.output
    return root


def texts(directory):
    return {d["url"]: d["text"] for split in ("train", "validation")
            for d in iter_corpus_documents(str(directory), split)}


def test_the_report_shows_what_the_rules_did(two_presets, tmp_path):
    c4, noclean = two_presets / "c4", two_presets / "c4-noclean"
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["inspect", str(c4), str(noclean), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    # self-contained: no script, no resource from anywhere
    assert "<script" not in page and not re.search(r"""(src|href)\s*=|@import|url\(""", page)
    # the page flow of each corpus, one drawn bar per step with its count
    flow = read_manifest(str(c4))["counters"]
    charts = re.findall(r'<svg class="chart"[^>]*aria-label="([^"]+)".*?</svg>', page, flags=re.S)
    assert charts.count("Pages into each step") == 2 and "Pages kept: c4 vs c4-noclean" in charts
    first_flow = page.split('aria-label="Pages into each step"', 1)[1].split("</svg>", 1)[0]
    assert len(re.findall(r'<rect class="bar"[^>]*width="([0-9.]+)"', first_flow)) >= 5
    assert f">{flow['split-wet-file/passed']:,}<" in first_flow
    # the comparison, from the corpora themselves
    a, b = texts(c4), texts(noclean)
    both = set(a) & set(b)
    assert f"Both kept {len(both):,} pages" in page
    assert f"Only in c4-noclean ({len(set(b) - set(a)):,})" in page
    assert f"Only in c4 ({len(set(a) - set(b)):,})" in page
    # every struck-out line is in the unfiltered page and not in C4's page of the same URL
    struck = 0
    for block in re.findall(r'<div class="page"><div class="url">([^<]+)</div>(.*?)</div>', page, flags=re.S):
        url, body = block
        url = url.replace("&amp;", "&")
        for line in re.findall(r'<span class="gone">(.*?)</span>', body, flags=re.S):
            line = line.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&#x27;", "'")
            assert url in both and line in b[url].split("\n") and line not in a[url].split("\n")
            struck += 1
    assert struck > 0
    for section in ("What each rule removed", "Examples of what each rule did", "Languages", "Domains",
                    "Kept documents by length", "Near-duplicate clusters"):
        assert section in page
    # the rule samples recorded during the build: every sampled rule has its heading, and every
    # line a sample struck out is a line of the rule's removal in the samples file
    sections = page.split('aria-label="Pages into each step"')[1:]
    assert len(sections) == 2
    shown = 0
    for directory, section in zip((c4, noclean), sections):
        samples = read_rule_samples(str(directory))
        assert samples is not None
        for rule in samples["rules"]:
            assert f"<h4>{rule['rule']}: " in section
            for sample in rule["samples"]:
                for line, mark in sample.get("lines", []):
                    if mark == "drop":
                        assert f'<span class="gone">{html.escape(line, quote=True)}</span>' in section
                        shown += 1
    assert shown > 10


def test_text_report_and_the_output_file_rule(two_presets, tmp_path):
    result = CliRunner().invoke(cli, ["inspect", str(two_presets / "c4"), "--text"])
    assert result.exit_code == 0 and "pages: read 171 ->" in result.output
    assert "  e.g. clean-page/line-filtered:no_endmark: " in result.output
    user_file = tmp_path / "mine.html"
    user_file.write_text("<html>my notes</html>")
    refused = CliRunner().invoke(cli, ["inspect", str(two_presets / "c4"), "-o", str(user_file), "--overwrite"])
    assert refused.exit_code != 0 and "not a `corpus inspect` report" in refused.output
    assert user_file.read_text() == "<html>my notes</html>"
    out = tmp_path / "r.html"
    assert CliRunner().invoke(cli, ["inspect", str(two_presets / "c4"), "-o", str(out)]).exit_code == 0
    again = CliRunner().invoke(cli, ["inspect", str(two_presets / "c4"), "-o", str(out)])
    assert again.exit_code != 0 and "--overwrite" in again.output
    assert CliRunner().invoke(cli, ["inspect", str(two_presets / "c4"), "-o", str(out), "--overwrite"]).exit_code == 0


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not CHROMIUM, reason="no Chromium here (Debian's `chromium` package)")
def test_the_report_renders_in_headless_chromium_without_network(two_presets, tmp_path):
    out = tmp_path / "report.html"
    assert CliRunner().invoke(cli, ["inspect", str(two_presets / "c4"), str(two_presets / "c4-noclean"),
                                    "-o", str(out)]).exit_code == 0
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9",
                    "--window-size=1200,3000", f"--screenshot={shot}", out.as_uri()],
                   capture_output=True, timeout=120, check=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # something drew, not a blank page
