"""The compiled fastText predict (corpus/langid/fasttext_numba.py) against the ``fasttext`` module: the
same label and the same float probability on every page of the shared crawl, on texts built to
hit each rule of fastText's tokenizer, and on model files written here to cover what lid.176
does not use (dense input, softmax, word n-grams, a last subquantizer narrower than the others,
an unpruned or empty n-gram index, the version-11 format)."""
from __future__ import annotations

import random
import struct
from concurrent.futures import ThreadPoolExecutor

import fasttext
import numpy as np
import pytest

from c4forge.corpus.langid import fasttext_numba
from c4forge.corpus.langid import lid176 as langid
from c4forge.corpus.read.wet import iter_crawl_documents
from tests.conftest import shared_path

TOKENIZER_TEXTS = [
    "", " ", "\n\n", "\t\r\v\f\0", "</s>", "hello </s> world", "</s>hello", "a\nb\nc",
    "__label__en", "__label__en the quick brown fox", "__label__nope le renard", "__label__",
    "The quick brown fox jumps over the lazy dog.", "Der schnelle braune Fuchs springt über den Hund.",
    "日本語のテキストです。東京都", "Ελληνικά κείμενα με τελικό σίγμα ς", "emoji 😀🚀 and combining e\u0301",
    "x" * 5000, "a" * 3 + " " * 300 + "b", "mixed\0nul\rcr\x0bvt\x0cff\ttab", "‮ rtl override", "\u00a0nbsp\u2028ls",
    "word " * 2000, "ab", "ł", "\U0001F600", "de in the", "<s> < > <> </s>x x</s>",
]


def oracle(model, text: str):
    labels, probs = model.predict(text.replace("\n", " "), k=1)
    return (labels[0], float(probs[0])) if labels else (None, 0.0)


def assert_same(path: str, texts) -> int:
    """Every text scored by both; returns how many."""
    ours = fasttext_numba.load(path)
    assert ours is not None, "the compiled path should cover this model"
    theirs = fasttext.load_model(path)
    mismatches = [(text[:60], ours.predict(text), oracle(theirs, text))
                  for text in texts if ours.predict(text) != oracle(theirs, text)]
    assert not mismatches, mismatches[:5]
    return len(texts)


def test_lid176_tokenizer_edges():
    assert assert_same(langid.default_model_path(), TOKENIZER_TEXTS) == len(TOKENIZER_TEXTS)


def test_lid176_every_shared_crawl_page():
    texts = [doc.text for path in sorted(shared_path("crawl").glob("*.wet.gz"))
             for doc in iter_crawl_documents(str(path))]
    assert len(texts) > 1000
    assert assert_same(langid.default_model_path(), texts) == len(texts)


def test_langid_predict_uses_the_kernel_and_agrees_with_fasttext(monkeypatch):
    text = "Ceci est une phrase en français, écrite pour le test.\nEt une deuxième ligne."
    compiled = langid.predict(text)
    assert langid.compiled_predictor() is not None
    monkeypatch.setenv(langid.KERNEL_VARIABLE, "fasttext")
    assert langid.compiled_predictor() is None
    assert langid.predict(text) == compiled
    assert compiled[0] == "fr"


# --- model files written here: fastText's FastText::saveModel layout -------------------------

VOCAB = ["</s>", "the", "de", "und", "le", "fox", "Fuchs", "über", "日本", "ς", "hund", "renard",
         "lazy", "dog", "chien", "x"]


def _entries(labels: list[str]) -> bytes:
    rng = random.Random(3)
    out = b""
    for word in VOCAB:
        out += word.encode() + b"\0" + struct.pack("<qb", rng.randint(1, 10 ** 6), 0)
    for i, label in enumerate(labels):  # descending counts, as fastText sorts them
        out += f"__label__{label}".encode() + b"\0" + struct.pack("<qb", 10 ** 6 - 1000 * i, 1)
    return out


