"""Line dedup, URL normalisation/newest page/split, bad words: ported tfds tests and ours."""
import collections
import itertools

import pytest

from c4forge.corpus.chain.verdict import count_verdict
from c4forge.corpus.dedup.line_dedup import LineOwners, keep_owned_lines, owner_of, url_rank
from c4forge.corpus.document import Document
from c4forge.corpus.steps import bad_words as bw
from c4forge.corpus.steps.bad_words import BadwordsFilter, BadwordsUnavailable, load_badwords
from c4forge.corpus.text.urls import md5_int, normalize_url, select_newest_page, split_of
from tests.conftest import SHARED, shared_path


def kept_by(rule):
    """A verdict-returning rule as a predicate."""
    return lambda page: rule(page).kept


def tally(verdict) -> collections.Counter:
    counters = collections.Counter()
    count_verdict(lambda n, a=1: counters.update({n: a}), None, 0, verdict)
    return +counters


def dedupe(pages, min_sentences=3):
    owners = LineOwners()
    for page in pages:
        owners.add(page)
    out = []
    for page in pages:
        kept = keep_owned_lines(page, owners.owned_by(page), min_sentences).page
        if kept is not None:
            out.append(kept)
    return out


def test_remove_duplicate_text_tfds_case():
    pages = [
        Document(url="url/1-0", text="This is a duplicated line.\nThis is a unique line.\n"
                 "This one comes first and so it stays.\n"
                 "This is duplicate within the page so the others are removed.\n"
                 "Here is a sentence between the duplicates.\n"
                 "This is duplicate within the page so the others are removed.\n"
                 "this is Duplicate WITHIN the page so the others are removed. "),
        Document(url="url/2-1", text="This is 2nd unique line.\nThis one comes second so it is "
                 "removed even though the capitalizaiton is different.\nthis is a Duplicated line. "),
        Document(url="url/3-4", text="This is a 3rd unique line.\nThis is a duplicated line.\n"
                 "This one comes third and so it is removed. But the page stays "
                 "because there are still 3 sentences remaining."),
        Document(url="url/4-4", text="This is a 4th unique line.\nThis is a duplicated line.\n"
                 "This one comes third and so it is removed, and the page is too "
                 "since there aren't enough sentences left."),
    ]
    got = {p.url: p.text for p in dedupe(pages)}
    assert got == {
        "url/1-0": "This is a duplicated line.\nThis is a unique line.\n"
                   "This one comes first and so it stays.\n"
                   "This is duplicate within the page so the others are removed.\n"
                   "Here is a sentence between the duplicates.",
        "url/3-4": "This is a 3rd unique line.\n"
                   "This one comes third and so it is removed. But the page stays "
                   "because there are still 3 sentences remaining.",
    }


def test_line_owner_is_smallest_md5_url_not_first_seen():
    urls = ["a.com/x", "b.com/y", "c.com/z"]
    owner = owner_of(urls)
    assert url_rank(owner) == min(url_rank(u) for u in urls)
    line = "The shared line that every page has in common here."
    pages = [Document(url=u, text=f"{line}\nUnique line for {u} one.\nAnother unique {u} two.")
             for u in reversed(urls)]
    kept = {p.url: p.text for p in dedupe(pages, min_sentences=0)}
    assert all((line in text) == (url == owner) for url, text in kept.items())


def test_dedup_counters_and_empty_page():
    owners = LineOwners()
    a = Document(url="a", text="Same line.")
    owners.add(a)
    verdict = keep_owned_lines(a, set(), 3)
    assert verdict.page is None
    assert tally(verdict) == {"line-filtered:global_duplicate": 1, "filtered:empty": 1}


def test_line_keys_carried_with_a_page_claim_as_the_page_does():
    """The Beam pipeline carries a page's line keys (pack_keys) to the URL groups and claims
    them there (claim_keys): the same owners as claiming from the page itself (add_claims)."""
    from c4forge.corpus.dedup.line_dedup import add_claims, claim_keys, line_keys, pack_keys, unpack_keys

    pages = [Document(url=u, text="One line here.\nTwo lines here.\none line here.\nThree.\n" + u)
             for u in ("http://a.example/", "http://b.example/x", "http://c.example/y")]
    from_pages: dict[bytes, bytes] = {}
    carried: dict[bytes, bytes] = {}
    for page in pages:
        add_claims(from_pages, page)
        keys = unpack_keys(pack_keys(line_keys(page)))
        assert keys == list(line_keys(page))
        claim_keys(carried, url_rank(page.url), keys)
    assert carried == from_pages and len(carried) == 6  # 3 shared lines (one twice), 3 own


