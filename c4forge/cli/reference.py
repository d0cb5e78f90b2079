"""docs/cli.md, generated from the click commands themselves, so the reference cannot drift.

``python -m c4forge.cli.reference`` rewrites it; ``--check`` exits 1 when the file on disk
differs from what the commands say (tests/test_docs.py runs the check in ``make test``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

HEADER = """# Command-line reference

Generated from the commands by `python -m c4forge.cli.reference`; do not edit by hand (a test
fails when this file and the commands differ). What each command is for, with examples: the
README's tour and the stage guides in this folder.
"""


def _option_row(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        name = f"`{param.human_readable_name}`" + (" (repeatable)" if param.nargs == -1 else "")
        return f"| {name} | argument |"
    assert isinstance(param, click.Option)
    value = ""
    if not param.is_flag and not param.count:
        value = " " + (param.metavar or param.type.name.upper())
    names = ", ".join(f"`{n}{value}`" for n in param.opts)
    names += "".join(f", `{n}`" for n in param.secondary_opts)
    help_text = (param.help or "").replace("|", "\\|").replace("\n", " ")
    extra: list[str] = []
    if isinstance(param.type, click.Choice):
        extra.append("one of " + ", ".join(f"`{c}`" for c in param.type.choices))
    if param.multiple:
        extra.append("repeatable")
    if param.required:
        extra.append("required")
    if param.show_default and param.default not in (None, False, ()):
        extra.append(f"default `{param.default}`")
    text = " ".join(p for p in [help_text, f"({'; '.join(extra)})" if extra else ""] if p)
    return f"| {names} | {text} |"


def command_section(prog: str, command: click.Command, level: int = 2) -> list[str]:
    lines = [f"{'#' * level} `{prog}`", ""]
    doc = (command.help or "").strip()
    if doc:
        lines += [" ".join(doc.split()), ""]
    params = [p for p in command.params if not getattr(p, "hidden", False)]
    if params:
        lines += ["| option | meaning |", "|---|---|"] + [_option_row(p) for p in params] + [""]
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            lines += command_section(f"{prog} {name}", command.commands[name], level + 1)
    return lines


def render() -> str:
    from c4forge.cli import (  # lazy: every command's module, only while the reference is generated
        corpus,
        langid,
        tokenizer,
        train,
    )

    lines = [HEADER]
    for prog, command in (("corpus", corpus.cli), ("tokenizer", tokenizer.cli),
                          ("train", train.cli), ("python -m c4forge.cli.langid", langid.self_check_command)):
        lines += command_section(prog, command)
    return "\n".join(lines).rstrip() + "\n"


def reference_path() -> Path:
    return Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def main(argv: list[str]) -> int:
    text, path = render(), reference_path()
    if "--check" in argv:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print("docs/cli.md is stale: run `python -m c4forge.cli.reference`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print("wrote docs/cli.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
