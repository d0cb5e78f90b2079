"""The scalable data path (train.data): equal to the in-memory reference loader on real token
shards for both packings, several seeds and 1/2/3 ranks; exact resume at arbitrary points (also
with prefetch); resume on another number of ranks; mixtures; memory that does not grow with a
per-document Python index."""
import json
import threading
import tracemalloc

import numpy as np
import pytest

from c4forge.tokenizer.formats import read_token_manifest, token_dtype, write_manifest, write_token_shard
from c4forge.train.config import ConfigError, build_train_config
from c4forge.train.data import (
    LoaderStateError,
    MixtureError,
    NotEnoughData,
    PackedLoader,
    TokenDocuments,
    mixture_entries,
)
from c4forge.train.data.prefetch import prefetch
from tests.reference_loader import ReferenceLoader

FIELDS = ("input_ids", "targets", "doc_ids", "positions")


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def write_dir(path, docs, manifest_from, shards=1):
    """A token directory holding ``docs`` (lists of ids) in ``shards`` shards, with the
    tokenizer block of ``manifest_from``."""
    path.mkdir(parents=True, exist_ok=True)
    base = read_token_manifest(manifest_from)
    dtype = np.dtype(base["dtype"])
    entries = []
    bounds = np.linspace(0, len(docs), shards + 1).astype(int)
    for i in range(shards):
        name = f"train-{i:05d}-of-{shards:05d}"
        write_token_shard(str(path), name, docs[bounds[i]:bounds[i + 1]], dtype)
        entries.append({"name": name})
    tokens = sum(len(d) for d in docs)
    write_manifest(str(path), {"tokenizer": base["tokenizer"], "eos_id": base["eos_id"],
                               "dtype": dtype.str, "splits": {"train": {
                                   "documents": len(docs), "tokens": tokens, "bytes": 3 * tokens,
                                   "shards": entries}}})
    return str(path)


@pytest.fixture(scope="module")
def real_docs(sample_tokens):
    docs = TokenDocuments(sample_tokens, "train")
    return [docs.document(k).tolist() for k in range(len(docs))]


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, sample_tokens, real_docs):
    """The sample's real token ids split over 3 shards (the loader numbers documents across them)."""
    return write_dir(tmp_path_factory.mktemp("sharded"), real_docs, sample_tokens, shards=3)


def reference(docs, seq_len, batch, packing, seed, rank=0, world=1, chunk=16):
    return ReferenceLoader(docs, seq_len, batch, packing, seed=seed, rank=rank, world_size=world,
                           best_fit_buffer=chunk)


@pytest.mark.parametrize("packing,seq_len,chunk", [("concat", 32, 16), ("concat", 160, 16),
                                                   ("best_fit", 160, 16), ("best_fit", 160, 5),
                                                   ("best_fit", 96, 100_000)])
def test_equals_the_reference_loader_over_several_epochs(sharded, packing, seq_len, chunk):
    docs = TokenDocuments(sharded, "train")
    assert len(docs.shards) == 3
    for seed in (0, 1, 7):
        for world in (1, 2, 3):
            per_epoch = reference(docs, seq_len, 2, packing, seed, world=world, chunk=chunk).batches_per_epoch()
            count = int(per_epoch * 2.5) + 1  # into the third epoch
            for rank in range(world):
                ours = PackedLoader(docs, seq_len, 2, packing, seed=seed, rank=rank, world_size=world,
                                    chunk_docs=chunk)
                theirs = reference(docs, seq_len, 2, packing, seed, rank, world, chunk)
                for i, (a, b) in enumerate(zip(ours, theirs)):
                    if i == count:
                        break
                    assert same(a, b), (seed, world, rank, i)
                assert ours.epoch == 2
    # evaluation's one pass over an epoch: every sequence once, the last batch smaller
    ours = list(PackedLoader(docs, seq_len, 3, packing, chunk_docs=chunk).epoch_batches(0))
    theirs = list(reference(docs, seq_len, 3, packing, 0, chunk=chunk).epoch_batches(0))
    assert len(ours) == len(theirs) and all(same(a, b) for a, b in zip(ours, theirs))


