"""Near-duplicate clusters from LSH band collisions, as pure pieces (no engine).

Each document gets a 64-bit id from md5(normalised url), so ids and survivors do not depend on
input order or on how an engine partitions work. Documents that share any band key are
candidates; the documents of one band bucket are joined by a star of edges to the bucket's
smallest id, which keeps the edge count linear in the bucket size. Connected components of those
edges are the clusters; the survivor of a cluster is its smallest id.

:func:`clusters_in_memory` does this with union-find for single-process runs; the Beam pipeline
runs the same star edges through iterative min-label propagation on the engine
(:func:`propagate_labels` is one round of it).
"""
from __future__ import annotations

import hashlib
from typing import Dict, Iterable, Iterator, List, Mapping, Sequence, Tuple


def doc_id(normalized_url: str) -> int:
    """Deterministic 63-bit document id (fits a signed int64 column)."""
    return int.from_bytes(hashlib.md5(normalized_url.encode("utf-8")).digest()[:8], "big") >> 1


def star_edges(members: Sequence[int]) -> Iterator[Tuple[int, int]]:
    """Edges (member, root) joining a band bucket to its smallest id; nothing for singletons."""
    if len(members) < 2:
        return
    root = min(members)
    for member in set(members):
        if member != root:
            yield member, root


def clusters_in_memory(bucket_members: Iterable[Sequence[int]]) -> Dict[int, int]:
    """Union-find over band buckets: {doc id: cluster root (smallest id)} for docs in a cluster."""
    parent: Dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for members in bucket_members:
        for member, root in star_edges(members):
            parent.setdefault(member, member)
            parent.setdefault(root, root)
            a, b = find(member), find(root)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {node: find(node) for node in list(parent)}


def cluster_sizes(labels: Mapping[int, int]) -> Dict[int, int]:
    sizes: Dict[int, int] = {}
    for root in labels.values():
        sizes[root] = sizes.get(root, 0) + 1
    return sizes


def propagate_labels(node: int, label: int, neighbour_labels: Iterable[int]) -> int:
    """One round of min-label propagation: a node takes the smallest label it can see."""
    return min([label, *neighbour_labels])


def is_survivor(node: int, label: int) -> bool:
    """A document survives near-dedup when it is its cluster's smallest id."""
    return node == label
