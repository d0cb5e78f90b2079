"""The ablation's stages, each over every variant (and seed): corpora, one tokenizer, token
shards, training runs, evaluations. Every finished unit is reused when what it was made from is
unchanged (:func:`reuse_or_build`); each stage asks the module that owns a format for what it
needs (manifests, tokenizer settings, checkpoint steps), never reads those files itself.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Optional

from c4forge.ablation.spec import (
    BUDGETS,
    AblationError,
    AblationSpec,
    locate,
    plain,
    token_budgets,
    variant_config,
)
from c4forge.core.counters import Counters
from c4forge.core.io import atomic_write
from c4forge.core.settings import ConfigError, apply_settings
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.chain.provenance import corpus_manifest
from c4forge.corpus.output.samples import Reservoir
from c4forge.corpus.output.shards import (
    CorpusFormatError,
    manifest_path,
    read_manifest,
    write_corpus,
)
from c4forge.tokenizer.encode import encode_corpus, encode_text_file
from c4forge.tokenizer.formats import (
    TokenFormatError,
    file_sha256,
    read_token_manifest,
    token_manifest_sha256,
)
from c4forge.tokenizer.kinds import TokenizerSpec, open_tokenizer
from c4forge.tokenizer.train import TokenizerConfig, tokenizer_settings, train_tokenizer
from c4forge.train.checkpoint import copy_run, finished_steps, latest_checkpoint, run_manifest
from c4forge.train.config import DataConfig, build_train_config
from c4forge.train.evaluation.evaluate import evaluate_checkpoint
from c4forge.train.evaluation.finetune.baselines import reference_rows
from c4forge.train.evaluation.finetune.metrics import glue_average
from c4forge.train.evaluation.finetune.run import run_glue, task_configs
from c4forge.train.objectives import LEFT_TO_RIGHT
from c4forge.train.trainer import total_steps, train

# What an evaluation computes beyond its spec: bump when the scoring or fine-tuning code changes
# what a stored eval.json would say, so re-runs recompute instead of reusing stale numbers.
# 2: GLUE with stratified subsets, mean pooling, min_steps 150; continuous task metrics.
EVAL_RECIPE = 2


def reuse_or_build(unit: str, where: str, is_current: Callable[[], bool],
                   build: Callable[[], str], log) -> str:
    """The one re-run rule: a unit whose stored inputs match what it would be made from now is
    reused (and says so); anything else is (re)built, replacing only its own files. ``build``
    returns what it did, for the log line."""
    if is_current():
        log(f"{unit}: reusing {where}")
        return where
    started = time.time()
    done = build()
    log(f"{unit}: {done} in {time.time() - started:.0f}s")
    return where


def build_corpora(spec: AblationSpec, log) -> dict[str, str]:
    out = {}
    for name in spec.variants:
        inputs = spec.variant_inputs(name)
        config = variant_config(spec, name)
        directory = os.path.join(spec.out_dir, "corpora", name)

        def current(directory=directory, config=config, inputs=inputs) -> bool:
            try:
                manifest = read_manifest(directory)
            except CorpusFormatError:
                return False
            return manifest["config"] == plain(config.to_dict()) and manifest["inputs"] == inputs

        def build(directory=directory, config=config, inputs=inputs) -> str:
            counters = Counters()
            samples = Reservoir(config.rule_samples.per_rule) if config.rule_samples.on else None
            docs = run_chain(inputs, config, counters, samples=samples)
            manifest = corpus_manifest(config, inputs, counters.as_dict(), "single process (ablation)")
            write_corpus(directory, docs, manifest, validation_per_mille=config.validation_per_mille,
                         overwrite=True,  # the ablation's own folder: only its files go
                         samples=samples.document(config.rule_samples) if samples is not None else None)
            return f"built {len(docs):,} documents"

        out[name] = reuse_or_build(f"corpus {name}", directory, current, build, log)
    return out


def build_tokenizer(spec: AblationSpec, corpora: dict[str, str], log) -> str:
    settings = dict(spec.tokenizer)
    train_on = settings.pop("train_on", "c4-noclean" if "c4-noclean" in corpora else next(iter(corpora)))
    if train_on not in corpora:
        raise AblationError(f"tokenizer.train_on {train_on!r} is not a variant")
    try:
        config = apply_settings(TokenizerConfig(), settings, "tokenizer.")
    except ConfigError as exc:
        raise AblationError(str(exc)) from exc
    directory = os.path.join(spec.out_dir, "tokenizer")
    corpus_sha = file_sha256(manifest_path(corpora[train_on]))

    def current() -> bool:
        info = tokenizer_settings(directory)
        return bool(info) and info.get("corpus", {}).get("manifest_sha256") == corpus_sha and all(
            info.get(k, field.default) == getattr(config, k)
            for k, field in TokenizerConfig.__dataclass_fields__.items())

    def build() -> str:
        train_tokenizer(corpora[train_on], directory, config, overwrite=True)
        return f"trained {config.model_type} {config.vocab_size} on {train_on}"

    return reuse_or_build("tokenizer", directory, current, build, log)


def encode_variants(spec: AblationSpec, corpora: dict[str, str], tokenizer: str, log) -> dict[str, str]:
    model_sha = open_tokenizer(TokenizerSpec(tokenizer)).sha256
    out = {}
    for name, corpus in corpora.items():
        directory = os.path.join(spec.out_dir, "tokens", name)

        def current(directory=directory, corpus=corpus) -> bool:
            try:
                manifest = read_token_manifest(directory)
            except TokenFormatError:
                return False
            return (manifest["tokenizer"]["model_sha256"] == model_sha and
                    manifest["corpus"]["manifest_sha256"] == file_sha256(manifest_path(corpus)))

        def build(directory=directory, corpus=corpus) -> str:
            encode_corpus(corpus, tokenizer, directory, overwrite=True, log=lambda *_: None)
            return "encoded"

        out[name] = reuse_or_build(f"tokens {name}", directory, current, build, log)
    return out


def encode_heldout_texts(spec: AblationSpec, tokenizer: str, log) -> dict[str, str]:
    """{text file: token directory} for objectives that do not score text left to right (span,
    BART, MLM): each held-out text (``eval.texts``, e.g. WikiText-2) encoded once with the
    shared tokenizer, so every variant's model gets its own objective's loss on the same
    neutral tokens, with the same masks (the evaluation's objective seed is fixed). Left-to-right
    objectives score the raw texts in bits per byte instead: nothing to encode."""

    if spec.objective in LEFT_TO_RIGHT:
        return {}
    model_sha = open_tokenizer(TokenizerSpec(tokenizer)).sha256
    out = {}
    for text in spec.eval.texts:
        path = locate(spec, text)
        name = os.path.basename(path)
        directory = os.path.join(spec.out_dir, "heldout", os.path.splitext(name)[0])

        def current(directory=directory, path=path) -> bool:
            try:
                manifest = read_token_manifest(directory)
            except TokenFormatError:
                return False
            return (manifest["tokenizer"]["model_sha256"] == model_sha
                    and manifest.get("corpus", {}).get("text_sha256") == file_sha256(path))

        def build(directory=directory, path=path) -> str:
            manifest = encode_text_file(path, tokenizer, directory, overwrite=True)
            return f"encoded {manifest['splits']['validation']['tokens']:,} tokens"

        out[path] = reuse_or_build(f"held-out {name}", directory, current, build, log)
    return out


def train_runs(spec: AblationSpec, tokens: dict[str, str], log) -> dict[str, dict[int, str]]:
    runs: dict[str, dict[int, str]] = {}
    # One held-out set for every run's loss curve, so the curves compare: the validation split
    # of the tokenizer's variant (by default the unfiltered one; the split is chosen by URL hash,
    # so its documents are held out of every variant).
    common = spec.curve_validation or spec.tokenizer.get("train_on")
    curve_set = tokens.get(common)
    budgets = run_budgets(spec, tokens)
    for name, directory in tokens.items():
        for seed in spec.seeds:
            run_dir = run_directory(spec, name, seed)
            base = json.loads(json.dumps(spec.train))
            base.setdefault("data", {})
            base["data"].update({"train": directory, "train_split": "train",
                                 "validation": curve_set or directory, "validation_split": "validation"})
            base.update({"seed": seed, "out_dir": run_dir, "progress": False, "max_tokens": budgets[name]})
            config = build_train_config(base=base)
            steps = total_steps(config, 1)
            runs.setdefault(name, {})[seed] = run_dir
            stamp = budget_stamp({"tokens_manifest_sha256": token_manifest_sha256(directory),
                                  "train": plain(spec.train), "curve_validation": common if curve_set else name},
                                 spec.budget, budgets[name])
            previous = (run_manifest(run_dir) or {}).get("meta")
            twin = twin_run(spec, name, seed, budgets[name], stamp, steps)

            def build(config=config, stamp=stamp, previous=previous, run_dir=run_dir, steps=steps,
                      twin=twin) -> str:
                forget_evaluation(run_dir)
                if twin:
                    copy_run(twin, run_dir, stamp)
                    copy_evaluation(twin, run_dir)
                    return f"copied {twin} (the other budget's run: the same tokens, steps and seed)"
                # same inputs: continue an interrupted run; other tokens or settings: start
                # again (only the run's own files are removed)
                resume = previous == stamp and finished_steps(run_dir) > 0
                train(config, resume=resume, overwrite=not resume, meta=stamp, log=lambda *_: None)
                return f"{steps} steps"

            def current(stamp=stamp, previous=previous, run_dir=run_dir, steps=steps) -> bool:
                return previous == stamp and finished_steps(run_dir) >= steps

            reuse_or_build(f"run {name} seed {seed}", run_dir, current, build, log)
    return runs


def twin_run(spec: AblationSpec, name: str, seed: int, max_tokens: int, stamp: dict,
             steps: int) -> Optional[str]:
    """The finished run under the other budget that this run would repeat exactly, or None.
    The reference variant (the tokenizer's) trains on ``max_tokens`` under both budgets: the
    same tokens, settings, seed and steps, so the same weights - a third of the second budget's
    training, saved by copying."""
    if max_tokens != spec.max_tokens:
        return None
    for other in BUDGETS:
        if other == spec.budget:
            continue
        twin = run_directory(spec, name, seed, other)
        wanted = budget_stamp(stamp, other, max_tokens)
        if (run_manifest(twin) or {}).get("meta") == wanted and finished_steps(twin) >= steps:
            return twin
    return None


def budget_stamp(stamp: dict, budget: str, max_tokens: int) -> dict:
    """A run's stamp under ``budget``: token-budget stamps stay as they were before budgets
    existed; another budget adds its kind and the run's tokens."""
    plain_stamp = {k: v for k, v in stamp.items() if k != "budget"}
    if budget == "tokens":
        return plain_stamp
    return {**plain_stamp, "budget": {"kind": budget, "max_tokens": max_tokens}}


def evaluation_path(run_dir: str) -> str:
    """Where the ablation keeps its evaluation of a run (inside the run directory)."""
    return os.path.join(run_dir, "eval.json")


def forget_evaluation(run_dir: str) -> None:
    """Remove the ablation's evaluation of a run that is about to be (re)made: the new
    checkpoint has the old one's path, so a stored evaluation would otherwise pass for it."""
    path = evaluation_path(run_dir)
    if os.path.isfile(path):
        os.unlink(path)


def copy_evaluation(source: str, target: str) -> None:
    """A copied run's evaluation: the source run's, when it scored the source's latest
    checkpoint (the evaluation stage still checks its recipe and settings)."""
    try:
        with open(evaluation_path(source), encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return
    if stored.get("checkpoint") != latest_checkpoint(os.path.join(source, "checkpoints")):
        return
    stored["checkpoint"] = latest_checkpoint(os.path.join(target, "checkpoints"))
    with atomic_write(evaluation_path(target)) as handle:
        json.dump(stored, handle, indent=2)


def runs_root(out_dir: str, budget: str) -> str:
    """Where an ablation's runs under one budget live: ``runs/`` for matched tokens (the
    default, as before budgets existed), ``runs-bytes/`` for matched bytes - both budgets of
    one spec share corpora, tokenizer, token shards and GLUE reference rows in one out_dir."""
    return os.path.join(out_dir, "runs" if budget == "tokens" else f"runs-{budget}")


def run_directory(spec: AblationSpec, name: str, seed: int, budget: Optional[str] = None) -> str:
    return os.path.join(runs_root(spec.out_dir, budget or spec.budget), name, f"seed-{seed}")


def stored_results(spec: AblationSpec, budget: str) -> Optional[dict[str, dict[int, dict]]]:
    """The evaluations of every variant and seed under ``budget`` from an earlier
    ``train ablate`` of this spec with that budget, or None unless all of them are there and
    current (their run trained the same tokens with the same settings; recipe and eval spec as
    now). What the report uses to set the two budgets side by side."""

    results: dict[str, dict[int, dict]] = {}
    for name in spec.variants:
        for seed in spec.seeds:
            run_dir = run_directory(spec, name, seed, budget)
            try:
                with open(evaluation_path(run_dir), encoding="utf-8") as handle:
                    stored = json.load(handle)
            except (OSError, ValueError):
                return None
            meta = (run_manifest(run_dir) or {}).get("meta") or {}
            if (stored.get("recipe") != EVAL_RECIPE or stored.get("spec") != plain(spec.eval.written)
                    or meta.get("train") != plain(spec.train)
                    or stored.get("checkpoint") != latest_checkpoint(os.path.join(run_dir, "checkpoints"))):
                return None
            results.setdefault(name, {})[seed] = stored
    return results


def run_budgets(spec: AblationSpec, tokens: dict[str, str]) -> dict[str, int]:
    """Training tokens per variant under the spec's ``budget`` (spec.token_budgets)."""

    train = spec.train
    data = train.get("data") or {}
    defaults = DataConfig()
    batch_tokens = (int(data.get("seq_len", defaults.seq_len)) * int(data.get("batch_size", defaults.batch_size))
                    * int(data.get("grad_accum", defaults.grad_accum)))
    bytes_per_token = {name: float(read_token_manifest(d)["splits"]["train"]["bytes_per_token"])
                       for name, d in tokens.items()}
    reference = spec.tokenizer.get("train_on") or next(iter(tokens))
    if reference not in bytes_per_token:
        reference = next(iter(tokens))
    return token_budgets(spec.budget, spec.max_tokens, bytes_per_token,
                         reference, batch_tokens)


def evaluate_runs(spec: AblationSpec, runs: dict[str, dict[int, str]], tokens: dict[str, str],
                  tokenizer: str, log, heldout: Optional[dict[str, str]] = None) -> dict[str, dict[int, dict]]:
    """Every run through :func:`train.evaluate.evaluate_checkpoint` (what ``train eval`` runs):
    the held-out texts (raw, in bits per byte; or for other objectives their encoding from
    :func:`encode_heldout_texts`, in the objective's loss), every variant's validation split,
    the zero-shot tasks, and GLUE."""

    ev = spec.eval
    left_to_right = spec.objective in LEFT_TO_RIGHT
    heldout = heldout or {}
    if not left_to_right and ev.tasks:
        log(f"eval: a {spec.objective} model does not score text left to right: zero-shot tasks "
            "are skipped; held-out texts and each variant's validation split get the objective's loss")
    texts = [locate(spec, t) for t in ev.texts]
    scored_as = {text: heldout.get(text, text) for text in texts}  # raw file or its token directory
    if not left_to_right and set(heldout) != set(texts):
        raise AblationError(f"a {spec.objective} model scores held-out texts as token "
                            "directories: encode them first (encode_heldout_texts)")
    tasks = list(ev.tasks) if left_to_right else []
    eval_dir = locate(spec, ev.eval_dir) if ev.eval_dir else None
    validation = {name: directory for name, directory in tokens.items()
                  if read_token_manifest(directory)["splits"].get("validation", {}).get("documents")}
    results: dict[str, dict[int, dict]] = {}
    for name, seeds in runs.items():
        for seed, run_dir in seeds.items():
            path = evaluation_path(run_dir)
            checkpoint = latest_checkpoint(os.path.join(run_dir, "checkpoints"))

            def cached(path=path) -> dict:
                try:
                    with open(path, encoding="utf-8") as handle:
                        return json.load(handle)
                except (OSError, ValueError):
                    return {}

            def current(checkpoint=checkpoint, cached=cached) -> bool:
                stored = cached()
                return (stored.get("checkpoint") == checkpoint and stored.get("spec") == plain(ev.written)
                        and stored.get("recipe") == EVAL_RECIPE
                        and set(stored.get("texts") or {}) == {os.path.basename(t) for t in texts})

            def build(checkpoint=checkpoint, path=path) -> str:
                scored = evaluate_checkpoint(
                    checkpoint, data=[*scored_as.values(), *validation.values()], split="validation",
                    tasks=tasks, eval_dir=eval_dir, limit=ev.limit, tokenizer_dir=tokenizer,
                    device="cpu")
                out = {"checkpoint": checkpoint, "spec": plain(ev.written), "recipe": EVAL_RECIPE,
                       "texts": {os.path.basename(t): scored["data"][scored_as[t]] for t in texts},
                       "validation": {other: scored["data"][d] for other, d in validation.items()},
                       "tasks": scored["tasks"]}
                if ev.glue:
                    out["glue"] = _glue(spec, checkpoint)
                with atomic_write(path) as handle:
                    json.dump(out, handle, indent=2)
                return "done"

            reuse_or_build(f"eval {name} seed {seed}", path, current, build, log)
            results.setdefault(name, {})[seed] = cached()
    return results


def _glue(spec: AblationSpec, checkpoint: str) -> dict:
    """GLUE fine-tuning of one pretrained run: {task: mean score over fine-tuning seeds,
    "average": T5's GLUE average}."""

    glue = spec.eval.glue
    tasks = list(glue.tasks)
    configs = task_configs(tasks, glue.set)
    result = run_glue(checkpoint, tasks, locate(spec, glue.glue_dir), configs, list(glue.seeds),
                      log=lambda *_: None)
    out = {t: s["score"]["mean"] for t, s in result["tasks"].items()}
    out["average"] = result["glue_average"]
    return out


def glue_references(spec: AblationSpec, runs: dict, log) -> dict:
    """The GLUE reference rows (issue 28), on the examples the variants are fine-tuned on:
    majority class and TF-IDF logistic regression (no model), and the same model from random
    initialisation for every pretraining seed (the weights a run starts from depend on its seed
    and model config only, which all variants share, so one run per seed stands for all).
    A seed's row is kept once made: sequential seeds add only the new seeds' rows."""

    glue = spec.eval.glue
    if not glue:
        return {}
    path = os.path.join(spec.out_dir, "glue-reference.json")
    fingerprint = {"glue": plain(spec.eval.written["glue"]), "train": plain(spec.train)}
    wanted = [str(seed) for seed in spec.seeds]

    def stored() -> dict:
        """The rows on file when they were made with this recipe and model (any seeds), else {}."""
        try:
            with open(path, encoding="utf-8") as handle:
                rows = json.load(handle)
        except (OSError, ValueError):
            return {}
        made_with = {k: v for k, v in (rows.get("spec") or {}).items() if k != "seeds"}
        return rows if made_with == fingerprint else {}

    def current() -> bool:
        return set(wanted) <= set(stored().get("random_init") or {})

    def build() -> str:
        tasks = list(glue.tasks)
        glue_dir = locate(spec, glue.glue_dir)
        configs = task_configs(tasks, glue.set)
        out = stored() or {"majority": {}, "tfidf": {}, "random_init": {}}
        if not out["majority"]:
            for task in tasks:
                rows = reference_rows(task, glue_dir, configs[task].max_train, configs[task].max_eval)
                out["majority"][task] = rows["majority"]["score"]
                out["tfidf"][task] = rows["tfidf"]["score"]
            for name in ("majority", "tfidf"):
                out[name]["average"] = glue_average({t: out[name][t] for t in tasks})
        first = next(iter(runs.values()))
        random_configs = {t: apply_settings(c, {"init": "random"}) for t, c in configs.items()}
        new = [seed for seed in first if str(seed) not in out["random_init"]]
        for seed in new:
            checkpoint = latest_checkpoint(os.path.join(first[seed], "checkpoints"))
            result = run_glue(checkpoint, tasks, glue_dir, random_configs, list(glue.seeds),
                              log=lambda *_: None)
            scores = {t: s["score"]["mean"] for t, s in result["tasks"].items()}
            out["random_init"][str(seed)] = {**scores, "average": result["glue_average"]}
        out["spec"] = {**fingerprint, "seeds": sorted(int(s) for s in out["random_init"])}
        with atomic_write(path) as handle:
            json.dump(out, handle, indent=2)
        return f"random init fine-tuned for seed(s) {', '.join(map(str, new))}" if new else "done"

    reuse_or_build("GLUE reference rows", path, current, build, log)
    rows = stored()
    return {**rows, "random_init": {s: rows["random_init"][s] for s in wanted}}