def owned_lines_by_claims(pages, bundles: int = 3, buckets: int = 4):
    """What the Beam path tells each page: the indices of the lines it keeps, from the smallest
    claim (md5(url), then the line's index) of every line key (corpus/dedup/line_claims.py), combined
    as the engine does: per bundle, then per line bucket, then gathered per page bucket."""
    from c4forge.corpus.dedup import digest_records, line_claims
    from c4forge.corpus.dedup.line_dedup import line_keys, pack_keys

    by_line_bucket = collections.defaultdict(list)
    for bundle in range(bundles):
        part = pages[bundle::bundles]
        claims = line_claims.page_claims([url_rank(p.url) for p in part], [pack_keys(line_keys(p)) for p in part])
        for bucket, blob in digest_records.by_bucket(line_claims.smallest_claims(claims), buckets):
            by_line_bucket[bucket].append(blob)
    by_page_bucket = collections.defaultdict(list)
    for blobs in by_line_bucket.values():
        owners = line_claims.owners(digest_records.join(blobs, line_claims.CLAIM))
        for bucket, blob in digest_records.by_bucket(owners, buckets):
            by_page_bucket[bucket].append(blob)
    kept: dict[bytes, set[int]] = {}
    for bucket, blobs in by_page_bucket.items():
        part = line_claims.kept_lines(digest_records.join(blobs, line_claims.OWNER))
        assert all(int.from_bytes(rank[:8], "little") % buckets == bucket for rank in part)
        kept.update(part)
    return kept


LINE_CASES = [
    Document(url="http://a.example/1", text="Shared line one.\nOwn line of a.\nOwn line of a.\n"
             "  OWN line OF A.  \nShared line two.\nΣΊΣΥΦΟΣ ends in sigma.\nσίσυφος ends in sigma."),
    Document(url="http://b.example/2", text="shared LINE one.\nB keeps this.\nShared line two.\n\n\nB too."),
    Document(url="http://c.example/3", text="Shared line one.\nShared line two.\nshared line two.  "),
    Document(url="http://d.example/4", text="Every line its own.\nAnd this one.\nAnd a third."),
    Document(url="http://e.example/5", text=""),
]


def test_lines_kept_by_index_as_by_key():
    """keep_lines_at (the Beam join: the owners' claims name the lines to keep, no hashing)
    decides what keep_owned_lines (the owned keys) decides, page and counts, on pages with
    repeated lines, lines equal only after strip/lower (Greek final sigma), empty lines and an
    empty page."""
    from c4forge.corpus.dedup.line_dedup import keep_lines_at

    owners = LineOwners()
    for page in LINE_CASES:
        owners.add(page)
    kept = owned_lines_by_claims(LINE_CASES)
    local = 0
    for page in LINE_CASES:
        for min_sentences in (0, 3):
            by_key = keep_owned_lines(page, owners.owned_by(page), min_sentences)
            by_index = keep_lines_at(page, kept.get(url_rank(page.url), set()), min_sentences)
            assert by_index == by_key, page.url
            local += tally(by_key)["line-filtered:local_duplicate"]
    assert local >= 4


