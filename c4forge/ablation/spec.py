"""The ablation's spec: the YAML file (plus ``--set`` overrides), checked, with paths resolved.

An ablation compares corpus variants (named presets plus settings) built from the same crawl
inputs, trained the same way: see train/ablation/__init__.py for the whole flow.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
from typing import Optional

import yaml

from c4forge.ablation.sequential import SPENDING
from c4forge.core.errors import C4forgeError
from c4forge.core.outdir import OutputError, check_name
from c4forge.core.settings import (
    ConfigError,
    apply_settings,
    check_keys,
    load_yaml_mapping,
    merge_settings,
    nest,
    parse_overrides,
    read_settings_yaml,
)
from c4forge.corpus.config import build_config
from c4forge.tokenizer.train import TokenizerConfig
from c4forge.train.config import build_train_config
from c4forge.train.evaluation.finetune.run import task_configs
from c4forge.train.objectives import LEFT_TO_RIGHT, OBJECTIVES


class AblationError(C4forgeError, RuntimeError):
    """The ablation config is wrong or a stage failed; the message says which."""


def plain(value):
    """JSON-normalised (tuples -> lists) for comparing configs with stored manifests."""
    return json.loads(json.dumps(value))


def apply_spec_overrides(written: dict, overrides: list[str]) -> dict:
    """``--set a.b=VALUE`` on the ablation YAML, in the one ``--set`` grammar
    (:func:`c4forge.core.settings.parse_overrides`) with VALUE read as YAML (``seeds=[0,1,2]``,
    ``train.max_tokens=200000``)."""
    def read_yaml(value: str):
        try:
            return read_settings_yaml(value)
        except yaml.YAMLError as exc:
            raise ValueError("not a YAML value") from exc

    try:
        return merge_settings(written, parse_overrides(overrides, read_yaml))
    except ConfigError as exc:
        raise AblationError(str(exc)) from exc


@dataclasses.dataclass(frozen=True)
class Variant:
    """One corpus variant: a preset plus settings, from the shared inputs or its own."""

    preset: str = "c4"
    set: dict = dataclasses.field(default_factory=dict)  # corpus settings, dotted or nested
    inputs: tuple[str, ...] = ()  # its own crawl files (WET for one, WARC for another); else the shared


@dataclasses.dataclass(frozen=True)
class GlueSpec:
    """GLUE fine-tuning of every run (``eval.glue``)."""

    glue_dir: str = ""
    tasks: tuple[str, ...] = ("sst2",)
    seeds: tuple[int, ...] = (0,)  # fine-tuning seeds per pretrained run
    set: dict = dataclasses.field(default_factory=dict)  # fine-tuning settings per task


@dataclasses.dataclass(frozen=True)
class EvalSpec:
    """What every run is scored on. ``written`` is the ``eval:`` mapping as written: stored
    evaluations are stamped with it, so a changed evaluation is recomputed and an unchanged one
    reused."""

    texts: tuple[str, ...] = ()  # held-out clean texts (WikiText-2): the headline
    tasks: tuple[str, ...] = ()  # zero-shot tasks (left-to-right objectives)
    eval_dir: str = ""
    limit: Optional[int] = None  # items per task
    glue: Optional[GlueSpec] = None
    written: dict = dataclasses.field(default_factory=dict, compare=False)


@dataclasses.dataclass(frozen=True)
class SequentialSpec:
    """Seeds added in rounds until every headline test is decided (``train ablate
    --until-decided``; c4forge/ablation/sequential.py): the first look is at the spec's
    ``seeds``, then every ``step`` seeds up to ``max_seeds``."""

    max_seeds: int = 10
    step: int = 1
    spending: str = "obrien-fleming"  # or pocock
    alpha: float = 0.05


@dataclasses.dataclass(frozen=True)
class AblationSpec:
    """The ablation YAML (plus ``--set``), checked: see configs/ablation-*.yaml for examples.

    ``train`` and ``tokenizer`` hold another stage's settings as written: the trainer's
    (train/config.py validates them; runs are stamped with them) and the tokenizer's
    (TokenizerConfig) plus ``train_on``, the variant the one tokenizer is trained on."""

    inputs: tuple[str, ...] = ()
    variants: dict[str, Variant] = dataclasses.field(default_factory=dict)
    train: dict = dataclasses.field(default_factory=dict)
    out_dir: str = ""
    name: str = "ablation"
    seeds: tuple[int, ...] = (0, 1, 2)
    objective: str = "causal"
    tokenizer: dict = dataclasses.field(default_factory=dict)
    budget: str = "tokens"  # tokens (T5: the same tokens) or bytes (the same bytes of text)
    eval: EvalSpec = dataclasses.field(default_factory=EvalSpec)
    badwords: str = ""
    validation_per_mille: int = 50
    curve_validation: str = ""  # the variant whose validation split every loss curve uses
    sequential: Optional[SequentialSpec] = None  # seeds until decided; None: the fixed seeds
    base: str = ""  # the config file's folder: relative paths resolve against it

    @property
    def max_tokens(self) -> int:
        return int(self.train["max_tokens"])

    def variant_inputs(self, name: str) -> list[str]:
        return list(self.variants[name].inputs or self.inputs)


REQUIRED = ("inputs", "variants", "train", "out_dir")


def load_ablation(path: str, overrides: Optional[list[str]] = None, until_decided: bool = False,
                  max_seeds: Optional[int] = None) -> AblationSpec:
    """The spec from ``path`` and ``--set`` overrides; ``until_decided`` / ``max_seeds``
    (``train ablate --until-decided --max-seeds N``) switch sequential seeds on over the file."""
    written = apply_spec_overrides(load_yaml_mapping(path), list(overrides or []))
    if until_decided or max_seeds is not None:
        sequential = written.get("sequential")
        sequential = dict(sequential) if isinstance(sequential, dict) else {}
        if max_seeds is not None:
            sequential["max_seeds"] = max_seeds
        written["sequential"] = sequential
    for key in REQUIRED:
        if key not in written:
            raise AblationError(f"{path}: missing '{key}'")
    check_keys(written, SPEC_KEYS)
    variants = written["variants"]
    if not isinstance(variants, dict) or len(variants) < 2:
        raise AblationError(f"{path}: an ablation needs at least two variants (a mapping of names)")
    try:  # names become directory names: never a path
        for name in variants:
            check_name(str(name), "variant name")
    except OutputError as exc:
        raise AblationError(f"{path}: {exc}") from exc
    seeds = written.get("seeds", [0, 1, 2])
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                               for x in seeds) or not seeds:
        raise AblationError(f"{path}: seeds must be a non-empty list of integers")
    if not isinstance(written["train"], dict) or not written["train"].get("max_tokens"):
        raise AblationError(f"{path}: train.max_tokens must be set (the same token budget for every variant)")
    budget = written.get("budget", "tokens")
    if budget not in BUDGETS:
        raise AblationError(f"{path}: budget {budget!r}: choose tokens (T5's protocol: the "
                            "same tokens for every variant) or bytes (the same bytes of text)")
    objective = written.get("objective", written["train"].get("objective", "causal"))
    if objective not in OBJECTIVES:
        raise AblationError(f"{path}: objective {objective!r}: choose from {', '.join(OBJECTIVES)}")
    train = dict(written["train"], objective=objective)  # every variant and seed trains the same objective
    scalars = {k: v for k, v in written.items()
               if k in ("inputs", "out_dir", "name", "seeds", "badwords", "validation_per_mille",
                        "curve_validation") and v is not None}
    spec = apply_settings(AblationSpec(), scalars)
    spec = dataclasses.replace(
        spec, variants={str(name): _variant(str(name), v) for name, v in variants.items()},
        train=train, objective=objective, budget=budget, tokenizer=dict(written.get("tokenizer") or {}),
        eval=_eval(written.get("eval") or {}), base=os.path.dirname(os.path.abspath(path)),
        sequential=_sequential(path, written.get("sequential"), len(seeds)))
    check_settings(spec)
    return spec


def _sequential(path: str, written, seeds: int) -> Optional[SequentialSpec]:
    if written is None or written is False:
        return None
    if written is True:
        written = {}
    if not isinstance(written, dict):
        raise AblationError(f"{path}: sequential: a mapping (max_seeds, step, spending, alpha) or true")
    check_keys(written, SEQUENTIAL_KEYS, "sequential.")
    spec = apply_settings(SequentialSpec(), written, "sequential.")
    if spec.spending not in SPENDING:
        raise AblationError(f"{path}: sequential.spending {spec.spending!r}: choose {', '.join(SPENDING)}")
    if spec.max_seeds < seeds or spec.step < 1 or not 0 < spec.alpha < 1:
        raise AblationError(f"{path}: sequential: max_seeds ({spec.max_seeds}) must be at least the "
                            f"{seeds} seeds of the first look, step at least 1, alpha in (0, 1)")
    if seeds < 2:
        raise AblationError(f"{path}: sequential: the first look needs at least 2 seeds (a paired t-test)")
    return spec


def _variant(name: str, written) -> Variant:
    if written is not None and not isinstance(written, dict):
        raise AblationError(f"variants.{name}: a mapping of settings (preset, set, inputs), not {written!r}")
    check_keys(written or {}, VARIANT_KEYS, f"variants.{name}.")
    return apply_settings(Variant(), written or {}, f"variants.{name}.")


def _eval(written: dict) -> EvalSpec:
    check_keys(written, EVAL_KEYS, "eval.")
    glue = written.get("glue")
    spec = apply_settings(EvalSpec(), {k: v for k, v in written.items() if k != "glue" and v is not None}, "eval.")
    if glue:
        check_keys(glue, GLUE_KEYS, "eval.glue.")
        given = {k: v for k, v in glue.items() if v}  # empty tasks/seeds/set: the defaults
        spec = dataclasses.replace(spec, glue=apply_settings(GlueSpec(), given, "eval.glue."))
    return dataclasses.replace(spec, written=dict(written))


BUDGETS = ("tokens", "bytes")


def token_budgets(budget: str, max_tokens: int, bytes_per_token: dict[str, float], reference: str,
                  batch_tokens: int) -> dict[str, int]:
    """Training tokens per variant. ``tokens``: ``max_tokens`` for every variant (T5 matched
    tokens). ``bytes``: the bytes of text ``max_tokens`` covers in the ``reference`` variant
    (the tokenizer's), for every variant - a variant whose text packs more bytes into a token
    trains on fewer tokens - rounded to whole batches, so each run stops within half a batch of
    the byte target."""
    if budget == "tokens":
        return {name: max_tokens for name in bytes_per_token}
    target = max_tokens * bytes_per_token[reference]
    return {name: max(batch_tokens, round(target / bpt / batch_tokens) * batch_tokens)
            for name, bpt in bytes_per_token.items()}


SPEC_KEYS = ("name", "inputs", "variants", "train", "out_dir", "seeds", "objective", "tokenizer", "budget",
             "eval", "badwords", "validation_per_mille", "curve_validation", "sequential")
SEQUENTIAL_KEYS = ("max_seeds", "step", "spending", "alpha")
VARIANT_KEYS = ("preset", "set", "inputs")
EVAL_KEYS = ("texts", "tasks", "eval_dir", "limit", "glue")
GLUE_KEYS = ("tasks", "glue_dir", "seeds", "set")


def check_settings(spec: AblationSpec) -> None:
    """Every stage's settings fit that stage's config (types and names), before any work
    starts: a misspelled key is a usage error (exit 2) with a did-you-mean, not hours of work
    with the default. (The spec's own keys are checked as it is read.)"""
    for name in spec.variants:
        variant_config(spec, name)
    if spec.eval.glue:
        task_configs(list(spec.eval.glue.tasks), spec.eval.glue.set)
    tokenizer = {k: v for k, v in spec.tokenizer.items() if k != "train_on"}
    apply_settings(TokenizerConfig(), tokenizer, "tokenizer.")
    try:
        build_train_config(base=json.loads(json.dumps(spec.train)))
    except ConfigError as exc:
        raise ConfigError(f"train: {exc}") from exc


def variant_config(spec: AblationSpec, name: str):
    """A variant's corpus config: its preset and ``set:`` block; the spec's ``badwords`` lists
    go to the variants whose chain runs the bad-words step (Gopher's and FineWeb's do not)."""
    variant = spec.variants[name]
    settings = {"validation_per_mille": spec.validation_per_mille}
    config = build_config(variant.preset, updates=nest(variant.set), **settings)
    if spec.badwords and "bad-words" in {step.name for step in config.chain_steps()}:
        config = build_config(variant.preset, updates=nest(variant.set), badwords=spec.badwords, **settings)
    return config


def locate(spec: AblationSpec, path: str) -> str:
    """A path from the config: as given (relative to the working directory) if it exists, else
    relative to the config file's directory."""
    if os.path.isabs(path) or os.path.exists(path):
        return os.path.abspath(path)
    return os.path.join(spec.base, path)


def resolve_inputs(spec: AblationSpec) -> AblationSpec:
    """Every input glob (shared and per-variant) expanded to absolute paths, and the other
    paths of the spec resolved; an input that matches nothing is an error naming it."""
    def expand(patterns) -> tuple[str, ...]:
        found = []
        for pattern in patterns:
            matches = sorted(glob.glob(pattern)) or sorted(glob.glob(os.path.join(spec.base, pattern)))
            if not matches:
                raise AblationError(f"input {pattern!r} matches no file")
            found += [os.path.abspath(m) for m in matches]
        return tuple(found)

    variants = {}
    for name, variant in spec.variants.items():  # a variant may read its own files (WET vs WARC)
        if variant.inputs:
            variant = dataclasses.replace(variant, inputs=expand(variant.inputs))
        if variant.set.get("read.urls_from"):
            variant = dataclasses.replace(variant, set={**variant.set, "read.urls_from":
                                                        locate(spec, variant.set["read.urls_from"])})
        variants[name] = variant
    resolved = dataclasses.replace(spec, inputs=expand(spec.inputs), variants=variants,
                                   badwords=locate(spec, spec.badwords) if spec.badwords else "")
    check_eval_paths(resolved)
    return resolved


def check_eval_paths(spec: AblationSpec) -> None:
    """Every file and folder the evaluation reads exists, checked before hours of training: a
    missing held-out text, task folder or GLUE folder is named with the setting that gave it."""
    ev = spec.eval
    wanted = [(f"eval.texts[{i}]", text, os.path.isfile) for i, text in enumerate(ev.texts)]
    if spec.objective in LEFT_TO_RIGHT:  # other objectives skip the tasks
        if ev.eval_dir or ev.tasks:
            wanted.append(("eval.eval_dir", ev.eval_dir, os.path.isdir))
    if ev.glue:
        wanted.append(("eval.glue.glue_dir", ev.glue.glue_dir, os.path.isdir))
    for setting, path, exists in wanted:
        if not path:
            raise AblationError(f"{setting} is not set")
        if not exists(locate(spec, path)):
            kind = "file" if exists is os.path.isfile else "folder"
            raise AblationError(f"{setting}: {path} is not a {kind} (paths are relative to the working "
                                f"directory or to the ablation config)")
