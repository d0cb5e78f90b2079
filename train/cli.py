"""``train``: pretrain, evaluate and export small decoder LMs on token shards."""
from __future__ import annotations

import sys
from typing import Optional, Sequence

import click

from corpus.config import ConfigError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="c4forge", message="%(prog)s (c4forge %(version)s)")
def cli() -> None:
    """Pretrain, evaluate and export small decoder LMs on token shards."""


@cli.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="YAML file of settings (see configs/).")
@click.option("--resume", is_flag=True, help="Continue from the newest checkpoint in out_dir.")
@click.option("--overwrite", is_flag=True,
              help="Start again in an out_dir that holds another run (its own files are removed).")
@click.argument("overrides", nargs=-1)
def run_command(config_file, resume, overwrite, overrides) -> None:
    """Train a model. OVERRIDES are KEY=VALUE settings, e.g. optim.lr=3e-4 data.batch_size=16.

    Under torchrun (several processes) it runs DDP (or FSDP2 with distributed=fsdp)."""
    from tokenizer.formats import TokenFormatError
    from train.checkpoint import CheckpointError
    from train.config import build_train_config
    from train.trainer import TrainingError, train

    if resume and overwrite:
        raise click.UsageError("--resume and --overwrite exclude each other")
    bad = [o for o in overrides if o.startswith("-")]
    if bad:
        raise click.UsageError(f"unknown option(s): {', '.join(bad)}")
    try:
        config = build_train_config(config_file, overrides)
        last = train(config, resume=resume, overwrite=overwrite, log=click.echo)
    except (ConfigError, TrainingError, CheckpointError, ValueError, TokenFormatError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or ''}: {exc.strerror or exc}") from exc
    if last:
        click.echo("final: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in last.items()))


@cli.command("eval")
@click.option("--checkpoint", required=True, type=click.Path(exists=True),
              help="A run directory, its checkpoints/ directory, or one step directory.")
@click.option("--data", "data", multiple=True,
              help="Token directory (from `tokenizer encode`) or a raw text file; repeatable.")
@click.option("--split", default="validation", show_default=True, help="Split of token directories.")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True, file_okay=False),
              help="Tokenizer directory (default: the one of the training tokens).")
@click.option("--tasks", default="", help="Comma-separated zero-shot tasks: lambada, hellaswag, "
              "piqa, arc_easy, winogrande, copa, blimp (or 'all').")
@click.option("--eval-dir", default=None, help="Directory with the task files (../shared/data/eval layout).")
@click.option("--limit", type=int, default=None, help="Items per task (BLiMP: per phenomenon).")
@click.option("--seq-len", type=int, default=None, help="Default: the training seq_len.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the results as JSON.")
def eval_command(checkpoint, data, split, tokenizer_dir, tasks, eval_dir, limit, seq_len, output) -> None:
    """Loss, perplexity and bits per byte on held-out data, and zero-shot task accuracy."""
    import json
    import os

    import torch

    from tokenizer.formats import TokenFormatError
    from tokenizer.train import TokenizerError, load_tokenizer
    from train.checkpoint import CheckpointError, load_model, run_tokenizer_dir
    from train.evaluate import TASK_FILES, eval_text, eval_tokens, run_tasks

    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        model, config = load_model(checkpoint, device)
        seq_len = seq_len or config["data"]["seq_len"]
        if tokenizer_dir is None:
            tokenizer_dir = run_tokenizer_dir(checkpoint, config)
        sp, _ = load_tokenizer(tokenizer_dir)
    except (CheckpointError, TokenizerError, TokenFormatError, KeyError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    results = {"checkpoint": os.path.abspath(checkpoint), "seq_len": seq_len, "data": {}, "tasks": {}}
    for item in data:
        try:
            if os.path.isdir(item):
                results["data"][item] = eval_tokens(model, item, split, seq_len, device=device)
            else:
                with open(item, encoding="utf-8") as handle:
                    results["data"][item] = eval_text(model, sp, handle.read(), seq_len, device=device)
        except (TokenFormatError, ValueError, OSError) as exc:
            raise click.ClickException(f"{item}: {exc}") from exc
    names = list(TASK_FILES) if tasks == "all" else [t for t in tasks.split(",") if t]
    unknown = [t for t in names if t not in TASK_FILES]
    if unknown:
        raise click.UsageError(f"unknown task(s) {', '.join(unknown)}; choose from {', '.join(TASK_FILES)}")
    if names:
        if not eval_dir:
            raise click.UsageError("--tasks needs --eval-dir")
        try:
            results["tasks"] = run_tasks(model, sp, eval_dir, names, seq_len, limit, device)
        except FileNotFoundError as exc:
            raise click.ClickException(str(exc)) from exc
    rows = ["| data | loss | perplexity | bits/byte | tokens |", "|---|---:|---:|---:|---:|"]
    for name, r in results["data"].items():
        rows.append(f"| {name} | {r['loss']:.4f} | {r['perplexity']:.2f} | {r.get('bits_per_byte', float('nan')):.4f} | {r['tokens']:,} |")
    if results["tasks"]:
        rows += ["", "| task | accuracy | items |", "|---|---:|---:|"]
        rows += [f"| {t} | {r['accuracy']:.4f} | {r['items']:,} |" for t, r in results["tasks"].items()]
    click.echo("\n".join(rows))
    if output:
        from corpus.io import atomic_write

        try:
            with atomic_write(output) as handle:
                json.dump(results, handle, indent=2)
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from exc


@cli.command("export")
@click.option("--checkpoint", required=True, type=click.Path(exists=True))
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True, file_okay=False),
              help="Default: the tokenizer of the training tokens.")
@click.option("--overwrite", is_flag=True, help="Replace an earlier export in --output (only its files).")
def export_command(checkpoint, output, tokenizer_dir, overwrite) -> None:
    """Write a transformers Llama model (safetensors, config.json, tokenizer) for HF tools and
    lm-eval-harness."""
    from corpus.outdir import OutputError
    from tokenizer.formats import TokenFormatError
    from tokenizer.train import TokenizerError
    from train.checkpoint import CheckpointError
    from train.export import export_hf

    try:
        path = export_hf(checkpoint, output, tokenizer_dir, overwrite=overwrite)
    except (CheckpointError, OutputError, TokenizerError, TokenFormatError, KeyError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or output}: {exc.strerror or exc}") from exc
    click.echo(f"exported to {path}: load with transformers.AutoModelForCausalLM.from_pretrained({path!r})")


@cli.command("ablate")
@click.option("--config", "config_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Ablation YAML (see configs/ablation-demo.yaml).")
@click.option("--report-dir", type=click.Path(file_okay=False), help="Default: OUT_DIR/report.")
def ablate_command(config_file, report_dir) -> None:
    """Filtered vs unfiltered (or any rule sets): corpora, one tokenizer, N seeds per variant,
    the same evaluations, and a report with tables and charts. Re-runs reuse finished work."""
    from train.ablation import AblationError, run_ablation
    from train.checkpoint import CheckpointError
    from train.trainer import TrainingError

    try:
        path = run_ablation(config_file, log=click.echo, report_dir=report_dir)
    except (AblationError, ConfigError, TrainingError, CheckpointError, ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"report: {path}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    from corpus.cliutil import guarded_main

    guarded_main(cli, argv, "train")


if __name__ == "__main__":
    main(sys.argv[1:])
