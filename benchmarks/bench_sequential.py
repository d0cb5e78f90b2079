"""Sequential seeds by simulation: the error rate of `train ablate --until-decided` at zero
effect, and the seeds it spends at the effect sizes our example ablations measured, beside the
fixed design.

Each simulated ablation draws paired per-seed differences ~ Normal(effect, 1) (the effect in
seed standard deviations: the standardised effect) and runs them through the plan's looks
(c4forge/ablation/sequential.py: Plan, simulate). Effects: 0 (type I error) and the
standardised effects of the headline tests in examples/*/results.json (c4 vs c4-noclean:
|mean paired difference| / seed standard deviation of the differences). Plans: first look at 3
seeds, then every seed (or every 2) up to 10, O'Brien-Fleming-type and Pocock-type spending;
the fixed design runs all 10 seeds and tests once. Simulation standard errors beside the rates.

Run: python benchmarks/bench_sequential.py [--trials 20000] [--write] [--quick]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402

from c4forge.ablation.report import headline_tests  # noqa: E402
from c4forge.ablation.sequential import Plan, seed_differences, simulate  # noqa: E402


def example_effects() -> list[tuple[str, float]]:
    """(example: test, standardised effect) of every c4 vs c4-noclean headline test in the
    committed example reports."""
    out = []
    for path in sorted((ROOT / "examples").glob("*/results.json")) + sorted((ROOT / "examples").glob("*/*/results.json")):
        summary = json.loads(path.read_text())
        if not {"c4", "c4-noclean"} <= set(summary.get("variants", {})):
            continue
        for metric, a, b in headline_tests(summary)[2]:
            if {a, b} != {"c4", "c4-noclean"}:
                continue
            diffs = seed_differences(summary, metric, a, b)
            if len(diffs) >= 2 and statistics.stdev(diffs) > 0:
                name = f"{path.parent.relative_to(ROOT / 'examples')}: {metric}"
                out.append((name, abs(statistics.fmean(diffs)) / statistics.stdev(diffs)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="2,000 trials, one plan, nothing written.")
    args = parser.parse_args()
    machine = harness.machine()
    trials = 2000 if args.quick else args.trials
    plans = {"every seed, O'Brien-Fleming": Plan.rounds(3, 10, 1),
             "every 2 seeds, O'Brien-Fleming": Plan.rounds(3, 10, 2),
             "every seed, Pocock": Plan.rounds(3, 10, 1, kind="pocock")}
    if args.quick:
        plans = dict(list(plans.items())[:1])
    effects = [("no difference (type I error)", 0.0)] + example_effects()
    lines = [f"{trials:,} simulated ablations per row (paired per-seed differences ~ Normal(effect, 1)); "
             "alpha 0.05 for one headline test; the fixed design runs 10 seeds and tests once. "
             "Decided = share of ablations declared different (± one simulation standard error): "
             "the type I error at no difference, the power otherwise. Effects: the standardised "
             "c4 vs c4-noclean differences of the headline tests in examples/*/results.json.", "",
             "| effect | plan | decided | mean seeds | fixed design: decided at 10 seeds | seeds saved |",
             "|---|---|---:|---:|---:|---:|"]
    for label, effect in effects:
        for name, plan in plans.items():
            r = simulate(effect, plan, trials=trials, seed=7)
            saved = 1 - r["mean_seeds"] / r["fixed_seeds"]
            lines.append(f"| {label} ({effect:.2f}) | {name} | {r['decided']:.4f} ± {r['decided_se']:.4f} | "
                         f"{r['mean_seeds']:.2f} | {r['fixed_decided']:.4f} | {100 * saved:.0f}% |")
            print(lines[-1], file=sys.stderr, flush=True)
    harness.publish("sequential", lines, args.write and not args.quick, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
