"""The per-page rules of the C4 chain bound to one config (``PageSteps``), and the chain's
counter namespaces. corpus/chain.py declares the steps and their order over these; the
single-process runner and the Beam pipeline both call them, so a rule behaves the same
everywhere.

Counter namespaces are tfds': ``split-wet-file``, ``too-long-filter``, ``duplicate-url-filter``,
``paragraph-filter``, ``clean-page``, ``dedupe-lines``, ``language-filter`` (tfds:
``english-filter``, which used langdetect), ``badwords-filter`` and ``badwords-filter-<lang>``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from c4forge.core.counters import IncFn, null_inc
from c4forge.corpus import clean as clean_rules
from c4forge.corpus import langid
from c4forge.corpus.badwords import BadwordsFilter, languages_for, load_badwords
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.langid import LanguageFilter

NS_READ = "split-wet-file"
NS_LENGTH = "too-long-filter"
NS_URL = "duplicate-url-filter"
NS_PARAGRAPH = "paragraph-filter"
NS_CLEAN = "clean-page"
NS_LINES = "dedupe-lines"
NS_LANG = "language-filter"
NS_BADWORDS = "badwords-filter"
NS_NEAR = "near-dedup"


def text_bytes(page: Document) -> int:
    return page.text_size()


def count_bytes(inc: IncFn, before: Document, after: Optional[Document]) -> None:
    """``bytes-in``/``bytes-out`` of a step, so reports can say how much text each step removed."""
    inc("bytes-in", text_bytes(before))
    if after is not None:
        inc("bytes-out", text_bytes(after))


class PageSteps:
    """Config-bound page steps. Heavy state (LID model, bad-word regexes) is built lazily, so a
    Beam worker builds it once in ``setup`` and pickling the object stays cheap."""

    def __init__(self, config: CorpusConfig) -> None:
        self.config = config
        self._lid: Optional[LanguageFilter] = None
        self._badwords: Optional[BadwordsFilter] = None

    def __getstate__(self):
        return {"config": self.config, "_lid": None, "_badwords": None}

    def setup(self) -> PageSteps:
        """Load the LID model and bad-word lists now (fail early, once per process)."""
        _ = self.language_filter  # the properties load on first use
        if self.config.badwords_fraction > 0:
            _ = self.badwords_filter
        return self

    @property
    def language_filter(self) -> LanguageFilter:
        if self._lid is None:
            self._lid = LanguageFilter(self.config.languages or None, self.config.lid_threshold,
                                       self.config.lid_model)
            langid.load_model(self.config.lid_model)
        return self._lid

    @property
    def badwords_filter(self) -> BadwordsFilter:
        if self._badwords is None:
            source = self.config.badwords
            langs = languages_for(source, self.config.languages)
            self._badwords = BadwordsFilter(load_badwords(source, langs),
                                            self.config.badwords_fraction)
        return self._badwords

    def length_ok(self, page: Document, inc: IncFn = null_inc) -> bool:
        ok = clean_rules.is_valid_length(page, self.config.max_page_chars, inc)
        count_bytes(inc, page, page if ok else None)
        return ok

    def paragraphs_ok(self, page: Document, inc: IncFn = null_inc) -> bool:
        if not self.config.paragraph_filter:
            return True
        ok = clean_rules.paragraph_filter(page, self.config.min_paragraphs,
                                          self.config.min_paragraph_len, inc)
        count_bytes(inc, page, page if ok else None)
        return ok

    def clean(self, page: Document, inc: IncFn = null_inc) -> Optional[Document]:
        if not self.config.clean:
            return page
        cleaned = clean_rules.clean_page(page, self.config.rules, inc)
        count_bytes(inc, page, cleaned)
        return cleaned

    def identify_language(self, page: Document, inc: IncFn = null_inc) -> Optional[Document]:
        result = self.language_filter(page, inc)
        count_bytes(inc, page, result)
        return result

    def badwords_ok(self, page: Document, inc: IncFn = null_inc,
                    inc_for: Optional[Callable[[str], IncFn]] = None) -> bool:
        if self.config.badwords_fraction <= 0:
            return True
        lang = (page.language or "").split("-")[0]
        inc_lang = inc_for(f"{NS_BADWORDS}-{lang}") if inc_for else None
        if inc_lang is not None:
            # BadwordsFilter names per-language counters "<lang>/<name>"; route them.
            per_language = inc_lang

            def inc_lang(name: str, amount: int = 1) -> None:
                per_language(name.split("/", 1)[1], amount)
        ok = self.badwords_filter(page, inc, inc_lang)
        count_bytes(inc, page, page if ok else None)
        return ok
