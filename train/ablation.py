"""Filtered vs unfiltered (or any rule set): one command from crawl files to a report.

From one set of crawl inputs: build the corpus once per variant, train ONE tokenizer for all
variants, encode every variant with it, train the same model with the same token budget and
hyper-parameters on each variant for every seed, evaluate every model on the same held-out sets
(raw texts such as WikiText-2, every variant's validation split, zero-shot tasks), and write
``report.md``, ``results.json`` and PNG charts. Re-runs reuse every finished piece (corpus,
tokenizer, token shards, trained runs, evaluations) and say so.

The tokenizer is trained on the *unfiltered* variant by default (``tokenizer.train_on``): it
contains every page the filtered variants keep, so no variant gets a vocabulary fitted to it
alone, and bits per byte keeps the comparison independent of how text is split.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from typing import Dict, List, Optional

from corpus.config import build_config, load_yaml_mapping
from corpus.counters import Counters
from corpus.io import atomic_write
from corpus.outdir import OutputError, check_name
from corpus.local import run_chain
from corpus.shards import CorpusFormatError, manifest_path, read_manifest, write_corpus
from tokenizer.encode import encode_corpus
from tokenizer.formats import TokenFormatError, file_sha256, read_token_manifest
from tokenizer.train import TokenizerConfig, train_tokenizer


class AblationError(RuntimeError):
    """The ablation config is wrong or a stage failed; the message says which."""


def _plain(value):
    """JSON-normalised (tuples -> lists) for comparing configs with stored manifests."""
    return json.loads(json.dumps(value))


def apply_spec_overrides(spec: dict, overrides: List[str]) -> dict:
    """``--set a.b=VALUE`` on the ablation YAML: VALUE is read as YAML (``seeds=[0,1,2]``,
    ``train.max_tokens=200000``); the key may be new."""
    import yaml

    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AblationError(f"setting {item!r} is not KEY=VALUE")
        node = spec
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise AblationError(f"{key}: {part} is not a group of settings")
            node = child
        try:
            node[parts[-1]] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise AblationError(f"{key}: {value!r} is not a YAML value") from exc
    return spec


def load_ablation(path: str, overrides: Optional[List[str]] = None) -> dict:
    spec = apply_spec_overrides(load_yaml_mapping(path), list(overrides or []))
    for key in ("inputs", "variants", "train", "out_dir"):
        if key not in spec:
            raise AblationError(f"{path}: missing '{key}'")
    if not isinstance(spec["variants"], dict) or len(spec["variants"]) < 2:
        raise AblationError(f"{path}: an ablation needs at least two variants (a mapping of names)")
    try:  # names become directory names: never a path
        for name in spec["variants"]:
            check_name(str(name), "variant name")
    except OutputError as exc:
        raise AblationError(f"{path}: {exc}") from exc
    seeds = spec.get("seeds", [0, 1, 2])
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                               for x in seeds) or not seeds:
        raise AblationError(f"{path}: seeds must be a non-empty list of integers")
    if not spec["train"].get("max_tokens"):
        raise AblationError(f"{path}: train.max_tokens must be set (the same token budget for every variant)")
    spec.setdefault("seeds", [0, 1, 2])
    objective = spec.get("objective", spec["train"].get("objective", "causal"))
    from train.objectives import OBJECTIVES

    if objective not in OBJECTIVES:
        raise AblationError(f"{path}: objective {objective!r}: choose from {', '.join(OBJECTIVES)}")
    spec["objective"] = objective
    spec["train"]["objective"] = objective  # every variant and seed trains the same objective
    spec.setdefault("validation_per_mille", 50)
    spec.setdefault("tokenizer", {})
    spec.setdefault("eval", {})
    base = os.path.dirname(os.path.abspath(path))
    spec["_base"] = base
    return spec


def _variant_config(spec: dict, name: str):
    variant = spec["variants"][name] or {}
    overrides = [f"{k}={v}" for k, v in (variant.get("set") or {}).items()]
    settings = {"validation_per_mille": spec["validation_per_mille"]}
    if spec.get("badwords"):
        settings["badwords"] = spec["badwords"]
    return build_config(variant.get("preset", "c4"), overrides=overrides, **settings)


def build_corpora(spec: dict, log) -> Dict[str, str]:
    out = {}
    for name in spec["variants"]:
        inputs = (spec["variants"][name] or {}).get("inputs") or spec["inputs"]
        config = _variant_config(spec, name)
        directory = os.path.join(spec["out_dir"], "corpora", name)
        try:
            manifest = read_manifest(directory)
            if manifest["config"] == _plain(config.to_dict()) and manifest["inputs"] == inputs:
                log(f"corpus {name}: reusing {directory}")
                out[name] = directory
                continue
        except CorpusFormatError:
            pass
        started = time.time()
        counters = Counters()
        docs = run_chain(inputs, config, counters)
        write_corpus(directory, docs, {"config": config.to_dict(), "inputs": inputs,
                                       "counters": counters.as_dict(),
                                       "build": {"runner": "single process (ablation)"}},
                     validation_per_mille=config.validation_per_mille)
        log(f"corpus {name}: built {len(docs):,} documents in {time.time() - started:.1f}s")
        out[name] = directory
    return out


def build_tokenizer(spec: dict, corpora: Dict[str, str], log) -> str:
    settings = dict(spec["tokenizer"])
    train_on = settings.pop("train_on", "c4-noclean" if "c4-noclean" in corpora else next(iter(corpora)))
    if train_on not in corpora:
        raise AblationError(f"tokenizer.train_on {train_on!r} is not a variant")
    config = TokenizerConfig(**{k: v for k, v in settings.items() if k in TokenizerConfig.__dataclass_fields__})
    directory = os.path.join(spec["out_dir"], "tokenizer")
    corpus_sha = file_sha256(manifest_path(corpora[train_on]))
    from tokenizer.train import CONFIG_FILE

    info_path = os.path.join(directory, CONFIG_FILE)
    if os.path.exists(info_path):
        with open(info_path, encoding="utf-8") as handle:
            info = json.load(handle)
        same = all(info.get(k) == getattr(config, k) for k in TokenizerConfig.__dataclass_fields__)
        if same and info["corpus"]["manifest_sha256"] == corpus_sha:
            log(f"tokenizer: reusing {directory} (trained on {train_on})")
            return directory
    train_tokenizer(corpora[train_on], directory, config, overwrite=True)
    log(f"tokenizer: trained {config.model_type} {config.vocab_size} on {train_on}")
    return directory


def encode_variants(spec: dict, corpora: Dict[str, str], tokenizer: str, log) -> Dict[str, str]:
    from tokenizer.train import load_tokenizer

    model_sha = load_tokenizer(tokenizer)[1]["model_sha256"]
    out = {}
    for name, corpus in corpora.items():
        directory = os.path.join(spec["out_dir"], "tokens", name)
        try:
            manifest = read_token_manifest(directory)
            if (manifest["tokenizer"]["model_sha256"] == model_sha and
                    manifest["corpus"]["manifest_sha256"] == file_sha256(manifest_path(corpus))):
                log(f"tokens {name}: reusing {directory}")
                out[name] = directory
                continue
        except TokenFormatError:
            pass
        encode_corpus(corpus, tokenizer, directory, overwrite=True, log=lambda *_: None)
        log(f"tokens {name}: encoded")
        out[name] = directory
    return out


def _locate(spec: dict, path: str) -> str:
    """A path from the config: as given (relative to the working directory) if it exists, else
    relative to the config file's directory."""
    if os.path.isabs(path) or os.path.exists(path):
        return os.path.abspath(path)
    return os.path.join(spec["_base"], path)


