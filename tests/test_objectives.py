"""The pretraining objectives on real token shards (the shared crawl through the c4 chain):
masking statistics within sampling error of each paper's settings, exact reconstruction, the
pure-python references as oracles, and determinism per (seed, sequence)."""
import math

import numpy as np
import pytest

from c4forge.train.data import PackedLoader, TokenDocuments
from c4forge.train.objectives import MLMConfig, load_vocabulary
from c4forge.train.objectives.common import IGNORE, row_rng, segments, split_eos
from c4forge.train.objectives.denoise import (
    DenoiseConfig,
    Denoising,
    apply_infilling,
    infill_spans,
    reference_infill,
)
from c4forge.train.objectives.mlm import MLM, corrupt, reference_corrupt, select
from c4forge.train.objectives.prefix_lm import PrefixLM
from c4forge.train.objectives.span import (
    SpanConfig,
    SpanCorruption,
    random_spans_noise_mask,
    reference_reconstruct,
)

SEQ = 256


@pytest.fixture(scope="module")
def crawl(crawl_tokens):
    import json

    manifest = json.load(open(f"{crawl_tokens}/manifest.json"))
    vocab = load_vocabulary(manifest["tokenizer"]["path"])
    return crawl_tokens, vocab


def epoch_rows(directory, packing="concat"):
    """Every packed row of one epoch: (tokens, docs) arrays of (rows, SEQ + 1)."""
    loader = PackedLoader(TokenDocuments(directory, "train"), SEQ, 64, packing, seed=0)
    stream = loader.streams[0]
    from c4forge.train.data.stream import expand, start_cursor

    cursor, out_t, out_d = start_cursor(0), [], []
    while True:
        segs, cursor = stream.take(cursor, 64, "epoch")
        if not segs:
            break
        t, d = stream.materialize(expand(segs))
        out_t.append(t)
        out_d.append(d)
        if cursor["epoch"] != 0:
            break
    return np.concatenate(out_t), np.concatenate(out_d)


def within(observed, expected, n, sigmas=4.0):
    """|observed - expected| within ``sigmas`` binomial standard errors of n trials."""
    se = math.sqrt(expected * (1 - expected) / n)
    return abs(observed - expected) <= sigmas * se


# ----------------------------------------------------------------------------------------- mlm

def test_mlm_statistics_on_real_shards(crawl):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    batch = MLM(vocab, MLMConfig(), seed=0)(tokens, docs, np.arange(len(tokens)))
    raw = tokens[:, :-1]
    selected = batch["targets"] != IGNORE
    ordinary = ~vocab.special[raw] & (docs[:, :-1] >= 0)
    share = selected.sum() / ordinary.sum()
    # round(15%) of every document segment's ordinary tokens: the share is 15% up to rounding
    assert abs(share - 0.15) < 0.002, share
    assert not (selected & vocab.special[raw]).any(), "a special token was selected"
    assert (batch["targets"][selected] == raw[selected]).all()
    assert (batch["input_ids"][~selected] == raw[~selected]).all(), "an unselected token changed"
    n = int(selected.sum())
    masked = (batch["input_ids"] == vocab.mask_id) & selected
    kept = (batch["input_ids"] == raw) & selected
    replaced = selected & ~masked & ~kept
    # a random replacement can draw the original token (1 in ~1,900): counted as kept
    assert within(masked.sum() / n, 0.8, n), masked.sum() / n
    assert within((replaced.sum() + kept.sum()) / n, 0.2, n)
    assert within(replaced.sum() / n, 0.1, n, sigmas=5), replaced.sum() / n
    assert not vocab.special[batch["input_ids"][replaced]].any(), "a special token was written as random"
    # attention: every row's document ids split exactly where the packed documents do
    for r in range(0, len(tokens), 7):
        assert [e - s for s, e in segments(batch["doc_ids"][r])] == [e - s for s, e in segments(docs[r, :-1])]
    assert (batch["bidirectional"] == (batch["doc_ids"] >= 0)).all()