def _quantizer(rng, dim: int, dsub: int) -> tuple[bytes, int]:
    nsubq, lastdsub = -(-dim // dsub), dim % dsub or dsub
    centroids = rng.standard_normal(dim * 256).astype("<f4")
    return struct.pack("<4i", dim, nsubq, dsub, lastdsub) + centroids.tobytes(), nsubq


def write_model(path, *, dim=6, loss=1, minn=2, maxn=4, bucket=97, word_ngrams=1, quant=False, qnorm=True,
                dsub=2, prune=None, version=12, qout=False, nlabels=7, seed=0) -> str:
    """A supervised model with random weights. ``prune``: None (not pruned) or {bucket: row}."""
    rng = np.random.default_rng(seed)
    labels = [f"l{i}" for i in range(nlabels)]
    nwords = len(VOCAB)
    head = struct.pack("<ii", fasttext_numba.MAGIC, version)
    head += struct.pack("<12id", dim, 5, 5, 1, 5, word_ngrams, loss, 3, bucket, minn, maxn, 100, 1e-4)
    size = len(VOCAB) + nlabels
    pruneidx = -1 if prune is None else len(prune)
    head += struct.pack("<iiiqq", size, nwords, size - nwords, 12345, pruneidx) + _entries(labels)
    for key, row in (prune or {}).items():
        head += struct.pack("<ii", key, row)
    rows = len(VOCAB) + (bucket if prune is None else len(prune))
    if quant:
        pq, nsubq = _quantizer(rng, dim, dsub)
        codes = rng.integers(0, 256, rows * nsubq, dtype=np.uint8)
        body = struct.pack("<??qqi", True, qnorm, rows, dim, len(codes)) + codes.tobytes() + pq
        if qnorm:
            body += rng.integers(0, 256, rows, dtype=np.uint8).tobytes() + _quantizer(rng, 1, 1)[0]
    else:
        body = struct.pack("<?qq", False, rows, dim) + rng.standard_normal(rows * dim).astype("<f4").tobytes()
    out_rows = size - nwords
    if qout:
        pq, nsubq = _quantizer(rng, dim, dsub)
        codes = rng.integers(0, 256, out_rows * nsubq, dtype=np.uint8)
        body += struct.pack("<??qqi", True, False, out_rows, dim, len(codes)) + codes.tobytes() + pq
    else:
        body += struct.pack("<?qq", False, out_rows, dim)
        body += (rng.standard_normal(out_rows * dim) * 2).astype("<f4").tobytes()
    with open(path, "wb") as handle:
        handle.write(head + body)
    return str(path)


def synthetic_texts(count: int = 400) -> list[str]:
    rng = random.Random(11)
    pieces = VOCAB + ["renards", "Füchse", "日本語", "dogs", "q", "__label__l3", "__label__x", "é", "😀", "</s>"]
    texts = TOKENIZER_TEXTS[:]
    for _ in range(count):
        words = [rng.choice(pieces) if rng.random() < 0.6 else
                 "".join(rng.choice("abcdefghiöüß日ς😀") for _ in range(rng.randint(1, 9)))
                 for _ in range(rng.randint(0, 40))]
        texts.append("".join(w + rng.choice([" ", " ", "\n", "\t", "  "]) for w in words))
    return texts


@pytest.mark.parametrize("options", [
    {},  # dense, hierarchical softmax
    {"loss": 3},  # softmax
    {"word_ngrams": 3},
    {"word_ngrams": 2, "loss": 3, "minn": 1, "maxn": 2},
    {"minn": 0, "maxn": 0},
    {"version": 11},  # old supervised models: maxn forced to 0
    {"quant": True, "dim": 5, "dsub": 2},  # the last subquantizer one wide
    {"quant": True, "qnorm": False, "dim": 8, "dsub": 4},
    {"quant": True, "prune": {}},  # pruned to no n-gram at all
    {"quant": True, "dim": 4, "prune": {b: r for r, b in enumerate(range(3, 97, 5))}},
    {"quant": True, "dim": 4, "prune": {b: r for r, b in enumerate(range(0, 97, 2))}, "word_ngrams": 2, "loss": 3},
    {"nlabels": 1}, {"nlabels": 2, "loss": 3},
    {"minn": 1, "maxn": 6},  # more n-grams per byte than lid.176's (a token's rows buffer)
], ids=lambda o: ",".join(f"{k}={v if not isinstance(v, dict) else len(v)}" for k, v in o.items()) or "dense-hs")
def test_written_models(tmp_path, options):
    path = write_model(tmp_path / "model.bin", **options)
    assert assert_same(path, synthetic_texts()) > 400


@pytest.mark.parametrize("options", [{"loss": 2}, {"loss": 4}, {"quant": True, "qout": True}])
def test_models_it_does_not_cover_go_to_fasttext(tmp_path, options):
    path = write_model(tmp_path / "model.bin", **options)
    assert fasttext_numba.load(path) is None
    assert fasttext.load_model(path).predict("the fox", k=1)[0]  # fastText itself loads them


LAYOUTS = [{}, {"quant": True, "dim": 5, "dsub": 2}, {"quant": True, "qnorm": False, "dim": 8, "dsub": 4},
           {"quant": True, "dim": 4, "prune": {b: r for r, b in enumerate(range(3, 97, 5))}},
           {"loss": 2}, {"quant": True, "qout": True}, {"nlabels": 2, "loss": 3}]


@pytest.mark.parametrize("options", LAYOUTS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items() if k != "prune")
                         or "dense")
