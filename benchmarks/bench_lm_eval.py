"""Zero-shot accuracy of one checkpoint two ways, in one run: `train eval` (our model, our
scorer) and lm-eval-harness (the `train export`ed transformers Llama model, lm-eval's HFLM) on
the same items (`train lm-eval-tasks`: the same random subset per task). Prints per task the
items, both accuracies, the largest difference of any choice's log-likelihood (from lm-eval's
logged samples against ours) and the time each took.

Run: .venv/bin/python benchmarks/bench_lm_eval.py --checkpoint demo-out/run [--limit 200]
     [--tasks all] [--eval-dir ../shared/data/eval]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c4forge.train.checkpoint import load_model, run_tokenizer
from c4forge.train.evaluation.evaluate import (
    TASK_FILES,
    _joiner,
    _split_pair,
    continuation_logprobs,
    load_task,
    run_tasks,
)
from c4forge.train.evaluation.lm_eval_tasks import task_name, write_lm_eval_tasks
from c4forge.train.export import export_hf

METRIC = {"lambada": "acc,none", "winogrande": "acc,none", "blimp": "acc,none"}


def rel(path) -> str:
    try:
        return os.path.relpath(path, ROOT)
    except ValueError:
        return str(path)


def our_loglikelihoods(model, sp, task, items, seq_len):
    """Every request's log-likelihood in lm-eval's request order (per item, per choice)."""
    if task == "blimp":
        rows = [i for per in items.values() for i in per]
        pairs = [([], sp.encode(s)) for i in rows for s in (i["sentence_good"], i["sentence_bad"])]
    elif task == "winogrande":
        pairs = [_split_pair(sp, o, _joiner(o) + i["continuation"]) for i in items for o in i["context_options"]]
    elif task == "lambada":
        pairs = [_split_pair(sp, i["context"], _joiner(i["context"]) + i["continuation"]) for i in items]
    else:
        pairs = [_split_pair(sp, i["query"], _joiner(i["query"]) + c) for i in items for c in i["choices"]]
    return [lp for lp, _ in continuation_logprobs(model, pairs, seq_len, eos_id=sp.eos_id)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "demo-out" / "run"))
    parser.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "data" / "eval"))
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=None, help="Default: the model's max_seq_len.")
    args = parser.parse_args()
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from lm_eval import __version__ as lm_eval_version
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    tasks = list(TASK_FILES) if args.tasks == "all" else args.tasks.split(",")
    model, config = load_model(args.checkpoint)
    # The window both score in: the model's max_seq_len (the export's max_position_embeddings),
    # so lm-eval never meets a continuation longer than its window (it refuses those).
    seq_len = args.seq_len or model.config.max_seq_len
    sp = run_tokenizer(args.checkpoint, config)
    work = Path(tempfile.mkdtemp(prefix="bench-lm-eval-"))
    try:
        export_hf(args.checkpoint, str(work / "hf"))
        write_lm_eval_tasks(args.eval_dir, str(work / "tasks"), tasks, args.limit, args.seed)
        hf = HFLM(pretrained=str(work / "hf"), dtype="float32", batch_size=args.batch_size,
                  device="cpu", max_length=seq_len)
        manager = TaskManager(include_path=str(work / "tasks"))
        print(f"checkpoint {rel(args.checkpoint)} (seq_len {seq_len}), lm-eval {lm_eval_version}, "
              f"limit {args.limit} per task (BLiMP: per phenomenon), seed {args.seed}")
        print("| task | items | train eval | lm-eval | max abs diff of a log-likelihood | ours s | lm-eval s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for task in tasks:
            start = time.perf_counter()
            ours = run_tasks(model, sp, args.eval_dir, [task], seq_len, args.limit, seed=args.seed)[task]
            ours_s = time.perf_counter() - start
            start = time.perf_counter()
            try:
                out = simple_evaluate(model=hf, tasks=[task_name(task)], task_manager=manager,
                                      log_samples=True, num_fewshot=0, verbosity="ERROR")
            except AssertionError:  # lm-eval asserts every continuation fits in max_length
                print(f"| {task} | {ours['items']:,} | {ours['accuracy']:.4f} | refused: a continuation "
                      f"is longer than max_length {seq_len} (use --seq-len) | | {ours_s:.1f} | |", flush=True)
                continue
            theirs_s = time.perf_counter() - start
            theirs = out["results"][task_name(task)][METRIC.get(task, "acc_norm,none")]
            samples = sorted(out["samples"][task_name(task)], key=lambda s: s["doc_id"])
            their_lls = [float(r[0][0]) for s in samples for r in s["resps"]]
            my_lls = our_loglikelihoods(model, sp, task, load_task(args.eval_dir, task, args.limit, args.seed),
                                        seq_len)
            if len(my_lls) != len(their_lls):
                diff = f"request counts differ: {len(my_lls)} vs {len(their_lls)}"
            else:
                diff = f"{max(abs(a - b) for a, b in zip(my_lls, their_lls)):.1e}"
            print(f"| {task} | {ours['items']:,} | {ours['accuracy']:.4f} | {theirs:.4f} | {diff} | "
                  f"{ours_s:.1f} | {theirs_s:.1f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