@pytest.mark.parametrize("packing", ["concat", "best_fit"])
def test_statistics_equal_the_reference(sharded, packing):
    docs = TokenDocuments(sharded, "train")
    ours = PackedLoader(docs, 96, 2, packing, seed=3, chunk_docs=10).stats(max_chunks=None)
    theirs = reference(docs, 96, 2, packing, 3, chunk=10).stats()
    assert ours["estimated"] is False
    for key in ("real_token_share", "cropped_share", "sequences"):
        assert ours[key] == pytest.approx(theirs[key], rel=1e-12), key


@pytest.mark.parametrize("packing", ["concat", "best_fit"])
@pytest.mark.parametrize("depth", [0, 3])
def test_resume_at_arbitrary_points_equals_the_uninterrupted_stream(sharded, packing, depth):
    docs = TokenDocuments(sharded, "train")
    def make():
        return PackedLoader(docs, 64, 3, packing, seed=5, chunk_docs=7, prefetch=depth)

    stream = make()
    expected = [b for b, _ in zip(stream, range(150))]
    for stop in (1, 17, 60, 149):
        first = make()
        it = iter(first)
        for _ in range(stop):
            next(it)
        state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint stores
        it.close()
        resumed = make()
        resumed.load_state_dict(state)
        assert not resumed.notice
        for i, batch in zip(range(stop, 150), resumed):
            assert same(batch, expected[i]), (stop, i)


def test_the_state_counts_handed_out_batches_not_prefetched_ones(sharded):
    docs = TokenDocuments(sharded, "train")
    loader = PackedLoader(docs, 32, 2, seed=1, prefetch=4)
    it = iter(loader)
    next(it)
    next(it)
    assert loader.sequences == 4  # the thread made up to 4 more, they do not count
    it.close()


@pytest.mark.parametrize("packing", ["concat", "best_fit"])
def test_resume_on_another_number_of_ranks(sharded, packing):
    docs = TokenDocuments(sharded, "train")
    two = [PackedLoader(docs, 64, 2, packing, seed=2, rank=r, world_size=2, chunk_docs=9) for r in range(2)]
    iters = [iter(x) for x in two]
    for _ in range(11):
        for it in iters:
            next(it)
    state = two[0].state_dict()
    assert state == two[1].state_dict()  # one position, whatever the rank
    single = PackedLoader(docs, 64, 4, packing, seed=2, chunk_docs=9)
    expected = [b for b, _ in zip(single, range(16))]
    # 2 ranks x 2 -> 1 rank x 4: the same global batch, the same batches
    one = PackedLoader(docs, 64, 4, packing, seed=2, chunk_docs=9)
    one.load_state_dict(state)
    assert one.notice == ""
    for i, batch in zip(range(11, 16), one):
        assert same(batch, expected[i])
    # 2 ranks x 2 -> 3 ranks x 2: another global batch, said so, continues at sequence 44
    rows = PackedLoader(docs, 64, 1, packing, seed=2, chunk_docs=9)  # one sequence per batch
    by_row = [b for b, _ in zip(rows, range(50))]
    three = [PackedLoader(docs, 64, 2, packing, seed=2, rank=r, world_size=3, chunk_docs=9) for r in range(3)]
    for loader in three:
        loader.load_state_dict(state)
        assert "global batch changed from 4 to 6" in loader.notice
    firsts = [next(iter(x)) for x in three]
    got = np.vstack([b.input_ids for b in firsts])
    assert np.array_equal(got, np.vstack([b.input_ids for b in by_row[44:50]]))
    assert three[0].sequences == 50


def test_old_checkpoint_positions(sharded):
    docs = TokenDocuments(sharded, "train")
    old = reference(docs, 32, 2, "concat", 4, world=2)
    per_epoch = old.batches_per_epoch()
    v1 = {"epoch": 1, "next_batch": 7, "seed": 4, "world_size": 2, "batch_size": 2}
    ours = PackedLoader(docs, 32, 4, "concat", seed=4)
    ours.load_state_dict(v1)
    assert ours.sequences == (per_epoch + 7) * 4
    whole = reference(docs, 32, 4, "concat", 4)
    expected = [b for b, _ in zip(whole, range(per_epoch + 9))]
    assert same(next(iter(ours)), expected[per_epoch + 7])
    with pytest.raises(LoaderStateError, match="best_fit packing differs"):
        PackedLoader(docs, 32, 4, "best_fit", seed=4).load_state_dict(v1)


