"""GLUE's official metrics as pure functions (tested against scikit-learn and scipy), and the
GLUE average as T5 computes it: the mean of per-task scores, where a task with two metrics
(MRPC: F1 and accuracy; STS-B: Pearson and Spearman) is first averaged over them."""
from __future__ import annotations

import math
from collections.abc import Sequence


def accuracy(labels: Sequence[int], predictions: Sequence[int]) -> float:
    return sum(int(a == b) for a, b in zip(labels, predictions)) / max(1, len(labels))


def f1_binary(labels: Sequence[int], predictions: Sequence[int], positive: int = 1) -> float:
    tp = sum(1 for a, b in zip(labels, predictions) if a == positive and b == positive)
    fp = sum(1 for a, b in zip(labels, predictions) if a != positive and b == positive)
    fn = sum(1 for a, b in zip(labels, predictions) if a == positive and b != positive)
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """Matthews correlation of two binary labelings (0 when a marginal is constant, as sklearn)."""
    tp = sum(1 for a, b in zip(labels, predictions) if a == 1 and b == 1)
    tn = sum(1 for a, b in zip(labels, predictions) if a == 0 and b == 0)
    fp = sum(1 for a, b in zip(labels, predictions) if a == 0 and b == 1)
    fn = sum(1 for a, b in zip(labels, predictions) if a == 1 and b == 0)
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / denominator


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return 0.0 if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties given their average rank (as scipy.stats.rankdata)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    return pearson(ranks(x), ranks(y))


def task_metrics(task: str, labels, predictions) -> dict[str, float]:
    """The official metrics of one GLUE task, as percentages like GLUE's leaderboard."""
    if task == "cola":
        out = {"mcc": matthews(labels, predictions)}
    elif task == "mrpc":
        out = {"f1": f1_binary(labels, predictions), "accuracy": accuracy(labels, predictions)}
    elif task == "stsb":
        out = {"pearson": pearson(labels, predictions), "spearman": spearman(labels, predictions)}
    else:
        out = {"accuracy": accuracy(labels, predictions)}
    return {k: 100 * v for k, v in out.items()}


def task_score(metrics: dict[str, float]) -> float:
    """One number per task: the mean of its metrics (T5's convention)."""
    return sum(metrics.values()) / len(metrics)


def glue_average(scores: dict[str, float]) -> float:
    """T5's GLUE average over the tasks given (per-task scores from :func:`task_score`)."""
    return sum(scores.values()) / max(1, len(scores))
