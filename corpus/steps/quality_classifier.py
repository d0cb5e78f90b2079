"""A fastText quality classifier (DCLM's place for it: after the rules, before dedup's last step;
namespace ``quality-classifier``; corpus/classifier.py): pages scoring below ``threshold`` are
dropped and every kept page's score goes to the shards' ``quality_score`` column."""
from __future__ import annotations

import dataclasses
import os
from typing import Any

from c4forge.core.io import shown_path
from c4forge.core.settings import PATH, UNIT_INTERVAL, ConfigError, setting
from c4forge.corpus.classifier import ClassifierFilter
from c4forge.corpus.document import Document
from c4forge.corpus.langid import LangidError, check_model_file, model_labels
from c4forge.corpus.step import page_step
from c4forge.corpus.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class QualityClassifier:
    """``quality-classifier`` in the corpus config. model: a fastText supervised model file (a
    local path); label: the positive class without ``__label__`` (DCLM's ``hq``); threshold:
    pages scoring below it are dropped (0 keeps every page and only records the score)."""

    on: bool = False
    model: str = setting("", path=PATH)
    label: str = "hq"
    threshold: float = setting(0.0, UNIT_INTERVAL)


def check(settings: QualityClassifier, config: Any) -> None:
    if not settings.on:
        return
    if not settings.model:
        raise ConfigError("quality-classifier.model: name the fastText model file "
                          "(e.g. DCLM's openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train.bin)")
    if not os.path.isfile(settings.model):
        raise ConfigError(f"quality-classifier.model: no such file {shown_path(settings.model)}")
    try:
        check_model_file(settings.model)
    except LangidError as exc:
        raise ConfigError(f"quality-classifier.model: {exc}") from None
    labels = model_labels(settings.model)
    if labels and settings.label not in labels:
        raise ConfigError(f"quality-classifier.label={settings.label!r} is not a label of "
                          f"{shown_path(settings.model)} (it gives {', '.join(sorted(labels))})")


def load(settings: QualityClassifier, config: Any) -> ClassifierFilter:
    return ClassifierFilter(settings.model, settings.label, settings.threshold)


def classify(model: ClassifierFilter, page: Document) -> Verdict:
    return model(page)


STEP = page_step("quality-classifier", classify, "[quality classifier]", settings=QualityClassifier,
                 load=load, check=check, flow="classifier ok")
