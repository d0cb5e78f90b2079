"""The per-page rules of the chains bound to one config (``ChainRules``), each returning a
verdict (corpus/verdict.py), and the chain's counter namespaces. corpus/chain.py declares the
steps and their order over these; the step loop (corpus/steploop.py) runs them in both runners,
so a rule behaves, and counts, the same everywhere.

Counter namespaces are tfds': ``split-wet-file``, ``too-long-filter``, ``duplicate-url-filter``,
``paragraph-filter``, ``clean-page``, ``dedupe-lines``, ``language-filter`` (tfds:
``english-filter``, which used langdetect), ``badwords-filter`` and ``badwords-filter-<lang>``.
"""
from __future__ import annotations

from typing import Optional

from c4forge.corpus import clean as clean_rules
from c4forge.corpus import langid, quality
from c4forge.corpus.badwords import BadwordsFilter, languages_for, load_badwords
from c4forge.corpus.classifier import ClassifierFilter
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.decontaminate import EvalIndex, decontaminate
from c4forge.corpus.document import Document
from c4forge.corpus.langid import LanguageFilter
from c4forge.corpus.pii import format_pii
from c4forge.corpus.url_filter import UrlBlocklist, load_lists
from c4forge.corpus.verdict import Verdict, drop, keep

NS_READ = "split-wet-file"
NS_LENGTH = "too-long-filter"
NS_URL = "duplicate-url-filter"
NS_PARAGRAPH = "paragraph-filter"
NS_CLEAN = "clean-page"
NS_LINES = "dedupe-lines"
NS_LANG = "language-filter"
NS_BADWORDS = "badwords-filter"
NS_EXACT = "exact-dedup"
NS_URL_FILTER = "url-filter"
NS_GOPHER_REPETITION = "gopher-repetition"
NS_GOPHER_QUALITY = "gopher-quality"
NS_C4_QUALITY = "c4-quality"
NS_FINEWEB_QUALITY = "fineweb-quality"
NS_PII = "pii"
NS_DECONTAMINATE = "decontaminate"
NS_CLASSIFIER = "quality-classifier"
NS_NEAR = "near-dedup"


def text_bytes(page: Document) -> int:
    return page.text_size()


class ChainRules:
    """The chain's rules bound to one config: one method per page step, each returning a
    verdict (the chain's page functions call them; the step loop counts). Heavy state (LID
    model, bad-word automata, URL block lists) is built lazily, so a Beam worker builds it once
    in ``setup`` and pickling the object stays cheap."""

    def __init__(self, config: CorpusConfig) -> None:
        self.config = config
        self._lid: Optional[LanguageFilter] = None
        self._badwords: Optional[BadwordsFilter] = None
        self._urls: Optional[UrlBlocklist] = None
        self._eval: Optional[EvalIndex] = None
        self._classifier: Optional[ClassifierFilter] = None

    def __getstate__(self):
        return {"config": self.config, "_lid": None, "_badwords": None, "_urls": None, "_eval": None,
                "_classifier": None}

    def setup(self) -> ChainRules:
        """Load the LID model and bad-word lists now (fail early, once per process)."""
        _ = self.language_filter  # the properties load on first use
        if self.config.badwords_fraction > 0:
            _ = self.badwords_filter
        if self.config.url_filter.on:
            _ = self.url_blocklist
        if self.config.decontaminate.on:
            _ = self.eval_index
        if self.config.quality_classifier.on:
            _ = self.classifier
        return self

    @property
    def classifier(self) -> ClassifierFilter:
        """The quality classifier's model, loaded once per process."""
        if self._classifier is None:
            self._classifier = ClassifierFilter(self.config.quality_classifier)
        return self._classifier

    @property
    def eval_index(self) -> EvalIndex:
        """Every n-gram of the evaluation sets, built once per process."""
        if self._eval is None:
            self._eval = EvalIndex.build(self.config.decontaminate)
        return self._eval

    @property
    def url_blocklist(self) -> UrlBlocklist:
        if self._urls is None:
            settings = self.config.url_filter
            self._urls = UrlBlocklist(load_lists(settings), settings.soft_word_threshold)
        return self._urls

    @property
    def language_filter(self) -> LanguageFilter:
        if self._lid is None:
            self._lid = LanguageFilter(self.config.languages or None, self.config.lid_threshold,
                                       self.config.lid_model)
            langid.preload(self.config.lid_model)
        return self._lid

    @property
    def badwords_filter(self) -> BadwordsFilter:
        if self._badwords is None:
            source = self.config.badwords
            langs = languages_for(source, self.config.languages)
            self._badwords = BadwordsFilter(load_badwords(source, langs),
                                            self.config.badwords_fraction, f"{NS_BADWORDS}-")
        return self._badwords

    def length(self, page: Document) -> Verdict:
        return keep(page) if clean_rules.is_valid_length(page, self.config.max_page_chars) else drop()

    def paragraphs(self, page: Document) -> Verdict:
        config = self.config
        ok = clean_rules.paragraph_filter(page, config.min_paragraphs, config.min_paragraph_len)
        return keep(page) if ok else drop()

    def clean(self, page: Document) -> Verdict:
        return clean_rules.clean_page(page, self.config.rules)

    def language(self, page: Document) -> Verdict:
        return self.language_filter(page)

    def badwords(self, page: Document) -> Verdict:
        return self.badwords_filter(page)

    def url_filter(self, page: Document) -> Verdict:
        return self.url_blocklist(page)

    def gopher_repetition(self, page: Document) -> Verdict:
        return quality.gopher_repetition(page, self.config.gopher_repetition)

    def gopher_quality(self, page: Document) -> Verdict:
        return quality.gopher_quality(page, self.config.gopher_quality)

    def c4_quality(self, page: Document) -> Verdict:
        return quality.c4_quality(page, self.config.c4_quality)

    def fineweb_quality(self, page: Document) -> Verdict:
        return quality.fineweb_quality(page, self.config.fineweb_quality)

    def pii(self, page: Document) -> Verdict:
        return format_pii(page, self.config.pii)

    def quality_classifier(self, page: Document) -> Verdict:
        return self.classifier(page)

    def decontaminate(self, page: Document) -> Verdict:
        return decontaminate(page, self.eval_index, self.config.decontaminate.action)
