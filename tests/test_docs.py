"""The documentation that is generated or promised: the CLI reference matches the commands, the
README stays short, and every document it links to exists."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_matches_the_commands():
    from c4forge.cli.reference import reference_path, render

    assert reference_path() == ROOT / "docs" / "cli.md"
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run `python -m c4forge.cli.reference`")


def test_cli_reference_lists_every_option_of_every_command():
    from c4forge.cli import corpus, tokenizer, train
    from c4forge.cli.reference import render

    text = render()
    for group in (corpus.cli, tokenizer.cli, train.cli):
        for command in group.commands.values():
            for param in command.params:
                for opt in getattr(param, "opts", []):
                    if opt.startswith("-"):
                        assert f"`{opt}" in text, f"{group.name} {command.name}: {opt} missing"


def test_stale_reference_is_detected(tmp_path, monkeypatch):
    from c4forge.cli import reference

    stale = tmp_path / "cli.md"
    stale.write_text(reference.render().replace("--overwrite", "--overwrote", 1), encoding="utf-8")
    monkeypatch.setattr(reference, "reference_path", lambda: stale)
    assert reference.main(["--check"]) == 1
    stale.write_text(reference.render(), encoding="utf-8")
    assert reference.main(["--check"]) == 0


def test_check_mode_from_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "c4forge.cli.reference", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_readme_is_short_and_its_links_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "make demo" in readme and "make test" in readme
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to missing {target}"
    for doc in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_the_settings_table_is_rendered_from_the_steps_and_holds_every_setting():
    """docs/corpus.md's settings table is the code's (`make docs`), and it names every field of
    every step's settings type, the reader's and the rule samples', with its c4 default."""
    import dataclasses

    from c4forge.corpus.config import CorpusConfig
    from c4forge.corpus.output.samples import SampleOptions
    from c4forge.corpus.read.options import ReadOptions
    from c4forge.corpus.settings_table import shown
    from c4forge.corpus.steps import REGISTRY
    from scripts.render_docs import SECTIONS, rendered

    section = next(s for s in SECTIONS if s.name == "settings-table")
    text = section.doc.read_text(encoding="utf-8")
    assert rendered(text, section) == text, "docs/corpus.md's settings table is out of date: run make docs"
    rows = {line.split(" | ")[0].split("`")[1].split(".")[0]: line for line in text.splitlines()
            if line.startswith("| `") and "." in line.split(" | ")[0]}
    config = CorpusConfig()
    holders = [(name, config.settings_of(name)) for name in REGISTRY if name != "read"]
    for name, settings in [*holders, ("read", ReadOptions()), ("rule_samples", SampleOptions())]:
        row = rows[name]
        keys, defaults = row.split(" | ")[0], row.split(" | ")[1]
        for field in dataclasses.fields(settings):
            assert f"`{name}.{field.name}`" in keys or f"`.{field.name}`" in keys, (name, field.name)
            assert shown(getattr(settings, field.name)).replace("|", "/") in defaults, (name, field.name)


def test_the_planned_graph_of_each_preset_in_the_docs_is_the_code_s():
    """docs/architecture.md shows each preset's Beam graph as `corpus build` plans it (transform
    labels in order, from pipelines/c4.py planned_labels; `make docs` renders it)."""
    pytest.importorskip("apache_beam", reason="the graph is Beam's: the engines' environment renders it")
    from scripts.render_docs import SECTIONS, rendered

    section = next(s for s in SECTIONS if s.name == "planned-graphs")
    text = section.doc.read_text(encoding="utf-8")
    assert rendered(text, section) == text, "docs/architecture.md's planned graphs are stale: run make docs"
    block = text.split("<!-- planned-graphs", 1)[1].split("<!-- /planned-graphs", 1)[0]
    for preset in ("c4", "gopher", "fineweb"):
        assert f"`--preset {preset}`" in block
    assert "group by url bucket" in block and "write shards" in block