@pytest.mark.parametrize("unit", ["word", "span"])
def test_mlm_whole_words_and_spans(crawl, unit):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    tokens, docs = tokens[:200], docs[:200]
    batch = MLM(vocab, MLMConfig(unit=unit), seed=1)(tokens, docs, np.arange(len(tokens)))
    raw = tokens[:, :-1]
    selected = batch["targets"] != IGNORE
    ordinary = ~vocab.special[raw] & (docs[:, :-1] >= 0)
    share = selected.sum() / ordinary.sum()
    assert 0.15 <= share < 0.19, share  # words are drawn until the budget is covered
    assert not (selected & vocab.special[raw]).any()
    # whole words: a selected continuation piece always has its word's start selected
    for r in range(len(raw)):
        for s, e in segments(docs[r, :-1]):
            for p in range(s + 1, e):
                if selected[r, p] and not vocab.word_start[raw[r, p]] and not vocab.special[raw[r, p - 1]]:
                    assert selected[r, p - 1], (unit, r, p)
    if unit == "span":  # SpanBERT: contiguous runs, longer than whole-word masking's
        runs = [len(run) for row in selected for run in "".join("1" if x else "0" for x in row).split("0") if run]
        assert np.mean(runs) > 2.0


def test_mlm_corruption_equals_its_reference(crawl):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    config = MLMConfig()
    for r in range(20):
        s, e = segments(docs[r])[0]
        piece = tokens[r, s:e]
        rng = row_rng(0, r, 99)
        chosen = select(piece, vocab, config, rng)
        state = rng.bit_generator.state
        inputs, targets = corrupt(piece, chosen, vocab, config, rng)
        rng.bit_generator.state = state
        draws = rng.random(len(chosen))
        n_random = int(((draws >= 0.8) & (draws < 0.9)).sum())
        picks = rng.integers(len(vocab.ordinary_ids), size=n_random)
        want = reference_corrupt(list(piece), vocab.special, vocab.mask_id, vocab.ordinary_ids, chosen, draws, picks)
        assert (list(inputs), list(targets)) == want


def test_masks_are_dynamic_and_deterministic(crawl):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    tokens, docs = tokens[:8], docs[:8]
    mlm = MLM(vocab, MLMConfig(), seed=0)
    a = mlm(tokens, docs, np.arange(8))
    b = mlm(tokens, docs, np.arange(8))
    c = mlm(tokens, docs, np.arange(8) + 10_000)  # the same rows met again in a later epoch
    d = MLM(vocab, MLMConfig(), seed=1)(tokens, docs, np.arange(8))
    assert (a["input_ids"] == b["input_ids"]).all()
    assert (a["targets"] != c["targets"]).any() and (a["targets"] != d["targets"]).any()


def test_loader_draws_new_masks_each_epoch_and_the_same_on_resume(crawl):
    directory, vocab = crawl
    docs = TokenDocuments(directory, "train")
    def make():
        return PackedLoader(docs, 64, 4, "concat", seed=0, objective=MLM(vocab, MLMConfig(), seed=0))

    loader = make()
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    after = next(it)
    again = make()
    again.load_state_dict(state)
    resumed = next(iter(again))
    assert (after["input_ids"] == resumed["input_ids"]).all() and (after["targets"] == resumed["targets"]).all()
    first_epoch = next(make().epoch_batches(0))
    second_epoch = next(make().epoch_batches(1))
    assert (first_epoch["targets"] != second_epoch["targets"]).any()


# ---------------------------------------------------------------------------------------- span

