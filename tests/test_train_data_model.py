"""Packed loader and model: packing statistics, document boundaries, determinism, rank slicing,
resume position, and document-masked attention equal to running each document alone."""
import numpy as np
import pytest
import torch

from c4forge.tokenizer.formats import token_dtype, write_manifest, write_token_shard
from c4forge.train.config import ModelConfig, build_train_config
from c4forge.train.data import IGNORE, PackedLoader, TokenDocuments
from c4forge.train.models import LM, attention_mask


def token_dir(tmp_path, lengths, seed=0, vocab=97):
    rng = np.random.default_rng(seed)
    docs = [list(rng.integers(3, vocab, size=n - 1)) + [2] for n in lengths]
    write_token_shard(str(tmp_path), "train-00000-of-00001", docs, token_dtype(vocab))
    write_manifest(str(tmp_path), {
        "tokenizer": {"vocab_size": vocab}, "eos_id": 2, "dtype": token_dtype(vocab).str,
        "splits": {"train": {"documents": len(docs), "tokens": sum(lengths), "bytes": 4 * sum(lengths),
                             "shards": [{"name": "train-00000-of-00001"}]}}})
    return TokenDocuments(str(tmp_path), "train"), docs


def test_concat_packing_has_no_padding_and_restarts_positions(tmp_path):
    docs, raw = token_dir(tmp_path, [5, 40, 7, 100, 3, 60] * 5)
    loader = PackedLoader(docs, seq_len=32, batch_size=2, packing="concat", seed=1)
    stats = loader.stats()
    assert stats["real_token_share"] >= 0.99
    batch = next(iter(loader))
    assert (batch.targets != IGNORE).all()
    for row in range(2):
        ids, pos, inputs = batch.doc_ids[row], batch.positions[row], batch.input_ids[row]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        assert (pos[starts] == 0).all()
        # a new document starts right after an EOS
        assert all(inputs[s - 1] == 2 for s in starts[1:])
        assert (batch.targets[row][:-1] == inputs[1:]).all()


def test_best_fit_keeps_short_documents_whole(tmp_path):
    lengths = [5, 40, 7, 30, 3, 20, 33, 12] * 6
    docs, raw = token_dir(tmp_path, lengths)
    loader = PackedLoader(docs, seq_len=32, batch_size=1, packing="best_fit", seed=0)
    assert loader.stats()["cropped_share"] < 0.2  # only the 40-token documents are cut
    seen = []
    chunk = loader.streams[0].chunk(0, 0)
    tokens_rows, doc_rows = chunk.materialize(np.arange(chunk.rows))
    for tokens, docs_row in zip(tokens_rows, doc_rows):
        for d in np.unique(docs_row[docs_row >= 0]):
            seen.append(tokens[docs_row == d].tolist())
    whole = {tuple(d) for d in raw if len(d) <= 33}
    assert whole <= {tuple(s) for s in seen}
    assert loader.stats()["real_token_share"] > 0.7


def test_determinism_resume_and_rank_slicing(tmp_path):
    docs, _ = token_dir(tmp_path, list(range(5, 80)))
    a = PackedLoader(docs, 16, 4, seed=3)
    it = iter(a)
    first = [next(it) for _ in range(5)]
    b = PackedLoader(docs, 16, 4, seed=3)
    assert all((x.input_ids == y.input_ids).all() for x, y in zip(first, iter(b)))
    # resume from a state dict continues with the same batches
    state = PackedLoader(docs, 16, 4, seed=3)
    it2 = iter(state)
    for _ in range(3):
        next(it2)
    c = PackedLoader(docs, 16, 4, seed=3)
    c.load_state_dict(state.state_dict())
    assert (next(iter(c)).input_ids == first[3].input_ids).all()
    # two ranks with batch 2 see exactly one process's batch of 4
    r0 = next(iter(PackedLoader(docs, 16, 2, seed=3, rank=0, world_size=2)))
    r1 = next(iter(PackedLoader(docs, 16, 2, seed=3, rank=1, world_size=2)))
    assert (np.vstack([r0.input_ids, r1.input_ids]) == first[0].input_ids).all()
    # another seed, another order
    assert not (next(iter(PackedLoader(docs, 16, 4, seed=4))).input_ids == first[0].input_ids).all()


def test_attention_mask_blocks_other_documents():
    mask = attention_mask(torch.tensor([[0, 0, 1, 1, -1]]))[0, 0]
    assert mask.tolist() == [[True, False, False, False, False], [True, True, False, False, False],
                             [False, False, True, False, False], [False, False, True, True, False],
                             [False, False, False, False, True]]


def test_packed_logits_equal_each_document_alone():
    torch.manual_seed(0)
    model = LM(ModelConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=4, max_seq_len=32,
                           attention="sdpa")).eval()
    a, b = torch.randint(3, 50, (1, 7)), torch.randint(3, 50, (1, 9))
    packed = torch.cat([a, b], dim=1)
    docs = torch.tensor([[0] * 7 + [1] * 9])
    pos = torch.tensor([list(range(7)) + list(range(9))])
    with torch.no_grad():
        together = model(packed, docs, pos)
        alone_a = model(a, torch.zeros_like(a), torch.arange(7)[None])
        alone_b = model(b, torch.zeros_like(b), torch.arange(9)[None])
    torch.testing.assert_close(together[:, :7], alone_a, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(together[:, 7:], alone_b, rtol=1e-5, atol=1e-5)


def test_vocab_padding_and_loss_ignores_pads():
    model = LM(ModelConfig(vocab_size=50, d_model=32, n_layers=1, n_heads=4))
    assert model.embed.weight.shape[0] == 64
    ids = torch.randint(3, 50, (2, 8))
    targets = ids.clone()
    targets[:, 4:] = IGNORE
    loss_sum, count = model(ids, torch.zeros_like(ids), torch.arange(8).expand(2, 8), targets)
    assert int(count) == 8
    logits = model(ids, torch.zeros_like(ids), torch.arange(8).expand(2, 8))
    assert logits.shape[-1] == 50
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 50), targets.reshape(-1),
                                                 ignore_index=IGNORE, reduction="sum")
    torch.testing.assert_close(loss_sum, expected, rtol=1e-4, atol=1e-4)


def test_config_presets_and_errors():
    cfg = build_train_config(overrides=["model_preset=124M", "data.seq_len=1024", "model.vocab_size=32000"])
    assert cfg.model.d_model == 768 and cfg.model.padded_vocab == 32000
    n = LM(cfg.model).num_parameters()
    assert 100e6 < n < 140e6
    from c4forge.core.settings import ConfigError

    with pytest.raises(ConfigError, match="model_preset"):
        build_train_config(overrides=["model_preset=huge"])
    with pytest.raises(ConfigError, match="max_seq_len"):
        build_train_config(overrides=["data.seq_len=4096"])
