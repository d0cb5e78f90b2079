"""MinHash near-dedup (namespace ``near-dedup``; not in tfds, ``near-dedup.on=false`` gives
exactly tfds' documents): near-duplicate pages are clustered and each cluster keeps one page.
Twins: corpus/dedup/near_dedup.py (union-find) and pipelines/twins/near_dedup.py (Hash-to-Min)."""
from __future__ import annotations

import dataclasses

from c4forge.corpus.chain.step import Scope, wide_step
from c4forge.corpus.dedup.minhash import MinHashConfig
from c4forge.corpus.dedup.near_dedup import NS_NEAR, run


@dataclasses.dataclass(frozen=True)
class NearDedup(MinHashConfig):
    """``near-dedup`` in the corpus config: on, and the MinHash parameters (bands x rows
    permutations, shingle size, seed, threshold; FineWeb's 14 x 8, 5-grams). tfds' C4 has no
    near-dedup: ``near-dedup.on=false`` gives exactly its documents (c4-noclean and mc4 switch
    it off)."""

    on: bool = True


STEP = wide_step(
    "near-dedup", NS_NEAR, Scope.CLUSTERS, "MinHash near-dedup", run,
    "Pages whose MinHash signatures share a band and pass the threshold "
    "(near_dedup.bucket_edges) are joined; a connected component keeps its smallest "
    "doc_id and records its size (near_dup_cluster_size); every page counts "
    "count_near_dedup once. Union-find in one process, Hash-to-Min on the engine: the "
    "same labels (tests/test_near_dedup_cc.py).", settings=NearDedup, flow="near dedup")