def test_a_whole_model_passes_the_layout_check_and_any_cut_of_it_fails(tmp_path, options):
    """check_layout (what langid.load_model asks before fastText sees a file) walks every
    layout fastText loads, ours and those it leaves to fastText, and refuses a file cut at any
    point or with bytes after the model, in bounded memory (it allocates nothing by size)."""
    data = open(write_model(tmp_path / "model.bin", **options), "rb").read()
    fasttext_numba.check_layout(data)
    for cut in sorted({1, 8, 20, 60, len(data) // 3, len(data) // 2, len(data) - 4, len(data) - 1}):
        with pytest.raises(ValueError):
            fasttext_numba.check_layout(data[:cut])
    with pytest.raises(ValueError, match="bytes follow the model"):
        fasttext_numba.check_layout(data + b"\0\0")
    fasttext_numba.check_layout(open(langid.default_model_path(), "rb").read())


def test_a_cut_or_foreign_model_is_a_one_line_error_before_fasttext_loads_it(tmp_path):
    whole = open(langid.default_model_path(), "rb").read()
    (tmp_path / "cut.ftz").write_bytes(whole[: len(whole) * 2 // 3])
    (tmp_path / "notes.txt").write_text("a text file, not a model\n")
    for name, says in (("cut.ftz", "the file ends early"), ("notes.txt", "not a fastText model")):
        with pytest.raises(langid.LangidError, match=f"{name} is not a whole fastText model file .*{says}"):
            langid.load_model(str(tmp_path / name))


def test_not_a_model_is_left_to_fasttext(tmp_path):
    (tmp_path / "junk.bin").write_bytes(b"not a model at all")
    assert fasttext_numba.load(str(tmp_path / "junk.bin")) is None
    assert fasttext_numba.load(str(tmp_path / "missing.bin")) is None


def test_fnv_matches_fasttext_signed_bytes():
    # Dictionary::hash of "é" (0xC3 0xA9): both bytes sign-extended before the xor.
    h = 2166136261
    for byte in (0xC3, 0xA9):
        h = ((h ^ (0xFFFFFF00 | byte)) * 16777619) & 0xFFFFFFFF
    assert fasttext_numba.fnv("é".encode()) == h
    assert fasttext_numba.fnv(b"a") == ((2166136261 ^ 0x61) * 16777619) & 0xFFFFFFFF


@pytest.mark.parametrize("options", [
    {"quant": True, "dim": 5, "dsub": 2},
    {"quant": True, "qnorm": False, "dim": 8, "dsub": 4, "loss": 3},
    {"quant": True, "dim": 4, "prune": {b: r for r, b in enumerate(range(3, 97, 5))}, "word_ngrams": 2},
], ids=["dsub2-last1", "no-qnorm-softmax", "pruned-ngrams"])
def test_quantized_rows_summed_from_their_codes(tmp_path, monkeypatch, options):
    """A quantized matrix too large to expand is summed from its codes, centroid by centroid."""
    monkeypatch.setattr(fasttext_numba, "EXPANDED_LIMIT", 0)
    path = write_model(tmp_path / "model.bin", **options)
    assert fasttext_numba.load(path).model.codes.size > 0
    assert assert_same(path, synthetic_texts()) > 400


def test_self_check_compares_the_kernel_with_fasttext(monkeypatch):
    assert "compiled kernel agrees" in langid.self_check_model()
    predictor = langid.compiled_predictor()
    monkeypatch.setattr(predictor, "predict", lambda text: ("__label__en", 0.5))
    with pytest.raises(langid.LangidError, match="disagrees"):
        langid.self_check_model()


def _crawl_texts(limit: int) -> list[str]:
    return [doc.text for path in sorted(shared_path("crawl").glob("*.wet.gz"))
            for doc in iter_crawl_documents(str(path))][:limit]


@pytest.mark.parametrize("entries", [0, 1, 64, 1 << 12])
def test_the_token_cache_changes_no_answer_whatever_it_holds(entries):
    """A token's rows replayed from the cache give the sums the uncached path gives: the same
    answers with no cache (0), a cache that fills and is emptied again and again (1, 64: tokens
    then take the uncached path beside cached ones) and a large one, on pages that share most of their tokens,
    scored twice (the second time nearly every token is a hit)."""
    path = langid.default_model_path()
    texts = _crawl_texts(300) + TOKENIZER_TEXTS
    theirs = fasttext.load_model(path)
    expected = [oracle(theirs, text) for text in texts]
    parsed = fasttext_numba.parse(open(path, "rb").read())
    ours = fasttext_numba.Predictor(*parsed, cache_entries=entries)
    assert [ours.predict(t) for t in texts] == expected
    held = int(ours.cache().used[0])
    assert held <= entries and (held > 0 if entries == 1 << 12 else True)
    assert [ours.predict(t) for t in reversed(texts)] == expected[::-1]


def test_the_token_cache_keeps_rows_in_getlines_order_and_labels_apart(tmp_path):
    """What the cache holds for a token: its word row, then its n-grams' rows as computeSubwords
    finds them (checked against the uncached kernel's own count), and a label token none."""
    path = write_model(tmp_path / "model.bin", quant=True, dim=4,
                       prune={b: r for r, b in enumerate(range(0, 97, 2))})
    ours = fasttext_numba.load(path)
    ours.predict("fox __label__l3 fox")
    cache = ours.cache()
    held = int(cache.used[0])
    tokens = [bytes(cache.token_bytes[cache.byte_starts[e]:cache.byte_starts[e + 1]]) for e in range(held)]
    assert tokens == [b"fox", b"__label__l3"]
    fox_rows = cache.rows[cache.row_starts[0]:cache.row_starts[1]].tolist()
    assert fox_rows[0] == VOCAB.index("fox") and len(fox_rows) > 1 and not cache.labels[0]
    assert cache.row_starts[2] == cache.row_starts[1] and cache.labels[1]


def test_each_thread_has_its_own_token_cache():
    """The kernel runs without the GIL: threads sharing one predictor fill caches of their own
    and give the answers one thread gives."""
    path = langid.default_model_path()
    texts = _crawl_texts(200)
    ours = fasttext_numba.load(path)
    alone = [ours.predict(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda chunk: [ours.predict(t) for t in chunk], [texts[i::4] for i in range(4)]))
    assert [answers[i % 4][i // 4] for i in range(len(texts))] == alone
