"""MinHash near-dedup on Beam (the twin of corpus/dedup/near_dedup.py; contract:
corpus/steps/near_dedup.py): band keys per page, the candidates' signatures fetched and checked per band
bucket (or star edges without a threshold), connected components by Hash-to-Min unrolled on
the engine, then each page meets its cluster's label and size. The transforms: pipelines/c4.py
``near_dedup``, ``band_edges``, ``connected_components``.
"""
from __future__ import annotations

import hashlib
from typing import Optional

import apache_beam as beam
import numpy as np

from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup import digest_records
from c4forge.corpus.dedup.minhash import MinHashConfig, MinHasher
from c4forge.corpus.dedup.near_dedup import (
    BAND_MEMBER,
    NS_NEAR,
    band_members,
    bucket_edges,
    count_near_dedup,
    hash_to_min,
    initial_cluster,
    sample_dropped,
    shared_bands,
    star_edges,
)
from c4forge.corpus.document import Document, from_bytes
from c4forge.pipelines.dofns import (
    DEFAULT_BUCKETS,
    Batcher,
    BucketBatchingFn,
    Counting,
    Sampling,
    digest_bucket,
    in_global_window,
)
from c4forge.pipelines.store import PageRef, PageStore, StoreWriter


def page_member(node: int, signature: np.ndarray) -> bytes:
    """A page as a band bucket's member crosses the shuffles: its id (8 bytes) and a digest of
    its signature (8 bytes). The digest names the page, not only its node: with URL dedup off,
    two crawls of one URL share an id, and the candidate's signature fetched later must be the
    one that put this page in the bucket."""
    return node.to_bytes(8, "big") + hashlib.blake2b(signature.tobytes(), digest_size=8).digest()


def node_of(member: bytes) -> int:
    return int.from_bytes(member[:8], "big")


# What a batch holds where band keys, signatures and signature requests share a shuffle.
BAND_BATCH, SIGNATURE_BATCH, REQUEST_BATCH = 0, 1, 2


class BandKeysFn(beam.DoFn):
    """(id, page) -> its band keys with the page as a member (:func:`page_member`), in batches
    per shuffle bucket of the band key, (bucket, (BAND_BATCH, [BAND_MEMBER records as bytes...]):
    corpus/dedup/near_dedup.py, corpus/dedup/digest_records.py), and, where
    candidates are checked against a threshold, its signature once, in batches per bucket of
    the member, (bucket, (SIGNATURE_BATCH, [(member, signature bytes)...])). The signature used to
    cross the band shuffle with each of the 14 band keys; most band buckets hold one page and
    never look at it, so it now crosses once and only candidates fetch it (``CandidatesFn``,
    :func:`answer_requests`).

    Both go out on one output and cross the band shuffle together: the stage that makes them
    (the line-dedup join, language ID, bad words) then has two consumers, this shuffle and the
    pages' cluster join, not three. On Flink every consumer of a stage reads its own copy of the
    stage's whole output, the pages included (benchmarks/RESULTS.md, "Where the engine path
    spends it"); a signature crossing one shuffle more is 448 bytes a page against a page's
    copy. The signatures are computed vectorised over up to ``batch`` pages of the bundle at a
    time. The batches of a flush together hold at most ``batch_bytes``: an engine's sort buffer
    takes a record whole (Flink refused 32 MB ones: "Record too large")."""

    def __init__(self, settings: MinHashConfig, batch: int = 512, buckets: int = DEFAULT_BUCKETS,
                 batch_bytes: int = 4 << 20) -> None:
        self.settings = settings
        self.batch = batch
        self.buckets = buckets
        self.batch_bytes = batch_bytes
        self.checked = settings.threshold is not None
        self.hasher: Optional[MinHasher] = None
        self.pending: list[tuple[int, Document]] = []
        self.bands = Batcher(batch_bytes)
        self.signatures = Batcher(batch_bytes)

    def setup(self) -> None:
        self.hasher = MinHasher(self.settings)

    def start_bundle(self) -> None:
        self.pending = []
        self.bands = Batcher(self.batch_bytes)
        self.signatures = Batcher(self.batch_bytes)

    def process(self, element):
        self.pending.append(element)
        if len(self.pending) >= self.batch:
            yield from self._flush()

    def finish_bundle(self):
        yield from in_global_window([*self._flush(), *tagged(BAND_BATCH, self.bands.drain()),
                                     *tagged(SIGNATURE_BATCH, self.signatures.drain())])

    def _flush(self) -> list:
        """The band and signature batches that filled up, tagged."""
        pending, self.pending = self.pending, []
        out: list = []
        if not pending:
            return out
        keys: list[bytes] = []
        members: list[bytes] = []
        for (node, _), signature in zip(pending, self.hasher.signatures([page.text for _, page in pending])):
            member = page_member(node, signature)
            if self.checked:
                out += tagged(SIGNATURE_BATCH, self.signatures.add(digest_bucket(member, self.buckets),
                                                              (member, signature.tobytes()), signature.nbytes + 32))
            keys += self.hasher.band_keys(signature)
            members.append(member)
        for bucket, blob in digest_records.by_bucket(band_members(keys, members), self.buckets):
            out += tagged(BAND_BATCH, self.bands.add(bucket, blob, len(blob)))
        return out


