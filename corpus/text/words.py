"""Words and punctuation as datatrove 0.10 counts them (``datatrove.utils.text``: its
``PUNCTUATION``, ``TERMINAL_PUNCTUATION`` and ``split_into_words``), for the Gopher and FineWeb
rule sets (corpus/steps/), whose thresholds are fractions of these counts. The sets are
datatrove's (Apache-2.0), copied character for character; the English word tokenizer is the one
datatrove assigns English: spaCy's blank ``en`` tokenizer, its tokens stripped and the empty ones
left out, computed by corpus/text/en_words.py without spaCy Docs, from spaCy's rules as stored with
the package (corpus/data/spacy-en-tokenizer.json), so splitting words does not import spaCy
(``C4FORGE_WORDS=spacy``: by spaCy itself, the reference, ``spacy_words``); sentences are
spaCy's sentencizer's. Tests compare
the words with spaCy's (tests/test_en_words.py) and every verdict with datatrove itself on
every real page (tests/test_quality.py).
"""
from __future__ import annotations

import functools
import os
import re
import sys

from c4forge.core.errors import C4forgeError
from c4forge.core.io import shown_path
from c4forge.corpus.text import en_words
from c4forge.corpus.text.en_words import (
    IS_ALPHA,
    EnglishWords,
    TokenizerRules,
    installed_spacy,
    load_rules,
    rules_of,
    save_rules,
    sentences_among,
)

PUNCTUATION = "!/—”:％１〈&(、━\x5c【#%「」，】；+^]~“《„';’{|∶´[=-`*．（–？！：$～«〉,><》)?）。…@_.\x22}►»\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
TERMINAL_PUNCTUATION = frozenset("!.?։؝؞؟۔܀܁܂߹࠷࠹࠽࠾।॥၊။።፧፨᙮᜵᜶។៕៖៙៚᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᭽᭾᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼⹓⹔。꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡\U00010a56\U00010a57\U00010f55\U00010f56\U00010f57\U00010f58\U00010f59\U00010f86\U00010f87\U00010f88\U00010f89\U00011047\U00011048\U000110be\U000110bf\U000110c0\U000110c1\U00011141\U00011142\U00011143\U000111c5\U000111c6\U000111cd\U000111de\U000111df\U00011238\U00011239\U0001123b\U0001123c\U000112a9\U0001144b\U0001144c\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf\U000115d0\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U00011641\U00011642\U0001173c\U0001173d\U0001173e\U00011944\U00011946\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42\U00011ef7\U00011ef8\U00011f43\U00011f44\U00016a6e\U00016a6f\U00016af5\U00016b37\U00016b38\U00016b44\U00016e98\U0001bc9f\U0001da88")
PUNCTUATION_SET = frozenset(PUNCTUATION) | TERMINAL_PUNCTUATION


@functools.cache
def _english():
    """spaCy's blank English pipeline with a sentencizer (datatrove's), once per process."""
    import spacy  # lazy: a second to import: only where a rule that counts words runs

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def _tokens(nlp, text: str):
    try:
        return nlp.make_doc(text)
    except Exception:  # datatrove's workaround: this string breaks spaCy's tokenizer
        if "IS_ALPHA" not in text:
            raise
        return nlp.make_doc(text.replace("IS_ALPHA", ""))


class _Zone:
    """spaCy's memory zone, renewed every ``PAGES_PER_ZONE`` texts. datatrove opens one per text
    (spaCy would otherwise keep every string of a crawl in its vocabulary); one per 256 texts
    bounds memory the same way while repeated words reuse spaCy's tokenizer cache within the
    zone: measured 1.9x faster tokenizing the shared crawl, the same tokens (the cache maps a
    chunk of text to its tokens, whatever else is cached)."""

    PAGES_PER_ZONE = 256

    def __init__(self) -> None:
        self.zone = None
        self.used = 0

    def enter(self, nlp) -> None:
        if self.zone is not None and self.used < self.PAGES_PER_ZONE:
            self.used += 1
            return
        if self.zone is not None:
            self.zone.__exit__(None, None, None)
        self.zone = nlp.memory_zone()
        self.zone.__enter__()
        self.used = 1


_ZONE = _Zone()


WORDS_VARIABLE = "C4FORGE_WORDS"  # "spacy": split words with spaCy itself (the reference)


class WordsError(C4forgeError, RuntimeError):
    """The words computed without spaCy Docs differ from spaCy's here."""


