"""The ablation's spec: the YAML file (plus ``--set`` overrides), checked, with paths resolved.

An ablation compares corpus variants (named presets plus settings) built from the same crawl
inputs, trained the same way: see train/ablation/__init__.py for the whole flow.
"""
from __future__ import annotations

import glob
import json
import os
from typing import Optional

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
)
from c4forge.corpus.config import build_config


class AblationError(C4forgeError, RuntimeError):
    """The ablation config is wrong or a stage failed; the message says which."""


def plain(value):
    """JSON-normalised (tuples -> lists) for comparing configs with stored manifests."""
    return json.loads(json.dumps(value))


def apply_spec_overrides(spec: dict, overrides: list[str]) -> dict:
    """``--set a.b=VALUE`` on the ablation YAML, in the one ``--set`` grammar
    (:func:`c4forge.core.settings.parse_overrides`) with VALUE read as YAML (``seeds=[0,1,2]``,
    ``train.max_tokens=200000``)."""
    import yaml

    def read_yaml(value: str):
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ValueError("not a YAML value") from exc

    try:
        return merge_settings(spec, parse_overrides(overrides, read_yaml))
    except ConfigError as exc:
        raise AblationError(str(exc)) from exc


def load_ablation(path: str, overrides: Optional[list[str]] = None) -> dict:
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
    spec.setdefault("budget", "tokens")
    if spec["budget"] not in BUDGETS:
        raise AblationError(f"{path}: budget {spec['budget']!r}: choose tokens (T5's protocol: the "
                            "same tokens for every variant) or bytes (the same bytes of text)")
    objective = spec.get("objective", spec["train"].get("objective", "causal"))
    from c4forge.train.objectives import OBJECTIVES

    if objective not in OBJECTIVES:
        raise AblationError(f"{path}: objective {objective!r}: choose from {', '.join(OBJECTIVES)}")
    spec["objective"] = objective
    spec["train"]["objective"] = objective  # every variant and seed trains the same objective
    spec.setdefault("validation_per_mille", 50)
    spec.setdefault("tokenizer", {})
    spec.setdefault("eval", {})
    base = os.path.dirname(os.path.abspath(path))
    spec["_base"] = base
    check_settings(spec)
    return spec


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
             "eval", "badwords", "validation_per_mille", "curve_validation", "_base")
VARIANT_KEYS = ("preset", "set", "inputs")
EVAL_KEYS = ("texts", "tasks", "eval_dir", "limit", "glue")
GLUE_KEYS = ("tasks", "glue_dir", "seeds", "set")


def check_settings(spec: dict) -> None:
    """Every key of the spec is one the ablation reads, and every stage's settings fit that
    stage's config (types and names), before any work starts: a misspelled key is a usage
    error (exit 2) with a did-you-mean, not hours of work with the default."""
    from c4forge.tokenizer.train import TokenizerConfig
    from c4forge.train.config import build_train_config
    from c4forge.train.finetune.run import task_configs

    check_keys(spec, SPEC_KEYS)
    for name, variant in spec["variants"].items():
        check_keys(variant or {}, VARIANT_KEYS, f"variants.{name}.")
        variant_config(spec, name)
    check_keys(spec.get("eval") or {}, EVAL_KEYS, "eval.")
    glue = (spec.get("eval") or {}).get("glue")
    if glue:
        check_keys(glue, GLUE_KEYS, "eval.glue.")
        task_configs(glue.get("tasks") or ["sst2"], glue.get("set") or {})
    tokenizer = {k: v for k, v in (spec.get("tokenizer") or {}).items() if k != "train_on"}
    apply_settings(TokenizerConfig(), tokenizer, "tokenizer.")
    try:
        build_train_config(base=json.loads(json.dumps(spec["train"])))
    except ConfigError as exc:
        raise ConfigError(f"train: {exc}") from exc


def variant_config(spec: dict, name: str):
    variant = spec["variants"][name] or {}
    settings = {"validation_per_mille": spec["validation_per_mille"]}
    if spec.get("badwords"):
        settings["badwords"] = spec["badwords"]
    return build_config(variant.get("preset", "c4"), updates=nest(variant.get("set") or {}), **settings)


def locate(spec: dict, path: str) -> str:
    """A path from the config: as given (relative to the working directory) if it exists, else
    relative to the config file's directory."""
    if os.path.isabs(path) or os.path.exists(path):
        return os.path.abspath(path)
    return os.path.join(spec["_base"], path)


def resolve_inputs(spec: dict) -> dict:
    """Expand every input glob (shared and per-variant) to absolute paths, and resolve the
    other paths of the spec; an input that matches nothing is an error naming it."""
    def expand(patterns) -> list[str]:
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
            variant["set"]["read.urls_from"] = locate(spec, variant["set"]["read.urls_from"])
    if spec.get("badwords"):
        spec["badwords"] = locate(spec, spec["badwords"])
    check_eval_paths(spec)
    return spec


def check_eval_paths(spec: dict) -> None:
    """Every file and folder the evaluation reads exists, checked before hours of training: a
    missing held-out text, task folder or GLUE folder is named with the setting that gave it."""
    from c4forge.train.objectives import LEFT_TO_RIGHT

    ev = spec.get("eval") or {}
    wanted = [(f"eval.texts[{i}]", text, os.path.isfile) for i, text in enumerate(ev.get("texts") or [])]
    if spec.get("objective", "causal") in LEFT_TO_RIGHT:  # other objectives skip the tasks
        if ev.get("eval_dir") or ev.get("tasks"):
            wanted.append(("eval.eval_dir", ev.get("eval_dir") or "", os.path.isdir))
    if ev.get("glue"):
        wanted.append(("eval.glue.glue_dir", (ev["glue"] or {}).get("glue_dir") or "", os.path.isdir))
    for setting, path, exists in wanted:
        if not path:
            raise AblationError(f"{setting} is not set")
        if not exists(locate(spec, path)):
            kind = "file" if exists is os.path.isfile else "folder"
            raise AblationError(f"{setting}: {path} is not a {kind} (paths are relative to the working "
                                f"directory or to the ablation config)")
