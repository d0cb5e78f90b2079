"""Honest GLUE (issue 28): stratified subsets keep the split's label shares, decoders mean-pool
by default, a step budget, and the reference rows (majority class, TF-IDF logistic regression,
random initialisation) computed on the same examples."""
import random
from collections import Counter

import pytest
import torch

from c4forge.train.evaluation.finetune.baselines import (
    majority_predictions,
    reference_rows,
    tfidf_predictions,
)
from c4forge.train.evaluation.finetune.glue import load_split, stratified_subset
from tests.conftest import shared_path
from tests.test_finetune import tiny_run


@pytest.mark.parametrize("size", [500, 37, 1])
def test_stratified_subsets_keep_label_shares_within_one_example(size):
    rng = random.Random(0)
    labels = [0] * 620 + [1] * 290 + [2] * 90
    rng.shuffle(labels)
    keep = stratified_subset(labels, size, seed=3)
    assert len(keep) == len(set(keep)) == size and keep == sorted(keep)
    counts = Counter(labels[i] for i in keep)
    for label, n in Counter(labels).items():
        assert abs(counts[label] - size * n / len(labels)) < 1
    assert stratified_subset(labels, size, seed=3) == keep
    if size > 1:
        assert stratified_subset(labels, size, seed=4) != keep


def test_real_sst2_subset_has_the_full_splits_label_share():
    glue = str(shared_path("eval", "glue"))
    full = [y for _, y in load_split(glue, "sst2", "train")]
    subset = [y for _, y in load_split(glue, "sst2", "train", 500)]
    assert abs(sum(subset) - 500 * sum(full) / len(full)) < 1  # the old draw was 62.4% positive
    stsb = [y for _, y in load_split(glue, "stsb", "train", 300)]
    assert len(stsb) == 300


def test_tfidf_baseline_equals_scikit_learn_called_directly():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train = ["a great film", "truly great acting", "awful plot", "an awful boring film",
             "great fun", "boring and awful"]
    labels = [1, 1, 0, 0, 1, 0]
    test = ["great plot", "boring acting", "awful fun"]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    model = LogisticRegression(max_iter=1000).fit(vectorizer.fit_transform(train), labels)
    expected = model.predict(vectorizer.transform(test)).tolist()
    assert tfidf_predictions("sst2", train, labels, test) == expected
    assert expected[0] == 1 and expected[1] == 0
    assert majority_predictions("sst2", [1, 0, 1], 4) == [1, 1, 1, 1]
    assert majority_predictions("stsb", [1.0, 2.0, 4.5], 2) == [2.5, 2.5]


def test_reference_rows_on_real_sst2_beat_majority():
    rows = reference_rows("sst2", str(shared_path("eval", "glue")), max_train=500, max_eval=300)
    assert rows["majority"]["score"] < 60  # a label prior: the validation split is ~51% positive
    assert rows["tfidf"]["score"] > rows["majority"]["score"]


def test_decoder_pooling_mean_and_last(sample_tokens, tmp_path):
    from c4forge.train.checkpoint import load_model
    from c4forge.train.evaluation.finetune.classifier import Classifier

    run = tiny_run(sample_tokens, tmp_path / "run", "causal")
    model, _ = load_model(str(run))
    sequences = [[2, 5, 6, 7], [2, 9]]
    mean = Classifier(model, 2, pooling="mean")
    last = Classifier(model, 2, pooling="last")
    last.head.load_state_dict(mean.head.state_dict())
    with torch.no_grad():
        h = model.hidden(torch.tensor([[2, 9]]), torch.zeros(1, 2, dtype=torch.long), torch.arange(2)[None])
        assert torch.allclose(mean([[2, 9]]), mean.head(h.mean(1)), atol=1e-5)
        assert torch.allclose(last([[2, 9]]), last.head(h[:, -1]), atol=1e-5)
        assert not torch.allclose(mean(sequences), last(sequences))
    with pytest.raises(ValueError, match="pooling"):
        Classifier(model, 2, pooling="cls")


def test_step_budget_and_random_init(sample_tokens, tmp_path):
    from c4forge.train.checkpoint import load_model
    from c4forge.train.evaluation.finetune.run import FinetuneConfig, finetune_task, random_init

    glue = str(shared_path("eval", "glue"))
    run = tiny_run(sample_tokens, tmp_path / "run", "causal")
    config = FinetuneConfig(lr=1e-3, epochs=1, max_train=32, max_eval=32, batch_size=16, min_steps=7)
    result = finetune_task(str(run), "sst2", glue, config, seed=0)
    assert result["steps"] == 7  # 2 steps per epoch, 1 epoch asked: the step budget wins
    pretrained, saved = load_model(str(run))
    fresh = random_init(saved)
    # the same run with no pretraining (one step at learning rate 1e-30) saves these weights
    from click.testing import CliRunner

    from c4forge.cli.train import cli

    result = CliRunner().invoke(cli, ["run", f"data.train={sample_tokens}", f"out_dir={tmp_path / 'zero'}",
                                      "data.seq_len=32", "data.batch_size=4", "model.d_model=32",
                                      "model.n_layers=1", "model.n_heads=2", "progress=false", "steps=1", "optim.lr=1e-30"])
    assert result.exit_code == 0, result.output
    zero, _ = load_model(str(tmp_path / "zero"))
    same = all(torch.allclose(a, b, rtol=0, atol=1e-20) for a, b in zip(fresh.state_dict().values(), zero.state_dict().values()))
    differs = any(not torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), pretrained.state_dict().values()))
    assert same and differs
    random_run = finetune_task(str(run), "sst2", glue, FinetuneConfig(
        lr=1e-3, epochs=1, max_train=32, max_eval=32, batch_size=16, min_steps=2, init="random"), seed=0)
    assert random_run["steps"] == 2 and random_run["validation_examples"] == 32