@pytest.mark.skipif(not (SHARED / "crawl").is_dir(), reason=f"shared test data not found at {SHARED / 'crawl'} (set C4FORGE_SHARED_DATA)")
def test_lines_kept_by_index_as_by_key_on_the_shared_crawl():
    """The same on every page of the shared crawl, cleaned, with line ownership crossing pages
    and sites (boilerplate lines), and with a renamed copy whose every line another page owns."""
    from c4forge.corpus.dedup.line_dedup import keep_lines_at
    from c4forge.corpus.read.wet import iter_crawl_documents
    from c4forge.corpus.rules.clean import clean_page

    pages = []
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for page in iter_crawl_documents(str(path)):
            cleaned = clean_page(page).page
            if cleaned is not None:
                pages.append(cleaned)
    pages += [page.replace(url=page.url + "?copy") for page in pages[::7]]
    owners = LineOwners()
    for page in pages:
        owners.add(page)
    kept = owned_lines_by_claims(pages)
    outcomes = collections.Counter()
    for page in pages:
        by_key = keep_owned_lines(page, owners.owned_by(page), 3)
        assert keep_lines_at(page, kept.get(url_rank(page.url), set()), 3) == by_key, page.url
        outcomes.update(tally(by_key))
    assert outcomes["line-filtered:local_duplicate"] and outcomes["line-filtered:global_duplicate"]
    assert outcomes["filtered:empty"] and outcomes["filtered:too_few_sentences"] and len(pages) > 1000


def test_a_page_owning_nothing_is_counted_without_its_text():
    """page_owning_nothing decides what keep_owned_lines decides for a page that owns none of
    its lines (the pipeline's path that never unpacks such a page)."""
    from c4forge.corpus.dedup.line_dedup import page_owning_nothing

    for text in ("Same line.", "Grüße.\nSame line.\nSame line.\n", ""):
        page = Document(url="a", text=text)
        full = keep_owned_lines(page, set(), 3)
        assert full.page is None
        assert tally(full) == tally(page_owning_nothing(len(text.split("\n"))))


def test_normalize_url():
    assert normalize_url("https://www.example.com/page/") == "example.com/page"
    assert normalize_url("http://example.com/a?utm_source=x") == "example.com/a"
    assert normalize_url("http://example.com/a?ref=home") == "example.com/a"
    assert normalize_url("http://example.com/a?feed=rss") == "example.com/a"
    assert normalize_url("http://example.com/a?id=3") == "example.com/a?id=3"
    assert normalize_url("https://example.com///") == "example.com"


def test_select_newest_page():
    pages = [Document(url="u", timestamp="2019-04-24T09:23:58Z", text="old"),
             Document(url="u", timestamp="2020-01-01T00:00:00Z", text="new"),
             Document(url="u", timestamp="2019-12-31T23:59:59Z", text="mid")]
    counters = collections.Counter()
    best = select_newest_page(pages, lambda n, a=1: counters.update({n: a}))
    assert best.text == "new"
    assert counters == {"filtered": 2, "passed": 1}
    # Associative, so Beam may combine partial groups.
    assert select_newest_page([select_newest_page(pages[:1]), select_newest_page(pages[1:])]).text == "new"


def test_equally_new_pages_keep_the_smallest_record_id_whatever_the_order_or_folder():
    from c4forge.corpus.text.urls import newer_page, record_id, replaces

    date = "2020-01-01T00:00:00Z"
    pages = [Document(url="u", timestamp=date, text=f"copy {i}", source=f"/data/{folder}/f{i}.wet.gz", offset=7)
             for i, folder in enumerate(["b", "a", "c"])]
    smallest = min(pages, key=lambda p: record_id(p.source, p.offset))
    for order in itertools.permutations(pages):
        assert select_newest_page(order) is smallest
        assert newer_page(order[0], order[1]) is min(order[:2], key=lambda p: record_id(p.source, p.offset))
    # the file's name and offset, not its folder or host, identify the record
    assert record_id("/data/a/f0.wet.gz", 7) == record_id("s3://bucket/crawl/f0.wet.gz", 7) == \
        record_id("f0.wet.gz", 7)
    assert record_id("f0.wet.gz", 7) != record_id("f0.wet.gz", 8) != record_id("f1.wet.gz", 7)
    # newer always wins; ties go to the smaller id
    assert replaces("2021", b"\xff", "2020", b"\x00") and not replaces("2019", b"\x00", "2020", b"\xff")
    assert replaces("2020", b"\x00", "2020", b"\x01") and not replaces("2020", b"\x01", "2020", b"\x00")
    old = Document(url="u", timestamp="2019-01-01T00:00:00Z", text="old", source="a", offset=0)
    assert select_newest_page([pages[0], old]) is pages[0] and select_newest_page([old, pages[0]]) is pages[0]


