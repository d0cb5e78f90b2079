"""Near-dedup quality and signature speed: c4forge MinHash vs datasketch, in one run.

Quality: real pages from ../shared/data/crawl (>= 100 words) each get one planted copy with a
random share (uniform 1-30%) of its words edited (replaced, deleted or inserted). Ground truth is
the exact Jaccard of 5-gram shingle sets for ALL pairs (sparse matrix product): the pairs with
J >= 0.8, and their connected components, which is what any clustering dedup computes when its
similarity test is exact. Reported per method, against that exact clustering:

- removed documents: precision and recall of the set of documents dropped (every method keeps
  the smallest id of each cluster, so the sets compare directly) - what a user cares about;
- cluster pairs: precision and recall of the pairs of documents put in one cluster.

- c4forge: 14 bands x 8 rows, candidates verified by signature agreement >= 0.8 (the default);
- c4forge, pure LSH: the same bands, every candidate pair linked (FineWeb's behaviour);
- datasketch MinHashLSH(threshold=0.8, num_perm=112): its own band/row choice, same shingles.

Speed: signatures of 2 KB documents at 112 permutations. c4forge is timed including
normalisation and shingling; datasketch's MinHash.bulk (its fastest path) is timed on shingles
prepared beforehand, and again including its Python shingling.

Run: .venv-bench/bin/python benchmarks/bench_dedup.py (`make bench` makes .venv-bench with the [bench]
extra, datasketch included; or `pip install datasketch==2.0.0` into .venv)
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c4forge.corpus.minhash import MinHashConfig, MinHasher, match_probability, normalize, shingle_set
from c4forge.corpus.near_dedup import bucket_edges, clusters_in_memory
from c4forge.corpus.wet import iter_documents

THRESHOLD = 0.8
# datasketch 2.0 changed its default permutation scheme; name it so results stay comparable.
# "affine32" is the same family c4forge uses: (a * h + b) mod 2^32, a odd, on a mixed hash.
SCHEME = "affine32"


def load_texts(crawl: Path, min_words: int = 100):
    texts = []
    for path in sorted(crawl.glob("*.wet.gz")):
        texts.extend(d.text for d in iter_documents(str(path)))
    return [t for t in texts if len(normalize(t).split()) >= min_words]


def plant_copy(text: str, rng: random.Random) -> tuple:
    words = text.split()
    fraction = rng.uniform(0.01, 0.30)
    for _ in range(max(1, round(fraction * len(words)))):
        i = rng.randrange(len(words))
        op = rng.random()
        if op < 0.5:
            words[i] = f"edit{rng.randrange(10**6)}"
        elif op < 0.75 and len(words) > 10:
            del words[i]
        else:
            words.insert(i, f"added{rng.randrange(10**6)}")
    return " ".join(words), fraction


def exact_pairs(texts, threshold):
    """All pairs with exact shingle Jaccard >= threshold, via a sparse A @ A.T."""
    from scipy import sparse

    vocab = {}
    rows, cols = [], []
    sizes = []
    for i, text in enumerate(texts):
        shingles = shingle_set(text)
        sizes.append(len(shingles))
        for s in shingles:
            rows.append(i)
            cols.append(vocab.setdefault(s, len(vocab)))
    matrix = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                               shape=(len(texts), len(vocab)))
    inter = (matrix @ matrix.T).tocoo()
    sizes = np.array(sizes)
    pairs = set()
    for i, j, n in zip(inter.row, inter.col, inter.data):
        if i < j and n / (sizes[i] + sizes[j] - n) >= threshold:
            pairs.add((int(i), int(j)))
    return pairs


def cluster_pairs(labels):
    groups = {}
    for node, root in labels.items():
        groups.setdefault(root, []).append(node)
    return {tuple(sorted(p)) for members in groups.values() for p in combinations(members, 2)}


def c4forge_labels(texts, threshold):
    hasher = MinHasher(MinHashConfig(threshold=threshold))
    signatures = hasher.signatures(texts)
    buckets = {}
    for i, signature in enumerate(signatures):
        for key in hasher.band_keys(signature):
            buckets.setdefault(key, []).append((i, signature))
    edges = [e for members in buckets.values() for e in bucket_edges(members, threshold)]
    return clusters_in_memory(edges)


def datasketch_labels(texts):
    from datasketch import MinHash, MinHashLSH

    shingles = [[" ".join(s).encode("utf-8") for s in shingle_set(t)] for t in texts]
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=112)
    hashes = MinHash.bulk(shingles, num_perm=112, scheme=SCHEME)
    for i, m in enumerate(hashes):
        lsh.insert(i, m)
    edges = [(j, i) for i, m in enumerate(hashes) for j in lsh.query(m) if j != i]
    return clusters_in_memory((max(a, b), min(a, b)) for a, b in edges), lsh.b, lsh.r


def removed(labels):
    return {node for node, root in labels.items() if node != root}


def precision_recall(predicted, truth):
    hits = len(predicted & truth)
    precision = hits / len(predicted) if predicted else 1.0
    recall = hits / len(truth) if truth else 1.0
    return precision, recall


def speed(texts, repeat=3):
    from datasketch import MinHash

    docs = [t.encode("utf-8")[:2048].decode("utf-8", "ignore") for t in texts
            if len(t.encode("utf-8")) >= 2048]
    docs = (docs * (5000 // max(1, len(docs)) + 1))[:5000]
    hasher = MinHasher()
    hasher.signatures(docs[:50])

    def best(fn):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return len(docs) / min(times)

    prepared = [[" ".join(s).encode("utf-8") for s in shingle_set(t)] for t in docs]
    ours = best(lambda: hasher.signatures(docs))
    bulk = best(lambda: MinHash.bulk(prepared, num_perm=112, scheme=SCHEME))
    bulk_shingled = best(lambda: MinHash.bulk(
        [[" ".join(s).encode("utf-8") for s in shingle_set(t)] for t in docs], num_perm=112, scheme=SCHEME))
    return len(docs), ours, bulk, bulk_shingled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", type=Path, default=ROOT.parent / "shared" / "data" / "crawl")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not args.crawl.is_dir():
        print(f"no crawl data at {args.crawl}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    base = load_texts(args.crawl)
    copies = [plant_copy(t, rng) for t in base]
    texts = base + [c for c, _ in copies]
    truth_edges = exact_pairs(texts, THRESHOLD)
    truth_labels = clusters_in_memory((j, i) for i, j in truth_edges)
    truth_pairs, truth_removed = cluster_pairs(truth_labels), removed(truth_labels)
    planted_dups = sum(1 for i in range(len(base)) if (i, len(base) + i) in truth_edges)

    print(f"quality: {len(base):,} real pages + {len(copies):,} planted copies (1-30% of words "
          f"edited); {len(truth_edges):,} pairs with exact Jaccard >= {THRESHOLD} ({planted_dups:,} "
          f"planted); exact clustering removes {len(truth_removed):,} documents\n")
    print("| method | bands x rows | removed docs | precision | recall | cluster pairs | precision | recall |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    ds_labels, b, r = datasketch_labels(texts)
    rows = [("c4forge (verified, default)", "14 x 8", c4forge_labels(texts, THRESHOLD)),
            ("c4forge, pure LSH", "14 x 8", c4forge_labels(texts, None)),
            ("datasketch MinHashLSH(0.8)", f"{b} x {r}", ds_labels)]
    for name, shape, labels in rows:
        gone, pairs = removed(labels), cluster_pairs(labels)
        dp, dr = precision_recall(gone, truth_removed)
        pp, pr = precision_recall(pairs, truth_pairs)
        print(f"| {name} | {shape} | {len(gone):,} | {dp:.3f} | {dr:.3f} | {len(pairs):,} | {pp:.3f} | {pr:.3f} |")
    print("\nP(candidate) for 14 x 8 at Jaccard 0.7 / 0.8 / 0.9: "
          + " / ".join(f"{match_probability(s):.3f}" for s in (0.7, 0.8, 0.9)))

    n, ours, bulk, bulk_shingled = speed(base)
    print(f"\nspeed: {n:,} documents of 2 KB, 112 permutations, one core\n")
    print("| method | docs/s | vs datasketch bulk |")
    print("|---|---:|---:|")
    print(f"| c4forge signatures, normalisation + shingling included | {ours:,.0f} | {ours / bulk:.1f}x |")
    print(f"| datasketch MinHash.bulk, shingles prepared (its fastest path) | {bulk:,.0f} | 1.0x |")
    print(f"| datasketch MinHash.bulk + Python shingling | {bulk_shingled:,.0f} | {bulk_shingled / bulk:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
