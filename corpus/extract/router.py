"""The cascade extractor's router: which pages are worth trafilatura after resiliparse.

trafilatura is ~13x slower than resiliparse and more accurate on average (WCXB dev F1 0.832 vs
0.790), but most pages gain nothing from it. The router reads cheap signals of resiliparse's
output (main text and whole-page text from the one parse the fast pass already made), the
page's size, title and URL, and predicts the F1 trafilatura would add; it sends a page to
trafilatura when that gain *per expected second of trafilatura* passes a threshold, so a fixed
budget of slow calls goes to the pages where it buys most. The model is a ridge regression
(standardised signals -> F1 gain) and the cost a power law of the HTML size, both fitted by
``scripts/train_extract_router.py`` on the tune half of the WCXB dev pages and shipped as
``corpus/data/extract-router.json`` (its ``version`` goes into the corpus manifest). Pure
Python at run time: a dot product per page, deterministic, no scikit-learn.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROUTER_FILE = Path(__file__).parents[1] / "data" / "extract-router.json"
# one router per slow extractor, each fitted on the tune half against that extractor's gain
ROUTER_FILES = {"trafilatura": ROUTER_FILE,
                "rs-trafilatura": Path(__file__).parents[1] / "data" / "extract-router-rs.json"}
_WORD = re.compile(r"\w+")
_DATE_IN_PATH = re.compile(r"/(19|20)\d\d/")
URL_HINTS = {
    "forum": ("forum", "thread", "topic", "community", "discussion", "comments", "questions"),
    "product": ("product", "shop", "store", "item", "/p/", "buy", "cart"),
    "docs": ("docs", "documentation", "api", "reference", "guide", "manual", "wiki", "learn"),
    "listing": ("category", "tag", "collection", "list", "search", "archive", "page/"),
    "article": ("blog", "news", "article", "post", "story"),
}


def _line_signals(text: str, prefix: str) -> dict[str, float]:
    lines = [line for line in text.split("\n") if line.strip()]
    n = len(lines) or 1
    words = [len(line.split()) for line in lines]
    return {f"{prefix}_log_lines": math.log1p(len(lines)),
            f"{prefix}_words_per_line": sum(words) / n,
            f"{prefix}_short_line_share": sum(w <= 3 for w in words) / n,
            f"{prefix}_sentence_line_share": sum(line.rstrip()[-1:] in '.!?"' for line in lines) / n,
            f"{prefix}_longest_line_share": max(words or [0]) / (sum(words) or 1)}


def page_signals(html: str, url: str, title: str, fast: str, full: str) -> dict[str, float]:
    """The router's inputs: ``fast`` is resiliparse's main text, ``full`` its whole-page text."""
    fast_words, full_words = len(fast.split()), len(full.split())
    signals = {"log_fast_words": math.log1p(fast_words), "log_full_words": math.log1p(full_words),
               "main_share": fast_words / (full_words or 1), "log_html_chars": math.log1p(len(html)),
               "text_to_markup": len(full) / (len(html) or 1)}
    signals |= _line_signals(fast, "fast") | _line_signals(full, "full")
    title_words = set(_WORD.findall(title.lower()))
    lead_words = set(_WORD.findall(fast[:2000].lower()))
    signals["title_in_lead"] = len(title_words & lead_words) / (len(title_words) or 1)
    signals["log_title_words"] = math.log1p(len(title_words))
    path = url.lower().split("//", 1)[-1]
    signals["url_depth"] = path.count("/")
    signals["url_date"] = float(bool(_DATE_IN_PATH.search(path)))
    for hint, needles in URL_HINTS.items():
        signals[f"url_{hint}"] = float(any(n in path for n in needles))
    return signals


@dataclass(frozen=True)
class Router:
    """A fitted router: ``gain = intercept + sum(coef * (x - mean) / scale)`` and
    ``cost = (1 + html chars) ** cost_exponent``; slow when ``gain / cost > threshold``."""

    version: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    cost_exponent: float
    threshold: float

    def score(self, signals: dict[str, float]) -> float:
        gain = self.intercept + sum(c * (signals[f] - m) / s for f, m, s, c in
                                    zip(self.features, self.mean, self.scale, self.coef))
        return gain / math.exp(self.cost_exponent * signals["log_html_chars"])

    def sends_slow(self, signals: dict[str, float]) -> bool:
        return self.score(signals) > self.threshold

    def to_json(self, **extra: object) -> str:
        doc = {"version": self.version, "features": list(self.features), "mean": list(self.mean),
               "scale": list(self.scale), "coef": list(self.coef), "intercept": self.intercept,
               "cost_exponent": self.cost_exponent, "threshold": self.threshold} | extra
        return json.dumps(doc, indent=1) + "\n"

    @classmethod
    def from_file(cls, path: Path) -> Router:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return cls(version=doc["version"], features=tuple(doc["features"]),
                   mean=tuple(doc["mean"]), scale=tuple(doc["scale"]), coef=tuple(doc["coef"]),
                   intercept=float(doc["intercept"]), cost_exponent=float(doc["cost_exponent"]),
                   threshold=float(doc["threshold"]))


@cache
def load_router(slow: str = "trafilatura") -> Router:
    """The shipped router for the slow extractor ``slow`` (read once per process)."""
    return Router.from_file(ROUTER_FILES[slow])
