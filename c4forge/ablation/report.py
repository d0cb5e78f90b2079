"""The ablation's report: per-variant summaries over seeds, verdicts from a paired test on the
headline metrics only (held-out clean text, GLUE), ``report.md``, ``results.json`` and charts.
"""
from __future__ import annotations

import json
import math
import os
import statistics
from typing import Optional

from c4forge.ablation.overlap import overlap_section
from c4forge.ablation.sequential import seed_differences, sequential_section
from c4forge.ablation.spec import AblationSpec, locate
from c4forge.ablation.stages import run_budgets
from c4forge.core.io import atomic_write
from c4forge.core.outdir import OutputKind, claim, manifest_text, writing
from c4forge.corpus.output.shards import read_manifest
from c4forge.tokenizer.formats import read_token_manifest
from c4forge.train.evaluation.evaluate import EvaluationError, chance_accuracy, load_task
from c4forge.train.objectives import LEFT_TO_RIGHT
from c4forge.train.stats import compare, holm, seeds_text, t_quantile


def _mean_std(values: list[float]):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _fmt(mean, std, digits=4):
    return "-" if mean is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def summarise(spec: AblationSpec, corpora, tokens, results) -> dict:
    summary = {"name": spec.name, "objective": spec.objective, "seeds": list(spec.seeds),
               "budget": spec.budget, "variants": {}}
    budgets = run_budgets(spec, tokens)
    for name in spec.variants:
        corpus = read_manifest(corpora[name])
        token = read_token_manifest(tokens[name])
        per_seed = results[name]
        entry = {
            "preset": corpus["config"]["preset"],
            "documents": {s: corpus["splits"][s]["documents"] for s in corpus["splits"]},
            "train_tokens_available": token["splits"]["train"]["tokens"],
            "bytes_per_token": token["splits"]["train"]["bytes_per_token"],
            "train_tokens": budgets[name],
            "train_bytes": round(budgets[name] * float(token["splits"]["train"]["bytes_per_token"])),
            "metrics": {},
        }
        keys = set()
        for r in per_seed.values():
            keys |= {("text", t) for t in r["texts"]} | {("validation", v) for v in r["validation"]} | \
                    {("task", t) for t in r["tasks"]} | {("glue", g) for g in r.get("glue", {})} | \
                    {(kind, t) for t, m in r["tasks"].items() for kind in ("task_prob", "task_bpb")
                     if {"task_prob": "correct_prob", "task_bpb": "correct_bits_per_byte"}[kind] in m}
        for kind, key in sorted(keys):
            label, pick, higher, headline = metric_reader(kind, key, spec.objective)
            by_seed = {seed: pick(r) for seed, r in per_seed.items() if pick(r) is not None}
            mean, std = _mean_std(list(by_seed.values()))
            entry["metrics"][label] = {"mean": mean, "std": std, "values": list(by_seed.values()),
                                       "seeds": list(by_seed), "higher_is_better": higher, "headline": headline}
        summary["variants"][name] = entry
    return summary


def comparison(summary: dict, metric: str, a: str, b: str, alpha: float = 0.05) -> Optional[dict]:
    """The test of b - a on ``metric`` over seeds (train.stats.compare), or None without one."""

    ma, mb = summary["variants"][a]["metrics"].get(metric), summary["variants"][b]["metrics"].get(metric)
    if not ma or not mb or ma["mean"] is None or mb["mean"] is None:
        return None
    seeds_a = ma.get("seeds") or list(range(len(ma["values"])))
    seeds_b = mb.get("seeds") or list(range(len(mb["values"])))
    return compare(dict(zip(seeds_a, ma["values"])), dict(zip(seeds_b, mb["values"])), alpha)