def test_split_is_md5_mod_1000():
    urls = [f"example.com/page{i}" for i in range(5000)]
    validation = [u for u in urls if split_of(u) == "validation"]
    assert all(md5_int(u) % 1000 == 0 for u in validation)
    assert 0 < len(validation) < 20


def badwords_page(text, language, url="example.com"):
    return Document(text=text, language=language, normalized_url=url)


def test_badwords_filter_tfds_case():
    padding = ("This page starts out with some text.\n"
               "Everything looks good at first, since these are sentences.\n"
               "But then, all of a sudden, there's a badword... or not?\n")
    finals = [
        "I asked my friend for assistance polishing my cutlass.",
        "He took the saddle and put it on his ass in preparation for travel.",
        "Ass is one of several species of small, horse-like animals.",
        'Donkey is one synonym for the word "ass".',
        "Ass is not a badword in Spanish.",
        "Culo is though.",
        "Ass and culo aren't badwords in German.",
    ]
    languages = ["en", "en", "en-latin", "en", "es", "es", "de"]
    expected = [True, False, False, False, True, False, True]
    keep = kept_by(BadwordsFilter({"en": ["ass"], "es": ["culo"]}))
    assert [keep(badwords_page(padding + f, lang)) for f, lang in zip(finals, languages)] == expected


def test_soft_badwords_filter():
    keep = kept_by(BadwordsFilter({"": ["bad"]}, fraction=0.5))
    assert keep(badwords_page("good page", "", "filtered.url.com"))
    assert not keep(badwords_page("bad page", "", "filtered.url.com"))
    assert keep(badwords_page("bad page", "", "unfiltered.url.com"))


def test_no_space_languages_match_inside_words():
    keep = kept_by(BadwordsFilter({"zh": ["坏"], "en": ["bad"]}))
    assert not keep(badwords_page("这是坏的", "zh"))
    assert keep(badwords_page("badminton is fun", "en"))


def test_regex_special_characters_are_escaped():
    keep = kept_by(BadwordsFilter({"en": ["a.b", "c+"]}))
    assert keep(badwords_page("axb and cc", "en"))
    assert not keep(badwords_page("see a.b here", "en"))


def test_badword_lists_from_shared_dir():
    directory = shared_path("badwords")
    words = load_badwords(str(directory), ["en", "de", "xx"])
    assert set(words) == {"en", "de"}
    assert len(words["en"]) > 300 and "" not in words["en"]
    keep = kept_by(BadwordsFilter(words))
    assert keep(badwords_page("I asked for assistance with my cutlass today.", "en"))


def test_default_list_offline_names_the_flag(monkeypatch, tmp_path):
    import urllib.error
    import urllib.request

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setenv("C4FORGE_CACHE", str(tmp_path))
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(BadwordsUnavailable, match="could not fetch the bad-words list .*--badwords"):
        load_badwords(bw.DEFAULT_SOURCE, ["en"])


def test_badword_lists_over_http_are_cached(local_server):
    base, log = local_server(shared_path("badwords"))
    template = base + "/{lang}"
    words = load_badwords(template, ["en", "xx"])
    assert set(words) == {"en"}
    requests = len(log)
    again = load_badwords(template, ["en"])
    assert again["en"] == words["en"]
    assert len(log) == requests  # second load came from the cache


def test_validation_share_is_configurable():
    urls = [f"example.com/page{i}" for i in range(5000)]
    tenth = [u for u in urls if split_of(u, per_mille=100) == "validation"]
    assert 400 < len(tenth) < 600
    assert all(md5_int(u) % 1000 < 100 for u in tenth)
    assert {u for u in urls if split_of(u) == "validation"} <= set(tenth)  # tfds' 0.1% is a subset


# ------------------------------------------------------------------ the automaton vs tfds' regex

def test_python_word_characters_are_isalnum_and_underscore():
    """WordMatcher's boundary test equals the regex's \\w on every code point."""
    import re
    import sys

    word = re.compile(r"\w")
    assert [c for c in map(chr, range(sys.maxunicode + 1))
            if (word.match(c) is not None) != bw._is_word_char(c)] == []


