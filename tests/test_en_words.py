"""datatrove's English words without spaCy Docs (corpus/text/en_words.py) are spaCy's, token for token:
on every real page of the shared crawl and crawl-extra, on held-out clean text (WikiText-2 and
WCXB's human-reviewed main text), and on generated strings biased to the tokenizer's edges
(punctuation runs, URLs, e-mails, emoticons, contractions, hyphens, numbers with separators and
units, whitespace of every kind, every script the crawl holds). spaCy stays the reference
(``words.spacy_words``)."""
from __future__ import annotations

import gzip
import json
import random

import pytest

from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.text import words
from c4forge.corpus.text.page_words import page_words
from tests.conftest import shared_path

PIECES = [
    "'", "’", "‘", '"', "“", "”", "„", "«", "»", "(", ")", "[", "]", "{", "}", "<", ">", ".", "..", "...",
    "…", ",", ";", ":", "!", "?", "!!", "?!", "-", "--", "—", "–", "/", "\\", "@", "#", "$", "%", "&", "*",
    "+", "=", "^", "_", "`", "~", "|", "'s", "'S", "n't", "N'T", "'ll", "'re", "'ve", "'d", "'m", "s'",
    ":)", ":-)", ";)", ";-)", "<3", ":(", ":-(", "=)", ":P", ":p", "xD", "^_^", "-_-", ":/", "(:", "):",
    "a.m.", "p.m.", "Mr.", "Mrs.", "Dr.", "U.S.", "e.g.", "i.e.", "etc.", "vs.", "Jan.", "Feb.", "No.",
    "http://example.com", "https://www.example.com/a?b=c&d=e#f", "www.foo.org", "foo.bar.com/x",
    "ftp://x.y/z", "foo@bar.com", "first.last+tag@mail.example.co.uk", "1,000", "1.000,50", "3.14", "-5",
    "+7", "1st", "2nd", "3rd", "10th", "10km", "5kg", "3m", "100mph", "5%", "$5", "£10", "€20", "¥3", "°C",
    "10°", "10:30", "2024-05-01", "1/2", "½", "x²", "7x", "24/7", "A4", "B-52", "don't", "can't", "won't",
    "cannot", "gonna", "gotta", "Im", "dont", "y'all", "ma'am", "o'clock", "rock'n'roll", "'cause", "'em",
    "e-mail", "co-operate", "well-known", "state-of-the-art", "¿", "¡", "😀", "👍🏽", "🇺🇸", "👨‍👩‍👧", "™", "©",
    "®", "§", "†", "•", "·", "°", "±", "×", "÷", "日本語", "中文。", "東京、", "한국어", "العربية", "עברית",
    "हिन्दी", "ไทย", "ελληνικά", "Привет", "Straße", "İstanbul", "naïve", "café", "Ω", "µ", "IS_ALPHA",
    "the", "The", "THE", "dog", "Dog", "a", "I", "it", "x", "abc123", "123", "12", "US", "OK", "ok",
]
SEPARATORS = ["", "", "", " ", " ", " ", "  ", "\n", "\t", "\u00a0", " \n ", "\u2009", "\r\n", "\u200b"]


def edge_strings(count: int, seed: int = 0):
    """``count`` strings of 1-9 pieces joined by edge-biased separators (``make fuzz`` runs
    the same generator at 1M)."""
    rng = random.Random(seed)
    for _ in range(count):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 9))]
        yield "".join(p + rng.choice(SEPARATORS) for p in parts).rstrip(rng.choice(["", " ", "\n"]) or None)


def _differences(texts) -> list:
    """Texts whose words differ from spaCy's: the splitter's, or those the rules read from the
    page's chunks (corpus/text/page_words.py, corpus/text/chunk_table.py)."""
    return [(text, words.split_into_words(text), words.spacy_words(text)) for text in texts
            if not words.split_into_words(text) == page_words.__wrapped__(text).words() == words.spacy_words(text)]


def test_generated_edge_strings():
    found = _differences(edge_strings(20_000))
    assert not found, f"{len(found)} strings differ, e.g. {found[:3]}"


@pytest.mark.slow
def test_a_million_generated_edge_strings():
    found = _differences(edge_strings(1_000_000, seed=1))
    assert not found, f"{len(found)} strings differ, e.g. {found[:3]}"