def verdict(summary: dict, metric: str, a: str, b: str, alpha: float = 0.05,
            holm_p: Optional[float] = None, family: int = 1, result: Optional[dict] = None) -> str:
    """One sentence comparing variants a and b on ``metric``, decided by a paired t-test over
    seeds (Welch's when the seeds differ), never by a rule of thumb; with ``holm_p``, the
    Holm-adjusted p across the report's ``family`` headline tests next to the raw p; ``result``:
    the :func:`comparison` already computed for this pair, if any."""
    ma, mb = summary["variants"][a]["metrics"].get(metric), summary["variants"][b]["metrics"].get(metric)
    if not ma or not mb or ma["mean"] is None or mb["mean"] is None:
        return f"No {metric} for both {a} and {b}."
    higher = ma.get("higher_is_better", False)
    if result is None:
        result = comparison(summary, metric, a, b, alpha)
    diff = mb["mean"] - ma["mean"]
    if diff == 0:
        return f"On {metric}, {a} and {b} score the same ({ma['mean']:.4f})."
    better = (b if diff > 0 else a) if higher else (a if diff > 0 else b)
    word = "higher" if higher else "lower"
    direction = f"{better} is {word} (better) by {abs(diff):.4f}"
    if result is None:
        return f"On {metric}, {direction}; with one seed per variant there is no test: no verdict."
    interval = (f"{b} - {a} = {result['difference']:+.4f}, {100 * (1 - alpha):.0f}% CI "
                f"[{result['low']:+.4f}, {result['high']:+.4f}], {result['test']}, p = {result['p']:.3g}")
    if holm_p is not None and family > 1:
        interval += f"; Holm-adjusted over {family} headline tests p = {holm_p:.3g}"
    if result["significant"]:
        survives = ""
        if holm_p is not None and family > 1:
            survives = (" It survives the correction for multiple tests." if holm_p < alpha else
                        " It does not survive the correction for multiple tests: treat it as tentative.")
        return f"On {metric}, {direction}: significant at {alpha:g} ({interval}).{survives}"
    needed = result.get("seeds_needed")
    more = (f" To detect a real difference of this size 80% of the time, with this seed-to-seed "
            f"spread of the paired differences, {seeds_text(needed, 'about ')} seeds per variant would be needed."
            if needed else "")
    return (f"On {metric}, {direction}, but that is not significant at {alpha:g} ({interval}): this "
            f"experiment does not separate {a} and {b}.{more}")


SENTENCES_UP_TO = 12  # headline tests written as sentences; more are one table row each


def sequential_verdicts(summary: dict) -> dict[tuple[str, str, str], str]:
    """(metric, a, b) -> the group-sequential verdict of that headline test, where the seeds were
    chosen by ``--until-decided`` (c4forge/ablation/sequential.py); {} otherwise."""
    out = {}
    for test in (summary.get("sequential") or {}).get("tests", []):
        last = test["looks"][-1] if test["looks"] else None
        if last is None:
            text = "no look reached"
        elif test["decided"]:
            text = f"decided at {last['seeds']} seeds (p = {last['p']:.3g} <= boundary {last['level']:.3g})"
        else:
            p = "-" if last["p"] is None else f"{last['p']:.3g}"
            text = f"undecided at {last['seeds']} seeds (p = {p} > boundary {last['level']:.3g})"
        out[test["metric"], test["a"], test["b"]] = text
    return out


def verdict_table(summary: dict, tests: list[tuple[str, str, str]], raw: list[Optional[dict]],
                  adjusted: dict[int, float], sequential: Optional[dict] = None,
                  alpha: float = 0.05) -> list[str]:
    """Markdown: one row per headline test (a report with many variants and metrics has
    hundreds; as sentences nobody reads them), then sentences for the tests significant at
    ``alpha`` before correction, the ones a reader looks for."""
    lines = [f"{len(tests)} headline tests, one row each (difference = second - first; lower is better "
             "for bits per byte and losses, higher for probabilities, accuracy and GLUE).", "",
             "| metric | first | second | difference [95% CI] | p | Holm p | verdict | seeds for 80% power |",
             "|---|---|---|---:|---:|---:|---|---:|"]
    significant = []
    for i, (metric, a, b) in enumerate(tests):
        result = raw[i]
        if result is None:
            lines.append(f"| {metric} | {a} | {b} | - | - | - | no test | - |")
            continue
        holm_p = adjusted.get(i)
        if not result["significant"]:
            word = "not separated"
        elif holm_p is not None and holm_p < alpha:
            word = "**significant, survives Holm**"
        else:
            word = "significant, not after Holm (tentative)"
        if result["significant"]:
            significant.append(i)
        if sequential and (metric, a, b) in sequential:
            word += f"; sequential: {sequential[metric, a, b]}"
        needed = "-" if result["significant"] or not result.get("seeds_needed") else seeds_text(result["seeds_needed"])
        holm_text = "-" if holm_p is None else f"{holm_p:.3g}"
        lines.append(f"| {metric} | {a} | {b} | {result['difference']:+.4f} [{result['low']:+.4f}, "
                     f"{result['high']:+.4f}] | {result['p']:.3g} | {holm_text} | {word} | {needed} |")
    lines += ["", f"Significant at {alpha:g} before correction: {len(significant)} of {len(tests)} (about "
              f"{alpha * len(tests):.1f} expected by chance alone if no variant differed)."]
    for i in significant:
        lines.append(verdict_bullet(summary, tests[i], raw[i], adjusted.get(i),
                                    len([r for r in raw if r is not None]), sequential))
    return lines


def verdict_bullet(summary: dict, test: tuple[str, str, str], result: Optional[dict], holm_p: Optional[float],
                   family: int, sequential: Optional[dict] = None) -> str:
    """One headline test as a bullet: the fixed-design sentence, and the sequential verdict
    where the seeds were chosen by looking."""
    metric, a, b = test
    after = f" **Sequential verdict: {sequential[test]}.**" if sequential and test in sequential else ""
    return f"- **{a} vs {b}**: " + verdict(summary, metric, a, b, holm_p=holm_p, family=family, result=result) + after


def pairing_statement(spec: AblationSpec) -> str:
    """What a paired test over seeds pairs in this ablation (issue 28: say what pairing shares)."""
    data_seed = spec.train.get("data_seed")
    if data_seed is None:
        order = ("the same seed gives both variants the same initial weights and the same "
                 "document-order seed, but the variants' corpora differ, so their document orders "
                 "do not pair")
    else:
        order = (f"the same seed gives both variants the same initial weights; every run reads its "
                 f"corpus in the order drawn by `data_seed` {data_seed} (seeds vary the initial weights "
                 "only), so two variants with the same number of documents see the same permutation, "
                 "while corpora of different sizes still get unrelated orders")
    return (f"What the pairing shares: {order}; all runs are scored on the same evaluation items.")


def glue_reference_section(summary: dict, alpha: float = 0.05) -> tuple[list[str], bool]:
    """(Markdown lines, whether GLUE carries signal): the reference rows (majority class, TF-IDF,
    random initialisation) and each variant's pretraining gain over random initialisation,
    paired by seed. GLUE has signal only when some variant's gain is positive beyond noise."""

    reference = summary.get("glue_reference")
    if not reference:
        return [], True
    random_init = {int(seed): row["average"] for seed, row in reference["random_init"].items()}
    lines = ["", "## GLUE against its reference rows", "",
             "The same fine-tuning recipe and examples for every row. Majority class and TF-IDF "
             "logistic regression use no language model; *random init* fine-tunes the same model "
             "from the weights pretraining starts from (per seed). Pretraining gain = a variant's "
             "GLUE average minus random init's, paired by seed.", "",
             "| row | GLUE average | pretraining gain [95% CI] | p |", "|---|---:|---:|---:|",
             f"| majority class | {reference['majority']['average']:.2f} | - | - |",
             f"| TF-IDF + logistic regression | {reference['tfidf']['average']:.2f} | - | - |",
             f"| random init | {_fmt(*_mean_std(list(random_init.values())), digits=2)} | - | - |"]
    signal = False
    for name, entry in summary["variants"].items():
        metric = entry["metrics"].get("GLUE average")
        if not metric or metric["mean"] is None:
            continue
        scores = dict(zip(metric["seeds"], metric["values"]))
        result = compare(random_init, scores, alpha)
        if result is None:
            gain = "-"
            p = "-"
        else:
            gain = f"{result['difference']:+.2f} [{result['low']:+.2f}, {result['high']:+.2f}]"
            p = f"{result['p']:.3g}"
            signal = signal or (result["significant"] and result["difference"] > 0)
        lines.append(f"| {name} | {_fmt(metric['mean'], metric['std'], digits=2)} | {gain} | {p} |")
    lines.append("")
    if signal:
        lines.append("At least one variant gains from pretraining beyond noise, so GLUE verdicts "
                     "are drawn above.")
    else:
        lines.append("**GLUE carries no signal at this scale**: no variant's fine-tuned average "
                     "beats the same model from random initialisation beyond noise, so what GLUE "
                     "measures here is the fine-tuning, not the pretraining corpus; no GLUE verdict "
                     "is drawn (the numbers are shown, not compared).")
    return lines, signal


