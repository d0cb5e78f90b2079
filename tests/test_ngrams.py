"""Gopher repetition's n-gram counts in one compiled pass (corpus/text/ngrams.py) equal the string
definitions they replace (corpus/rules/quality.py, datatrove's ``find_top_duplicate`` and
``find_all_duplicate``): on words built to collide ("a"+"bc" is "ab"+"c" when joined without a
space), on words holding spaces, and on real pages."""
import random

from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.text.ngrams import ngram_counts
from c4forge.corpus.text.words import split_into_words
from tests.conftest import shared_path

TOP, DUPLICATED = (2, 3, 4), (5, 6, 7, 8, 9, 10)


def test_colliding_and_spaced_words_count_as_the_strings_do():
    rng = random.Random(1)
    vocabulary = ["a", "b", "ab", "ba", "c", "abc", "é", "😀", "x y", "z"]
    for _ in range(3000):
        words = [rng.choice(vocabulary[:rng.randint(2, len(vocabulary))]) for _ in range(rng.randint(0, 60))]
        assert ngram_counts(words, TOP, DUPLICATED) == ngram_counts(words, TOP, DUPLICATED, use_numba=False), words


def test_spans_of_equal_hash_are_told_apart_by_their_characters():
    """"\x01\x00" and "\x00\U000F4243" have the same polynomial hash (2B + 1 with the kernel's
    base B = 1,000,003 = 0xF4243): only the third word repeats the first."""
    words = ["\x01\x00", "\x00\U000F4243", "\x01\x00"]
    assert ngram_counts(words, (), (1,)) == ngram_counts(words, (), (1,), use_numba=False)
    assert ngram_counts(words, (), (1,)).duplicated[1] == 2


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
