"""Gopher's quality rules (Rae et al. 2021, MassiveWeb; datatrove 0.10's ``GopherQualityFilter``,
exact with the same settings; namespace ``gopher-quality``): document length in words, mean word
length, hash and ellipsis symbols per word, bullet and ellipsis lines, words with a letter, stop
words. Each rule is its own reason (datatrove's names); None switches a rule off, as there.
Words are datatrove's (corpus/text/words.py); tests/test_quality.py checks every verdict against
datatrove itself on every real page. Where datatrove would divide by zero (a text of no words
with ``min_doc_words`` off) this returns a verdict instead (docs/corpus.md)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from c4forge.core.settings import POSITIVE, POSITIVE_INT, SHARE, ConfigError, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.text.page_words import PageWords, page_words
from c4forge.corpus.text.words import english_words

GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


@dataclasses.dataclass(frozen=True)
class GopherQuality:
    """``gopher-quality`` in the corpus config: datatrove's ``GopherQualityFilter`` defaults."""

    on: bool = False
    min_doc_words: Optional[int] = setting(50, POSITIVE_INT)
    max_doc_words: Optional[int] = setting(100_000, POSITIVE_INT)
    min_avg_word_length: Optional[float] = setting(3, POSITIVE)
    max_avg_word_length: Optional[float] = setting(10, POSITIVE)
    max_symbol_word_ratio: Optional[float] = setting(0.1, POSITIVE)
    max_bullet_lines_ratio: Optional[float] = setting(0.9, SHARE)
    max_ellipsis_lines_ratio: Optional[float] = setting(0.3, SHARE)
    # datatrove's name: the least share of words with a letter
    max_non_alpha_words_ratio: Optional[float] = setting(0.8, SHARE)
    min_stop_words: Optional[int] = setting(2, POSITIVE_INT)
    stop_words: tuple[str, ...] = GOPHER_STOP_WORDS


def check(settings: GopherQuality, config: Any) -> None:
    """A least value above its greatest would drop every page."""
    for low, high in (("min_doc_words", "max_doc_words"), ("min_avg_word_length", "max_avg_word_length")):
        least, most = getattr(settings, low), getattr(settings, high)
        if least is not None and most is not None and least > most:
            raise ConfigError(f"gopher-quality.{low}={least} > gopher-quality.{high}={most}: "
                              "no page could pass")
    if settings.min_stop_words and len(set(settings.stop_words)) < settings.min_stop_words:
        raise ConfigError(f"gopher-quality.min_stop_words={settings.min_stop_words} but stop_words holds "
                          f"{len(set(settings.stop_words))}: no page could pass")


def gopher_quality(settings: GopherQuality, page: Document) -> Verdict:
    reason = gopher_quality_reason(page.text, settings)
    return keep(page) if reason is None else drop(reason)


def gopher_quality_reason(text: str, rules: GopherQuality) -> Optional[str]:
    """Why ``GopherQualityFilter`` drops ``text``, or None (kept); its tests in its order."""
    page = page_words(text)
    n_words = page.count
    n_non_symbol = int(page.non_symbol.sum())  # words with a character outside the punctuation
    if rules.min_doc_words and n_non_symbol < rules.min_doc_words:
        return "gopher_short_doc"
    if rules.max_doc_words and n_non_symbol > rules.max_doc_words:
        return "gopher_long_doc"
    if not n_words:  # datatrove divides by zero here (only reached with min_doc_words off)
        return "gopher_short_doc"
    if n_non_symbol:  # datatrove: np.mean of nothing is nan, and nan fails no comparison
        mean_length = int(page.lengths[page.non_symbol].sum()) / n_non_symbol
        if rules.min_avg_word_length and mean_length < rules.min_avg_word_length:
            return "gopher_below_avg_threshold"
        if rules.max_avg_word_length and mean_length > rules.max_avg_word_length:
            return "gopher_above_avg_threshold"
    return _symbol_and_line_reason(text, page, rules)


def _symbol_and_line_reason(text: str, page: PageWords, rules: GopherQuality) -> Optional[str]:
    n_words = page.count
    ratio = rules.max_symbol_word_ratio
    if ratio and text.count("#") / n_words > ratio:
        return "gopher_too_many_hashes"
    if ratio and (text.count("...") + text.count("…")) / n_words > ratio:
        return "gopher_too_many_ellipsis"
    lines = text.splitlines()
    if rules.max_bullet_lines_ratio and sum(
            s.lstrip().startswith(("•", "-")) for s in lines) / len(lines) \
            > rules.max_bullet_lines_ratio:
        return "gopher_too_many_bullets"
    if rules.max_ellipsis_lines_ratio and sum(
            s.rstrip().endswith(("...", "…")) for s in lines) / len(lines) \
            > rules.max_ellipsis_lines_ratio:
        return "gopher_too_many_end_ellipsis"
    if rules.max_non_alpha_words_ratio and int(page.alpha.sum()) / n_words < rules.max_non_alpha_words_ratio:
        return "gopher_below_alpha_threshold"
    if rules.min_stop_words and page.present(rules.stop_words) < rules.min_stop_words:
        return "gopher_enough_stop_words"  # datatrove's name for too few stop words
    return None


STEP = page_step("gopher-quality", gopher_quality, "[Gopher quality]", settings=GopherQuality,
                 check=check, flow="gopher quality", preflight=english_words)
