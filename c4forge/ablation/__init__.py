"""Filtered vs unfiltered (or any rule set): one command from crawl files to a report.

From one set of crawl inputs: build the corpus once per variant, train ONE tokenizer for all
variants, encode every variant with it, train the same model with the same token budget and
hyper-parameters on each variant for every seed, evaluate every model on the same held-out sets
(raw texts such as WikiText-2, every variant's validation split, zero-shot tasks, GLUE), and
write ``report.md``, ``results.json`` and PNG charts. Re-runs reuse every finished piece
(corpus, tokenizer, token shards, trained runs, evaluations) and say so.

The tokenizer is trained on the *unfiltered* variant by default (``tokenizer.train_on``): it
contains every page the filtered variants keep, so no variant gets a vocabulary fitted to it
alone, and bits per byte keeps the comparison independent of how text is split.

Parts: :mod:`.spec` (the YAML, checked), :mod:`.stages` (each stage, with the one re-run rule
``reuse_or_build``), :mod:`.report` (statistics, Markdown, charts), :mod:`.sequential` (seeds
added until the headline tests are decided, with alpha spending).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

from c4forge.ablation.overlap import overlap
from c4forge.ablation.report import check_report_dir, headline_tests, summarise, verdict, write_report
from c4forge.ablation.sequential import decide, plan_for
from c4forge.ablation.spec import BUDGETS, AblationError, AblationSpec, load_ablation, resolve_inputs
from c4forge.ablation.stages import (
    build_corpora,
    build_tokenizer,
    encode_heldout_texts,
    encode_variants,
    evaluate_runs,
    glue_references,
    stored_results,
    train_runs,
)
from c4forge.core import progress
from c4forge.core.locks import lock_directory
from c4forge.train.objectives import LEFT_TO_RIGHT

__all__ = ["AblationError", "build_corpora", "load_ablation", "run_ablation", "verdict"]


def run_ablation(path: str, log=print, report_dir: Optional[str] = None,
                 overrides: Optional[list[str]] = None, until_decided: bool = False,
                 max_seeds: Optional[int] = None) -> str:
    """Every stage of the ablation; each finished (or reused) unit - a corpus, the tokenizer, a
    variant's tokens, a run, its evaluation - logs one line and moves the stage bar (with ETA).
    With sequential seeds (``until_decided``, or ``sequential:`` in the spec) the seeds are
    run in rounds until every headline test is decided or the most seeds are reached; each
    round reuses every run of the rounds before it."""
    spec = resolve_inputs(load_ablation(path, overrides, until_decided, max_seeds))
    budget = spec.budget
    report_dir = report_dir or os.path.join(spec.out_dir, "report" if budget == "tokens" else f"report-{budget}")
    lock_directory(spec.out_dir)  # one ablation at a time in an out_dir (and its report)
    lock_directory(report_dir)
    check_report_dir(report_dir)  # refused before hours of work, not after
    first_look = len(spec.seeds)
    while True:
        corpora, tokens, runs, results, references = _run_stages(spec, log)
        summary = summarise(spec, corpora, tokens, results)
        summary["overlap"] = overlap(spec, corpora)
        if references:
            summary["glue_reference"] = {k: v for k, v in references.items() if k != "spec"}
        if spec.sequential is None:
            break
        tests = headline_tests(summary)[2]
        rules = spec.sequential
        outcome = decide(summary, tests, plan_for(first_look, rules.max_seeds, rules.step, rules.spending,
                                                  rules.alpha, len(tests)))
        summary["sequential"] = outcome
        if outcome["next"] is None:
            break
        undecided = sum(not t["decided"] for t in outcome["tests"])
        log(f"sequential: {undecided} of {len(tests)} headline test(s) undecided at {outcome['seeds']} "
            f"seeds; running seeds up to {outcome['next']}")
        start = max(spec.seeds) + 1
        spec = dataclasses.replace(spec, seeds=(*spec.seeds, *range(start, start + outcome["next"] - len(spec.seeds))))
    for other in BUDGETS:  # the same ablation under the other budget, when it has been run
        if other == budget:
            continue
        stored = stored_results(spec, other)
        if stored:
            summary["other_budgets"] = {other: summarise(dataclasses.replace(spec, budget=other), corpora, tokens, stored)}
            continue
        covered = [seed for seed in spec.seeds if stored_results(dataclasses.replace(spec, seeds=(seed,)), other)]
        if covered:  # run with fewer seeds: say why the side-by-side table is missing
            summary["other_budgets_partial"] = {other: covered}
    return write_report(spec, summary, runs, report_dir)


def _run_stages(spec: AblationSpec, log):
    """(corpora, tokens, runs, results, GLUE references) of every variant and seed of ``spec``,
    reusing what is finished."""
    variants, seeds = len(spec.variants), len(spec.seeds)
    heldout_units = 0 if spec.objective in LEFT_TO_RIGHT else len(spec.eval.texts)
    units = (variants + 1 + variants + heldout_units + 2 * variants * seeds + bool(spec.eval.glue))
    with progress.bar(total=units, desc="ablation", unit=" stage") as bar:
        def stage_done(message: str) -> None:
            bar.set_description_str(f"ablation: {message.split(':')[0]}", refresh=False)
            if bar.disable:
                log(message)
            else:
                bar.write(message)
            bar.update(1)

        corpora = build_corpora(spec, stage_done)
        tokenizer = build_tokenizer(spec, corpora, stage_done)
        tokens = encode_variants(spec, corpora, tokenizer, stage_done)
        heldout = encode_heldout_texts(spec, tokenizer, stage_done)
        runs = train_runs(spec, tokens, stage_done)
        results = evaluate_runs(spec, runs, tokens, tokenizer, stage_done, heldout)
        references = glue_references(spec, runs, stage_done)
    return corpora, tokens, runs, results, references
