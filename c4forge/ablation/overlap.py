"""How much of each variant's training text overlaps each evaluation set the ablation scores
on: the words of the variant's train split that lie in a 13-gram an evaluation set holds
(corpus/rules/decontaminate.py's n-grams and normalisation), and the documents with any. A report
whose variants overlap their own evaluation differently is comparing memorisation as well as
data; the table says so, per variant and set, beside the verdicts.

The sets: ``eval.texts`` (held-out text such as WikiText-2), ``eval.tasks`` (the zero-shot
files under ``eval.eval_dir``) and, with ``eval.glue``, each task's validation split.
"""
from __future__ import annotations

import os

from c4forge.ablation.spec import AblationSpec, locate
from c4forge.corpus.output.shards import iter_corpus_documents
from c4forge.corpus.rules.decontaminate import EvalIndex, overlapping_words
from c4forge.train.evaluation.evaluate import TASK_FILES


def evaluation_sets(spec: AblationSpec) -> tuple[str, ...]:
    """The ablation's evaluation sets as ``NAME=PATH`` entries (decontaminate.sets' form)."""
    sets = [f"{os.path.basename(text)}={locate(spec, text)}" for text in spec.eval.texts]
    if spec.eval.eval_dir:
        sets += [f"{task}={os.path.join(locate(spec, spec.eval.eval_dir), TASK_FILES[task])}"
                 for task in spec.eval.tasks if task in TASK_FILES]
    if spec.eval.glue and spec.eval.glue.glue_dir:
        glue = locate(spec, spec.eval.glue.glue_dir)
        sets += [f"glue-{task}={os.path.join(glue, task, 'validation.jsonl')}"
                 for task in spec.eval.glue.tasks
                 if os.path.exists(os.path.join(glue, task, "validation.jsonl"))]
    return tuple(sets)


def overlap(spec: AblationSpec, corpora: dict[str, str], n: int = 13) -> dict:
    """{"n", "sets", "variants": {name: {"words", "documents", "sets": {set: {"words",
    "documents"}}}}} over each variant's train split; empty when the spec names no set."""
    sets = evaluation_sets(spec)
    if not sets:
        return {}
    index = EvalIndex.build(tuple(sets), n)
    variants = {}
    for name, directory in corpora.items():
        words = documents = 0
        per_set: dict[str, dict[str, int]] = {}
        for doc in iter_corpus_documents(directory, "train", columns=["text"]):
            total, covered = overlapping_words(doc["text"], index)
            words += total
            documents += 1
            for set_name, shared in covered.items():
                entry = per_set.setdefault(set_name, {"words": 0, "documents": 0})
                entry["words"] += shared
                entry["documents"] += 1
        variants[name] = {"words": words, "documents": documents, "sets": per_set}
    return {"n": n, "sets": [entry.split("=", 1)[0] for entry in sets], "variants": variants}


def overlap_section(found: dict) -> list[str]:
    """The report's table: per variant and set, the documents and the share of train words."""
    if not found:
        return []
    lines = ["", "## Overlap with the evaluation sets", "",
             f"Words of each variant's train split inside a {found['n']}-gram that an evaluation set "
             "holds (lower case, punctuation removed; GPT-3's test), and the documents with any. "
             "The token budget trains on a part of the split, so this is its overlap rate, not a "
             "count of tokens trained.", "",
             "| variant | " + " | ".join(found["sets"]) + " |",
             "|---|" + "---:|" * len(found["sets"])]
    for name, entry in found["variants"].items():
        cells = []
        for set_name in found["sets"]:
            hit = entry["sets"].get(set_name, {"words": 0, "documents": 0})
            share = hit["words"] / entry["words"] if entry["words"] else 0.0
            cells.append(f"{hit['documents']:,} docs, {share:.4%} of words")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines
