"""Near-duplicate clusters from LSH band collisions, as pure pieces (no engine).

Each document gets a 63-bit id from md5(normalised url), so ids and survivors do not depend on
input order or on how an engine partitions work. Documents that share any band key are
candidates; within a band bucket each member is linked to the smallest-id member whose signature
estimates Jaccard >= the threshold (:func:`bucket_edges`), which keeps the edge count linear in
the bucket size and drops candidates that only collided by chance. Connected components of those
edges are the clusters; the survivor of a cluster is its smallest id.

:func:`clusters_in_memory` does this with union-find in one process (:func:`run`); the Beam pipeline
runs the same star edges through Hash-to-Min on the engine (:func:`hash_to_min` is one round's
messages), unrolled ``DEFAULT_CC_ROUNDS`` times unless told otherwise.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Optional

import numpy as np

from c4forge.core.counters import IncFn
from c4forge.corpus.chain.verdict import count_group_member
from c4forge.corpus.chain.wide import WideJob
from c4forge.corpus.dedup.digest_records import group_ends, group_starts
from c4forge.corpus.dedup.minhash import MinHasher, batched
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Reservoir, near_duplicate
from c4forge.corpus.text.urls import doc_id  # the id clusters are labelled with

NS_NEAR = "near-dedup"  # the step's name and counter namespace

DEFAULT_CC_ROUNDS = 10  # Hash-to-Min rounds: see hash_to_min


def star_edges(members: Sequence[int]) -> Iterator[tuple[int, int]]:
    """Edges (member, root) joining a band bucket to its smallest id; nothing for singletons."""
    if len(members) < 2:
        return
    root = min(members)
    for member in set(members):
        if member != root:
            yield member, root


# A band bucket's member as the engine path sends it (pipelines/twins/near_dedup.py): the band key (16
# bytes), the page's member bytes (its id, 8 bytes big-endian, and a digest of its signature),
# each 8 bytes read as a little-endian integer: only compared for equality and grouped.
BAND_MEMBER = np.dtype([("key0", "<u8"), ("key1", "<u8"), ("node", "<u8"), ("digest", "<u8")])


def band_members(keys: Sequence[bytes], members: Sequence[bytes]) -> np.ndarray:
    """BAND_MEMBER records of pages given by their band keys (``keys``: every page's, in page
    order, the same number per page) and their member bytes (``members``, one per page)."""
    out = np.empty(len(keys), BAND_MEMBER)
    if not keys:
        return out
    key = np.frombuffer(b"".join(keys), "<u8").reshape(len(keys), 2)
    member = np.repeat(np.frombuffer(b"".join(members), "<u8").reshape(len(members), 2),
                       len(keys) // len(members), axis=0)
    out["key0"], out["key1"], out["node"], out["digest"] = key[:, 0], key[:, 1], member[:, 0], member[:, 1]
    return out


def shared_bands(records: np.ndarray) -> list[tuple[bytes, set[bytes]]]:
    """(band key, its members' bytes) for every band bucket whose members hold two or more
    ids: the only buckets that make edges (:func:`star_edges`, :func:`bucket_edges`). Sorted
    and compared as arrays; a Python set only for those buckets (near-duplicates are rare)."""
    if len(records) < 2:
        return []
    ordered = np.take(records, np.lexsort((records["key1"], records["key0"])))
    starts = group_starts(ordered, ("key0", "key1"))
    nodes = ordered["node"]
    shared = np.flatnonzero(np.minimum.reduceat(nodes, starts) != np.maximum.reduceat(nodes, starts))
    if len(shared) == 0:
        return []
    ends = group_ends(starts, len(ordered))
    raw, size = ordered.tobytes(), BAND_MEMBER.itemsize
    return [(raw[start * size:start * size + 16], {raw[i * size + 16:(i + 1) * size] for i in range(start, end)})
            for start, end in zip(starts[shared].tolist(), ends[shared].tolist())]


FULL_CHECK_LIMIT = 64


def bucket_edges(members: Sequence[tuple[int, np.ndarray]], threshold: Optional[float]
                 ) -> Iterator[tuple[int, int]]:
    """Edges (member, linked smaller member) for one band bucket of (id, signature) pairs.

    Without a threshold: the star to the smallest id. With one: each member links to the
    smallest-id member whose signature agrees on >= ``threshold`` of the permutations; buckets
    larger than FULL_CHECK_LIMIT only check against the smallest id (mass duplicates, where
    that is enough and pairwise checks would be quadratic).
    """
    unique = sorted({m[0]: m for m in members}.values(), key=lambda m: m[0])
    if len(unique) < 2:
        return
    if threshold is None:
        yield from star_edges([m[0] for m in unique])
        return

    ids = [m[0] for m in unique]
    sigs = np.stack([m[1] for m in unique])
    if len(unique) > FULL_CHECK_LIMIT:
        agree = (sigs == sigs[0]).mean(axis=1)
        for i in range(1, len(unique)):
            if agree[i] >= threshold:
                yield ids[i], ids[0]
        return
    agree = (sigs[:, None, :] == sigs[None, :, :]).mean(axis=2)
    for i in range(1, len(unique)):
        similar = np.flatnonzero(agree[i, :i] >= threshold)
        if len(similar):
            yield ids[i], ids[int(similar[0])]


def clusters_in_memory(edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Union-find over edges: {doc id: cluster root (smallest id)} for docs in a cluster."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for member, root in edges:
        parent.setdefault(member, member)
        parent.setdefault(root, root)
        a, b = find(member), find(root)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {node: find(node) for node in list(parent)}


def count_near_dedup(inc: IncFn, size: int, kept: bool, cluster_size: int = 1) -> None:
    """Near-dedup counters of one page (a cluster of more than one page counts ``clusters``
    once, at the page it keeps). Both chains count through here."""
    count_group_member(inc, size, kept, cluster_size, "clusters")


def cluster_sizes(labels: Mapping[int, int]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for root in labels.values():
        sizes[root] = sizes.get(root, 0) + 1
    return sizes


def initial_cluster(node: int, neighbours: Iterable[int]) -> tuple[int, ...]:
    """Hash-to-Min's starting cluster of a node: itself and its neighbours, sorted."""
    return tuple(sorted({node, *neighbours}))


def hash_to_min(node: int, cluster: tuple[int, ...]) -> Iterator[tuple[int, tuple[int, ...]]]:
    """One round's messages of Hash-to-Min (Rastogi et al., ICDE 2013): the cluster goes to its
    smallest node, and that node's id to every other member. A node's next cluster is the union
    of what it receives; at the fixed point a component's smallest node holds the component and
    every other node holds that smallest id, so a node's label is its cluster's minimum.

    Rounds: about log2(diameter) + 2 to the fixed point (chains of 8/32/128 nodes in random id
    order: 5/8/10, tests/test_near_dedup_cc.py), one shuffle each. Stopped early, labels are
    still ids of the node's own component and each component's smallest node keeps its own id,
    so a component never loses all its documents: an unconverged run can only keep extra ones."""
    smallest = cluster[0]
    yield smallest, cluster
    for member in cluster[1:]:
        yield member, (smallest,)



def run(pages: Iterable[Document], job: WideJob, batch_size: int = 512) -> list[Document]:
    """MinHash near-dedup in one process (the twin of pipelines/twins/near_dedup.py; contract:
    corpus/steps/near_dedup.py's ``contract``): one page per cluster (the smallest id), each kept page
    recording its cluster's size."""
    pages = list(pages)
    settings, clock = job.config.settings_of(NS_NEAR), job.clock
    inc = job.counters.inc_fn(NS_NEAR)
    hasher = MinHasher(settings)
    ids = [doc_id(p.normalized_url) for p in pages]
    buckets: dict[bytes, list] = {}
    with clock.stage("minhash-signatures", len(pages)):
        for start, batch in zip(range(0, len(pages), batch_size), batched(pages, batch_size)):
            signatures = hasher.signatures([p.text for p in batch])
            for offset, signature in enumerate(signatures):
                member = (ids[start + offset], signature)
                for key in hasher.band_keys(signature):
                    buckets.setdefault(key, []).append(member)
    with clock.stage("near-dup-clusters", len(pages)):
        threshold = settings.threshold
        labels = clusters_in_memory(
            edge for members in buckets.values() for edge in bucket_edges(members, threshold))
        sizes = cluster_sizes(labels)
        kept = []
        for page, node in zip(pages, ids):
            label = labels.get(node, node)
            survives = label == node
            count_near_dedup(inc, page.text_size(), survives, sizes.get(node, 1))
            if survives:
                kept.append(page.replace(near_dup_cluster_size=sizes.get(node, 1)))
            else:
                sample_dropped(page, label, job.traced(page.normalized_url), job.samples)
    return kept


def sample_dropped(page: Document, kept_id: int, key: Optional[int], samples: Optional[Reservoir]) -> None:
    """A traced page (``key``) near-dedup dropped, with the id of the page kept instead (both
    runners)."""
    if key is not None and samples.wants(f"{NS_NEAR}/filtered", key):
        samples.add(near_duplicate(f"{NS_NEAR}/filtered", key, page, kept_id))
