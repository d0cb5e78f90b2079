"""tfds' bad-words filter (namespace ``badwords-filter``): a page holding a word of the LDNOOBW
list of its language is dropped (with ``fraction`` < 1, that share of such pages: mC4's soft
filter). The lists of the languages that language ID keeps are loaded (corpus/badwords.py)."""
from __future__ import annotations

import dataclasses
from typing import Any

from c4forge.core.settings import PATH, UNIT_INTERVAL, setting
from c4forge.corpus.badwords import DEFAULT_SOURCE, BadwordsFilter, languages_for, load_badwords
from c4forge.corpus.document import Document
from c4forge.corpus.step import page_step
from c4forge.corpus.verdict import Verdict

NAMESPACE = "badwords-filter"


@dataclasses.dataclass(frozen=True)
class BadWords:
    """``bad-words`` in the corpus config. fraction: share of pages with a bad word that are
    dropped (tfds: 1.0; mC4: 0.999); lists: a directory of per-language lists, a URL template
    with {lang}, or ``ldnoobw-c4`` (the commits tfds pins, downloaded once and cached)."""

    on: bool = True
    fraction: float = setting(1.0, UNIT_INTERVAL)
    lists: str = setting(DEFAULT_SOURCE, path=PATH)


def switched_on(settings: BadWords) -> bool:
    """on and fraction > 0"""
    return settings.on and settings.fraction > 0


def load(settings: BadWords, config: Any) -> BadwordsFilter:
    """The lists of the languages language ID keeps (every list of a local folder when it keeps
    every language), as Aho-Corasick automata."""
    languages = languages_for(settings.lists, config.settings_of("language-id").languages)
    return BadwordsFilter(load_badwords(settings.lists, languages), settings.fraction, f"{NAMESPACE}-")


def bad_words(words: BadwordsFilter, page: Document) -> Verdict:
    return words(page)


STEP = page_step("bad-words", bad_words, "bad words", namespace=NAMESPACE, settings=BadWords,
                 load=load, enabled=switched_on, flow="bad words", passed=("passed", "soft-passed"))