def test_a_position_for_other_data_or_packing_is_refused(sharded, sample_tokens, two_sources):
    docs = TokenDocuments(sharded, "train")
    loader = PackedLoader(docs, 32, 2, "concat")
    next(iter(loader))
    state = loader.state_dict()
    with pytest.raises(LoaderStateError, match="seq_len=32, now 64"):
        PackedLoader(docs, 64, 2, "concat").load_state_dict(state)
    with pytest.raises(LoaderStateError, match="packing='concat', now 'best_fit'"):
        PackedLoader(docs, 32, 2, "best_fit").load_state_dict(state)
    moved = TokenDocuments(sample_tokens, "train")  # the same documents elsewhere: fine
    PackedLoader(moved, 32, 2, "concat").load_state_dict(state)
    with pytest.raises(LoaderStateError, match="resume with the same data.train"):
        PackedLoader(TokenDocuments(two_sources[0], "train"), 32, 2, "concat").load_state_dict(state)


def test_too_little_data_for_one_global_batch_is_one_clear_error(tmp_path, sample_tokens, real_docs):
    small = write_dir(tmp_path / "small", real_docs[:2], sample_tokens)
    loader = PackedLoader(TokenDocuments(small, "train"), 64, 64)
    with pytest.raises(NotEnoughData, match="fewer sequences than one global batch of 64"):
        next(iter(loader))


@pytest.fixture(scope="module")
def two_sources(tmp_path_factory, sample_tokens, real_docs):
    """Two real token directories with one tokenizer: even and odd documents of the sample."""
    root = tmp_path_factory.mktemp("mix")
    return (write_dir(root / "a", real_docs[0::2], sample_tokens, shards=2),
            write_dir(root / "b", real_docs[1::2], sample_tokens))


@pytest.mark.parametrize("packing", ["concat", "best_fit"])
def test_a_mixture_hits_its_weights_and_reads_each_source_in_order(two_sources, packing):
    a, b = (TokenDocuments(p, "train") for p in two_sources)
    loader = PackedLoader([a, b], 48, 8, packing, seed=11, weights=[0.8, 0.2], chunk_docs=6)
    batches, total = 500, 500 * 8
    plans = []
    state = loader.state_dict()
    for _ in range(batches):
        (slots, rows), state = loader._plan(state)
        plans.append((slots, rows))
    slots = np.concatenate([p[0] for p in plans])
    share = (slots == 0).mean()
    assert abs(share - 0.8) < 4 * np.sqrt(0.8 * 0.2 / total)  # within 4 standard errors
    # each source's rows are that source's own stream, in order, across its epochs
    for j, docs in enumerate((a, b)):
        alone = PackedLoader(docs, 48, 1, packing, seed=11, chunk_docs=6)
        got = np.concatenate([p[1][p[0] == j] for p in plans])
        segments, _ = alone.streams[0].take({"epoch": 0, "chunk": 0, "row": 0}, len(got), "stream")
        from c4forge.train.data.stream import expand
        assert np.array_equal(got, expand(segments))
        assert got[-1, 0] >= 1  # ran into a later epoch of that source
    # the batches themselves: resume in the middle equals the uninterrupted mixture
    first = [x for x, _ in zip(PackedLoader([a, b], 48, 8, packing, seed=11, weights=[0.8, 0.2],
                                            chunk_docs=6), range(40))]
    part = PackedLoader([a, b], 48, 8, packing, seed=11, weights=[0.8, 0.2], chunk_docs=6)
    it = iter(part)
    for _ in range(23):
        next(it)
    again = PackedLoader([a, b], 48, 8, packing, seed=11, weights=[0.8, 0.2], chunk_docs=6)
    again.load_state_dict(part.state_dict())
    assert all(same(x, first[i]) for i, x in zip(range(23, 40), again))


