"""A page's per-word properties over code-point tables (corpus/text/page_words.py) are the per-word
definitions datatrove's Gopher quality uses: a character outside its punctuation, and
``any(c.isalpha() for c in word)``; on real pages and on words from every plane (letters above
the Basic Multilingual Plane are learnt as pages bring them)."""
import random

import numpy as np

from c4forge.corpus.read.wet import iter_file_documents
from c4forge.corpus.text.chunk_table import ChunkTable
from c4forge.corpus.text.en_words import EnglishWords, load_rules
from c4forge.corpus.text.page_words import page_words
from c4forge.corpus.text.words import PUNCTUATION_SET, english_words, split_into_words
from tests.conftest import shared_path


def _expected(words):
    return ([any(c not in PUNCTUATION_SET for c in w) for w in words],
            [any(c.isalpha() for c in w) for w in words], [len(w) for w in words])


def _check(text):
    page = page_words(text)
    non_symbol, alpha, lengths = _expected(page.words())
    assert page.non_symbol.tolist() == non_symbol and page.alpha.tolist() == alpha
    assert page.lengths.tolist() == lengths


def test_words_from_every_plane():
    rng = random.Random(2)
    pool = [chr(c) for c in (*range(0x20, 0x3000), *range(0x1F300, 0x1F700), *range(0x20000, 0x20400),
                             *range(0x1D400, 0x1D800), 0x10FFFD)] + list(PUNCTUATION_SET)
    for _ in range(300):
        _check(" ".join("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))) for _ in range(40)))
    assert page_words("").words() == () and page_words("   ").alpha.size == 0


def test_real_pages():
    checked = 0
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for page in iter_file_documents(str(path)):
            _check(page.text)
            checked += 1
    assert checked > 300


def _real_pages(limit=None):
    texts = [page.text for path in sorted(shared_path("crawl").glob("*.wet.gz"))
             for page in iter_file_documents(str(path))]
    return texts[:limit]


def _from_words(text):
    words = split_into_words(text)
    return "".join(words), [len(w) for w in words]


def test_the_chunk_table_gives_the_splitters_words_on_real_pages():
    """The lengths gathered from the chunks and the code points without whitespace are the
    splitter's words, page for page; most pages take that path (the rest: a chunk the
    special-case pass could change in context, which the table sends back to the splitter)."""
    table = ChunkTable(english_words())
    texts = _real_pages()
    taken = 0
    for text in texts:
        found = table.page(text)
        if found is not None:
            points, lengths = found
            assert (points.tobytes().decode("utf-32-le", "surrogatepass"), lengths.tolist()) == _from_words(text)
            taken += 1
    assert len(texts) > 300 and taken > 0.8 * len(texts)
    assert table.page("") is not None and table.page(" \n\t").__getitem__(1).size == 0


def test_a_full_chunk_table_starts_again_between_pages():
    """A table of 64 chunks fills on the first page and again and again: each page is still
    its words, and a page with more distinct chunks than the table holds goes to the splitter."""
    table = ChunkTable(english_words(), capacity=64)
    small = [" ".join(text.split()[:40]) for text in _real_pages(200)]
    for text in small:
        found = table.page(text)
        if found is not None:
            assert (found[0].tobytes().decode("utf-32-le", "surrogatepass"), found[1].tolist()) == _from_words(text)
    assert int(table.used[0]) <= 64
    many = " ".join(f"w{i}" for i in range(200))
    assert table.page(many) is None and page_words(many).count == 200


def test_a_chunk_whose_tokens_do_not_spell_it_goes_to_the_splitter(monkeypatch):
    """The lengths are only a page's words where a chunk's tokens partition it: a chunk whose
    worked-out tokens do not (a rule whose pieces are not its key) is caught at insertion, its
    run goes through the splitter's whole pass, and where those words do not spell the run
    either, the page goes to the splitter (None); other pages keep the table's path."""
    splitter = EnglishWords(load_rules())  # its own caches: the process's splitter stays as it is
    table = ChunkTable(splitter)
    work_out = splitter.work_out
    monkeypatch.setattr(splitter, "work_out", lambda s: (("X",), False) if s == "odd" else work_out(s))
    assert table.page("an odd page") is None
    assert bool(table.unsafe[:int(table.used[0])].any())
    assert table.page("an even page")[1].tolist() == [2, 4, 4]
    assert np.array_equal(table.page("an even page")[0], np.frombuffer("anevenpage".encode("utf-32-le"), np.uint32))


def test_stop_words_present():
    page = page_words("The dog and the cat, of course; to be or not")
    assert page.present(("the", "be", "to", "of", "and", "that", "have", "with")) == 5
    assert page.present(("the", "the")) == 1 and page.present(()) == 0 and page_words("").present(("a",)) == 0
