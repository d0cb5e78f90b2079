"""Evaluation: loss, perplexity and bits per byte on held-out data, and zero-shot tasks.

Bits per byte = (sum of token losses in nats) / ln 2 / (UTF-8 bytes of the text), which does
not depend on the tokenizer, so models with different vocabularies compare. On token shards the
text bytes come from the token manifest; every document is scored whole when it fits in a
sequence (best-fit packing, documents never see each other), each token predicted from its own
document only. A raw text file is tokenized as one document and scored in consecutive windows
of seq_len tokens (each window starts without context).

Zero-shot tasks, from local files in the formats of ../shared/data/eval:

- lambada_openai.jsonl {context, continuation}: accuracy of greedy decoding of the last word;
- piqa / arc_easy / copa .jsonl {query, choices, gold} and HellaSwag (six lines per item:
  context, gold index, four endings): the choice with the highest log-likelihood per character
  of the choice (lm-eval-harness's acc_norm);
- winogrande.jsonl {context_options, continuation, gold}: the option under which the shared
  continuation is most likely;
- BLiMP blimp/*.jsonl.gz {sentence_good, sentence_bad}: share of pairs where the good sentence
  has the higher total log-likelihood (a tie counts for it, as in lm-eval-harness).

Every sequence starts with EOS, which is what precedes a document in training. Contexts and
continuations are split into tokens as lm-eval-harness splits them, and `train lm-eval-tasks`
writes the same items as lm-eval-harness tasks, so its scores on an export equal ours
(tests/test_lm_eval.py, benchmarks/bench_lm_eval.py).
"""
from __future__ import annotations

import bz2
import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable, Sequence
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from c4forge.core import progress
from c4forge.core.errors import C4forgeError
from c4forge.core.settings import apply_settings
from c4forge.train.checkpoint import load_model, run_tokenizer
from c4forge.train.config import MaskingConfig
from c4forge.train.data import IGNORE, PackedLoader, TokenDocuments
from c4forge.train.objectives import LEFT_TO_RIGHT, MODEL_KIND, objective_for

LN2 = math.log(2)


def _tensor(array, device) -> torch.Tensor:
    return torch.from_numpy(np.array(array, dtype=np.int64)).to(device)


@torch.no_grad()
def eval_tokens(model, directory: str, split: str, seq_len: int, batch_size: int = 8,
                device: str = "cpu", max_batches: Optional[int] = None) -> dict[str, float]:
    """Loss, perplexity and (over the whole split) bits per byte of a token split."""
    docs = TokenDocuments(directory, split)
    loader = PackedLoader(docs, seq_len, batch_size, packing="best_fit", seed=0)
    total, count, complete = 0.0, 0, True
    for b, batch in enumerate(loader.epoch_batches(0)):
        if max_batches is not None and b >= max_batches:
            complete = False
            break
        loss_sum, tokens = model(_tensor(batch.input_ids, device), _tensor(batch.doc_ids, device),
                                 _tensor(batch.positions, device), _tensor(batch.targets, device))
        total += float(loss_sum)
        count += int(tokens)
    return _summary(total, count, docs.text_bytes if complete else None)


@torch.no_grad()
def eval_objective(model, objective, directory: str, split: str, seq_len: int, batch_size: int = 8,
                   device: str = "cpu", max_batches: Optional[int] = None) -> dict[str, float]:
    """The objective's own loss on a token split (masked-token loss for mlm, target loss for
    span and denoise), every sequence of one epoch once, masks fixed by the objective's seed."""
    docs = TokenDocuments(directory, split)
    loader = PackedLoader(docs, seq_len, batch_size, packing="concat", seed=0, objective=objective)
    total, count = 0.0, 0
    for b, batch in enumerate(loader.epoch_batches(0)):
        if max_batches is not None and b >= max_batches:
            break
        loss_sum, tokens = model(**{k: _tensor(v, device) for k, v in batch.items()})
        total += float(loss_sum)
        count += int(tokens)
    loss = total / max(1, count)
    return {"loss": round(loss, 5), "perplexity": round(math.exp(min(loss, 50)), 3), "tokens": count}


