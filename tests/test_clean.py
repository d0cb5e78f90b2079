"""The tfds c4_utils tests, ported, plus exactness of our fast paths against the plain port."""
import collections
import random

from c4forge.corpus.chain.verdict import count_verdict
from c4forge.corpus.document import Document
from c4forge.corpus.rules.clean import (
    PageRules,
    clean_page,
    is_valid_length,
    lines_hold_sentences,
    paragraph_filter,
)
from c4forge.corpus.text import sentences
from tests import reference_c4
from tests.conftest import shared_path

EN_TEXT = """This line has enough words and ends in punctuation, Dr. Roberts!
Economic History | All Institutions | Open Access Articles | Digital Commons Network
\"Open Access. Powered by Scholars. Published by Universities.\"
Digital Commons Network™/ Social and Behavioral Sciences...
Too few words.
You need to enable javascript in your browser in order to see this page.
You have JavaScript disabled and that means you can't see this page.
Adam Roberts has a cookie policy: always eat them.
Colin has a privacy policy: don't share people's secrets.
You'd better follow our terms of use!
"""
EXPECTED_CLEAN_EN = """This line has enough words and ends in punctuation, Dr. Roberts!
\"Open Access. Powered by Scholars. Published by Universities.\""""


def verdict_counters(verdict) -> collections.Counter:
    """The counters a verdict makes in its step's namespace, without the byte counters."""
    counters = collections.Counter()
    count_verdict(lambda name, amount=1: counters.update({name: amount}), None, 0, verdict)
    del counters["bytes-in"], counters["bytes-out"]
    return +counters


def run_clean(text, rules=PageRules()):
    verdict = clean_page(Document(url="u", text=text), rules)
    return (None if verdict.page is None else verdict.page.text), dict(verdict_counters(verdict))


def test_clean_page_nav_javascript_policy():
    text, counters = run_clean(EN_TEXT)
    assert text == EXPECTED_CLEAN_EN
    assert counters == {
        "line-passed": 2, "line-filtered:too_short": 1, "line-filtered:no_endmark": 2,
        "line-filtered:javascript": 2, "line-filtered:policy": 3, "passed": 1,
    }


def test_clean_page_too_few_sentences():
    text, counters = run_clean("This first line has one sentence.\n"
                               "This line looks like it has three sentences...but it's actually just 1.")
    assert text is None
    assert counters == {"line-passed": 2, "filtered:too_few_sentences": 1}


def test_clean_page_curly_bracket_drops_page_after_counting_earlier_lines():
    text, counters = run_clean(
        "This page starts out with some text.\n"
        "Everything looks good at first, since these are sentences.\n"
        "But then, all of a sudden, there's a bunch of code like the next block.\n"
        "fn foo(a) { bar = a + 10; }.")
    assert text is None
    assert counters == {"filtered:squigglybracket": 1, "line-passed": 3}


def test_clean_page_lorem_ipsum():
    text, counters = run_clean(
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.\n"
        "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip.\n"
        "Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu.")
    assert text is None
    assert counters == {"filtered:loremipsum": 1}


def test_page_drops_only_fire_on_lines_that_passed_earlier_checks():
    # "lorem ipsum" and "{" in lines that fail the end-mark or word-count checks do not drop the page.
    text, counters = run_clean(
        "Lorem ipsum dolor sit amet\n"
        "function() { return 1; }\n"
        "This first line has one sentence.\nThis is the second one here.\nAnd a third one for luck.")
    assert text == "This first line has one sentence.\nThis is the second one here.\nAnd a third one for luck."
    assert counters["line-filtered:no_endmark"] == 2


def test_clean_page_citations_not_restripped():
    text, counters = run_clean(
        "This page has some text.\nSome lines don't end with punctuation\n"
        "And some of these lines end with citations.[3]\n"
        "Or have requested citations[citation needed]. Or the option to edit.[edit]\n")
    assert text == ("This page has some text.\nAnd some of these lines end with citations.\n"
                    "Or have requested citations. Or the option to edit.")
    assert counters == {"line-passed": 3, "line-filtered:no_endmark": 1, "passed": 1}
    # No re-strip after removing the citation: a trailing space makes the line fail.
    text, counters = run_clean("One line here ends with a citation. [12]\n" + page_lines())
    assert counters["line-filtered:no_endmark"] == 1


def page_lines():
    return "A first good line is here.\nA second good line is here.\nA third good line is here."