def _finished(run_dir: str, steps: int) -> bool:
    from train.checkpoint import latest_checkpoint

    latest = latest_checkpoint(os.path.join(run_dir, "checkpoints"))
    return bool(latest) and int(os.path.basename(latest).split("-")[1]) >= steps


def train_runs(spec: dict, tokens: Dict[str, str], log) -> Dict[str, Dict[int, str]]:
    from train.checkpoint import run_manifest
    from train.config import build_train_config
    from train.trainer import total_steps, train

    runs: Dict[str, Dict[int, str]] = {}
    # One held-out set for every run's loss curve, so the curves compare: the validation split
    # of the tokenizer's variant (by default the unfiltered one; the split is chosen by URL hash,
    # so its documents are held out of every variant).
    common = spec.get("curve_validation") or spec["tokenizer"].get("train_on")
    curve_set = tokens.get(common)
    for name, directory in tokens.items():
        for seed in spec["seeds"]:
            run_dir = os.path.join(spec["out_dir"], "runs", name, f"seed-{seed}")
            base = json.loads(json.dumps(spec["train"]))
            base.setdefault("data", {})
            base["data"].update({"train": directory, "train_split": "train",
                                 "validation": curve_set or directory, "validation_split": "validation"})
            base.update({"seed": seed, "out_dir": run_dir, "progress": False})
            config = build_train_config(base=base)
            steps = total_steps(config, 1)
            runs.setdefault(name, {})[seed] = run_dir
            stamp = {"tokens_manifest_sha256": file_sha256(os.path.join(directory, "manifest.json")),
                     "train": _plain(spec["train"]), "curve_validation": common if curve_set else name}
            previous = (run_manifest(run_dir) or {}).get("meta")
            if previous == stamp and _finished(run_dir, steps):
                log(f"run {name} seed {seed}: reusing finished run {run_dir}")
                continue
            # same inputs: continue an interrupted run; other tokens or settings: start again
            # (only the run's own files are removed)
            resume = previous == stamp and os.path.exists(os.path.join(run_dir, "checkpoints", "latest"))
            started = time.time()
            train(config, resume=resume, overwrite=not resume, meta=stamp, log=lambda *_: None)
            log(f"run {name} seed {seed}: {steps} steps in {time.time() - started:.0f}s")
    return runs


