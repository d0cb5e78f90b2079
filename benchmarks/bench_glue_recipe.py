"""GLUE recipe check (issue 28): does fine-tuning measure the pretrained weights, or only the
label prior? The old ablation recipe (last-token pooling, 500 examples x 2 epochs = 32 steps,
6% warm-up) against the new defaults (mean pooling, at least 150 steps, 10% warm-up), each from
the pretrained checkpoint and from the same model's random initialisation, beside the majority
class and TF-IDF logistic regression on the same stratified examples. SST-2, one seed per row.

Run: python benchmarks/bench_glue_recipe.py --checkpoint RUN_DIR [--write]
(RUN_DIR: any c4forge pretraining run, e.g. ablation-out/wcxb-warc/runs/c4/seed-0 after
`train ablate --config configs/ablation-wcxb-warc.yaml`.)
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness

from c4forge.train.finetune.baselines import reference_rows
from c4forge.train.finetune.run import FinetuneConfig, finetune_task

GLUE = harness.SHARED / "eval" / "glue"
OLD = {"pooling": "last", "min_steps": 0, "warmup_share": 0.06}
NEW: dict[str, object] = {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--task", default="sst2")
    parser.add_argument("--max-train", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    machine = harness.machine()
    base = {"lr": 1e-3, "epochs": 2, "max_train": args.max_train, "max_eval": None}
    lines = [f"{args.task}, {args.max_train} stratified training examples, full validation split, "
             f"checkpoint `{os.path.relpath(args.checkpoint, ROOT)}`, fine-tuning seed {args.seed}.", "",
             "| recipe | init | steps | validation score | predicted majority label share | final train loss |",
             "|---|---|---:|---:|---:|---:|"]
    for recipe, settings in (("old (last token, 2 epochs)", OLD), ("new (mean pooling, >= 150 steps)", NEW)):
        for init in ("pretrained", "random"):
            config = FinetuneConfig(**{**base, **settings, "init": init})
            r = finetune_task(args.checkpoint, args.task, str(GLUE), config, seed=args.seed)
            share = r.get("majority_share")
            lines.append(f"| {recipe} | {init} | {r['steps']} | {r['score']:.2f} | "
                         f"{'-' if share is None else f'{share:.1%}'} | {r['final_train_loss']:.3f} |")
            print(lines[-1], flush=True)
    rows = reference_rows(args.task, str(GLUE), max_train=args.max_train)
    for name, label in (("majority", "majority class"), ("tfidf", "TF-IDF + logistic regression")):
        lines.append(f"| {label} (no model) | - | - | {rows[name]['score']:.2f} | - | - |")
    harness.publish(f"glue-recipe-{args.task}", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
