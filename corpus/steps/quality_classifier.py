"""A fastText quality classifier (DCLM's place for it: after the rules, before dedup's last step;
namespace ``quality-classifier``;: pages scoring below ``threshold`` are
dropped and every kept page's score goes to the shards' ``quality_score`` column.

A model-based quality filter: a fastText classifier scores each page, pages under a threshold
are dropped, and the score of every kept page goes to the shards' ``quality_score`` column, so a
user can keep a top fraction afterwards (DCLM kept its top 10%; docs/corpus.md shows it in
duckdb).

The model is any supervised fastText file (``.bin`` or quantised ``.ftz``); the score is the
probability of the positive label, as DCLM's published classifier (Hugging Face
``mlfoundations/fasttext-oh-eli5``, labels ``__label__hq`` / ``__label__cc``) is
read: for a two-label model, P(hq), which is DCLM's ``1 - P(cc)`` when ``cc`` ranks first. The
page goes to fastText as datatrove's ``FastTextClassifierFilter`` sends a whole document: text
stripped, newlines replaced (here by a space, as DCLM joins lines; fastText reads one line).
The project's own small classifier (tests/data/quality-classifier.ftz) is trained by
scripts/train_quality_classifier.py."""
from __future__ import annotations

import dataclasses
import os
from typing import Any

from c4forge.core.errors import C4forgeError
from c4forge.core.io import shown_path
from c4forge.core.settings import PATH, UNIT_INTERVAL, ConfigError, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.langid.lid176 import LangidError, check_model_file, load_model, model_labels


class ClassifierError(C4forgeError, ValueError):
    """A classifier setting that cannot work: no model, a label the model does not give."""


def model_text(text: str) -> str:
    """What fastText is given for a page (and was trained on): one line."""
    return text.strip().replace("\n", " ")


class ClassifierFilter:
    """Score pages with the model; keep those scoring >= threshold, with ``quality_score`` set.
    Counted (namespace ``quality-classifier``): ``passed`` and ``filtered:low_score``."""

    def __init__(self, model: str, label: str = "hq", threshold: float = 0.0) -> None:
        self.model = load_model(model)
        self.positive = f"__label__{label}"
        self.threshold = threshold

    def score(self, text: str) -> float:
        """P(positive label) of ``text``; 0 where the model gives no label (empty text)."""
        labels, probs = self.model.predict(model_text(text), k=-1)
        for label, prob in zip(labels, probs):
            if label == self.positive:
                return min(1.0, float(prob))
        return 0.0

    def __call__(self, page: Document) -> Verdict:
        score = self.score(page.text)
        if score < self.threshold:
            return drop("low_score")
        return keep(page.replace(quality_score=score))


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
