"""NeMo Curator's closest equivalent of a c4forge preset, in one process (its stages called as
its executors call them: setup, then process per task), on JSONL documents: its JsonlReader,
the preset's ScoreFilter/Modify stages, its JsonlWriter. Runs in .venv-curator (Curator pins
Ray, pandas 3 and its own numpy; it imports nothing of c4forge). benchmarks/bench_peer_tools.py
times it as a whole process and lists, filter by filter, what each stage stands for.

    .venv-curator/bin/python benchmarks/peer_tools/curator_chain.py PRESET DOCS_DIR OUT_DIR LID_MODEL [LIMITS_JSON]
"""
from __future__ import annotations

import json
import sys

from nemo_curator.stages.text.filters import ScoreFilter
from nemo_curator.stages.text.filters.fasttext.fasttext_filters import FastTextLangId
from nemo_curator.stages.text.filters.heuristic.repetition.repetition import (
    RepeatedLinesByCharFilter,
    RepeatedLinesFilter,
    RepeatedParagraphsByCharFilter,
    RepeatedParagraphsFilter,
    RepeatingDuplicateNGramsFilter,
    RepeatingTopNGramsFilter,
)
from nemo_curator.stages.text.filters.heuristic.string import (
    BulletsFilter,
    CommonEnglishWordsFilter,
    EllipsisFilter,
    LongWordFilter,
    MeanWordLengthFilter,
    PunctuationFilter,
    SymbolsToWordsFilter,
    WordCountFilter,
    WordsWithoutAlphabetsFilter,
)
from nemo_curator.stages.text.io.reader import JsonlReader
from nemo_curator.stages.text.io.writer import JsonlWriter
from nemo_curator.stages.text.modifiers import Modify
from nemo_curator.stages.text.modifiers.string.c4 import BoilerPlateStringModifier
from nemo_curator.tasks import EmptyTask

LID_THRESHOLD = 0.65  # every c4forge preset's language-id threshold
# The boilerplate modifier empties a page to drop it (lorem ipsum); Curator's pipelines drop
# empty texts with a filter after it.
# Gopher's thresholds (Table A1), where no LIMITS_JSON is given; bench_peer_tools.py passes our
# gopher preset's.
GOPHER = {"min_words": 50, "max_words": 100_000, "min_word_length": 3, "max_word_length": 10, "symbols": 0.1,
          "bullets": 0.9, "ellipsis": 0.3, "alpha_words": 0.8, "stop_words": 2, "dup_lines": 0.3,
          "dup_paragraphs": 0.3, "dup_line_chars": 0.2, "dup_paragraph_chars": 0.2,
          "top_ngrams": [[2, 0.2], [3, 0.18], [4, 0.16]],
          "dup_ngrams": [[5, 0.15], [6, 0.14], [7, 0.13], [8, 0.12], [9, 0.11], [10, 0.10]]}
NOT_EMPTY = WordCountFilter(min_words=1, max_words=10**12)


def gopher(model: str, limits: dict) -> list:
    """Gopher's quality and repetition rules with our gopher preset's thresholds (``limits``,
    bench_peer_tools.gopher_limits). Curator's repetition filters take the share of unique
    lines/paragraphs (0.7: at most 30% repeated); its WordsWithoutAlphabetsFilter the least share
    of words with a letter, as Gopher."""
    return [FastTextLangId(model_path=model, min_langid_score=LID_THRESHOLD, lang="en"),
            WordCountFilter(min_words=limits["min_words"], max_words=limits["max_words"]),
            MeanWordLengthFilter(limits["min_word_length"], limits["max_word_length"]),
            SymbolsToWordsFilter(limits["symbols"]), BulletsFilter(limits["bullets"]),
            EllipsisFilter(limits["ellipsis"]), WordsWithoutAlphabetsFilter(limits["alpha_words"]),
            CommonEnglishWordsFilter(limits["stop_words"]),
            RepeatedLinesFilter(1 - limits["dup_lines"]), RepeatedParagraphsFilter(1 - limits["dup_paragraphs"]),
            RepeatedLinesByCharFilter(1 - limits["dup_line_chars"]),
            RepeatedParagraphsByCharFilter(1 - limits["dup_paragraph_chars"]),
            *[RepeatingTopNGramsFilter(n, r) for n, r in limits["top_ngrams"]],
            *[RepeatingDuplicateNGramsFilter(n, r) for n, r in limits["dup_ngrams"]]]


def stages_for(preset: str, model: str, limits: dict) -> list:
    """The preset's stages after the reader (Curator has no line-level C4 rules, no bad-word
    page filter, no FineWeb line filters and no regex PII formatter: bench_peer_tools.py says
    which rule stands for which)."""
    if preset == "c4":
        return [Modify(BoilerPlateStringModifier()),
                ScoreFilter([NOT_EMPTY, PunctuationFilter(0.85), LongWordFilter(1000),
                             FastTextLangId(model_path=model, min_langid_score=LID_THRESHOLD, lang="en")])]
    if preset == "gopher":
        return [ScoreFilter(gopher(model, limits))]
    if preset == "fineweb":
        return [ScoreFilter(gopher(model, limits)), Modify(BoilerPlateStringModifier()),
                ScoreFilter([NOT_EMPTY, PunctuationFilter(0.85), LongWordFilter(1000)])]
    if preset == "language-id":
        return [ScoreFilter(FastTextLangId(model_path=model, min_langid_score=LID_THRESHOLD, lang="en"))]
    raise SystemExit(f"no Curator chain for {preset!r}")


def main(preset: str, documents: str, out: str, model: str, limits: str = json.dumps(GOPHER)) -> None:
    stages = [*JsonlReader(documents, fields=["id", "text", "url"], file_extensions=[".jsonl"]).decompose(),
              *stages_for(preset, model, json.loads(limits)), JsonlWriter(out)]
    tasks: list = [EmptyTask]
    for stage in stages:
        stage.setup_on_node()
        stage.setup()
        produced = []
        for task in tasks:
            result = stage.process(task)
            if result is not None:
                produced.extend(result if isinstance(result, list) else [result])
        tasks = produced


if __name__ == "__main__":
    main(*sys.argv[1:6])
