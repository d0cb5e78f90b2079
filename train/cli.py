"""``train``: pretrain and evaluate small LMs (issue 5 adds the commands)."""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Pretrain, evaluate and export small decoder LMs on token shards.

    No commands yet in this release: `run`, `eval` and `export` land with the trainer stage.
    """


def main() -> None:
    cli.main(prog_name="train")
