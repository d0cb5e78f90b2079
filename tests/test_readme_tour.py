"""The README's five-minute tour, run as written: every command of its code blocks, in order,
in a scratch copy of the checkout with a fresh ``demo-out/``, then the cheap one-liners of
docs/corpus.md. A command that exits non-zero fails the test with its output. The claim the
README makes about the sample crawl (which rules it triggers) is checked against the counters
of the tour's own build."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TOUR = ("## A five-minute tour", "## Conventions")
# one-liners of the docs that run in seconds on the shared crawl
DOC_ONE_LINERS = (("docs/corpus.md", r"^`(corpus (?:build|clean) -i '?\.\./shared/data/crawl[^`]*)`$"),)


def commands_of(markdown: str) -> list[str]:
    """Every command line of the ``` blocks in ``markdown`` (continuations joined, comments and
    blank lines dropped)."""
    commands = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", markdown, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


def tour_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = readme.index(TOUR[0]), readme.index(TOUR[1])
    return commands_of(readme[start:end])


def doc_one_liners() -> list[str]:
    found = []
    for doc, pattern in DOC_ONE_LINERS:
        found += re.findall(pattern, (ROOT / doc).read_text(encoding="utf-8"), flags=re.M)
    return found


def test_the_tour_is_found_and_names_only_our_commands():
    commands = tour_commands()
    assert len(commands) >= 12
    assert {c.split()[0] for c in commands} <= {"corpus", "tokenizer", "train"}
    assert len(doc_one_liners()) == 2


@pytest.fixture
def scratch(tmp_path) -> Path:
    """A copy of what the tour reads (the sample crawl, configs) beside ``../shared`` as in a
    checkout; no demo-out."""
    if not (SHARED / "crawl").is_dir():
        pytest.skip(f"the tour's GLUE and docs commands read ../shared/data ({SHARED} is absent)")
    repo = tmp_path / "checkout"
    (repo / "corpus").mkdir(parents=True)
    shutil.copytree(ROOT / "corpus" / "data", repo / "corpus" / "data")
    shutil.copytree(ROOT / "configs", repo / "configs")
    (tmp_path / "shared").symlink_to(SHARED.parent.resolve())
    return repo


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMP_NUM_THREADS": "1", "C4FORGE_PROGRESS": "0"}
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_readme_tour_runs_as_written(scratch):
    for command in [*tour_commands(), *doc_one_liners()]:
        result = run(command, scratch)
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    # what the README says of the sample crawl: which rules it triggers
    counters = json.loads((scratch / "demo-out" / "c4" / "_manifest.json").read_text())["counters"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    claim = re.search(r"every rule fires on\s+it except (.+?) \(which", readme, flags=re.S)
    assert claim, "README no longer says which rules the sample leaves silent"
    silent = set(re.findall(r"`([^`]+)`", claim.group(1)))
    assert silent <= set(RULES)
    assert {rule for rule in RULES if counters.get(rule, 0) == 0} == silent


# every counter that records a page or line removed by a rule of the c4 preset
RULES = ("too-long-filter/filtered", "duplicate-url-filter/filtered",
         "clean-page/filtered:loremipsum", "clean-page/filtered:squigglybracket",
         "clean-page/filtered:too_few_sentences", "clean-page/line-filtered:javascript",
         "clean-page/line-filtered:no_endmark", "clean-page/line-filtered:policy",
         "clean-page/line-filtered:too_long_word", "clean-page/line-filtered:too_short",
         "dedupe-lines/filtered:too_few_sentences", "dedupe-lines/line-filtered:global_duplicate",
         "dedupe-lines/line-filtered:local_duplicate", "language-filter/filtered:ignored_language",
         "language-filter/filtered:low_confidence", "badwords-filter/filtered", "near-dedup/filtered")
