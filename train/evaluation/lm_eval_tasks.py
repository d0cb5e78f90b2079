"""lm-eval-harness tasks for the local zero-shot files ``train eval --tasks`` scores, so the
same items can be scored by lm-eval-harness on an export (``train export``) and the two
compared.

Each task is written as one YAML file plus the items it is scored on as JSON lines (the same
subset ``train eval --limit N --seed S`` takes), using lm-eval-harness's own conventions, which
``train eval`` follows: ``context + delimiter + choice`` with the context's trailing whitespace
moved to the continuation, multiple-choice accuracy per character of the choice (``acc_norm``),
LAMBADA as greedy-match ``acc``, Winogrande as "which context makes the continuation most
likely" (lm-eval's multiple-input mode), BLiMP as raw log-likelihood of the good sentence after
the BOS (an empty context). The export's tokenizer prepends the document start ``</s>`` and
uses it as BOS, which is what ``train eval`` puts before every sequence.

Usage: ``lm_eval --model hf --model_args pretrained=EXPORT,dtype=float32 --include_path DIR
--tasks c4forge_copa,c4forge_piqa`` (or ``--tasks c4forge`` for the group of every task written).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Optional

import yaml

from c4forge.core.outdir import OutputKind, hook_from_env, write_directory
from c4forge.train.evaluation.evaluate import EvaluationError, load_task

FORMAT = "c4forge-lm-eval-tasks"
MANIFEST = "c4forge-lm-eval-tasks.json"
GROUP = "c4forge"


def _files(manifest: dict) -> list[str]:
    return list(manifest.get("files") or [])


TASKS_KIND = OutputKind("lm-eval task directory", MANIFEST, FORMAT, _files)


def task_name(task: str) -> str:
    return f"{GROUP}_{task}"


def _delimiter(contexts: Iterable[str], task: str) -> str:
    """lm-eval has one delimiter per task; ``train eval`` joins with a space unless the context
    already ends in whitespace, so a task must be one or the other throughout."""
    ends = {bool(c) and c[-1].isspace() for c in contexts}
    if len(ends) > 1:
        raise EvaluationError(f"{task}: some contexts end in whitespace and some do not; "
                         "lm-eval-harness needs one delimiter per task")
    return "" if ends == {True} else " "


def _config(task: str, items, data_file: str) -> dict:
    base = {"task": task_name(task), "dataset_path": "json",
            "dataset_kwargs": {"data_files": {"test": data_file}}, "test_split": "test",
            "num_fewshot": 0, "metadata": {"version": 1.0, "source": "c4forge train lm-eval-tasks"}}
    acc = [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}]
    if task == "lambada":
        # loglikelihood requests get no target_delimiter: the space goes into the target, as in
        # lm-eval's own lambada_openai.yaml
        space = _delimiter((i["context"] for i in items), task)
        return {**base, "output_type": "loglikelihood", "doc_to_text": "context",
                "doc_to_target": "{{' ' + continuation}}" if space else "continuation",
                "metric_list": acc}
    if task == "winogrande":
        options = (o for i in items for o in i["context_options"])
        return {**base, "output_type": "multiple_choice", "doc_to_text": "gold",
                "doc_to_choice": "context_options", "doc_to_target": "continuation",
                "target_delimiter": _delimiter(options, task), "metric_list": acc}
    if task == "blimp":
        return {**base, "output_type": "multiple_choice", "doc_to_text": "", "doc_to_target": 0,
                "doc_to_choice": "{{[sentence_good, sentence_bad]}}", "target_delimiter": "",
                "metric_list": acc}
    return {**base, "output_type": "multiple_choice", "doc_to_text": "query",
            "doc_to_choice": "choices", "doc_to_target": "gold",
            "target_delimiter": _delimiter((i["query"] for i in items), task),
            "metric_list": [{"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True}]}


def _rows(task: str, loaded) -> list[dict]:
    if task == "blimp":
        return [{"sentence_good": i["sentence_good"], "sentence_bad": i["sentence_bad"],
                 "phenomenon": name} for name, items in loaded.items() for i in items]
    return list(loaded)


def write_lm_eval_tasks(eval_dir: str, output: str, tasks: Iterable[str],
                        limit: Optional[int] = None, seed: int = 0, overwrite: bool = False) -> dict[str, int]:
    """Write the task directory (a new or empty directory, or with ``overwrite`` an earlier one
    whose own files alone are replaced); returns {lm-eval task name: items}."""
    tasks = list(tasks)
    final = os.path.abspath(output)  # lm-eval resolves data_files against its working directory
    counts: dict[str, int] = {}

    def fill(tmp: str) -> dict:
        files = []
        for task in tasks:
            rows = _rows(task, load_task(eval_dir, task, limit, seed))
            data_name, yaml_name = f"{task_name(task)}.jsonl", f"{task_name(task)}.yaml"
            with open(os.path.join(tmp, data_name), "w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            config = _config(task, rows, os.path.join(final, data_name))
            with open(os.path.join(tmp, yaml_name), "w", encoding="utf-8") as handle:
                yaml.safe_dump(config, handle, sort_keys=False, allow_unicode=True)
            files += [data_name, yaml_name]
            counts[task_name(task)] = len(rows)
        group = {"group": GROUP, "task": [task_name(t) for t in tasks], "metadata": {"version": 1.0}}
        with open(os.path.join(tmp, f"{GROUP}-group.yaml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(group, handle, sort_keys=False)
        files.append(f"{GROUP}-group.yaml")
        return {"format": FORMAT, "version": 1, "files": files, "tasks": counts,
                "limit": limit, "seed": seed, "eval_dir": os.path.abspath(eval_dir)}

    write_directory(output, TASKS_KIND, overwrite, fill, hook_from_env())
    return counts


__all__ = ["write_lm_eval_tasks", "task_name", "GROUP"]