def task_signal_section(spec: AblationSpec, summary: dict, alpha: float = 0.05) -> list[str]:
    """Markdown: every zero-shot task's accuracy against guessing (issue 28: a metric at chance is
    "no signal", not a result). One-sided exact binomial test of each variant's mean accuracy over
    the task's items (the seeds score the same items, so they are not pooled as independent)."""
    from scipy.stats import (
        binomtest,  # lazy: scipy (the [train] extra), only for a report with task accuracies
    )


    ev = spec.eval
    tasks = [t for t in ev.tasks if t != "blimp"]
    if not tasks or not ev.eval_dir:
        return []
    rows, any_signal = [], False
    for task in tasks:
        try:
            items = load_task(locate(spec, ev.eval_dir), task, ev.limit, 0)
        except EvaluationError:
            continue
        chance = chance_accuracy(task, items)
        cells = []
        for entry in summary["variants"].values():
            metric = entry["metrics"].get(f"{task} accuracy") or {}
            if metric.get("mean") is None:
                cells.append("-")
                continue
            correct = round(metric["mean"] * len(items))
            if chance == 0:
                p = 0.0 if correct else 1.0
            else:
                p = binomtest(correct, len(items), chance, alternative="greater").pvalue
            any_signal = any_signal or p < alpha
            cells.append(f"{metric['mean']:.3f} (p = {p:.2g})")
        rows.append(f"| {task} | {len(items)} | {chance:.3f} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    names = list(summary["variants"])
    lines = ["", "## Zero-shot tasks against chance", "",
             "Mean accuracy over seeds and a one-sided exact binomial test against guessing (the "
             "task's chance accuracy; LAMBADA's open-vocabulary word has none: any right item is "
             "signal). The continuous metrics in the table above (correct-answer probability, bits "
             "per byte of the correct continuation) move before accuracy does.", "",
             "| task | items | chance | " + " | ".join(names) + " |", "|---|---:|---:|" + "---:|" * len(names),
             *rows, ""]
    lines.append("Some task is above chance for some variant (p < 0.05, uncorrected)." if any_signal else
                 "**No signal**: every task's accuracy is at chance for every variant, so accuracy "
                 "separates nothing at this scale; no verdict is drawn from it.")
    return lines


def missing_budget_note(summary: dict) -> list[str]:
    """Markdown: why the matched-budgets table is missing when the other budget was run with
    only some of this report's seeds (the table compares both budgets over the same seeds)."""
    lines = []
    for other, covered in (summary.get("other_budgets_partial") or {}).items():
        lines += ["", "## Matched tokens vs matched bytes", "",
                  f"Not shown: this ablation's {other}-matched runs are evaluated for seed(s) "
                  f"{', '.join(map(str, covered))} of this report's {', '.join(map(str, summary['seeds']))}, "
                  f"and the table compares both budgets over the same seeds. Running the ablation with "
                  f"`budget: {other}` and this report's seeds adds it (finished runs are reused)."]
    return lines


def budget_section(summary: dict, metrics: list[str], pairs: list[tuple[str, str]]) -> list[str]:
    """Markdown: each headline difference under this report's budget and under the other one
    (matched tokens vs matched bytes of text), when the same ablation was also run with the
    other budget - how much of a gap survives when every variant reads the same text."""
    others = summary.get("other_budgets") or {}
    if not others:
        return missing_budget_note(summary)
    budgets = {summary.get("budget", "tokens"): summary, **others}
    names = list(budgets)
    lines = ["", "## Matched tokens vs matched bytes", "",
             "The same ablation (corpora, tokenizer, seeds, evaluation) under both budgets: `tokens` "
             "trains every variant on the same number of tokens (T5's protocol), so a variant with "
             "more bytes per token reads more text; `bytes` trains every variant on the same bytes "
             "of text. Each cell: second minus first variant, 95% CI, paired t-test p (raw).", "",
             "| metric | variants | " + " | ".join(f"{b}-matched" for b in names) + " |",
             "|---|---|" + "---:|" * len(names)]
    for metric in metrics:
        for a, b in pairs:
            cells = []
            for budget in names:
                result = comparison(budgets[budget], metric, a, b)
                cells.append("-" if result is None else
                             f"{result['difference']:+.4f} [{result['low']:+.4f}, {result['high']:+.4f}], "
                             f"p = {result['p']:.3g}")
            lines.append(f"| {metric} | {b} - {a} | " + " | ".join(cells) + " |")
    lines += ["", "Text read per run (MB): " + "; ".join(
        f"{budget}-matched " + ", ".join(f"{v} {e.get('train_bytes', 0) / 1e6:.2f}"
                                         for v, e in budgets[budget]["variants"].items())
        for budget in names) + "."]
    return lines


REPORT_MANIFEST = "c4forge-report.json"
REPORT_KIND = OutputKind("ablation report", REPORT_MANIFEST, "c4forge-ablation-report",
                         lambda manifest: list(manifest.get("files") or []))


def _adopt_legacy_report(directory: str) -> None:
    """A report written before reports had a manifest (results.json, report.md, charts and
    nothing else, results.json being an ablation summary) gets one, so it is replaced like any
    other c4forge output; a directory holding anything else is left to the refusal rule."""
    if not os.path.isdir(directory) or os.path.exists(os.path.join(directory, REPORT_MANIFEST)):
        return
    names = sorted(os.listdir(directory))
    try:
        with open(os.path.join(directory, "results.json"), encoding="utf-8") as handle:
            results = json.load(handle)
    except (OSError, ValueError):
        return
    ours = {"results.json", "report.md"}
    if (isinstance(results, dict) and {"variants", "objective", "seeds"} <= set(results)
            and all(n in ours or n.endswith(".png") for n in names)):
        with atomic_write(os.path.join(directory, REPORT_MANIFEST)) as handle:
            handle.write(manifest_text({"format": REPORT_KIND.format, "version": 1, "files": names}))


def check_report_dir(directory: str) -> None:
    """Refuse a report directory that holds anything but an earlier report, before any work."""
    _adopt_legacy_report(directory)
    claim(directory, REPORT_KIND, overwrite=True)


def write_report(spec: AblationSpec, summary: dict, runs, directory: str) -> str:
    """``report.md``, ``results.json`` and the charts, swapped into ``directory`` as one output
    (the output-directory rule: a new or empty directory, or an earlier report, whose own files
    alone are replaced; a directory holding anything else is refused)."""
    _adopt_legacy_report(directory)
    with writing(claim(directory, REPORT_KIND, overwrite=True)) as staging:
        staging.manifest = _write_report_files(spec, summary, runs, staging.path)
    return os.path.join(directory, "report.md")


def signal_to_noise(summary: dict, metric: str, a: str, b: str) -> Optional[float]:
    """|mean paired difference| / the seeds' standard deviation of the differences: how many
    seed-noise widths apart the variants are on ``metric`` (None below 2 paired seeds)."""
    diffs = seed_differences(summary, metric, a, b)
    if len(diffs) < 2:
        return None
    sd = statistics.stdev(diffs)
    return math.inf if sd == 0 else abs(statistics.fmean(diffs)) / sd


def signal_to_noise_section(summary: dict, tests: list[tuple[str, str, str]]) -> list[str]:
    """Markdown: every headline test's signal-to-noise ratio over seeds, and the metric with the
    most signal (the one to watch when choosing how many seeds to run)."""
    rows = [(metric, a, b, signal_to_noise(summary, metric, a, b)) for metric, a, b in tests]
    rows = [r for r in rows if r[3] is not None]
    if not rows:
        return []
    lines = ["", "### Signal to noise", "",
             "|mean paired difference| / the seeds' standard deviation of the differences, per headline "
             "test (from results.json): the larger, the fewer seeds a verdict needs.", "",
             "| test | SNR |", "|---|---:|"]
    for metric, a, b, snr in sorted(rows, key=lambda r: -r[3]):
        lines.append(f"| {b} - {a} on {metric} | {snr:.2f} |")
    best = max(rows, key=lambda r: r[3])
    lines += ["", f"Most signal: **{best[0]}** ({best[2]} - {best[1]}, SNR {best[3]:.2f})."]
    return lines


def headline_tests(summary: dict) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str, str]]]:
    """(headline metrics, variant pairs, the (metric, a, b) tests the report decides): every
    headline metric (GLUE only when its reference rows show signal) for every pair of
    variants, C4 vs C4-unfiltered first."""
    names = list(summary["variants"])
    metrics: list[str] = []
    for entry in summary["variants"].values():
        for m in entry["metrics"]:
            if m not in metrics:
                metrics.append(m)
    headline = [m for m in metrics if any(e["metrics"].get(m, {}).get("headline") for e in summary["variants"].values())]
    pairs = [(a, b) for a in names for b in names if a < b]
    if "c4" in names and "c4-noclean" in names:
        pairs = [("c4", "c4-noclean")] + [p for p in pairs if p != ("c4", "c4-noclean")]
    glue_lines, glue_signal = glue_reference_section(summary)
    if glue_lines and not glue_signal:
        headline = [m for m in headline if not m.startswith("GLUE")]
    return headline, pairs, [(metric, a, b) for metric in headline for a, b in pairs]


