"""``train``: pretrain, evaluate and export small decoder LMs on token shards."""
from __future__ import annotations

import sys
from typing import Optional, Sequence

import click

from corpus.config import ConfigError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Pretrain, evaluate and export small decoder LMs on token shards."""


@cli.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="YAML file of settings (see configs/).")
@click.option("--resume", is_flag=True, help="Continue from the newest checkpoint in out_dir.")
@click.argument("overrides", nargs=-1)
def run_command(config_file, resume, overrides) -> None:
    """Train a model. OVERRIDES are KEY=VALUE settings, e.g. optim.lr=3e-4 data.batch_size=16.

    Under torchrun (several processes) it runs DDP (or FSDP2 with distributed=fsdp)."""
    from train.checkpoint import CheckpointError
    from train.config import build_train_config
    from train.trainer import TrainingError, train

    try:
        config = build_train_config(config_file, overrides)
        last = train(config, resume=resume, log=click.echo)
    except (ConfigError, TrainingError, CheckpointError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if last:
        click.echo("final: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in last.items()))


def main(argv: Optional[Sequence[str]] = None) -> None:
    cli.main(args=argv, prog_name="train")


if __name__ == "__main__":
    main(sys.argv[1:])
