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

Speed: signatures of 4,000 documents of 2 KB at 112 permutations, CPU seconds of one core,
interleaved repeats (harness.py): c4forge's signatures (normalisation and shingling included),
c4forge's shingling alone (the floor: every MinHash must hash its shingles), datasketch's
MinHash.bulk (its fastest path) on shingles prepared beforehand, and again including its Python
shingling. Each timed call follows an untimed call of the same system, so every system is
timed in its own steady state (see harness.interleave: right after datasketch our signatures
paid ~0.05 s of kernel time for the memory it released). Ratios are per repeat, reported
as median (min-max).

Run: .venv-bench/bin/python benchmarks/bench_dedup.py [--repeats 5] [--write] [--quick]
(`make bench` makes .venv-bench with the [bench] extra, datasketch included; or
`pip install datasketch==2.0.0` into .venv). ``--quick``: 300 pages, one repeat, nothing written.
"""
from __future__ import annotations

import argparse
import random
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness

from c4forge.corpus.dedup.minhash import (
    MinHashConfig,
    MinHasher,
    match_probability,
    normalize,
    shingle_hashes,
    shingle_set,
    word_hashes,
)
from c4forge.corpus.dedup.near_dedup import bucket_edges, clusters_in_memory
from c4forge.corpus.read.wet import iter_crawl_documents

THRESHOLD = 0.8
# datasketch 2.0 changed its default permutation scheme; name it so results stay comparable.
# "affine32" is the same family c4forge uses: (a * h + b) mod 2^32, a odd, on a mixed hash.
SCHEME = "affine32"


def load_texts(crawl: Path, min_words: int = 100):
    texts = []
    for path in sorted(crawl.glob("*.wet.gz")):
        texts.extend(d.text for d in iter_crawl_documents(str(path)))
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


def speed(texts, repeats: int, n_docs: int = 4000):
    """Interleaved CPU seconds per repeat of each way to get 112-permutation signatures."""
    from datasketch import MinHash

    docs = [t.encode("utf-8")[:2048].decode("utf-8", "ignore") for t in texts
            if len(t.encode("utf-8")) >= 2048]
    docs = (docs * (n_docs // max(1, len(docs)) + 1))[:n_docs]
    hasher = MinHasher()
    prepared = [[" ".join(s).encode("utf-8") for s in shingle_set(t)] for t in docs]

    def shingling_only():
        words, counts = word_hashes(docs)
        return shingle_hashes(words, counts, hasher.config.ngram)

    systems = {
        "ours": lambda: hasher.signatures(docs),
        "shingling": shingling_only,
        "bulk": lambda: MinHash.bulk(prepared, num_perm=112, scheme=SCHEME),
        "bulk_shingled": lambda: MinHash.bulk(
            [[" ".join(s).encode("utf-8") for s in shingle_set(t)] for t in docs],
            num_perm=112, scheme=SCHEME),
    }
    # Each timed call right after an untimed one of the same system (harness.interleave): our
    # first call on a batch this size loads the kernel and grows the power tables, and a call
    # right after datasketch paid for the memory datasketch released.
    _, cpu, _ = harness.interleave(systems, repeats, settle=True)
    return len(docs), cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", type=Path, default=harness.SHARED / "crawl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="300 pages, one repeat, nothing written.")
    args = parser.parse_args()
    if not args.crawl.is_dir():
        print(f"no crawl data at {args.crawl}", file=sys.stderr)
        return 2
    machine = harness.machine()
    rng = random.Random(args.seed)
    base = load_texts(args.crawl)
    if args.quick:
        base, args.repeats, args.write = base[:300], 1, False
    copies = [plant_copy(t, rng) for t in base]
    texts = base + [c for c, _ in copies]
    truth_edges = exact_pairs(texts, THRESHOLD)
    truth_labels = clusters_in_memory((j, i) for i, j in truth_edges)
    truth_pairs, truth_removed = cluster_pairs(truth_labels), removed(truth_labels)
    planted_dups = sum(1 for i in range(len(base)) if (i, len(base) + i) in truth_edges)

    lines = [f"Quality: {len(base):,} real pages of ../shared/data/crawl + {len(copies):,} planted "
             f"copies (1-30% of words edited); {len(truth_edges):,} pairs with exact Jaccard >= "
             f"{THRESHOLD} ({planted_dups:,} planted); exact clustering removes "
             f"{len(truth_removed):,} documents.", "",
             "| method | bands x rows | removed docs | precision | recall | cluster pairs | precision | recall |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    ds_labels, b, r = datasketch_labels(texts)
    rows = [("c4forge (verified, default)", "14 x 8", c4forge_labels(texts, THRESHOLD)),
            ("c4forge, pure LSH", "14 x 8", c4forge_labels(texts, None)),
            ("datasketch MinHashLSH(0.8)", f"{b} x {r}", ds_labels)]
    for name, shape, labels in rows:
        gone, pairs = removed(labels), cluster_pairs(labels)
        dp, dr = precision_recall(gone, truth_removed)
        pp, pr = precision_recall(pairs, truth_pairs)
        lines.append(f"| {name} | {shape} | {len(gone):,} | {dp:.3f} | {dr:.3f} | {len(pairs):,} | "
                     f"{pp:.3f} | {pr:.3f} |")
    lines += ["", "P(candidate) for 14 x 8 at Jaccard 0.7 / 0.8 / 0.9: "
              + " / ".join(f"{match_probability(s):.3f}" for s in (0.7, 0.8, 0.9))]

    n, cpu = speed(base, args.repeats, 300 if args.quick else 4000)
    per_s = {k: [n / t for t in v] for k, v in cpu.items()}
    lines += ["", f"Speed: {n:,} documents of 2 KB, 112 permutations, one core, CPU time, "
              f"{args.repeats} interleaved repeats, each timed call right after an untimed one of the same "
              "system; median (min-max) over repeats.", "",
              "| method | docs/s | x datasketch bulk + shingling | x datasketch bulk (shingles prepared) | cost / shingling alone |",
              "|---|---:|---:|---:|---:|"]
    names = {"ours": "c4forge signatures, normalisation + shingling included",
             "shingling": "c4forge normalisation + shingling alone (the floor)",
             "bulk": "datasketch MinHash.bulk, shingles prepared (its fastest path)",
             "bulk_shingled": "datasketch MinHash.bulk + Python shingling"}
    for key, label in names.items():
        lines.append(f"| {label} | {harness.spread(per_s[key], '{:,.0f}')} | "
                     f"{harness.spread(harness.ratios(cpu['bulk_shingled'], cpu[key]))}x | "
                     f"{harness.spread(harness.ratios(cpu['bulk'], cpu[key]))}x | "
                     f"{harness.spread(harness.ratios(cpu[key], cpu['shingling']))}x |")
    harness.publish("dedup", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
