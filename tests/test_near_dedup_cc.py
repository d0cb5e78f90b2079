"""Connected components of near-duplicate links on the engine (Hash-to-Min): exact against
union-find, rounds needed by the worst case (long chains in random id order), and an
unconverged run reported, never silently wrong."""
import dataclasses
import json
import random

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import fn_runner

from c4forge.corpus.config import build_config
from c4forge.corpus.dedup.near_dedup import DEFAULT_CC_ROUNDS, clusters_in_memory
from c4forge.corpus.document import Document
from c4forge.pipelines.build import run_build
from c4forge.pipelines.c4 import connected_components
from tests.wetfiles import record, wet_file

IN_MEMORY = ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"]


def components(edges, rounds, tmp_path):
    """(labels, number of nodes still changing) of connected_components run by Beam's local
    runner."""
    out = tmp_path / f"cc-{rounds}.jsonl"
    out.unlink(missing_ok=True)

    def dump(row):
        with open(out, "a") as handle:
            handle.write(json.dumps(row) + "\n")

    with beam.Pipeline(runner=fn_runner.FnApiRunner()) as pipeline:
        labels, changed = connected_components(pipeline | beam.Create(edges), rounds)
        _ = labels | "labels" >> beam.Map(lambda kv: dump(["label", kv[0], kv[1]]))
        _ = changed | "changed" >> beam.Map(lambda n: dump(["changed", n, None]))
    found, unconverged = {}, 0
    for kind, a, b in map(json.loads, out.read_text().splitlines()):
        if kind == "label":
            found[a] = b
        else:
            unconverged += 1
    return found, unconverged


def chain(n, seed):
    ids = list(range(1000, 1000 + n))
    random.Random(seed).shuffle(ids)
    return ids, [(ids[i], ids[i + 1]) for i in range(n - 1)]


def test_random_graphs_equal_union_find(tmp_path):
    rng = random.Random(7)
    edges = set()
    for component in range(30):  # stars, cliques, chains and trees of various sizes
        nodes = rng.sample(range(component * 1000, component * 1000 + 999), rng.randint(2, 25))
        for i in range(1, len(nodes)):
            edges.add((nodes[i], nodes[rng.randrange(i)]))
    labels, unconverged = components(sorted(edges), DEFAULT_CC_ROUNDS, tmp_path)
    assert unconverged == 0
    assert labels == clusters_in_memory(edges) and len(set(labels.values())) == 30


@pytest.mark.slow
def test_worst_case_chain_converges_in_the_default_rounds(tmp_path):
    """A chain of 128 near-duplicates in random id order (diameter 127): Hash-to-Min reaches
    its fixed point within DEFAULT_CC_ROUNDS rounds (min-label propagation with pointer
    jumping, used before, had not converged after 11)."""
    ids, edges = chain(128, seed=128)
    labels, unconverged = components(edges, DEFAULT_CC_ROUNDS, tmp_path)
    assert unconverged == 0
    assert labels == {node: min(ids) for node in ids}


def test_too_few_rounds_is_reported_and_keeps_every_component(tmp_path):
    ids, edges = chain(64, seed=64)
    labels, unconverged = components(edges, 3, tmp_path)
    assert unconverged > 0  # reported as near-dedup/unconverged-nodes
    assert set(labels.values()) <= set(ids)  # labels stay inside the component
    assert labels[min(ids)] == min(ids)  # its smallest document always survives
    assert any(label != min(ids) for label in labels.values())  # ... and others may too


