"""The reference rows every GLUE table needs, computed on the same training and validation
examples as the fine-tuned models (issue 28): a fine-tuned score means something only next to
what no language model at all reaches.

- majority: the training split's most frequent label for every validation example (STS-B: the
  mean training score, whose correlations are undefined and scored 0);
- tfidf: a TF-IDF bag of words and bigrams with logistic regression (STS-B: ridge regression),
  scikit-learn's defaults otherwise - a strong no-pretraining text baseline;
- random init: the same model fine-tuned from its initial weights is ``FinetuneConfig(init=
  "random")`` in run.py, since it needs the checkpoint.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from c4forge.train.evaluation.finetune.glue import TASKS, load_split
from c4forge.train.evaluation.finetune.metrics import task_metrics, task_score


def majority_predictions(task: str, train_labels: Sequence[float], n: int) -> list[float]:
    if TASKS[task].num_labels == 1:
        mean = sum(train_labels) / len(train_labels)
        return [mean] * n
    label = Counter(train_labels).most_common(1)[0][0]
    return [label] * n


def tfidf_predictions(task: str, train_texts: Sequence[str], train_labels: Sequence[float],
                      texts: Sequence[str]) -> list[float]:
    from sklearn.feature_extraction.text import (
        TfidfVectorizer,  # lazy: scikit-learn (0.95 s to import), only for the TF-IDF reference row
    )
    from sklearn.linear_model import (  # lazy: scikit-learn (0.95 s to import), only for the TF-IDF reference row
        LogisticRegression,
        Ridge,
    )

    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    x = vectorizer.fit_transform(train_texts)
    if TASKS[task].num_labels == 1:
        model = Ridge(alpha=1.0).fit(x, train_labels)
        return [float(v) for v in model.predict(vectorizer.transform(texts))]
    model = LogisticRegression(max_iter=1000).fit(x, [int(y) for y in train_labels])
    return [int(v) for v in model.predict(vectorizer.transform(texts))]


def reference_rows(task: str, glue_dir: str, max_train=None, max_eval=None, seed: int = 0) -> dict:
    """{"majority": {...}, "tfidf": {...}}: metrics and score of each baseline on the same
    (stratified) subsets the fine-tuning runs use."""
    train = load_split(glue_dir, task, "train", max_train, seed)
    val = load_split(glue_dir, task, "validation", max_eval, seed)
    labels = [y for _, y in val]
    out = {}
    for name, predictions in (
            ("majority", majority_predictions(task, [y for _, y in train], len(val))),
            ("tfidf", tfidf_predictions(task, [t for t, _ in train], [y for _, y in train], [t for t, _ in val]))):
        metrics = task_metrics(task, labels, predictions)
        out[name] = {"metrics": metrics, "score": task_score(metrics)}
    return out
