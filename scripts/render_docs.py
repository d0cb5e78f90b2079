"""Write the parts of the docs that are rendered from the code, each between its two marker
comments: the chain table and the settings table of docs/corpus.md (corpus/chain/chains.py's
``markdown_table``, corpus/settings_table.py) and
the map of every module in docs/architecture.md (each module's path and the first sentence of
its docstring, room by room). The docs test fails when a file and the code disagree;
``make docs`` (this script) brings them together.

    .venv/bin/python -m scripts.render_docs [--check]
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from c4forge.corpus.chain.chains import markdown_table
from c4forge.corpus.settings_table import settings_table

ROOT = Path(__file__).resolve().parents[1]
# The folders of the installed package (pyproject's package-dir), in the order the map shows them.
PACKAGE_FOLDERS = ("c4forge/core", "corpus", "pipelines", "tokenizer", "train", "c4forge/ablation", "c4forge/cli")


class Section(NamedTuple):
    """A rendered part of a doc: its file, its marker name, and what renders it."""

    doc: Path
    name: str
    render: Callable[[], str]


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line (a package's: its __init__'s)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split())
    match = re.match(r"(.+?(?<!e\.g)(?<!i\.e)\.)(\s|$)", text)
    sentence = match.group(1) if match else text
    if len(sentence) > 200:  # a long first sentence: up to its first colon or semicolon
        sentence = re.split(r"[:;]\s", sentence, maxsplit=1)[0]
    return sentence.replace("|", "\\|")


def module_map() -> str:
    """Every module of the package, one line each, grouped by folder (a folder's line first)."""
    lines = []
    for top in PACKAGE_FOLDERS:
        folders = sorted({p.parent for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts})
        for folder in folders:
            rel = folder.relative_to(ROOT).as_posix()
            init = folder / "__init__.py"
            about = first_sentence(init) if init.exists() else ""
            lines.append(f"\n**`{rel}/`**{' ' + about if about else ''}\n")
            for path in sorted(folder.glob("*.py")):
                if path.name != "__init__.py":
                    lines.append(f"- `{path.relative_to(ROOT).as_posix()}`: {first_sentence(path)}")
    return "\n".join(lines).lstrip("\n")


PRESETS_DRAWN = ("c4", "gopher", "fineweb")


def planned_graphs() -> str:
    """Each preset's Beam graph as ``corpus build`` plans it: its transforms' labels in order (the
    connected-components rounds of near-dedup shown once, with their count)."""
    from c4forge.corpus.config import build_config  # lazy: with the Beam graph below
    from c4forge.pipelines.c4 import (  # lazy: Beam, only where docs are rendered
        planned_fusions,
        planned_labels,
    )

    out = []
    for preset in PRESETS_DRAWN:
        config = (build_config(preset, badwords=str(ROOT / "corpus" / "data" / "demo-badwords"))
                  if preset == "c4" else build_config(preset))
        labels = planned_labels(config)
        fused = "; ".join(f"{step}: {', '.join(names) or 'none'}" for step, names in planned_fusions(config).items())
        rounds = sorted({int(m.group(1)) for m in map(re.compile(r"cc(\d+) ").match, labels) if m})
        shown, seen = [], False
        for label in labels:
            if re.match(r"cc\d+ ", label):
                if not seen:
                    shown += [f"cc0..cc{rounds[-1]} gather, cluster ({len(rounds)} rounds of connected components)"]
                seen = True
                continue
            shown.append(label)
        out.append(f"`--preset {preset}` ({len(labels)} transforms; fusions: {fused}):\n\n" +
                   "\n".join(f"{i}. {label}" for i, label in enumerate(shown, 1)))
    return "\n\n".join(out)


SECTIONS = (Section(ROOT / "docs" / "corpus.md", "chain-table", markdown_table),
            Section(ROOT / "docs" / "corpus.md", "settings-table", settings_table),
            Section(ROOT / "docs" / "architecture.md", "module-map", module_map),
            Section(ROOT / "docs" / "architecture.md", "planned-graphs", planned_graphs))


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}: rendered by scripts/render_docs.py -->", f"<!-- /{name} -->"


def rendered(text: str, section: Section) -> str:
    """``text`` with the section between its markers made the code's."""
    begin, end = markers(section.name)
    if begin not in text or end not in text:
        raise SystemExit(f"{section.doc.relative_to(ROOT)}: the {section.name} markers are missing")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{section.render()}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the docs are current")
    args = parser.parse_args(argv)
    stale = []
    for section in SECTIONS:
        text = section.doc.read_text(encoding="utf-8")
        new = rendered(text, section)
        if new == text:
            continue
        if args.check:
            stale.append(str(section.doc.relative_to(ROOT)))
        else:
            section.doc.write_text(new, encoding="utf-8")
            print(f"wrote {section.doc.relative_to(ROOT)}")
    if args.check:
        print("docs current" if not stale else f"docs out of date ({', '.join(stale)}): run make docs")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
