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
``reuse_or_build``), :mod:`.report` (statistics, Markdown, charts).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

from c4forge.ablation.report import check_report_dir, summarise, verdict, write_report
from c4forge.ablation.spec import BUDGETS, AblationError, load_ablation, resolve_inputs
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
                 overrides: Optional[list[str]] = None) -> str:
    """Every stage of the ablation; each finished (or reused) unit - a corpus, the tokenizer, a
    variant's tokens, a run, its evaluation - logs one line and moves the stage bar (with ETA)."""
    spec = resolve_inputs(load_ablation(path, overrides))
    budget = spec.budget
    report_dir = report_dir or os.path.join(spec.out_dir, "report" if budget == "tokens" else f"report-{budget}")
    lock_directory(spec.out_dir)  # one ablation at a time in an out_dir (and its report)
    lock_directory(report_dir)
    check_report_dir(report_dir)  # refused before hours of work, not after
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
    summary = summarise(spec, corpora, tokens, results)
    if references:
        summary["glue_reference"] = {k: v for k, v in references.items() if k != "spec"}
    for other in BUDGETS:  # the same ablation under the other budget, when it has been run
        stored = stored_results(spec, other) if other != budget else None
        if stored:
            summary["other_budgets"] = {other: summarise(dataclasses.replace(spec, budget=other), corpora, tokens, stored)}
    return write_report(spec, summary, runs, report_dir)