def test_mixture_settings(two_sources, tmp_path, sample_tokens, real_docs):
    a, b = two_sources
    assert mixture_entries(a) == [(a, 1.0)]
    assert mixture_entries(f"{a}@4,{b}@1") == [(a, 0.8), (b, 0.2)]
    assert mixture_entries([{"path": a, "weight": 3}, f"{b}@1"]) == [(a, 0.75), (b, 0.25)]
    for bad, message in ((f"{a}@0", "weight must be > 0"), (f"{a}@x", "not a number"),
                         ([a, a], "names a directory twice"), ([{"weight": 1}], "give path")):
        with pytest.raises(MixtureError, match=message):
            mixture_entries(bad)
    config = build_train_config(overrides=[f"data.train={a}@0.7,{b}@0.3"])
    assert mixture_entries(config.data.train)[1] == (b, pytest.approx(0.3))
    with pytest.raises(ConfigError, match="weight must be > 0"):
        build_train_config(overrides=[f"data.train={a}@-1"])
    # another tokenizer: refused, naming both directories
    other = write_dir(tmp_path / "other", real_docs[:20], sample_tokens)
    manifest = json.loads((tmp_path / "other" / "manifest.json").read_text())
    manifest["tokenizer"]["model_sha256"] = "0" * 64
    (tmp_path / "other" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="different tokenizers"):
        PackedLoader([TokenDocuments(a, "train"), TokenDocuments(other, "train")], 32, 2)


def test_prefetch_keeps_order_raises_where_the_source_failed_and_stops():
    def source():
        yield from range(5)
        raise RuntimeError("boom at 5")

    got = []
    with pytest.raises(RuntimeError, match="boom at 5"):
        for item in prefetch(source(), 2):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]
    before = threading.active_count()
    it = prefetch(iter(range(10 ** 9)), 2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()
    for _ in range(50):
        if threading.active_count() <= before:
            break
        threading.Event().wait(0.05)
    assert threading.active_count() <= before


def test_memory_does_not_hold_the_epoch_or_a_python_index(tmp_path):
    """200,000 documents, 6M tokens: building the loader, its epoch and a batch allocates about
    the per-document arrays (order, lengths, cumulative lengths: 16 bytes per document), not
    tens of bytes per token as the in-memory loader did."""
    rng = np.random.default_rng(0)
    n = 200_000
    lengths = rng.integers(2, 60, size=n)
    directory = tmp_path / "big"
    directory.mkdir()
    offsets = np.zeros(n + 1, dtype="<u8")
    np.cumsum(lengths, out=offsets[1:])
    rng.integers(3, 500, size=int(offsets[-1]), dtype=np.uint16).tofile(directory / "train-00000-of-00001.bin")
    offsets.tofile(directory / "train-00000-of-00001.idx")
    write_manifest(str(directory), {"tokenizer": {"vocab_size": 500}, "eos_id": 2,
                                    "dtype": token_dtype(500).str, "splits": {"train": {
                                        "documents": n, "tokens": int(offsets[-1]), "bytes": 1,
                                        "shards": [{"name": "train-00000-of-00001"}]}}})
    for packing in ("concat", "best_fit"):
        tracemalloc.start()
        loader = PackedLoader(TokenDocuments(str(directory), "train"), 1024, 8, packing)
        batch = next(iter(loader))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert batch.input_ids.shape == (8, 1024)
        assert peak < 40 * n, (packing, peak)  # the old loader: about 60 bytes per *token*


def test_train_run_on_a_mixture(two_sources, tmp_path):
    from c4forge.train.trainer import train

    a, b = two_sources
    out = tmp_path / "run"
    said = []
    last = train(build_train_config(overrides=[
        f"data.train={a}@0.7,{b}@0.3", f"out_dir={out}", "data.seq_len=32", "data.batch_size=4",
        "model.d_model=32", "model.n_layers=1", "model.n_heads=2", "progress=false", "steps=3",
        "data.packing=best_fit", "data.best_fit_chunk=8"]), log=said.append)
    assert last["step"] == 3 and np.isfinite(last["loss"]) and last["tokens"] == 3 * 4 * 32
    assert "2 sources" in said[0] and "% real tokens" in said[0]  # rounded, for people