def test_span_corruption_statistics_and_exact_reconstruction(crawl):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    span = SpanCorruption(vocab, SpanConfig(), seed=0, seq_len=SEQ)
    noise_total, length_total, span_lengths = 0, 0, []
    for r in range(len(tokens)):
        rng = row_rng(0, r, 2)
        for s, e in segments(docs[r]):
            piece = tokens[r, s:e]
            state = rng.bit_generator.state
            inputs, targets = span.document(piece, rng)
            content, ended = split_eos(piece, vocab.eos_id)
            assert reference_reconstruct(list(inputs), list(targets), set(vocab.sentinels), vocab.eos_id) == list(content)
            assert (inputs[-1] == vocab.eos_id) == ended
            assert ended == (len(targets) > 0 and targets[-1] == vocab.eos_id)
            if len(content) >= 20:
                rng2 = np.random.default_rng()
                rng2.bit_generator.state = state
                noise = random_spans_noise_mask(len(content), SpanConfig(), rng2)
                assert not noise[0], "T5's mask starts with a kept span"
                noise_total += int(noise.sum())
                length_total += len(content)
                runs = "".join("1" if x else "0" for x in noise).split("0")
                span_lengths += [len(x) for x in runs if x]
                # sentinels in order, each once, in the input and in the target
                sentinels = [t for t in inputs if t in vocab.sentinels]
                assert sentinels == list(vocab.sentinels[:len(sentinels)])
                assert [t for t in targets if t in vocab.sentinels] == sentinels
    assert abs(noise_total / length_total - 0.15) < 0.005, noise_total / length_total
    assert abs(np.mean(span_lengths) - 3.0) < 3 * np.std(span_lengths) / math.sqrt(len(span_lengths)) + 0.05
    batch = span(tokens[:16], docs[:16], np.arange(16))
    assert batch["enc_ids"].shape[1] == SEQ + 1
    # the decoder input is the target shifted right within each document, behind an EOS
    for r in range(16):
        for s, e in segments(batch["dec_doc"][r]):
            assert batch["dec_ids"][r, s] == vocab.eos_id
            assert (batch["dec_ids"][r, s + 1:e] == batch["targets"][r, s:e - 1]).all()
        assert sorted(set(batch["enc_doc"][r]) - {-1}) == sorted(set(batch["dec_doc"][r]) - {-1})


def test_span_needs_sentinels(crawl):
    import dataclasses

    from c4forge.train.objectives import ObjectiveError

    _, vocab = crawl
    with pytest.raises(ObjectiveError, match="sentinels"):
        SpanCorruption(dataclasses.replace(vocab, sentinels=()), SpanConfig())
    with pytest.raises(ObjectiveError, match="sentinels"):
        SpanCorruption(dataclasses.replace(vocab, sentinels=vocab.sentinels[:10]), SpanConfig(), seq_len=1024)


# ------------------------------------------------------------------------------------- denoise

def test_bart_denoising_targets_are_the_original_documents(crawl):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    denoise = Denoising(vocab, DenoiseConfig(), seed=0)
    masked_share, lengths = [], []
    for r in range(len(tokens)):
        rng = row_rng(0, r, 4)
        for s, e in segments(docs[r]):
            piece = tokens[r, s:e]
            inputs, targets = denoise.document(piece, rng)
            assert list(targets) == list(piece), "the decoder target is the original document"
            content, _ = split_eos(piece, vocab.eos_id)
            if len(content) >= 50:
                spans = infill_spans(len(content), DenoiseConfig(), np.random.default_rng(r))
                masked_share.append(sum(n for _, n in spans) / len(content))
                lengths += [n for _, n in spans]
                assert list(apply_infilling(content, spans, vocab.mask_id)) == reference_infill(
                    list(content), spans, vocab.mask_id)
    assert abs(np.mean(masked_share) - 0.3) < 0.01, np.mean(masked_share)
    assert 2.3 < np.mean(lengths) < 3.1  # Poisson(3), the budget's last span cut short
    # the input holds the document's tokens minus the masked ones, sentences reordered
    batch = denoise(tokens[:8], docs[:8], np.arange(8))
    assert (batch["targets"][batch["dec_doc"] >= 0] != IGNORE).all()
    perm = DenoiseConfig(mask_ratio=0.3, permute_sentences=True)
    from c4forge.train.objectives.denoise import permute_sentences

    content = split_eos(tokens[0, :SEQ], vocab.eos_id)[0]
    shuffled = permute_sentences(content, vocab.sentence_end, np.random.default_rng(0))
    assert sorted(shuffled) == sorted(content) and perm.permute_sentences


# ----------------------------------------------------------------------------------- prefix LM

