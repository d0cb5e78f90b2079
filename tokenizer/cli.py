"""``tokenizer``: train SentencePiece vocabularies and encode corpora (issue 4 adds the commands)."""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Train SentencePiece vocabularies from corpus shards and encode corpora into token shards.

    No commands yet in this release: `train`, `encode` and `inspect` land with the tokenizer stage.
    """


def main() -> None:
    cli.main(prog_name="tokenizer")