def _summary(total_nats: float, tokens: int, text_bytes: Optional[int]) -> dict[str, float]:
    loss = total_nats / max(1, tokens)
    out = {"loss": round(loss, 5), "perplexity": round(math.exp(min(loss, 50)), 3), "tokens": tokens}
    if text_bytes:
        out["bits_per_byte"] = round(total_nats / LN2 / text_bytes, 5)
        out["bytes"] = text_bytes
    return out


@torch.no_grad()
def eval_text(model, sp, text: str, seq_len: int, eos_id: Optional[int] = None, batch_size: int = 8,
              device: str = "cpu") -> dict[str, float]:
    """Loss and bits per byte of a raw text, in consecutive windows of seq_len tokens, after the
    end-of-document token (what precedes a document in training). ``sp``: an opened tokenizer
    (tokenizer/kinds.py); ``eos_id`` defaults to its own."""
    ids = [sp.eos_id if eos_id is None else eos_id] + sp.encode(text)
    windows = [ids[i:i + seq_len + 1] for i in range(0, len(ids) - 1, seq_len)]
    total, count = 0.0, 0
    for b in range(0, len(windows), batch_size):
        group = windows[b:b + batch_size]
        width = max(len(w) for w in group)
        tokens = np.zeros((len(group), width), dtype=np.int64)
        targets = np.full((len(group), width - 1), IGNORE, dtype=np.int64)
        for r, w in enumerate(group):
            tokens[r, :len(w)] = w
            targets[r, :len(w) - 1] = w[1:]
        inputs = tokens[:, :-1]
        positions = np.broadcast_to(np.arange(width - 1), inputs.shape)
        loss_sum, n = model(_tensor(inputs, device), torch.zeros_like(_tensor(inputs, device)),
                            _tensor(positions, device), _tensor(targets, device))
        total += float(loss_sum)
        count += int(n)
    return _summary(total, count, len(text.encode("utf-8")))


@torch.no_grad()
def continuation_logprobs(model, pairs: Sequence[tuple[list[int], list[int]]], seq_len: int,
                          eos_id: int = 2, batch_size: int = 16, device: str = "cpu"
                          ) -> list[tuple[float, bool]]:
    """(sum of log-probabilities of the continuation, greedy == continuation) per pair."""
    out: list[tuple[float, bool]] = []
    for b in range(0, len(pairs), batch_size):
        group = []
        for context, continuation in pairs[b:b + batch_size]:
            # Contexts are cut from the left to fit the window; a continuation longer than the
            # window is scored on its last seq_len tokens.
            full = ([eos_id] + list(context) + list(continuation))[-(seq_len + 1):]
            group.append((full, min(len(continuation), len(full) - 1)))
        width = max(len(f) for f, _ in group)
        tokens = np.zeros((len(group), width), dtype=np.int64)
        for r, (full, _) in enumerate(group):
            tokens[r, :len(full)] = full
        inputs = _tensor(tokens[:, :-1], device)
        positions = _tensor(np.broadcast_to(np.arange(width - 1), (len(group), width - 1)), device)
        logits = model(inputs, torch.zeros_like(inputs), positions)
        logprobs = F.log_softmax(logits.float(), dim=-1)
        for r, (full, n_cont) in enumerate(group):
            end = len(full) - 1
            span = slice(end - n_cont, end)
            target = torch.as_tensor(full[end - n_cont + 1:end + 1], device=device)
            lp = logprobs[r, span].gather(-1, target[:, None]).sum()
            greedy = bool((logprobs[r, span].argmax(-1) == target).all())
            out.append((float(lp), greedy))
    return out