def test_a_chunk_of_letters_only_is_one_token_in_spacy():
    """The splitter's shortcut (corpus/text/en_words.py, step 2), asked of spaCy itself: letters of
    every script, 1-12 of them, alone and two by two."""
    rng = random.Random(3)
    letters = [chr(c) for c in range(0x30000) if chr(c).isalpha()]
    rules = words.english_words().rules
    for _ in range(20_000):
        pool = letters if rng.random() < 0.5 else "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        chunk = "".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))
        pair = f"{chunk} {chunk[::-1]}"
        assert chunk in rules or words.spacy_words(chunk) == (chunk,), chunk
        assert chunk in rules or chunk[::-1] in rules or words.spacy_words(pair) == (chunk, chunk[::-1]), pair


def test_letters_with_one_mark_split_as_spacy_splits_them():
    """The splitter's shortcut for ``word,`` ``(word`` ``word.`` (corpus/text/en_words.py,
    ``_letters``), asked of spaCy itself: letters of every script and special cases' keys."""
    from c4forge.corpus.text.en_words import ALWAYS_PREFIX, ALWAYS_SUFFIX

    rng = random.Random(5)
    letters = [chr(c) for c in range(0x30000) if chr(c).isalpha()]
    splitter = words.english_words()
    keys = [key for key in splitter.rules if key.isalpha()]
    checked = 0
    for _ in range(3000):
        pool = letters if rng.random() < 0.4 else "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        stem = rng.choice(keys) if rng.random() < 0.2 else "".join(rng.choice(pool) for _ in range(rng.randint(1, 10)))
        ascii_words = [rng.choice(keys) if rng.random() < 0.2 else "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(rng.randint(1, 8)))
            for _ in range(rng.randint(2, 4))]
        for chunk in [stem + mark for mark in (*ALWAYS_SUFFIX, ".")] + [mark + stem for mark in ALWAYS_PREFIX] + [
                "-".join(ascii_words), f"{stem}-{stem}"]:
            shortcut = splitter._letters(chunk)
            if chunk in splitter.rules or shortcut is None:
                continue
            assert words.spacy_words(chunk) == shortcut, chunk
            checked += 1
    assert checked > 40_000


def real_texts():
    for path in sorted([*shared_path("crawl").glob("*.wet.gz"), *shared_path("crawl-extra").glob("*.wet.gz")]):
        for page in iter_file_documents(str(path)):
            yield page.text
    yield from shared_path("clean", "wikitext2-test.raw").read_text(encoding="utf-8").split("\n\n")
    with gzip.open(shared_path("extraction", "wcxb-dev.jsonl.gz"), "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)["main_content"]


def test_every_real_page_and_held_out_text():
    texts = list(real_texts())
    assert len(texts) > 6500  # 5,351 crawl pages, WikiText-2 test paragraphs, WCXB main texts
    found = _differences(texts)
    assert not found, f"{len(found)} texts differ, e.g. {found[0][0][:200]!r}"


def test_the_self_check_compares_with_spacy(monkeypatch):
    assert words.self_check() == len(words.SELF_CHECK_TEXTS)
    broken = words.english_words()
    monkeypatch.setattr(broken, "chunk", lambda string, specials=True: (string,))
    monkeypatch.setattr(broken, "cache", {})
    with pytest.raises(words.WordsError, match="C4FORGE_WORDS=spacy"):
        words.self_check()


def test_the_stored_rules_are_the_installed_spacys():
    """corpus/data/spacy-en-tokenizer.json (what the splitter runs on, without importing spaCy)
    is spaCy's own tokenizer as installed: regenerate it with
    ``python -m c4forge.corpus.text.words --write-rules`` after a spaCy upgrade."""
    from c4forge.corpus.text.en_words import load_rules

    assert load_rules() == words.spacy_rules()


def test_splitting_words_does_not_import_spacy():
    import subprocess
    import sys

    code = ("import sys; from c4forge.corpus.text import words; "
            "print(words.split_into_words(\"Don't stop :-)\"), 'spacy' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert shown.strip() == "('Do', \"n't\", 'stop', ':-)') False"


def test_sentences_are_the_sentencizers():
    """datatrove's sentence counts (C4 quality as FineWeb runs it) over the splitter's tokens
    equal spaCy's sentencizer's: on every 7th line of the shared crawl and on edge strings."""
    lines = [line for path in sorted([*shared_path("crawl").glob("*.wet.gz"),
                                      *shared_path("crawl-extra").glob("*.wet.gz")])
             for page in iter_file_documents(str(path)) for line in page.text.splitlines()][::7]
    texts = [*lines, *edge_strings(20_000, seed=4)]
    wrong = [text for text in texts if words.count_sentences(text) != words.spacy_sentences(text)]
    assert len(texts) > 100_000 and not wrong, wrong[:3]