def test_prefix_lm_predicts_only_after_the_prefix(crawl):
    directory, vocab = crawl
    tokens, docs = epoch_rows(directory)
    tokens, docs = tokens[:32], docs[:32]
    batch = PrefixLM(seed=0)(tokens, docs, np.arange(32))
    from c4forge.train.data import rows_to_batch

    causal = rows_to_batch(tokens, docs)
    prefix_shares = []
    for r in range(32):
        for s, e in segments(batch["doc_ids"][r]):
            bid = batch["bidirectional"][r, s:e]
            k = int(bid.sum())
            if e - s >= 2:
                assert 1 <= k <= e - s - 1 and bid[:k].all(), "the prefix is a contiguous start"
                # no loss inside the prefix except the prediction of the first token after it
                assert (batch["targets"][r, s:s + k - 1] == IGNORE).all()
                assert (batch["targets"][r, s + k - 1:e] == causal.targets[r, s + k - 1:e]).all()
                prefix_shares.append(k / (e - s))
    assert 0.35 < np.mean(prefix_shares) < 0.65  # uniform prefix length


def test_t5_noise_mask_equals_the_line_by_line_reference():
    from c4forge.train.objectives.span import reference_noise_mask

    for length in [1, 2, 3, 7, 20, 100, 513]:
        for seed in range(5):
            rng = np.random.default_rng(seed)
            mask = random_spans_noise_mask(length, SpanConfig(), rng)
            # replay the two permutations T5 shuffles
            replay = np.random.default_rng(seed)
            n = max(length, 2)
            noise = min(max(int(round(n * 0.15)), 1), n - 1)
            spans = max(int(round(noise / 3.0)), 1)
            noise_firsts = list(replay.permutation(np.arange(noise - 1) < spans - 1))
            keep_firsts = list(replay.permutation(np.arange(n - noise - 1) < spans - 1))
            assert list(mask) == reference_noise_mask(length, 0.15, 3.0, noise_firsts, keep_firsts)
            assert len(mask) == length


def test_prefix_lm_equals_its_reference_on_whole_documents(crawl):
    from c4forge.train.objectives.prefix_lm import reference_prefix_targets

    directory, _ = crawl
    docs = TokenDocuments(directory, "train")
    for k in range(10):
        doc = docs.document(k)[:100]
        row = np.array([doc.tolist()]), np.zeros((1, len(doc)), dtype=np.int64)
        batch = PrefixLM(seed=0)(row[0], row[1], np.array([k]))
        prefix = int(batch["bidirectional"][0].sum())
        targets, bidirectional = reference_prefix_targets(doc.tolist(), prefix)
        assert batch["targets"][0].tolist() == targets
        assert batch["bidirectional"][0].astype(bool).tolist() == bidirectional


def test_every_objective_implements_the_protocol_and_returns_one_batch_type(crawl):
    """Every registered objective is an Objective (name, model kind, rows -> Batch), and every
    batch from the loader - the causal fast path included - is the one Batch type."""
    from c4forge.train.config import MaskingConfig
    from c4forge.train.data import Batch
    from c4forge.train.objectives import MODEL_KIND, OBJECTIVES, build_objective
    from c4forge.train.objectives.common import Objective

    directory, vocab = crawl
    assert set(MODEL_KIND.values()) <= {"decoder", "encoder", "encoder_decoder"}
    tokens, doc_rows = epoch_rows(directory)
    sequences = np.arange(4)
    for name, cls in OBJECTIVES.items():
        assert cls.name == name
        objective = build_objective(name, MaskingConfig(), vocab, seed=0, seq_len=tokens.shape[1] - 1)
        assert isinstance(objective, Objective)
        batch = objective(tokens[:4], doc_rows[:4], sequences)
        assert type(batch) is Batch, name
        assert batch.target_tokens == int((batch["targets"] != IGNORE).sum()) > 0
    plain = next(iter(PackedLoader(TokenDocuments(directory, "train"), 32, 2, "concat", seed=0)))
    assert type(plain) is Batch and set(plain) == {"input_ids", "targets", "doc_ids", "positions"}
    assert plain.input_ids is plain["input_ids"]