def test_build_warns_when_near_dedup_did_not_converge(tmp_path):
    """End to end: a chain of pages, each a near-duplicate of the next (sliding windows of one
    text), built with one round: the counter is set and the build says what to do."""
    words = [f"w{i}" for i in range(2000)]
    pages = [" ".join(words[i * 12: i * 12 + 200]) + "." for i in range(40)]
    path = tmp_path / "chain.warc.wet.gz"
    path.write_bytes(wet_file([record(f"http://chain.example/{i}", text) for i, text in enumerate(pages)]))
    cfg = build_config("c4", languages="", overrides=["clean=false", "dedupe_lines=false",
                                                     "badwords_fraction=0"])
    logged = []
    manifest = run_build([str(path)], str(tmp_path / "out"), cfg, log=logged.append,
                         beam_args=IN_MEMORY, cc_rounds=1)
    assert manifest["counters"]["near-dedup/filtered"] > 0
    assert manifest["counters"]["near-dedup/unconverged-nodes"] > 0
    assert any("--cc-rounds" in line and "did not converge" in line for line in logged)
    converged = run_build([str(path)], str(tmp_path / "out2"), cfg, log=logged.append,
                          beam_args=IN_MEMORY)
    assert "near-dedup/unconverged-nodes" not in converged["counters"]
    assert converged["counters"]["near-dedup/filtered"] >= manifest["counters"]["near-dedup/filtered"]


@pytest.mark.parametrize("batch_bytes,buckets,threshold", [(1, 3, 0.8), (1 << 22, 1, 0.8),
                                                          (4096, 16, 0.8), (4096, 16, None)])
def test_band_key_batches_give_the_one_process_edges(tmp_path, batch_bytes, buckets, threshold):
    """Band keys cross the shuffle with their page (id and signature digest), in batches per
    bucket, and the candidates of a checked bucket fetch their signatures (pipelines/c4.py
    band_edges): with a flush after every item, one bucket, or anything between, with a threshold
    or without, the edges are those of the one-process twin's band buckets (corpus/dedup/near_dedup.py).
    Two pages share an id (two crawls of one URL, URL dedup off), each near a different page:
    each keeps its own edge (fetching a signature by id alone lost one)."""
    from c4forge.corpus.dedup.minhash import MinHashConfig, MinHasher
    from c4forge.corpus.dedup.near_dedup import bucket_edges
    from c4forge.pipelines.c4 import band_edges

    rng = random.Random(7)
    words = [f"w{i}" for i in range(400)]
    base = [" ".join(rng.choice(words) for _ in range(120)) for _ in range(14)]
    texts = [t for b in base[:12] for t in (b, b + " extra words at the end", b.replace("w1", "v1", 1))]
    texts += [" ".join(rng.choice(words) for _ in range(120)) for _ in range(20)]  # no neighbours
    ids = [1000 + 7919 * i for i in range(len(texts))]  # ids are not positions
    shared = 5  # the smallest id: both crawls link their neighbours to it
    texts += [base[12], base[12] + " again", base[13], base[13] + " again"]
    ids += [shared, 99_991, shared, 99_997]
    settings = dataclasses.replace(build_config("c4").settings_of("near-dedup"), threshold=threshold)
    hasher = MinHasher(MinHashConfig())
    expected_buckets: dict[bytes, list] = {}
    for node, signature in zip(ids, hasher.signatures(texts)):
        for key in hasher.band_keys(signature):
            expected_buckets.setdefault(key, []).append((node, signature))
    expected = sorted(e for members in expected_buckets.values() for e in bucket_edges(members, threshold))
    assert len(expected) >= 12 and (99_991, shared) in expected and (99_997, shared) in expected
    out = tmp_path / "edges.jsonl"

    def dump(edge):
        with open(out, "a") as handle:
            handle.write(json.dumps(list(edge)) + "\n")

    with beam.Pipeline(runner=fn_runner.FnApiRunner()) as pipeline:
        keyed = pipeline | beam.Create([(n, Document(text=t)) for n, t in zip(ids, texts)])
        _ = (band_edges(keyed, settings, buckets, batch=5, batch_bytes=batch_bytes)
             | beam.Map(dump))
    assert sorted(tuple(e) for e in map(json.loads, out.read_text().splitlines())) == expected
