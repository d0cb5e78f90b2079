"""Gopher repetition's n-gram counts in one compiled pass (corpus/ngrams.py) equal the string
definitions they replace (corpus/quality.py, datatrove's ``find_top_duplicate`` and
``find_all_duplicate``): on words built to collide ("a"+"bc" is "ab"+"c" when joined without a
space), on words holding spaces, and on real pages. The mod 2^61 - 1 product is checked against
Python's integers."""
import random

import numpy as np

from c4forge.corpus.ngram_kernels import _mulmod
from c4forge.corpus.ngrams import ngram_counts
from c4forge.corpus.wet import iter_file_documents
from c4forge.corpus.words import split_into_words
from tests.conftest import shared_path

TOP, DUPLICATED = (2, 3, 4), (5, 6, 7, 8, 9, 10)


def test_the_product_mod_the_mersenne_prime():
    rng, modulus = random.Random(0), (1 << 61) - 1
    for a, b in [(modulus - 1, modulus - 1), (0, 5), *((rng.randrange(modulus), rng.randrange(modulus))
                                                       for _ in range(2000))]:
        assert int(_mulmod(np.uint64(a), np.uint64(b))) == a * b % modulus


def test_colliding_and_spaced_words_count_as_the_strings_do():
    rng = random.Random(1)
    vocabulary = ["a", "b", "ab", "ba", "c", "abc", "é", "😀", "x y", "z"]
    for _ in range(3000):
        words = [rng.choice(vocabulary[:rng.randint(2, len(vocabulary))]) for _ in range(rng.randint(0, 60))]
        assert ngram_counts(words, TOP, DUPLICATED) == ngram_counts(words, TOP, DUPLICATED, use_numba=False), words


def test_real_pages():
    checked = 0
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for page in iter_file_documents(str(path)):
            words = split_into_words(page.text)
            assert ngram_counts(words, TOP, DUPLICATED) == ngram_counts(words, TOP, DUPLICATED, use_numba=False)
            checked += 1
    assert checked > 300


def test_gopher_repetitions_lines_are_datatroves_regex_split():
    import re

    from c4forge.corpus.steps.gopher_repetition import _line_runs

    rng = random.Random(0)
    for _ in range(50_000):
        text = "".join(rng.choice(["a", "\n", "b", "\n\n", " ", "\r"]) for _ in range(rng.randint(0, 12)))
        assert _line_runs(text) == re.split("\n+", text), text
