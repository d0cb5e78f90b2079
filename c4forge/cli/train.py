"""``train``: pretrain, evaluate and export small decoder LMs on token shards."""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Optional

import click

from c4forge.cli.common import (
    Console,
    check_overrides,
    group,
    guarded_main,
    json_option,
    lock_outputs,
    output_options,
    say,
    set_option,
)
from c4forge.core.io import atomic_write
from c4forge.core.settings import load_yaml_mapping, merge_settings, parse_overrides
from c4forge.train.config import build_train_config
from c4forge.train.evaluation.finetune.glue import TASKS

CHECKPOINT = click.option("--input", "-i", "--checkpoint", "checkpoint", required=True,
                          type=click.Path(exists=True),
                          help="A run directory, its checkpoints/ directory, or one step directory.")


def _stage():
    """The train stage's entry points (train/commands.py), loaded where a command needs them."""
    from c4forge.train import commands  # lazy: torch: `train --help` starts without it
    return commands


def human(key: str, value) -> str:
    """One metric as people read it: 4 significant digits, thousands separators, and what a
    missing MFU means."""
    if key == "mfu" and value is None:
        return "mfu n/a (no peak known for this device)"
    if isinstance(value, float):
        if key == "mfu":
            return f"mfu {value:.1%}"
        return f"{key} {value:,.0f}" if abs(value) >= 1e4 else f"{key} {value:.4g}"
    if isinstance(value, int):
        return f"{key} {value:,}"
    return f"{key} {value}"


@group
def cli() -> None:
    """Pretrain, evaluate and export small decoder LMs on token shards.

    Needs the [train] extra: pip install 'c4forge[train]' (the [hf] extra too for HF
    transformers and lm-eval)."""


@cli.command("run")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="YAML file of settings (see configs/).")
@set_option
@click.option("--output", "-o", type=click.Path(file_okay=False),
              help="Run directory (the out_dir setting).")
@click.option("--resume", is_flag=True, help="Continue from the newest checkpoint in out_dir.")
@click.option("--overwrite", is_flag=True,
              help="Start again in an out_dir that holds another run (its own files are removed).")
@click.argument("bare_overrides", nargs=-1, metavar="[KEY=VALUE]...")
@output_options
def run_command(config_file, overrides, output, resume, overwrite, bare_overrides) -> None:
    """Train a model. Settings: --set KEY=VALUE (or bare KEY=VALUE words), e.g.
    --set optim.lr=3e-4 data.batch_size=16.

    Under torchrun (several processes) it runs DDP (or FSDP2 with distributed=fsdp)."""
    stage = _stage()

    if resume and overwrite:
        raise click.UsageError("--resume and --overwrite exclude each other")
    settings = check_overrides(list(overrides) + list(bare_overrides))
    if output:
        settings.append(f"out_dir={output}")
    if Console.quiet:
        settings.append("progress=false")
    config = build_train_config(config_file, settings)
    if os.environ.get("RANK", "0") == "0":  # under torchrun the ranks share one run directory
        lock_outputs(config.out_dir)
    last = stage.train(config, resume=resume, overwrite=overwrite, log=say)
    if last:
        say("final: " + ", ".join(human(k, v) for k, v in last.items()))


@cli.command("eval")
@CHECKPOINT
@click.option("--data", "data", multiple=True,
              help="Token directory (from `tokenizer encode`) or a raw text file; repeatable.")
@click.option("--split", default="validation", show_default=True, help="Split of token directories.")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True),
              help="Tokenizer: a directory or file as `tokenizer encode --tokenizer` takes "
                   "(default: the run's copy of the one of the training tokens).")
@click.option("--tasks", default="", help="Comma-separated zero-shot tasks: lambada, hellaswag, "
              "piqa, arc_easy, winogrande, copa, blimp (or 'all').")
@click.option("--eval-dir", default=None, help="Directory with the task files (../shared/data/eval layout).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Items per task (BLiMP: per phenomenon).")
@click.option("--seed", type=int, default=0, show_default=True, help="Which random subset --limit takes.")
@click.option("--seq-len", type=click.IntRange(min=1), default=None, help="Default: the training seq_len.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the results as JSON.")
@json_option(help="Print the results as JSON instead of tables "
              "(schema: c4forge/core/schemas/eval-results.schema.json).")