def _split_pair(sp, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """Context and continuation ids as lm-eval-harness splits them (so both score the same
    tokens): trailing whitespace of the context moves to the continuation, the whole text is
    encoded once and the continuation is what follows the context's own encoding."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    ctx = sp.encode(context)
    whole = sp.encode(context + continuation)
    if len(whole) <= len(ctx):  # the continuation merged into the context's last piece
        return whole[:-1], whole[-1:]
    return ctx, whole[len(ctx):]


def _joiner(context: str) -> str:
    return "" if not context or context[-1].isspace() else " "


def read_jsonl(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_hellaswag(path: str) -> list[dict]:
    opener = bz2.open if path.endswith(".bz2") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    items = []
    for i in range(0, len(lines) - 5, 6):
        items.append({"query": lines[i], "gold": int(lines[i + 1]), "choices": lines[i + 2:i + 6]})
    return items


LN2 = math.log(2)


def _choice_metrics(accuracy: float, gold_logprobs: list[float], gold_bytes: list[int],
                    gold_probs: list[float]) -> dict[str, float]:
    """The task's accuracy with its continuous early-signal metrics (DataDecide, Magnusson et
    al. 2025): the correct answer's probability normalised over the choices, and the bits per
    byte of the correct continuation - both move long before accuracy leaves chance."""
    out = {"accuracy": accuracy}
    if gold_probs:
        out["correct_prob"] = sum(gold_probs) / len(gold_probs)
    if gold_bytes and sum(gold_bytes):
        out["correct_bits_per_byte"] = -sum(gold_logprobs) / (LN2 * sum(gold_bytes))
    return out


def _normalised(logprobs: Sequence[float], gold: int) -> float:
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    return weights[gold] / sum(weights)


def score_choices(model, sp, items: list[dict], seq_len: int, device: str) -> dict[str, float]:
    """Accuracy of the choice with the highest log-likelihood per character of the choice
    (lm-eval-harness's acc_norm: the joining space is scored but not counted), with the gold
    choice's probability normalised over the choices (from summed log-likelihoods) and its
    bits per byte (joining space included)."""
    pairs, owners = [], []
    for k, item in enumerate(items):
        join = _joiner(item["query"])
        for choice in item["choices"]:
            pairs.append(_split_pair(sp, item["query"], join + choice))
            owners.append((k, len(choice), len((join + choice).encode("utf-8"))))
    scores = continuation_logprobs(model, pairs, seq_len, eos_id=sp.eos_id, device=device)
    best: dict[int, tuple[float, int]] = {}
    per_item: dict[int, list[tuple[float, int]]] = {}
    for (k, n_chars, n_bytes), (lp, _) in zip(owners, scores):
        choice = len(per_item.setdefault(k, []))
        per_item[k].append((lp, n_bytes))
        value = lp / max(1, n_chars)
        if k not in best or value > best[k][0]:
            best[k] = (value, choice)
    accuracy = sum(best[k][1] == item["gold"] for k, item in enumerate(items)) / max(1, len(items))
    gold = [per_item[k][item["gold"]] for k, item in enumerate(items)]
    probs = [_normalised([lp for lp, _ in per_item[k]], item["gold"]) for k, item in enumerate(items)]
    return _choice_metrics(accuracy, [lp for lp, _ in gold], [n for _, n in gold], probs)


def score_lambada(model, sp, items: list[dict], seq_len: int, device: str) -> dict[str, float]:
    """Greedy last-word accuracy, with the bits per byte of the true last word."""
    conts = [_joiner(it["context"]) + it["continuation"] for it in items]
    pairs = [_split_pair(sp, it["context"], c) for it, c in zip(items, conts)]
    scores = continuation_logprobs(model, pairs, seq_len, eos_id=sp.eos_id, device=device)
    accuracy = sum(greedy for _, greedy in scores) / max(1, len(items))
    return _choice_metrics(accuracy, [lp for lp, _ in scores], [len(c.encode("utf-8")) for c in conts], [])


def score_winogrande(model, sp, items: list[dict], seq_len: int, device: str) -> dict[str, float]:
    """Partial scoring (the continuation after each option), with the gold option's probability
    normalised over the two and the continuation's bits per byte after the gold option."""
    pairs, sizes = [], []
    for item in items:
        for option in item["context_options"]:
            pairs.append(_split_pair(sp, option, _joiner(option) + item["continuation"]))
        sizes.append(len((" " + item["continuation"]).encode("utf-8")))
    scores = continuation_logprobs(model, pairs, seq_len, eos_id=sp.eos_id, device=device)
    correct, gold_lp, probs = 0, [], []
    for k, item in enumerate(items):
        options = [lp for lp, _ in scores[2 * k:2 * k + 2]]
        correct += int(max(range(2), key=lambda i: options[i]) == item["gold"])
        gold_lp.append(options[item["gold"]])
        probs.append(_normalised(options, item["gold"]))
    return _choice_metrics(correct / max(1, len(items)), gold_lp, sizes, probs)


def score_blimp(model, sp, items: list[dict], seq_len: int, device: str) -> float:
    pairs: list[tuple[list[int], list[int]]] = []
    for item in items:
        pairs.append(([], sp.encode(item["sentence_good"])))
        pairs.append(([], sp.encode(item["sentence_bad"])))
    scores = continuation_logprobs(model, pairs, seq_len, eos_id=sp.eos_id, device=device)
    # a tie counts for the good sentence, as lm-eval-harness's argmax (first of equal scores)
    return sum(scores[2 * k][0] >= scores[2 * k + 1][0] for k in range(len(items))) / max(1, len(items))


TASK_FILES = {"lambada": "lambada_openai.jsonl", "hellaswag": "hellaswag_val_full.txt.bz2",
              "piqa": "piqa.jsonl", "arc_easy": "arc_easy.jsonl", "winogrande": "winogrande.jsonl",
              "copa": "copa.jsonl", "blimp": "blimp"}


def _subset(items: list[dict], limit: Optional[int], seed: int, name: str) -> list[dict]:
    """A fixed random subset of ``limit`` items, the same for a (seed, name) whatever else runs."""
    if limit is None or len(items) <= limit:
        return items
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    return [items[i] for i in sorted(rng.choice(len(items), limit, replace=False))]


def load_task(eval_dir: str, task: str, limit: Optional[int] = None, seed: int = 0):
    """The items a task is scored on: a list, or for BLiMP {phenomenon: list} (``limit`` per
    phenomenon). ``train lm-eval-tasks`` writes these same items for lm-eval-harness."""
    if task not in TASK_FILES:
        raise EvaluationError(f"unknown task {task!r}: one of {', '.join(TASK_FILES)}")
    path = os.path.join(eval_dir, TASK_FILES[task])
    if not os.path.exists(path):
        raise EvaluationError(f"{task}: {path} not found (--eval-dir)")
    if task == "blimp":
        return {name.split(".")[0]: _subset(read_jsonl(os.path.join(path, name)), limit, seed, name)
                for name in sorted(os.listdir(path))}
    items = read_hellaswag(path) if task == "hellaswag" else read_jsonl(path)
    return _subset(items, limit, seed, task)


def chance_accuracy(task: str, items) -> float:
    """The accuracy of guessing uniformly on ``items`` of ``task`` (as :func:`load_task` returns
    them): the mean of 1/choices; 0.5 for BLiMP's pairs; 0 for LAMBADA's open-vocabulary word."""
    if task == "lambada":
        return 0.0
    if task == "blimp":
        return 0.5
    key = "context_options" if task == "winogrande" else "choices"
    return sum(1 / len(item[key]) for item in items) / max(1, len(items))


def run_tasks(model, sp, eval_dir: str, tasks: Iterable[str], seq_len: int, limit: Optional[int] = None,
              device: str = "cpu", seed: int = 0) -> dict[str, dict]:
    """{task: {accuracy, correct_prob, correct_bits_per_byte, items}} (lambada: no
    correct_prob; blimp: accuracy only); ``limit`` takes a fixed random subset of each task (BLiMP:
    per phenomenon)."""
    results: dict[str, dict] = {}
    tasks = list(tasks)
    bar = progress.bar(tasks, desc="zero-shot tasks", unit=" task")
    for task in bar:
        bar.set_postfix_str(task)
        loaded = load_task(eval_dir, task, limit, seed)
        if task == "blimp":
            per = {name: (score_blimp(model, sp, items, seq_len, device), len(items))
                   for name, items in loaded.items()}
            n = sum(c for _, c in per.values())
            results[task] = {"accuracy": round(sum(a * c for a, c in per.values()) / n, 4), "items": n,
                             "phenomena": {k: round(a, 4) for k, (a, _) in per.items()}}
            continue
        scorer = {"lambada": score_lambada, "winogrande": score_winogrande}.get(task, score_choices)
        scored = scorer(model, sp, loaded, seq_len, device)
        results[task] = {**{k: round(v, 4) for k, v in scored.items()}, "items": len(loaded)}
    return results


class EvaluationError(C4forgeError, ValueError):
    """A checkpoint, tokenizer or input that cannot be evaluated as asked."""


def score_token_directory(model, objective_name: str, objective, directory: str, split: str,
                          seq_len: int, device: str = "cpu") -> dict[str, float]:
    """A token directory's split scored as the objective allows: a causal model's loss, perplexity
    and bits per byte; a prefix LM's own loss (``prefix_lm_loss``) beside the left-to-right scores;
    other objectives their own loss (also as ``<objective>_loss``)."""
    if objective is None:
        return eval_tokens(model, directory, split, seq_len, device=device)
    own = eval_objective(model, objective, directory, split, seq_len, device=device)
    entry = {f"{objective_name}_loss": own["loss"]}
    entry.update(eval_tokens(model, directory, split, seq_len, device=device)
                 if objective_name in LEFT_TO_RIGHT else own)
    return entry


def evaluate_checkpoint(checkpoint: str, *, data: Sequence[str] = (), split: str = "validation",
                        tasks: Sequence[str] = (), eval_dir: Optional[str] = None,
                        limit: Optional[int] = None, seed: int = 0, seq_len: Optional[int] = None,
                        tokenizer_dir: Optional[str] = None, device: Optional[str] = None) -> dict:
    """Everything ``train eval`` and the ablation measure of one checkpoint: each item of ``data``
    (a token directory, scored on ``split``; or a raw text file, bits per byte) and the zero-shot
    ``tasks``. Returns ``{checkpoint, objective, seq_len, data: {item: metrics}, tasks}``."""

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model, config = load_model(checkpoint, device)
    try:
        seq_len = seq_len or config["data"]["seq_len"]
        name = config.get("objective", "causal")
        sp = run_tokenizer(checkpoint, config, tokenizer_dir)
    except (KeyError, TypeError) as exc:
        raise EvaluationError(f"{checkpoint}: its saved config lacks {exc}") from exc
    texts = [item for item in data if not os.path.isdir(item)]
    if name not in LEFT_TO_RIGHT and (texts or tasks):
        raise EvaluationError(
            f"a {name} model ({MODEL_KIND[name].replace('_', '-')}) does not score text left to "
            "right: bits per byte of text files and zero-shot tasks are for causal and prefix_lm "
            "runs; its own loss on token directories is (--data TOKDIR)")
    objective = None
    if name != "causal":
        masking = apply_settings(MaskingConfig(), config.get("masking") or {})
        objective = objective_for(name, masking, sp, 0, seq_len)
    results: dict = {"checkpoint": os.path.abspath(checkpoint), "objective": name,
                     "seq_len": seq_len, "data": {}, "tasks": {}}
    for item in data:
        try:
            if os.path.isdir(item):
                results["data"][item] = score_token_directory(
                    model, name, objective, item, split=split, seq_len=seq_len, device=device)
            else:
                with open(item, encoding="utf-8") as handle:
                    results["data"][item] = eval_text(model, sp, handle.read(), seq_len, device=device)
        except (ValueError, OSError) as exc:
            raise EvaluationError(f"{item}: {exc}") from exc
    if tasks:
        if not eval_dir:
            raise EvaluationError("zero-shot tasks need the directory of their files (--eval-dir)")
        results["tasks"] = run_tasks(model, sp, eval_dir, tasks, seq_len=seq_len, limit=limit,
                                     device=device, seed=seed)
    return results