def tagged(kind: int, batches: list) -> list:
    """(bucket, batch) pairs -> (bucket, (kind, batch)): batches of several kinds in one shuffle."""
    return [(bucket, (kind, batch)) for bucket, batch in batches]


class CandidatesFn(BucketBatchingFn):
    """(shuffle bucket, tagged batches of band keys and signatures) -> for every band bucket of
    pages of two or more ids: without a threshold its star edges (main output); with one, a
    request for each member's signature, (member bucket, (REQUEST_BATCH, [(member, band key)...]))
    (``REQUESTS``), where the signatures of the bucket go on as they came, (bucket,
    (SIGNATURE_BATCH, batch)): requests and signatures meet in the next shuffle. The members of one
    band key meet here, whichever bundles sent them."""

    REQUESTS = "requests"

    def __init__(self, threshold: Optional[float], buckets: int = DEFAULT_BUCKETS) -> None:
        super().__init__(buckets)
        self.threshold = threshold

    def process(self, element):
        bucket, batches = element
        bands = []
        for kind, batch in batches:
            if kind == SIGNATURE_BATCH:
                yield beam.pvalue.TaggedOutput(self.REQUESTS, (bucket, (SIGNATURE_BATCH, batch)))
                continue
            bands += batch
        # one id: no edge (corpus/near_dedup.bucket_edges); shared_bands leaves those out
        for key, members in shared_bands(digest_records.join(bands, BAND_MEMBER)):
            if self.threshold is None:
                yield from star_edges([node_of(m) for m in members])
                continue
            for member in members:
                for request in tagged(REQUEST_BATCH, self.batcher.add(digest_bucket(member, self.buckets),
                                                                 (member, key), 56)):
                    yield beam.pvalue.TaggedOutput(self.REQUESTS, request)

    def finish_bundle(self):
        for request in in_global_window(tagged(REQUEST_BATCH, self.batcher.drain())):
            yield beam.pvalue.TaggedOutput(self.REQUESTS, request)


def answer_requests(element):
    """(member bucket, tagged batches of requests and signatures) -> (band key, (member,
    signature)) for every requested member: a candidate's signature goes to each band bucket
    it is in."""
    _, batches = element
    wanted: dict[bytes, list[bytes]] = {}
    signatures = []
    for kind, batch in batches:
        if kind == REQUEST_BATCH:
            for member, key in batch:
                wanted.setdefault(member, []).append(key)
        else:
            signatures.append(batch)
    if not wanted:
        return
    for batch in signatures:
        for member, signature in batch:
            for key in wanted.get(member, ()):
                yield key, (member, signature)


def checked_edges(element, threshold: float):
    """(band key, its members with their signatures) -> :func:`bucket_edges` of the bucket."""
    _, members = element
    yield from bucket_edges([(node_of(m), np.frombuffer(sig, dtype=np.uint32)) for m, sig in members],
                            threshold)


def both_directions(edge: tuple[int, int]):
    a, b = edge
    yield a, b
    yield b, a


_PREVIOUS = -1  # leads a node's message to itself carrying its cluster (ids are >= 0)


