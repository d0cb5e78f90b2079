"""A page's per-word properties over code-point tables (corpus/text/page_words.py) are the per-word
definitions datatrove's Gopher quality uses: a character outside its punctuation, and
``any(c.isalpha() for c in word)``; on real pages and on words from every plane (letters above
the Basic Multilingual Plane are learnt as pages bring them)."""
import random

from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.text.page_words import page_words
from c4forge.corpus.text.words import PUNCTUATION_SET
from tests.conftest import shared_path


def _expected(words):
    return ([any(c not in PUNCTUATION_SET for c in w) for w in words],
            [any(c.isalpha() for c in w) for w in words], [len(w) for w in words])


def _check(text):
    page = page_words(text)
    non_symbol, alpha, lengths = _expected(page.words)
    assert page.non_symbol.tolist() == non_symbol and page.alpha.tolist() == alpha
    assert page.lengths.tolist() == lengths


def test_words_from_every_plane():
    rng = random.Random(2)
    pool = [chr(c) for c in (*range(0x20, 0x3000), *range(0x1F300, 0x1F700), *range(0x20000, 0x20400),
                             *range(0x1D400, 0x1D800), 0x10FFFD)] + list(PUNCTUATION_SET)
    for _ in range(300):
        _check(" ".join("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))) for _ in range(40)))
    assert page_words("").words == () and page_words("   ").alpha.size == 0


def test_real_pages():
    checked = 0
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for page in iter_file_documents(str(path)):
            _check(page.text)
            checked += 1
    assert checked > 300