def _write_report_files(spec: AblationSpec, summary: dict, runs, directory: str) -> dict:
    with atomic_write(os.path.join(directory, "results.json")) as handle:
        json.dump(summary, handle, indent=2)
    charts = plot(summary, runs, directory)
    lines = (_variants_section(spec, summary) + overlap_section(summary.get("overlap") or {})
             + _result_section(spec, summary) + ["", "## Charts", ""] + [f"![{c}]({c})" for c in charts])
    with atomic_write(os.path.join(directory, "report.md")) as handle:
        handle.write("\n".join(lines) + "\n")
    return {"format": REPORT_KIND.format, "version": 1,
            "files": ["report.md", "results.json", *charts]}


def _metrics_of(summary: dict) -> list[str]:
    """Every metric any variant has, in first-seen order."""
    metrics: list[str] = []
    for entry in summary["variants"].values():
        metrics += [m for m in entry["metrics"] if m not in metrics]
    return metrics


def _variants_section(spec: AblationSpec, summary: dict) -> list[str]:
    """The report's head: how the variants were trained, and one row per variant."""
    entries = summary["variants"].values()
    metrics = _metrics_of(summary)
    trained = {e.get("train_tokens", spec.max_tokens) for e in entries}
    text_mb = [e.get("train_bytes", 0) / 1e6 for e in entries]
    if summary.get("budget", "tokens") == "bytes":
        budget = (f"byte budget: every variant trains on about {text_mb[0]:.2f} MB of text "
                  f"({min(trained):,}-{max(trained):,} tokens, by its bytes per token)")
    else:
        budget = (f"token budget ({spec.max_tokens:,} tokens; T5's protocol), which is "
                  f"{min(text_mb):.2f}-{max(text_mb):.2f} MB of text depending on the variant's "
                  "bytes per token (`budget: bytes` matches the text instead)")
    lines = [f"# Ablation: {summary['name']}", "",
             f"Objective {summary['objective']}. Seeds {summary['seeds']}; the same model and hyper-parameters "
             f"for every variant, a {budget}; one tokenizer "
             f"({spec.tokenizer.get('model_type', 'bpe')} {spec.tokenizer.get('vocab_size', 8000)}, "
             f"trained on {spec.tokenizer.get('train_on', 'c4-noclean')}). Mean ± standard deviation "
             "over seeds; bits per byte and losses are lower-is-better, accuracy and GLUE higher-is-better.", "",
             "| variant | preset | train docs | validation docs | bytes/token | tokens trained | text MB trained | " + " | ".join(metrics) + " |",
             "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(metrics)]
    for name, e in summary["variants"].items():
        cells = [_fmt(e["metrics"].get(m, {}).get("mean"), e["metrics"].get(m, {}).get("std")) for m in metrics]
        tokens_trained = e.get("train_tokens", spec.max_tokens)
        lines.append(f"| {name} | {e['preset']} | {e['documents'].get('train', 0):,} | "
                     f"{e['documents'].get('validation', 0):,} | {e['bytes_per_token']} | {tokens_trained:,} | "
                     f"{e.get('train_bytes', 0) / 1e6:.2f} | " + " | ".join(cells) + " |")
    return lines


def _result_section(spec: AblationSpec, summary: dict) -> list[str]:
    """The verdicts on the headline metrics, and the sections that qualify them."""
    entries, metrics = summary["variants"].values(), _metrics_of(summary)
    lines = ["", "## Result", ""]
    headline, pairs, tests = headline_tests(summary)
    lines.append("Verdicts on the held-out headline metrics (clean text not drawn from any variant, "
                 "and GLUE), each from a paired t-test over seeds at the 5% level (scipy), with the "
                 "Holm-adjusted p across all headline tests of this report beside it (statsmodels). "
                 + pairing_statement(spec) + " Seed counts are for 80% power. "
                 "A variant's own validation split is in-distribution for that variant, so it gets no verdict.")
    lines.append("")
    if not any(e["metrics"].get(m, {}).get("headline") for e in entries for m in metrics):
        lines.append("- No headline metric: set `eval.texts` (held-out clean text such as "
                     "WikiText-2: bits per byte, or the objective's own loss for span, BART and MLM) or "
                     "`eval.glue` to compare the variants.")
    glue_lines, _ = glue_reference_section(summary)
    raw = [comparison(summary, metric, a, b) for metric, a, b in tests]
    tested = [i for i, r in enumerate(raw) if r is not None]
    adjusted = dict(zip(tested, holm([raw[i]["p"] for i in tested])))
    sequential = sequential_verdicts(summary)
    if sequential:
        lines += ["**The seeds were added while these tests were looked at** (Sequential seeds, below): "
                  "the verdict that keeps its stated error rate is the sequential one, given with each "
                  "test. The paired t-test beside it assumes the number of seeds was fixed in advance, so "
                  "after repeated looks its p-value overstates the evidence: read it as descriptive.", ""]
    if len(tests) <= SENTENCES_UP_TO:
        lines += [verdict_bullet(summary, test, raw[i], adjusted.get(i), len(tested), sequential)
                  for i, test in enumerate(tests)]
    else:
        lines += verdict_table(summary, tests, raw, adjusted, sequential)
    lines += signal_to_noise_section(summary, tests)
    lines += glue_lines
    lines += task_signal_section(spec, summary)
    lines += budget_section(summary, headline, pairs)
    if summary.get("sequential"):
        lines += sequential_section(summary["sequential"])
    return lines


def plot(summary: dict, runs, directory: str) -> list[str]:
    """loss_curves.png: validation loss during training on one common held-out set, mean and
    min-max band over seeds; final_metrics.png: per metric, each variant's mean and 95%
    interval over seeds as a dot and a bar (axes fit the data, not zero: the differences are
    small). Legends sit outside the data."""
    import matplotlib  # lazy: matplotlib (0.35 s to import), only where the report draws its charts

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib (0.35 s to import), only where the report draws its charts

    files = [_plot_loss_curves(plt, runs, directory)]
    metrics = []
    for entry in summary["variants"].values():
        metrics += [m for m, v in entry["metrics"].items() if m not in metrics and v.get("mean") is not None]
    if metrics:
        files.append(_plot_final_metrics(plt, summary, metrics, directory))
    return files


def _plot_loss_curves(plt, runs, directory: str) -> str:
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    for name, seeds in runs.items():
        curves = {}
        for run_dir in seeds.values():
            with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as handle:
                for row in map(json.loads, handle):
                    if "val_loss" in row:
                        curves.setdefault(row.get("tokens") or row["step"], []).append(row["val_loss"])
        if curves:
            xs = sorted(curves)
            mean = [statistics.fmean(curves[x]) for x in xs]
            lo, hi = [min(curves[x]) for x in xs], [max(curves[x]) for x in xs]
            line, = ax.plot(xs, mean, marker="o", label=f"{name} ({len(seeds)} seeds)")
            ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())
    ax.set_xlabel("training tokens")
    ax.set_ylabel("validation loss (nats per token)")
    ax.set_title("Validation loss on one common held-out set (band: min-max over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "loss_curves.png"), bbox_inches="tight")
    plt.close(fig)
    return "loss_curves.png"


def _plot_final_metrics(plt, summary: dict, metrics: list[str], directory: str) -> str:
    names = list(summary["variants"])
    cols = min(3, len(metrics))
    rows = -(-len(metrics) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), dpi=120, squeeze=False)
    for k, metric in enumerate(metrics):
        ax = axes[k // cols][k % cols]
        for i, name in enumerate(names):
            m = summary["variants"][name]["metrics"].get(metric)
            if not m or m.get("mean") is None:
                continue
            n = len(m["values"])
            half = t_quantile(0.975, n - 1) * m["std"] / n ** 0.5 if n > 1 else 0.0
            ax.errorbar([m["mean"]], [i], xerr=[[half], [half]], fmt="o", capsize=4)
            ax.plot(m["values"], [i] * n, "x", color="grey", alpha=0.7)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names)
        ax.set_ylim(-0.6, len(names) - 0.4)
        better = "higher" if next((summary["variants"][v]["metrics"].get(metric, {}).get("higher_is_better")
                                   for v in names if metric in summary["variants"][v]["metrics"]), False) else "lower"
        ax.set_title(f"{metric}\n({better} is better)", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    for k in range(len(metrics), rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Mean and 95% interval over seeds (x: each seed)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / (3.0 * rows)))  # room for the title above the first row
    fig.savefig(os.path.join(directory, "final_metrics.png"))
    plt.close(fig)
    return "final_metrics.png"


