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

from c4forge.train.evaluation.finetune.baselines import reference_rows
from c4forge.train.evaluation.finetune.run import FinetuneConfig, finetune_task

GLUE = harness.SHARED / "eval" / "glue"
OLD = {"pooling": "last", "min_steps": 0, "warmup_share": 0.06}
NEW: dict[str, object] = {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--task", default="sst2")
    parser.add_argument("--max-train", type=int, default=500)
    parser.add_argument("--seeds", default="0,1,2", help="fine-tuning seeds, comma-separated")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    machine = harness.machine()
    from c4forge.train.stats import compare

    seeds = [int(x) for x in args.seeds.split(",")]
    base = {"lr": 1e-3, "epochs": 2, "max_train": args.max_train, "max_eval": None}
    lines = [f"{args.task}, {args.max_train} stratified training examples, full validation split, "
             f"checkpoint `{os.path.relpath(args.checkpoint, ROOT)}`, fine-tuning seeds {seeds} "
             "(each seed draws its own stratified subset); mean ± std over seeds and each seed's score.", "",
             "| recipe | init | steps | validation score | per seed | predicted majority label share | final train loss |",
             "|---|---|---:|---:|---|---:|---:|"]
    scores: dict[tuple[str, str], dict[int, float]] = {}
    for recipe, settings in (("old", OLD), ("new", NEW)):
        label = {"old": "old (last token, 2 epochs)", "new": "new (mean pooling, >= 150 steps)"}[recipe]
        for init in ("pretrained", "random"):
            config = FinetuneConfig(**{**base, **settings, "init": init})
            results = {seed: finetune_task(args.checkpoint, args.task, str(GLUE), config, seed=seed)
                       for seed in seeds}
            scores[(recipe, init)] = {seed: r["score"] for seed, r in results.items()}
            values = list(scores[(recipe, init)].values())
            shares = [r["majority_share"] for r in results.values() if r.get("majority_share") is not None]
            steps = sorted({r["steps"] for r in results.values()})
            lines.append(f"| {label} | {init} | {'/'.join(map(str, steps))} | {harness.mean_std(values)} | "
                         f"{', '.join(f'{v:.2f}' for v in values)} | "
                         f"{f'{sum(shares) / len(shares):.1%}' if shares else '-'} | "
                         f"{sum(r['final_train_loss'] for r in results.values()) / len(results):.3f} |")
            print(lines[-1], flush=True)
    rows = reference_rows(args.task, str(GLUE), max_train=args.max_train)
    for name, label in (("majority", "majority class"), ("tfidf", "TF-IDF + logistic regression")):
        lines.append(f"| {label} (no model), seed-0 subset | - | - | {rows[name]['score']:.2f} | - | - | - |")
    lines += ["", "Paired over fine-tuning seeds (same seed = same subset and order):", ""]
    for title, b, a in (("new random init - old random init", ("new", "random"), ("old", "random")),
                        ("new pretrained - new random init", ("new", "pretrained"), ("new", "random")),
                        ("old pretrained - old random init", ("old", "pretrained"), ("old", "random"))):
        result = compare(scores[a], scores[b])
        lines.append(f"- {title}: " + ("one seed, no test" if result is None else
                     f"{result['difference']:+.2f} [95% CI {result['low']:+.2f}, {result['high']:+.2f}], "
                     f"p = {result['p']:.3g}"))
    harness.publish(f"glue-recipe-{args.task}", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