class ClusterRoundFn(beam.DoFn):
    """One Hash-to-Min round in one step: (node, what it received) -> its new cluster, then
    the next round's messages (main output), or in the last round its label (main output) and,
    if its cluster still changed, the node (``CHANGED`` output).

    The first round receives a node's neighbours (its cluster: itself and them); later rounds
    receive clusters, whose union is the node's new cluster. The round before the last also
    sends each node its own cluster (led by ``_PREVIOUS``), so the last round sees whether it
    changed without a join. A GroupByKey and this DoFn per round, instead of a send step, a
    CombinePerKey, a label step and a CoGroupByKey for convergence: a third of the transforms
    to build, translate and start (the rounds were most of the graph's fixed cost, issue 29);
    the same clusters and labels."""

    CHANGED = "changed"

    def __init__(self, first: bool, last: bool, tell_self: bool) -> None:
        self.first = first
        self.last = last
        self.tell_self = tell_self

    def process(self, element):
        node, received = element
        previous = None
        if self.first:
            cluster = initial_cluster(node, received)
        else:
            union: set[int] = set()
            for members in received:
                if members[0] == _PREVIOUS:
                    previous = members[1:]
                else:
                    union.update(members)
            cluster = tuple(sorted(union))
        if self.last:
            yield node, cluster[0]
            if previous is not None and previous != cluster:
                yield beam.pvalue.TaggedOutput(self.CHANGED, node)
            return
        yield from hash_to_min(node, cluster)
        if self.tell_self:
            yield node, (_PREVIOUS, *cluster)


class NodeBatchesFn(BucketBatchingFn):
    """(node, value) -> (node bucket, [(node, value)...]): the pages and the cluster labels and
    sizes meet at the cluster join per node bucket, batched per bundle, not as one element per
    page (Beam's per-element cost on every hop of that join, and on Flink its three crossings:
    the Flatten, the GroupCombine, the GroupReduce). With a ``store`` the value is a Document,
    put in the store (pipelines/store.py) on the way: its PageRef, a tuple, goes on instead."""

    def __init__(self, buckets: int = DEFAULT_BUCKETS, store: Optional[PageStore] = None) -> None:
        super().__init__(buckets)
        self.store = store
        self.writer: Optional[StoreWriter] = None

    def start_bundle(self) -> None:
        super().start_bundle()
        self.writer = self.store.writer() if self.store is not None else None

    def process(self, element):
        node, value = element
        size = 24
        if self.writer is not None:
            ref = self.store.page_ref(value, self.writer)
            value = tuple(ref)
            size = len(ref.url) + len(ref.normalized_url) + len(ref.ref) + 36
        yield from self.batcher.add(node % self.buckets, (node, value), size)

    def finish_bundle(self):
        if self.writer is not None:  # the pages are in the store before their references go on
            self.writer.close()
        yield from super().finish_bundle()


class ApplyClustersFn(Counting, Sampling, beam.DoFn):
    """(node bucket, {"page", "label", "size"} batches) -> each page kept unless its node's
    cluster label is a smaller id, with its cluster size (that of the cluster the node roots:
    1 for a node without edges). Pages arrive and leave as PageRefs (pipelines/store.py), the
    cluster size set in the reference: a kept page is not read, expanded or compressed again on
    its way to the shards. A dropped page is read from the store only when traced."""

    def __init__(self, config: CorpusConfig, store: PageStore, samples_dir: Optional[str] = None) -> None:
        self.config = config
        self.store = store
        self.samples_dir = samples_dir if config.rule_samples.on else None
        self.sample_options = config.rule_samples

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()

    def process(self, element):
        """Every page of the bucket: several pages share one id when URL dedup is off and a
        URL was crawled twice; each gets its node's verdict, as in one process."""
        _, grouped = element
        labels = {node: label for batch in grouped["label"] for node, label in batch}
        sizes = {root: size for batch in grouped["size"] for root, size in batch}
        inc = self.inc_for(NS_NEAR)
        for batch in grouped["page"]:
            for node, page in batch:
                ref = PageRef._make(page)
                label = labels.get(node, node)
                survives = label == node
                size = sizes.get(node, 1)
                count_near_dedup(inc, ref.text_size, survives, size)
                if survives:
                    yield tuple(ref._replace(cluster_size=size))
                    continue
                key = self.traced(ref.normalized_url)
                if key is not None:
                    sample_dropped(from_bytes(self._read(ref.ref)), label, key, self.samples())

    def _read(self, ref: bytes) -> bytes:
        reader = self.store.reader()
        try:
            return reader.get(ref)
        finally:
            reader.close()


class CountUnconvergedFn(Counting, beam.DoFn):
    """One count per node whose cluster still changed (the counter sums them)."""

    def process(self, _node: int):
        self.inc_for(NS_NEAR)("unconverged-nodes")