SELF_CHECK_TEXTS = (
    "Hello, world!  It's 3.5 km.\n\nOK", "Don't stop (believing)... said Mr. Smith at 10:30 a.m.",
    "See https://www.example.com/a?b=c or mail foo@bar.com :-) <3", "state-of-the-art 1,000 $5 5% U.S.",
    "“Quoted,” she said—then left; y'all gonna?", "日本語のテキスト。 Привет, мир! 😀👍🏽",
    "(:)) ':-)' \"a.m.\" --- ... !!! ???", "e-mail: x@y.z\tTabs\u00a0and\u2009spaces\r\n",
)


@functools.cache
def english_words() -> EnglishWords:
    """The word splitter, once per process, checked (:func:`self_check`) before its first page:
    from the rules stored with the package (corpus/data/spacy-en-tokenizer.json, spaCy 3.8.18's)
    without importing spaCy, checked against the words spaCy gave when they were stored; where
    another spaCy is installed, from that spaCy's live rules, checked against it."""
    try:
        stored = load_rules()
        splitter = EnglishWords(stored if installed_spacy() in (stored.spacy, None) else spacy_rules())
    except (OSError, ValueError, KeyError, TypeError, AttributeError, re.error) as exc:
        shown = shown_path(str(en_words.RULES_FILE))
        raise WordsError(f"the word splitter's rules file {shown} is damaged ({type(exc).__name__}: "
                         f"{str(exc)[:120]}); reinstall c4forge, or rewrite it with python -m "
                         f"c4forge.corpus.text.words --write-rules where spaCy is installed") from None
    _check(splitter)
    return splitter


def spacy_rules() -> TokenizerRules:
    """The installed spaCy's rules and its words for the self-check texts (what
    ``python -m c4forge.corpus.text.words --write-rules`` stores)."""
    nlp = _english()
    return rules_of(nlp.tokenizer, {text: spacy_words(text) for text in SELF_CHECK_TEXTS},
                    nlp.get_pipe("sentencizer").punct_chars)


def _check(splitter: EnglishWords) -> int:
    wrong = [text for text, words in splitter.checks.items() if splitter.words(text) != words]
    if wrong or len(splitter.checks) < len(SELF_CHECK_TEXTS):
        raise WordsError(f"the word splitter (corpus/text/en_words.py) disagrees with spaCy {splitter.spacy} on "
                         f"{(wrong or ['its self-check texts'])[0]!r}; set {WORDS_VARIABLE}=spacy and report it")
    return len(splitter.checks)


def self_check() -> int:
    """The splitter's words against spaCy's on fixed texts; the count checked, or WordsError."""
    return _check(english_words())


@functools.lru_cache(maxsize=4)
def split_into_words(text: str) -> tuple[str, ...]:
    """datatrove's ``split_into_words(text, "eng")``: spaCy's English tokens, stripped, the
    empty ones (whitespace tokens) left out, as corpus/text/en_words.py computes them. The last few
    texts' words are kept, so the rules that follow one another on an unchanged page (Gopher
    repetition, then quality) split it once (datatrove keeps five the same way)."""
    if by_spacy(text):
        return spacy_words(text)
    return english_words().words(text)


def by_spacy(text: str) -> bool:
    """spaCy itself where asked for (``C4FORGE_WORDS=spacy``) or where it raises and datatrove
    works around it (``IS_ALPHA``)."""
    return os.environ.get(WORDS_VARIABLE) == "spacy" or IS_ALPHA in text


def spacy_words(text: str) -> tuple[str, ...]:
    """:func:`split_into_words` by spaCy itself, as datatrove calls it (the reference)."""
    nlp = _english()
    nlp.max_length = max(nlp.max_length, len(text) + 10)
    _ZONE.enter(nlp)
    return tuple(token for token in (t.text.strip() for t in _tokens(nlp, text)) if token)


def count_sentences(text: str) -> int:
    """How many parts datatrove's ``split_into_sentences(text, "eng")`` gives: the sentences
    spaCy's sentencizer finds (one for a text without any), over the splitter's tokens
    (corpus/text/en_words.py ``sentences_among``); by spaCy itself under ``C4FORGE_WORDS=spacy``."""
    if by_spacy(text):
        return spacy_sentences(text)
    splitter = english_words()
    return max(1, sentences_among(splitter.tokens(text), splitter.sentence_ends))


def spacy_sentences(text: str) -> int:
    """:func:`count_sentences` by spaCy's sentencizer itself (the reference)."""
    nlp = _english()
    nlp.max_length = max(nlp.max_length, len(text) + 10)
    _ZONE.enter(nlp)
    doc = nlp.get_pipe("sentencizer")(_tokens(nlp, text))
    return max(1, sum(1 for _ in doc.sents))


if __name__ == "__main__":  # python -m c4forge.corpus.text.words --write-rules: after a spaCy upgrade
    if sys.argv[1:] != ["--write-rules"]:
        sys.exit("usage: python -m c4forge.corpus.text.words --write-rules")
    save_rules(spacy_rules())