def evaluate_runs(spec: dict, runs: Dict[str, Dict[int, str]], tokens: Dict[str, str],
                  tokenizer: str, log) -> Dict[str, Dict[int, dict]]:
    from tokenizer.train import load_tokenizer
    from train.checkpoint import latest_checkpoint, load_model
    from corpus.config import apply_settings
    from train.config import MaskingConfig
    from train.evaluate import eval_objective, eval_text, eval_tokens, run_tasks
    from train.objectives import LEFT_TO_RIGHT, objective_for

    sp, _ = load_tokenizer(tokenizer)
    ev = spec["eval"]
    if spec["objective"] not in LEFT_TO_RIGHT and (ev.get("texts") or ev.get("tasks")):
        log(f"eval: a {spec['objective']} model does not score text left to right: bits per byte of "
            "texts and zero-shot tasks are skipped; each variant's validation split gets the objective's loss")
    texts = [_locate(spec, t) for t in ev.get("texts", [])]
    tasks = ev.get("tasks", [])
    eval_dir = _locate(spec, ev["eval_dir"]) if ev.get("eval_dir") else None
    results: Dict[str, Dict[int, dict]] = {}
    for name, seeds in runs.items():
        for seed, run_dir in seeds.items():
            path = os.path.join(run_dir, "eval.json")
            checkpoint = latest_checkpoint(os.path.join(run_dir, "checkpoints"))
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    cached = json.load(handle)
                if cached.get("checkpoint") == checkpoint and cached.get("spec") == _plain(ev):
                    results.setdefault(name, {})[seed] = cached
                    log(f"eval {name} seed {seed}: reusing {path}")
                    continue
            model, config = load_model(checkpoint)
            seq_len = config["data"]["seq_len"]
            out = {"checkpoint": checkpoint, "spec": _plain(ev), "texts": {}, "validation": {}, "tasks": {}}
            left_to_right = spec["objective"] in LEFT_TO_RIGHT
            objective = None if left_to_right else objective_for(
                spec["objective"], apply_settings(MaskingConfig(), config.get("masking") or {}), tokenizer, 0, seq_len)
            for text in texts if left_to_right else []:
                with open(text, encoding="utf-8") as handle:
                    out["texts"][os.path.basename(text)] = eval_text(model, sp, handle.read(), seq_len)
            for other, directory in tokens.items():
                manifest = read_token_manifest(directory)
                if manifest["splits"].get("validation", {}).get("documents"):
                    out["validation"][other] = (
                        eval_tokens(model, directory, "validation", seq_len) if left_to_right
                        else eval_objective(model, objective, directory, "validation", seq_len))
            if tasks and left_to_right:
                out["tasks"] = run_tasks(model, sp, eval_dir, tasks, seq_len, ev.get("limit"))
            if ev.get("glue"):
                out["glue"] = _glue(spec, checkpoint)
            with atomic_write(path) as handle:
                json.dump(out, handle, indent=2)
            results.setdefault(name, {})[seed] = out
            log(f"eval {name} seed {seed}: done")
    return results


def _glue(spec: dict, checkpoint: str) -> dict:
    """GLUE fine-tuning of one pretrained run: {task: mean score over fine-tuning seeds,
    "average": T5's GLUE average}."""
    from train.finetune.run import run_glue, task_configs

    glue = spec["eval"]["glue"]
    tasks = glue.get("tasks") or ["sst2"]
    configs = task_configs(tasks, glue.get("set") or {})
    result = run_glue(checkpoint, tasks, _locate(spec, glue["glue_dir"]), configs, glue.get("seeds") or [0],
                      log=lambda *_: None)
    out = {t: s["score"]["mean"] for t, s in result["tasks"].items()}
    out["average"] = result["glue_average"]
    return out