@output_options
def eval_command(checkpoint, data, split, tokenizer_dir, tasks, eval_dir, limit, seed, seq_len, output,
                 as_json) -> None:
    """Loss, perplexity and bits per byte on held-out data, and zero-shot task accuracy."""

    stage = _stage()

    names = _task_names(tasks)
    if names and not eval_dir:
        raise click.UsageError("--tasks needs --eval-dir")
    results = stage.evaluate_checkpoint(checkpoint, data=data, split=split, tasks=names, eval_dir=eval_dir,
                                  limit=limit, seed=seed, seq_len=seq_len, tokenizer_dir=tokenizer_dir)
    name = results["objective"]
    rows = [f"objective {name}", "", "| data | loss | perplexity | bits/byte | tokens |", "|---|---:|---:|---:|---:|"]
    for item, r in results["data"].items():
        rows.append(f"| {item} | {r['loss']:.4f} | {r['perplexity']:.2f} | {r.get('bits_per_byte', float('nan')):.4f} | {r['tokens']:,} |")
    if name == "prefix_lm":
        rows.append("(prefix_lm: loss and bits/byte scored left to right; its own loss in the JSON)")
    if results["tasks"]:
        rows += ["", "| task | accuracy | items |", "|---|---:|---:|"]
        rows += [f"| {t} | {r['accuracy']:.4f} | {r['items']:,} |" for t, r in results["tasks"].items()]
    click.echo(json.dumps(results, indent=2) if as_json else "\n".join(rows))
    if output:
        with atomic_write(output) as handle:
            json.dump(results, handle, indent=2)


def _task_names(tasks: str):
    stage = _stage()

    names = list(stage.TASK_FILES) if tasks == "all" else [t for t in tasks.split(",") if t]
    unknown = [t for t in names if t not in stage.TASK_FILES]
    if unknown:
        raise click.UsageError(f"unknown task(s) {', '.join(unknown)}; choose from {', '.join(stage.TASK_FILES)}")
    return names


@cli.command("lm-eval-tasks")
@click.option("--eval-dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="Directory with the task files (../shared/data/eval layout).")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False),
              help="Directory for the task YAMLs and their items (lm_eval --include_path).")
@click.option("--tasks", default="all", show_default=True, help="Comma-separated tasks, or 'all'.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Items per task (BLiMP: per phenomenon), "
              "the same subset `train eval --limit N --seed S` scores.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--overwrite", is_flag=True, help="Replace an earlier task directory (only its files).")
@output_options
def lm_eval_tasks_command(eval_dir, output, tasks, limit, seed, overwrite) -> None:
    """Write lm-eval-harness tasks for the same items `train eval --tasks` scores, to
    cross-check an export: `lm_eval --model hf --model_args pretrained=EXPORT --include_path
    DIR --tasks c4forge`."""
    stage = _stage()

    lock_outputs(output)
    counts = stage.write_lm_eval_tasks(eval_dir, output, _task_names(tasks), limit=limit, seed=seed,
                                 overwrite=overwrite)
    say(f"wrote {len(counts)} tasks ({sum(counts.values()):,} items) to {output}: "
        f"lm_eval --model hf --model_args pretrained=EXPORT,dtype=float32 --include_path {output} "
        f"--tasks {stage.GROUP}")


@cli.command("finetune")
@CHECKPOINT
@click.option("--task", "tasks", required=True,
              help="A GLUE task (sst2, cola, mrpc, stsb, rte, wnli), several comma-separated, or 'glue' for all.")
@click.option("--glue-dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="Directory of <task>/{train,validation}.jsonl (../shared/data/eval/glue layout).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="YAML: settings for every task at the top level, per task under its name "
                   "(configs/glue.yaml).")
@set_option
@click.option("--seeds", default="0,1,2", show_default=True, help="Fine-tuning seeds, comma-separated.")
@click.option("--lr", "lrs", default=None, help="Learning rates to sweep, comma-separated "
              "(the best mean validation score is reported). Default: each task's lr.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write every run and the summary as JSON.")
