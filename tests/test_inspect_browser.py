"""`corpus inspect` looked at as a person would (issue 41): the report of a real build (the
sample crawl through C4 and through T5's unfiltered preset) opened in headless Chromium with the
network off, a screenshot taken, the charts found drawn in its pixels, and every section of the
rendered page found holding content. Skips with the reason where Debian's chromium is not
installed (`make test` installs it where apt-get can)."""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from c4forge.cli.corpus import cli as corpus_cli
from tests.conftest import ROOT
from tests.test_output_safety import invoke

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                "(the Makefile's `browser` step installs it with apt-get)")

SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
BADWORDS = ROOT / "corpus" / "data" / "demo-badwords"
BAR = (0x4A, 0x7F, 0xB5)  # corpus/output/inspect.py's bar colour
# Chromium as the probe of this machine starts it, with every way out closed: a proxy on a port
# nobody listens on and a resolver that resolves nothing, so a report that needed the network
# would show its holes.
OFFLINE = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *OFFLINE, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


class Sections(HTMLParser):
    """The rendered page's <h2>/<h3> headings, each with the text and drawn shapes after it."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict] = []
        self.heading: list[str] | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            if "://" in (attrs.get(name) or ""):
                self.external.append(attrs[name])
        if tag in ("script", "link", "img", "iframe"):
            self.external.append(tag)
        if tag in ("h2", "h3"):
            self.heading = []
        elif self.sections and tag in ("rect", "td", "li") and float(attrs.get("width", 1) or 0) > 0:
            self.sections[-1]["shapes"] += 1

    def handle_endtag(self, tag):
        if tag in ("h2", "h3") and self.heading is not None:
            self.sections.append({"title": "".join(self.heading).strip(), "text": "", "shapes": 0})
            self.heading = None

    def handle_data(self, data):
        if self.heading is not None:
            self.heading.append(data)
        elif self.sections:
            self.sections[-1]["text"] += data.strip()


def test_the_report_of_a_real_build_renders_offline_with_every_section_drawn(tmp_path):
    for preset, extra in (("c4", ["--badwords", BADWORDS]), ("c4-noclean", [])):
        result = invoke(corpus_cli, ["clean", "-i", SAMPLE, "--preset", preset, *extra,
                                     "-o", tmp_path / preset, "-q"])
        assert result.exit_code == 0, result.output
    report = tmp_path / "report.html"
    result = invoke(corpus_cli, ["inspect", tmp_path / "c4", tmp_path / "c4-noclean", "-o", report])
    assert result.exit_code == 0, result.output

    shot = tmp_path / "report.png"
    run = chromium(tmp_path / "profile-shot", "--window-size=1280,7000", "--hide-scrollbars",
                   f"--screenshot={shot}", report.as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000, run.stderr[-2000:]
    from PIL import Image  # lazy: pillow comes with matplotlib; only this test reads pixels

    image = Image.open(shot).convert("RGB")
    bar_pixels = sum(count for count, colour in image.getcolors(maxcolors=1 << 20) if colour == BAR)
    assert bar_pixels > 2_000, f"the charts' bars did not draw ({bar_pixels} pixels of their colour)"
    rows = [image.crop((0, y, image.width, y + 200)) for y in range(0, image.height // 2, 200)]
    assert all(len(row.getcolors(maxcolors=1 << 20) or []) > 2 for row in rows[:8]), \
        "the top of the page is blank"

    dom = chromium(tmp_path / "profile-dom", "--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = Sections()
    page.feed(dom.stdout)
    assert not page.external, f"the report reaches outside itself: {page.external[:5]}"
    titles = [s["title"] for s in page.sections]
    for wanted in ("c4 vs c4-noclean", "What each rule removed", "Languages", "Domains",
                   "Near-duplicate clusters"):
        assert any(wanted in t for t in titles), (wanted, titles)
    empty = [s["title"] for s in page.sections if not s["text"] and not s["shapes"]]
    assert not empty, f"sections without content: {empty}"
