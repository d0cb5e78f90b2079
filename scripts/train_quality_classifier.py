"""Train the small fastText quality classifier the tests use (tests/data/quality-classifier.ftz),
in the format of DCLM's published classifier: two labels, ``__label__hq`` (the positive class)
and ``__label__cc`` (crawl), so ``quality_classifier.label=hq`` reads it as it reads DCLM's.

DCLM trained its positives on curated text (OpenHermes 2.5, r/ExplainLikeImFive) against
RefinedWeb pages. The data this project has gives the same shape of question: positives are the
human-reviewed main text of the WCXB development pages (extraction/wcxb-dev.jsonl.gz), negatives
the whole-page WET text of the same pages, boilerplate kept (crawl-extra/web-benchmarks.warc.wet.gz).
Training uses the *tune* half of the pages (bench_extract.is_tune_page, the half the extraction
router is fitted on); the held-out half is scored here, and the figures printed. Text is
prepared as the filter prepares it (corpus/steps/quality_classifier.py ``model_text``), so training and
prediction see the same input.

Run (fastText's trainer is in the peers' venv, `make peers`; .venv has the predict-only build):
    .venv-peers/bin/python scripts/train_quality_classifier.py [-o tests/data/quality-classifier.ftz]
Deterministic: one thread, a fixed seed. Quantised (.ftz, about 100 KB) so the tests carry it.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_extract import SHARED, is_tune_page  # noqa: E402

from c4forge.corpus.read.wet import iter_crawl_documents  # noqa: E402
from c4forge.corpus.steps.quality_classifier import model_text  # noqa: E402

POSITIVE, NEGATIVE = "hq", "cc"
SETTINGS = {"lr": 0.5, "epoch": 10, "wordNgrams": 2, "dim": 16, "minCount": 2, "bucket": 100_000,
            "loss": "softmax", "thread": 1, "seed": 1}


def examples(truth_path: str, wet_path: str) -> dict[str, list[tuple[str, str]]]:
    """{"tune": [(label, text)], "heldout": [...]}: each WCXB page's main text (hq) and its whole
    page as WET text (cc)."""
    with gzip.open(truth_path, "rt", encoding="utf-8") as handle:
        truth = {row["url"]: row for row in map(json.loads, handle)}
    halves: dict[str, list[tuple[str, str]]] = {"tune": [], "heldout": []}
    for page in iter_crawl_documents(wet_path):
        row = truth.get(page.url)
        if row is None or not row["main_content"].strip() or not page.text.strip():
            continue
        half = halves["tune" if is_tune_page(row["file_id"]) else "heldout"]
        half.append((POSITIVE, row["main_content"]))
        half.append((NEGATIVE, page.text))
    return halves


def auc(scored: list[tuple[float, bool]]) -> float:
    """Area under the ROC curve: the chance a positive outscores a negative (ties count half)."""
    positives = [s for s, p in scored if p]
    negatives = [s for s, p in scored if not p]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--truth", default=str(SHARED / "extraction" / "wcxb-dev.jsonl.gz"))
    parser.add_argument("--wet", default=str(SHARED / "crawl-extra" / "web-benchmarks.warc.wet.gz"))
    parser.add_argument("-o", "--output", default=str(ROOT / "tests" / "data" / "quality-classifier.ftz"))
    args = parser.parse_args()
    import fasttext  # the trainer: fasttext-numpy2-wheel, in .venv-peers

    halves = examples(args.truth, args.wet)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = os.path.join(tmp, "train.txt")
        with open(train_file, "w", encoding="utf-8") as handle:
            for label, text in halves["tune"]:
                handle.write(f"__label__{label} {model_text(text)}\n")
        model = fasttext.train_supervised(input=train_file, verbose=0, **SETTINGS)
        model.quantize(input=train_file, retrain=True, cutoff=5_000, qnorm=True, verbose=0)
    model.save_model(args.output + ".tmp")
    os.replace(args.output + ".tmp", args.output)

    scored = []
    for label, text in halves["heldout"]:
        labels, probs = model.predict(model_text(text), k=-1)
        score = dict(zip(labels, probs)).get(f"__label__{POSITIVE}", 0.0)
        scored.append((float(score), label == POSITIVE))
    accuracy = sum((s >= 0.5) == p for s, p in scored) / len(scored)
    print(f"trained on {len(halves['tune'])} texts (tune half), wrote "
          f"{os.path.relpath(args.output, ROOT)} ({os.path.getsize(args.output) / 1024:.0f} KB)")
    print(f"held-out half: {len(scored)} texts, accuracy at 0.5 {accuracy:.3f} (chance 0.500), "
          f"ROC AUC {auc(scored):.3f} (chance 0.500)")


if __name__ == "__main__":
    main()