@output_options
def finetune_command(checkpoint, tasks, glue_dir, config_file, overrides, seeds, lrs, output) -> None:
    """Fine-tune a pretrained run (any objective) on GLUE and report the official metrics,
    mean and spread over seeds, and T5's GLUE average."""

    import torch  # lazy: torch: `train --help` and the other commands start without it

    stage = _stage()

    names = list(TASKS) if tasks == "glue" else [t.strip() for t in tasks.split(",") if t.strip()]
    unknown = [t for t in names if t not in TASKS]
    if unknown or not names:
        raise click.UsageError(f"unknown GLUE task(s) {', '.join(unknown)}: choose from {', '.join(TASKS)} or glue")
    try:
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
        lr_list = [float(x) for x in lrs.split(",")] if lrs else None
    except ValueError as exc:
        raise click.UsageError(f"--seeds/--lr: {exc}") from exc
    settings = load_yaml_mapping(config_file) if config_file else {}
    configs = stage.task_configs(names, merge_settings(settings, parse_overrides(overrides)))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    result = stage.run_glue(checkpoint, names, glue_dir, configs, seeds=seed_list, lrs=lr_list,
                      device=device, log=say)
    rows = ["| task | lr | metric(s), mean ± std over seeds | score |", "|---|---:|---|---:|"]
    for task, s in result["tasks"].items():
        metrics = ", ".join(f"{m} {v['mean']:.2f} ± {v['std']:.2f}" for m, v in s["metrics"].items())
        rows.append(f"| {task} | {s['lr']:g} | {metrics} | {s['score']['mean']:.2f} |")
    rows.append(f"| GLUE average (T5) | | | {result['glue_average']:.2f} |")
    click.echo("\n".join(rows))
    if output:
        with atomic_write(output) as handle:
            json.dump(result, handle, indent=2)


@cli.command("export")
@CHECKPOINT
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True),
              help="A c4forge tokenizer directory or a Hugging Face tokenizer.json. "
                   "Default: the run's copy of the tokenizer of the training tokens.")
@click.option("--overwrite", is_flag=True, help="Replace an earlier export in --output (only its files).")
@output_options
def export_command(checkpoint, output, tokenizer_dir, overwrite) -> None:
    """Write a transformers Llama model (safetensors, config.json, tokenizer) for HF tools and
    lm-eval-harness."""
    stage = _stage()

    lock_outputs(output)
    path = stage.export_hf(checkpoint, output, tokenizer_dir, overwrite=overwrite)
    say(f"exported to {path}: load with transformers.AutoModelForCausalLM.from_pretrained({path!r})")


@cli.command("ablate")
@click.option("--config", "config_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Ablation YAML (see configs/ablation-demo.yaml).")
@set_option
@click.option("--output", "-o", "--report-dir", "report_dir", type=click.Path(file_okay=False),
              help="Report directory. Default: OUT_DIR/report (OUT_DIR/report-bytes for `budget: bytes`).")
@click.option("--until-decided", is_flag=True,
              help="Add seeds in rounds until every headline comparison is decided (a group-sequential "
                   "test that keeps the error rate over the repeated looks) or --max-seeds is reached; "
                   "the spec's seeds are the first look.")
@click.option("--max-seeds", type=click.IntRange(min=2), default=None,
              help="With --until-decided: the most seeds per variant (default 10, or the spec's "
                   "sequential.max_seeds).")
@output_options
def ablate_command(config_file, overrides, report_dir, until_decided, max_seeds) -> None:
    """Filtered vs unfiltered (or any rule sets): corpora, one tokenizer, N seeds per variant,
    the same evaluations, and a report with tables and charts. Re-runs reuse finished work."""
    from c4forge.ablation import (
        run_ablation,  # lazy: torch, scipy, pyarrow: `train --help` starts without them
    )

    path = run_ablation(config_file, log=say, report_dir=report_dir,
                        overrides=check_overrides(overrides), until_decided=until_decided,
                        max_seeds=max_seeds)
    say(f"report: {path}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    guarded_main(cli, argv, "train")


if __name__ == "__main__":
    main(sys.argv[1:])