def _agree(words, texts, lang="en"):
    regex = bw.compile_badwords({lang: words})[lang]
    matcher = bw.word_matchers({lang: words})[lang]
    return [(t, regex.search(t) is not None) for t in texts if (regex.search(t) is not None) != matcher.search(t)]


def test_the_automaton_finds_what_the_regex_finds_on_crafted_texts():
    words = ["ass", "a.b", "c+", "2 girls 1 cup", "b!tch", "-ho-", "ab", "b", "abc", "bc", "x y", "ünï", "_u"]
    texts = ["", "ass", "ass.", ".ass", "bass", "asses", "ass\n", "\nass", "the ass\n", "a.b", "xa.b", "a.bx",
             "c+", "cc+", "c+c", "c++", "2 girls 1 cup!", "b!tch", "xb!tch", "b!tchy", "-ho-", "a-ho-b",
             "xabcx", "abc", "ab c", "b", " b ", "ab_", "_ab", "x y z", "xx y", "ünï", "aünï", "ünï1",
             "_u", "a_u", "é ass é", "ass\u00a0", "\u00a0ass", "ass٣", "٣ass", "ass\u200b"]
    assert _agree(words, texts) == []
    assert _agree(["坏", "坏蛋"], ["这是坏的", "坏", "好", ""], lang="zh") == []


def test_the_automaton_finds_what_the_regex_finds_on_random_texts():
    """Random texts over an alphabet of word and non-word characters the words are made of."""
    import random

    rng = random.Random(0)
    alphabet = "ab c.+_-\nü1"
    words = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(40)} - {""})
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(20000)]
    assert _agree(words, texts) == []


def test_the_automaton_finds_what_the_regex_finds_on_every_real_page():
    """Every page of ../shared/data/crawl and crawl-extra (lower-cased, as the filter sees it),
    against the LDNOOBW list of each of en, de, es and fr."""
    from c4forge.corpus.read.wet import iter_crawl_documents

    files = sorted(shared_path("crawl").glob("*.wet.gz")) + [shared_path("crawl-extra", "web-benchmarks.warc.wet.gz")]
    texts = [d.text.lower() for f in files for d in iter_crawl_documents(str(f))]
    assert len(texts) > 5000
    lists = load_badwords(str(shared_path("badwords")), ["en", "de", "es", "fr"])
    hits = {}
    for lang, words in lists.items():
        regex, matcher = bw.compile_badwords({lang: words})[lang], bw.word_matchers({lang: words})[lang]
        verdicts = [regex.search(t) is not None for t in texts]
        assert [matcher.search(t) for t in texts] == verdicts, lang
        hits[lang] = sum(verdicts)
    assert min(hits.values()) > 0 and hits["en"] > 500, hits  # the comparison saw hits of every list


def test_text_line_keys_lower_the_whole_text_as_each_line():
    """text_line_keys lowers the page once; the keys must be line_key's of every line. Every
    code point (but surrogates) beside the final-sigma rule's context (a cased letter, Greek
    capital sigma, whitespace of every kind, the newline), then every page of the shared crawl:
    fails if lowering a whole text differed from lowering its lines, or stripped otherwise."""
    from c4forge.corpus.dedup.line_dedup import line_key, text_line_keys

    spaces = "".join(chr(c) for c in range(0x110000) if chr(c).isspace() and c != 10)
    pieces = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        pieces.append(f"{ch}AΣ{ch}\nΣ{ch} \n{spaces[c % len(spaces)]}AΣ{ch}Σ\n{ch}\u03a3")
    text = "\n".join(pieces)
    lines = text.split("\n")
    assert list(text_line_keys(text)) == [line_key(line) for line in lines]
    assert list(text_line_keys(f"AΣ{spaces}\nxΣ\n\n  Σ  ")) == [
        line_key(line) for line in f"AΣ{spaces}\nxΣ\n\n  Σ  ".split("\n")]
    crawl = shared_path("crawl")
    if crawl.exists():
        from c4forge.corpus.read.wet import iter_file_documents

        pages = [page for path in sorted(crawl.glob("*.wet.gz")) for page in iter_file_documents(str(path))]
        assert len(pages) > 1000
        for page in pages:
            assert list(text_line_keys(page.text)) == [line_key(line) for line in page.text.split("\n")]