def metric_reader(kind: str, key: str, objective: str):
    """(label, read(eval result) -> value or None, higher is better, headline) of one metric."""

    if kind == "text" and objective not in LEFT_TO_RIGHT:  # the objective's loss, same masks for all
        return (f"{key} {objective} loss", lambda r: r["texts"].get(key, {}).get("loss"), False, True)
    if kind == "text":
        return (f"{key} bits/byte", lambda r: r["texts"].get(key, {}).get("bits_per_byte"),
                False, True)
    if kind == "validation" and objective not in LEFT_TO_RIGHT:
        return (f"{key} validation {objective} loss",
                lambda r: r["validation"].get(key, {}).get("loss"), False, False)
    if kind == "validation":
        return (f"{key} validation bits/byte",
                lambda r: r["validation"].get(key, {}).get("bits_per_byte"), False, False)
    if kind == "glue":
        return ("GLUE average" if key == "average" else f"GLUE {key}",
                lambda r: r.get("glue", {}).get(key), True, key == "average")
    # Continuous task metrics are headlines (issue 40): they move before accuracy does and carry
    # more signal per seed at small scale (DataDecide; "Signal and Noise", 2025); accuracy stays
    # beside them, tested against chance, without a verdict.
    if kind == "task_prob":
        return (f"{key} correct prob", lambda r: r["tasks"].get(key, {}).get("correct_prob"), True, True)
    if kind == "task_bpb":
        return (f"{key} correct bits/byte",
                lambda r: r["tasks"].get(key, {}).get("correct_bits_per_byte"), False, True)
    return f"{key} accuracy", lambda r: r["tasks"].get(key, {}).get("accuracy"), True, False