def _mean_std(values: List[float]):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _fmt(mean, std, digits=4):
    return "-" if mean is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def summarise(spec: dict, corpora, tokens, results) -> dict:
    from train.objectives import LEFT_TO_RIGHT

    summary = {"name": spec.get("name", "ablation"), "objective": spec["objective"], "seeds": spec["seeds"],
               "variants": {}}
    for name in spec["variants"]:
        corpus = read_manifest(corpora[name])
        token = read_token_manifest(tokens[name])
        per_seed = results[name]
        entry = {
            "preset": corpus["config"]["preset"],
            "documents": {s: corpus["splits"][s]["documents"] for s in corpus["splits"]},
            "train_tokens_available": token["splits"]["train"]["tokens"],
            "bytes_per_token": token["splits"]["train"]["bytes_per_token"],
            "metrics": {},
        }
        keys = set()
        for r in per_seed.values():
            keys |= {("text", t) for t in r["texts"]} | {("validation", v) for v in r["validation"]} | \
                    {("task", t) for t in r["tasks"]} | {("glue", g) for g in r.get("glue", {})}
        for kind, key in sorted(keys):
            higher, headline = False, False
            if kind == "text":
                pick, label, headline = (lambda r: r["texts"].get(key, {}).get("bits_per_byte")), f"{key} bits/byte", True
            elif kind == "validation" and spec["objective"] not in LEFT_TO_RIGHT:
                pick = lambda r: r["validation"].get(key, {}).get("loss")  # noqa: E731
                label = f"{key} validation {spec['objective']} loss"
            elif kind == "validation":
                pick = lambda r: r["validation"].get(key, {}).get("bits_per_byte")  # noqa: E731
                label = f"{key} validation bits/byte"
            elif kind == "glue":
                pick = lambda r: r.get("glue", {}).get(key)  # noqa: E731
                label = "GLUE average" if key == "average" else f"GLUE {key}"
                higher, headline = True, key == "average"
            else:
                pick, label, higher = (lambda r: r["tasks"].get(key, {}).get("accuracy")), f"{key} accuracy", True
            by_seed = {seed: pick(r) for seed, r in per_seed.items() if pick(r) is not None}
            mean, std = _mean_std(list(by_seed.values()))
            entry["metrics"][label] = {"mean": mean, "std": std, "values": list(by_seed.values()),
                                       "seeds": list(by_seed), "higher_is_better": higher, "headline": headline}
        summary["variants"][name] = entry
    return summary


def verdict(summary: dict, metric: str, a: str, b: str, alpha: float = 0.05) -> str:
    """One sentence comparing variants a and b on ``metric``, decided by a paired t-test over
    seeds (Welch's when the seeds differ), never by a rule of thumb."""
    from train.stats import compare

    ma, mb = summary["variants"][a]["metrics"].get(metric), summary["variants"][b]["metrics"].get(metric)
    if not ma or not mb or ma["mean"] is None or mb["mean"] is None:
        return f"No {metric} for both {a} and {b}."
    higher = ma.get("higher_is_better", False)
    seeds_a = ma.get("seeds") or list(range(len(ma["values"])))
    seeds_b = mb.get("seeds") or list(range(len(mb["values"])))
    result = compare(dict(zip(seeds_a, ma["values"])), dict(zip(seeds_b, mb["values"])), alpha)
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
    if result["significant"]:
        return f"On {metric}, {direction}: significant at {alpha:g} ({interval})."
    needed = result.get("seeds_needed")
    more = (f" With this seed-to-seed spread of the paired differences about {needed} seeds per "
            "variant would be needed to detect it." if needed else "")
    return (f"On {metric}, {direction}, but that is not significant at {alpha:g} ({interval}): this "
            f"experiment does not separate {a} and {b}.{more}")


