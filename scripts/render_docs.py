"""Write the parts of the docs that are rendered from the code: the chain table of
docs/corpus.md (corpus/chain.py's ``markdown_table``), between its two marker comments. The docs
test fails when the file and the code disagree; ``make docs`` (this script) brings them together.

    .venv/bin/python -m scripts.render_docs [--check]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from c4forge.corpus.chain import markdown_table

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DOC = ROOT / "docs" / "corpus.md"
BEGIN, END = "<!-- chain-table: rendered by scripts/render_docs.py -->", "<!-- /chain-table -->"


def rendered(text: str) -> str:
    """``text`` with the chain table between the markers made the code's."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{CORPUS_DOC.relative_to(ROOT)}: the chain table's markers are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{markdown_table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the docs are current")
    args = parser.parse_args(argv)
    text = CORPUS_DOC.read_text(encoding="utf-8")
    new = rendered(text)
    if args.check:
        print("docs current" if new == text else "docs out of date: run make docs")
        return 0 if new == text else 1
    if new != text:
        CORPUS_DOC.write_text(new, encoding="utf-8")
        print(f"wrote {CORPUS_DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
