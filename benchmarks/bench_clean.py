"""C4 rules + language ID throughput: c4forge vs datatrove vs a plain port of the tfds loop.

All three get the same documents (read once, reading not timed) and run in this one process, so
the figures are per core. Each pipeline is "C4 page rules, then fastText lid.176 on the pages
that survive" with C4's constants (3 sentences, 5 words per line, threshold 0.65, English):

- c4forge: corpus.clean.clean_page + corpus.langid.LanguageFilter (the exact fast paths).
- plain:   tests/reference_c4.py, the tfds loop with Punkt on every kept line, + the same LID.
- datatrove: C4QualityFilter(min_num_sentences=3, min_words_per_line=5) + LanguageFilter
  (ft176, threshold 0.65). It is given the same Punkt parameters and the same lid.176.ftz
  (offline it would try to download both).

c4forge's output must equal the plain loop's (same kept pages, texts, languages, scores); the
script exits non-zero otherwise.

datatrove requires the ``fasttext-numpy2-wheel`` distribution and a newer dill than apache-beam
2.62 allows, so this script runs in ``.venv-peers`` (c4forge without Beam beside datatrove;
benchmarks/peers.py), where all rows share that fastText build. c4forge itself ships
``fasttext-predict`` (faster on the same model); when ``.venv`` exists, the script also times
c4forge there, in a subprocess on the same pages, and checks its output hash too. datatrove's rules differ slightly from tfds (it counts words
before removing citations and accepts a trailing apostrophe), so its page count is reported,
not compared.

Timing: CPU seconds, the three pipelines interleaved (c4forge, plain, datatrove, c4forge, ...)
for ``--repeat`` rounds (harness.py); every ratio is per round, reported as median (min-max).
The "as installed" row runs in its own process after the interleaved rounds.

Run: make bench   (or: .venv-peers/bin/python benchmarks/bench_clean.py [--repeat 5] [--write]
[--quick]; ``--quick``: 200 pages, one round, nothing written)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness

from c4forge.corpus.langid import lid176 as langid
from c4forge.corpus.read.wet import iter_crawl_documents
from c4forge.corpus.rules.clean import clean_page
from c4forge.corpus.text import sentences
from tests import reference_c4

THRESHOLD = 0.65


def load_pages(crawl: Path):
    pages = []
    for path in sorted(crawl.glob("*.wet.gz")):
        pages.extend(iter_crawl_documents(str(path)))
    return pages


def run_c4forge(pages):
    lid = langid.LanguageFilter(("en",), THRESHOLD)
    out = []
    for page in pages:
        cleaned = clean_page(page).page
        if cleaned is not None:
            kept = lid(cleaned).page
            if kept is not None:
                out.append((kept.url, kept.text, kept.language, kept.language_score))
    return out


def run_plain(pages):
    out = []
    for page in pages:
        text = reference_c4.clean_page(page.text, lambda name, amount=1: None)
        if text is None:
            continue
        lang, score = langid.predict(text)
        if score >= THRESHOLD and lang == "en":
            out.append((page.url, text, lang, round(score, 4)))
    return out


def datatrove_filters():
    """datatrove's C4QualityFilter and LanguageFilter with C4's constants, given our Punkt
    parameters and lid.176 model (offline it would download both): [quality, language]."""
    import numpy as np
    from datatrove.pipeline.filters import C4QualityFilter, LanguageFilter
    from datatrove.utils.word_tokenizers import NLTKTokenizer

    # datatrove's own NLTK Punkt wrapper, given the same English parameters (no download).
    # (Its default for English is spaCy, which C4 never used.)
    tokenizer = NLTKTokenizer("english")
    tokenizer._tokenizer = sentences.tokenizer()

    class SameModel:
        """lid.176.ftz through the installed fasttext module; numpy scores as datatrove expects."""

        def __init__(self):
            self.model = langid.load_model()

        def predict(self, text, k=-1):
            labels, scores = self.model.predict(text, k=k)
            return labels, np.asarray(scores)

    quality = C4QualityFilter(min_num_sentences=3, min_words_per_line=5, language=tokenizer)
    language = LanguageFilter(languages=["en"], language_threshold=THRESHOLD)
    language.model._model = SameModel()
    return [quality, language]


def make_datatrove():
    from datatrove.data import Document as DTDocument

    quality, language = datatrove_filters()

    def run(pages):
        out = []
        for page in pages:
            doc = DTDocument(text=page.text, id=page.url)
            verdict = quality.filter(doc)
            if verdict is not True and not (isinstance(verdict, tuple) and verdict[0]):
                continue
            if language.filter(doc):
                out.append((doc.id, doc.text))
        return out

    return run


def timed(fn, pages, repeat):
    """(output, CPU seconds of each of ``repeat`` runs)."""
    times, result = [], None
    for _ in range(repeat):
        result, cpu, _ = harness.timed(lambda: fn(pages))
        times.append(cpu)
    return result, times


def digest(output) -> str:
    return hashlib.sha256(json.dumps(output, ensure_ascii=False).encode("utf-8")).hexdigest()


def installed_c4forge(crawl: Path, repeat: int, quick: bool = False):
    """Time c4forge in the project's own .venv (its own fastText build), in a subprocess."""
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists() or Path(sys.prefix).resolve() == (ROOT / ".venv").resolve():
        return None
    out = subprocess.run([str(python), __file__, "--crawl", str(crawl), "--repeat", str(repeat),
                          "--only-c4forge"] + ["--quick"] * quick, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", type=Path, default=harness.SHARED / "crawl")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="200 pages, one round, nothing written.")
    parser.add_argument("--only-c4forge", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.crawl.is_dir():
        print(f"no crawl data at {args.crawl}", file=sys.stderr)
        return 2
    machine = harness.machine()
    pages = load_pages(args.crawl)
    if args.quick:
        pages, args.repeat, args.write = pages[:200], 1, False
    if args.only_c4forge:
        sentences.tokenizer()
        langid.load_model()
        run_c4forge(pages[:50])
        out, seconds = timed(run_c4forge, pages, args.repeat)
        print(json.dumps({"seconds": seconds, "kept": len(out), "digest": digest(out)}))
        return 0
    megabytes = sum(len(p.text.encode("utf-8")) for p in pages) / 1e6
    # Warm up: models and tokenizers built before any timing.
    sentences.tokenizer()
    langid.load_model()
    runners = {"c4forge (shared fastText build)": run_c4forge, "plain tfds loop": run_plain}
    try:
        runners["datatrove"] = make_datatrove()
    except ImportError as exc:
        print(f"datatrove not importable ({exc}); run `make bench` to install it", file=sys.stderr)
    for fn in runners.values():
        fn(pages[:50])

    outputs, cpu, _ = harness.interleave({name: (lambda fn=fn: fn(pages)) for name, fn in runners.items()},
                                         args.repeat)
    installed = installed_c4forge(args.crawl, args.repeat, args.quick)

    ours, plain = outputs["c4forge (shared fastText build)"], outputs["plain tfds loop"]
    identical = ours == plain
    lines = [f"Input: {len(pages):,} pages, {megabytes:.2f} MB of text from "
             f"{os.path.relpath(args.crawl, ROOT)}; CPU seconds, one process = one core, "
             f"{args.repeat} interleaved rounds; median (min-max).", "",
             "| pipeline | kept pages | seconds | pages/s | x datatrove | x plain tfds loop |",
             "|---|---:|---:|---:|---:|---:|"]
    rows = [(name, len(outputs[name]), cpu[name]) for name in runners]
    if installed:
        rows.insert(1, ("c4forge as installed (fasttext-predict; own process, not interleaved)",
                        installed["kept"], installed["seconds"]))
        identical = identical and installed["digest"] == digest(plain)
    def versus(name: str, seconds: list[float], other: str) -> str:
        if other not in cpu:
            return "-"
        if name in cpu:  # interleaved with the other: per-round ratios
            return harness.spread(harness.ratios(cpu[other], seconds)) + "x"
        return f"{statistics.median(cpu[other]) / statistics.median(seconds):.2f}x (medians)"

    for name, kept, seconds in rows:
        lines.append(f"| {name} | {kept:,} | {harness.spread(seconds)} | "
                     f"{harness.spread([len(pages) / t for t in seconds], '{:,.0f}')} | "
                     f"{versus(name, seconds, 'datatrove')} | {versus(name, seconds, 'plain tfds loop')} |")
    lines += ["", f"c4forge output identical to the plain tfds loop: {identical}"]
    harness.publish("clean", lines, args.write and "datatrove" in cpu, machine)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