def test_clean_page_policy_mixed_case():
    text, counters = run_clean(
        "This page has with some text. So, that's good!\nBut at the end it has some polciy lines.\n"
        "This line mentions the Terms of Use.\nThis line should be okay.\n"
        "The privacy policy is mentioned in this line.\nLet's talk about the Cookie Policy now.\n")
    assert text == ("This page has with some text. So, that's good!\n"
                    "But at the end it has some polciy lines.\nThis line should be okay.")
    assert counters == {"line-passed": 3, "line-filtered:policy": 3, "passed": 1}


def test_too_long_word_and_ellipsis():
    long_word = "x" * 1001
    text, counters = run_clean(f"This has a {long_word} word in it.\nThis ends in an ellipsis, sadly...\n"
                               + page_lines())
    assert counters["line-filtered:too_long_word"] == 1
    assert counters["line-filtered:no_endmark"] == 1
    assert text == page_lines()
    # exactly 1000 characters is allowed
    text, counters = run_clean(f"This has a {'y' * 1000} word in it.\n" + page_lines())
    assert counters["line-passed"] == 4


def test_rules_can_be_switched_off():
    text, _ = run_clean("Short line.\n" + page_lines(), PageRules(min_words_per_line=0))
    assert text.startswith("Short line.")
    text, _ = run_clean("Please enable javascript to view this page.\n" + page_lines(),
                        PageRules(drop_javascript_lines=False))
    assert "javascript" in text
    text, counters = run_clean("x = {a: 1} is code, not prose.\n" + page_lines(),
                               PageRules(drop_curly_bracket_pages=False))
    assert text is not None and "{" in text


def test_is_valid_length():
    assert is_valid_length(Document(text="a" * 190000))
    assert not is_valid_length(Document(text="a" * 190001))
    assert is_valid_length(Document(text="a" * 190001), max_chars=None)


def test_paragraph_filter_mc4():
    text = "This line is long enough to be a paragraph.\nThis one is not.\nThis one is. I promise!\n"
    extra = "If we add this paragraph, the page should pass."
    assert not paragraph_filter(Document(text=text), min_paragraphs=2, min_paragraph_len=20)
    assert not paragraph_filter(Document(text=text), min_paragraphs=3, min_paragraph_len=20)
    assert paragraph_filter(Document(text=text + extra), min_paragraphs=3, min_paragraph_len=20)