def write_report(spec: dict, summary: dict, runs, directory: str) -> str:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "results.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2)
    charts = plot(summary, runs, directory)
    names = list(summary["variants"])
    metrics = []
    for entry in summary["variants"].values():
        for m in entry["metrics"]:
            if m not in metrics:
                metrics.append(m)
    lines = [f"# Ablation: {summary['name']}", "",
             f"Objective {summary['objective']}. Seeds {summary['seeds']}; the same model, hyper-parameters and token budget "
             f"({spec['train']['max_tokens']:,} tokens) for every variant; one tokenizer "
             f"({spec['tokenizer'].get('model_type', 'bpe')} {spec['tokenizer'].get('vocab_size', 8000)}, "
             f"trained on {spec['tokenizer'].get('train_on', 'c4-noclean')}). Mean ± standard deviation "
             "over seeds; bits per byte and losses are lower-is-better, accuracy and GLUE higher-is-better.", "",
             "| variant | preset | train docs | validation docs | bytes/token | " + " | ".join(metrics) + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(metrics)]
    for name in names:
        e = summary["variants"][name]
        cells = [_fmt(e["metrics"].get(m, {}).get("mean"), e["metrics"].get(m, {}).get("std")) for m in metrics]
        lines.append(f"| {name} | {e['preset']} | {e['documents'].get('train', 0):,} | "
                     f"{e['documents'].get('validation', 0):,} | {e['bytes_per_token']} | " + " | ".join(cells) + " |")
    lines += ["", "## Result", ""]
    headline = [m for m in metrics if any(e["metrics"].get(m, {}).get("headline") for e in summary["variants"].values())]
    pairs = [(a, b) for a in names for b in names if a < b]
    if "c4" in names and "c4-noclean" in names:
        pairs = [("c4", "c4-noclean")] + [p for p in pairs if p != ("c4", "c4-noclean")]
    lines.append("Verdicts on the held-out headline metrics (clean text not drawn from any variant, "
                 "and GLUE), each from a paired t-test over seeds at the 5% level; a variant's own "
                 "validation split is in-distribution for that variant, so it gets no verdict.")
    lines.append("")
    if not headline:
        lines.append("- No headline metric: set `eval.texts` (held-out clean text such as "
                     "WikiText-2; left-to-right objectives) or `eval.glue` to compare the variants.")
    for metric in headline:
        for a, b in pairs:
            lines.append(f"- **{a} vs {b}**: " + verdict(summary, metric, a, b))
    lines += ["", "## Charts", ""] + [f"![{c}]({c})" for c in charts]
    path = os.path.join(directory, "report.md")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def plot(summary: dict, runs, directory: str) -> List[str]:
    """loss_curves.png: validation loss during training on one common held-out set, mean and
    min-max band over seeds; final_metrics.png: per metric, each variant's mean and 95%
    interval over seeds as a dot and a bar (axes fit the data, not zero: the differences are
    small). Legends sit outside the data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from train.stats import t_quantile

    files = []
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
    files.append("loss_curves.png")

    names = list(summary["variants"])
    metrics = []
    for entry in summary["variants"].values():
        metrics += [m for m, v in entry["metrics"].items() if m not in metrics and v.get("mean") is not None]
    if metrics:
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
        fig.tight_layout()
        fig.savefig(os.path.join(directory, "final_metrics.png"))
        plt.close(fig)
        files.append("final_metrics.png")
    return files


def run_ablation(path: str, log=print, report_dir: Optional[str] = None,
                 overrides: Optional[List[str]] = None) -> str:
    """Every stage of the ablation; each finished (or reused) unit - a corpus, the tokenizer, a
    variant's tokens, a run, its evaluation - logs one line and moves the stage bar (with ETA)."""
    import glob

    from corpus import progress

    spec = load_ablation(path, overrides)
    def expand(patterns) -> List[str]:
        found = []
        for pattern in patterns:
            matches = sorted(glob.glob(pattern)) or sorted(glob.glob(os.path.join(spec["_base"], pattern)))
            if not matches:
                raise AblationError(f"input {pattern!r} matches no file")
            found += [os.path.abspath(m) for m in matches]
        return found

    spec["inputs"] = expand(spec["inputs"])
    for variant in spec["variants"].values():  # a variant may read its own files (WET vs WARC)
        if variant and variant.get("inputs"):
            variant["inputs"] = expand(variant["inputs"])
        if variant and (variant.get("set") or {}).get("read.urls_from"):
            variant["set"]["read.urls_from"] = _locate(spec, variant["set"]["read.urls_from"])
    if spec.get("badwords"):
        spec["badwords"] = _locate(spec, spec["badwords"])
    variants, seeds = len(spec["variants"]), len(spec["seeds"])
    units = variants + 1 + variants + 2 * variants * seeds
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
        runs = train_runs(spec, tokens, stage_done)
        results = evaluate_runs(spec, runs, tokens, tokenizer, stage_done)
    summary = summarise(spec, corpora, tokens, results)
    return write_report(spec, summary, runs, report_dir or os.path.join(spec["out_dir"], "report"))