def test_punkt_finds_a_sentence_in_every_nonblank_string():
    rng = random.Random(0)
    alphabet = "ab .?!\"'\n\t()[]1;:-…"
    for _ in range(2000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        if s.strip():
            assert sentences.count_sentences(s) >= 1, repr(s)


def test_has_at_least_matches_full_count():
    texts = ["Mr. Smith went to Washington D.C. on Jan. 5. He said hi. Then left. Bye.",
             "one", "", "A. B. C. D. E.", "This is it... or is it? Yes! No."]
    for text in texts:
        full = len(sentences.get_sentences(text))
        for n in range(0, 6):
            assert sentences.has_at_least(text, n) == (full >= n), (text, n)


_PUNKT_IMPORT_CHECK = """
import json, sys
from c4forge.corpus.text import sentences
pages = json.load(sys.stdin)
ours = [list(sentences.tokenizer().span_tokenize(t)) for t in pages]
light = sorted(m for m in sys.modules if m == "nltk" or m.startswith(("nltk.", "scipy")))
import nltk  # the real package, imported after ours: whole, and the same sentences
from nltk.tokenize.punkt import PunktSentenceTokenizer
real = PunktSentenceTokenizer(sentences.tokenizer()._params)
same = ours == [list(real.span_tokenize(t)) for t in pages]
print(json.dumps({"left_loaded": light, "same": same, "full_nltk": hasattr(nltk, "collocations")
                  and nltk.tokenize.punkt.PunktSentenceTokenizer is PunktSentenceTokenizer}))
"""


def test_punkt_loads_without_the_rest_of_nltk_and_counts_the_same():
    """Worker start-up (issue 43): the sentence counter imports NLTK's punkt module alone, not
    NLTK's package (which imports scipy.stats), leaves nothing of NLTK behind in sys.modules, and
    splits real pages exactly as NLTK's own tokenizer imported the usual way."""
    import json
    import subprocess
    import sys

    pages = [page.text for page in _crawl_pages()[:300]]
    out = subprocess.run([sys.executable, "-c", _PUNKT_IMPORT_CHECK], input=json.dumps(pages),
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result == {"left_loaded": [], "same": True, "full_nltk": True}


def _crawl_pages():
    from c4forge.corpus.read.wet import iter_crawl_documents

    pages = []
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        pages.extend(iter_crawl_documents(str(path)))
    return pages


def test_clean_page_equals_plain_reference_on_real_pages():
    """Every real page: same kept text and same counters as the plain tfds loop."""
    pages = _crawl_pages()
    assert len(pages) > 1500
    mismatches = 0
    for page in pages:
        theirs = collections.Counter()
        verdict = clean_page(page)
        want = reference_c4.clean_page(page.text, lambda n, a=1, theirs=theirs: theirs.update({n: a}))
        if (verdict.page.text if verdict.page else None) != want or verdict_counters(verdict) != theirs:
            mismatches += 1
    assert mismatches == 0


def test_lines_hold_sentences_equals_full_count_on_real_lines():
    pages = _crawl_pages()
    rng = random.Random(1)
    lines = [line.strip() for p in pages[:300] for line in p.text.split("\n") if line.strip()]
    for _ in range(300):
        chunk = rng.sample(lines, rng.randint(0, 3))
        full = sum(len(sentences.get_sentences(line)) for line in chunk)
        assert lines_hold_sentences(chunk, 3) == (full >= 3)


class _CountingText(str):
    """A str that counts its encodings."""
    encodes = 0

    def encode(self, *args, **kwargs):
        type(self).encodes += 1
        return super().encode(*args, **kwargs)


def test_byte_counters_encode_each_text_once():
    """Regression: bytes-in/bytes-out re-encoded the text at every step (7.6% of `corpus clean`)."""
    import pickle

    from c4forge.corpus.chain.loop import StepLoop
    from c4forge.corpus.config import build_config
    from c4forge.corpus.steps import REGISTRY

    config = build_config("c4", overrides=["paragraph-filter.on=true", "paragraph-filter.min_paragraphs=1",
                                           "paragraph-filter.min_paragraph_len=5"])
    page = Document(url="http://a.example/", text=_CountingText("Ünïcode text here.\n" * 5))
    counts = collections.Counter()
    def inc(name, n=1):
        counts[name] += n

    loop = StepLoop([REGISTRY["length"], REGISTRY["paragraph-filter"]], config)
    for _ in range(3):
        assert loop.run(page, lambda namespace: inc) is page
        page = page.replace(language="en")
    assert _CountingText.encodes == 1
    assert counts["bytes-in"] == counts["bytes-out"] == 6 * len(page.text.encode("utf-8"))
    # a new text is measured anew; the cache never outlives its text, nor travels in pickles
    assert page.replace(text="ab").text_size() == 2
    page.text = "xyz"
    assert page.text_size() == 3
    assert "_text_size" not in pickle.loads(pickle.dumps(page)).__dict__


def test_too_few_words_is_the_full_split_count():
    """clean_page's words-per-line rule stops splitting at the n-th word; it must decide as
    ``len(line.split()) < n`` does on every kind of whitespace (tabs, NBSP, ideographic space,
    runs at either end) and every n."""
    from c4forge.corpus.rules.clean import too_few_words

    rng = random.Random(5)
    pieces = ["a", "bb", "word.", " ", "  ", "\t", "\u00a0", "\u3000", "\u2009", "\x1c", "é", "x y"]
    for _ in range(5000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for n in range(-1, 9):
            assert too_few_words(line, n) == (len(line.split()) < n), (line, n)


def test_document_replace_is_dataclasses_replace():
    """Document.replace copies the fields without __init__: the same Document as
    dataclasses.replace for every field changed, the original untouched, an unknown field a
    TypeError; the text-size cache follows the text (kept when the text stays, dropped when it
    changes), and ASCII and non-ASCII sizes are UTF-8 lengths."""
    import dataclasses

    import pytest

    page = Document(url="http://a.example/x", normalized_url="a.example/x", text="Plain text.",
                    timestamp="2019-04-18T00:00:00Z", language="en", language_score=0.9, offset=7)
    before = dataclasses.asdict(page)
    assert page.text_size() == 11
    for field in dataclasses.fields(Document):
        value = {str: "changed ü", int: 42, float: 0.5}.get(type(getattr(page, field.name)), "de")
        changed = page.replace(**{field.name: value})
        assert changed == dataclasses.replace(page, **{field.name: value})
        assert type(changed) is Document and changed is not page
        assert dataclasses.asdict(page) == before
        assert changed.text_size() == len(changed.text.encode("utf-8"))
    kept = page.replace(language="fr")
    assert kept.__dict__["_text_size"] == (page.text, 11)
    assert "_text_size" not in page.replace(text="Ünï").__dict__
    assert page.replace(text="Ünï").text_size() == 5
    with pytest.raises(TypeError, match="no field bogus"):
        page.replace(bogus=1)
