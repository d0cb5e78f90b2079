"""MinHash near-dedup on Beam (the twin of corpus/near_dedup.py; contract: corpus/chain.py's
NEAR_DEDUP): band keys per page, star edges per band bucket, connected components by
Hash-to-Min unrolled on the engine, then each page meets its cluster's label and size.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

import apache_beam as beam
import numpy as np

from c4forge.corpus.chain import Segment
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document, from_bytes
from c4forge.corpus.minhash import MinHasher
from c4forge.corpus.near_dedup import (
    bucket_edges,
    count_near_dedup,
    doc_id,
    hash_to_min,
    initial_cluster,
    sample_dropped,
)
from c4forge.corpus.steps import NS_NEAR, text_bytes
from c4forge.pipelines.dofns import (
    DEFAULT_BUCKETS,
    Batcher,
    Counting,
    Sampling,
    digest_bucket,
    in_global_window,
    packed,
)
from c4forge.pipelines.wide import BeamJob, Stream, pages_of


def expand(stream: Stream, segment: Segment, job: BeamJob) -> Stream:
    pages = pages_of(stream, job, "near-dedup")
    return Stream(pages=near_dedup(pages, job.config, job.cc_rounds, job.samples_dir, job.buckets),
                  pending=segment.after)


def pack_member(node: int, signature: np.ndarray) -> bytes:
    """A band bucket's member as it crosses the shuffle: the id (8 bytes) and the signature's
    raw bytes. A page is a member of one bucket per band (14), so this is most of what
    near-dedup shuffles: bytes cost Beam's coder a length and a copy, where an (id, ndarray)
    tuple was pickled (measured on flink-local, 4x distinct input: near-dedup was 40% of the
    engine's CPU beyond `corpus clean`'s)."""
    return node.to_bytes(8, "big") + signature.tobytes()


def member_edges(members: Iterable[bytes], threshold: Optional[float]):
    """:func:`bucket_edges` of one band bucket's packed members (a bucket of one, most of
    them, is not unpacked)."""
    members = list(members)
    if len(members) < 2:
        return
    yield from bucket_edges([(int.from_bytes(m[:8], "big"), np.frombuffer(m, dtype=np.uint32, offset=8))
                             for m in members], threshold)


def batch_edges(element, threshold: Optional[float]):
    """(shuffle bucket, batches of (band key, member)) -> the edges of every band bucket in it:
    the members of one band key meet here, whichever bundles sent them."""
    _, batches = element
    by_key: dict[bytes, list[bytes]] = {}
    for batch in batches:
        for key, member in batch:
            by_key.setdefault(key, []).append(member)
    for members in by_key.values():
        yield from member_edges(members, threshold)


class BandKeysFn(beam.DoFn):
    """(id, page) -> its band keys with the packed member, in batches per shuffle bucket of
    the band key, (bucket, [(band key, member)...]): 14 band keys a page were 14 elements
    each, and the engine's grouping paid per element (flink-local, 4x distinct input: the JVM
    18.4 -> 15.6 CPU s with the batches). The signatures are computed vectorised over up to ``batch`` pages
    of the bundle at a time (one DoFn instead of Beam's BatchElements composite, a signature
    step and a band step: fewer transforms to build, translate and start). The batches of a
    flush together hold at most ``batch_bytes``: an engine's sort buffer takes a record whole
    (Flink refused 32 MB ones: "Record too large")."""

    def __init__(self, config: CorpusConfig, batch: int = 512, buckets: int = DEFAULT_BUCKETS,
                 batch_bytes: int = 4 << 20) -> None:
        self.config = config
        self.batch = batch
        self.buckets = buckets
        self.batch_bytes = batch_bytes
        self.hasher: Optional[MinHasher] = None
        self.pending: list[tuple[int, Document]] = []
        self.batcher = Batcher(batch_bytes)

    def setup(self) -> None:
        self.hasher = MinHasher(self.config.minhash)

    def start_bundle(self) -> None:
        self.pending = []
        self.batcher = Batcher(self.batch_bytes)

    def process(self, element):
        self.pending.append(element)
        if len(self.pending) >= self.batch:
            yield from self._flush()

    def finish_bundle(self):
        yield from in_global_window([*self._flush(), *self.batcher.drain()])

    def _flush(self) -> list:
        pending, self.pending = self.pending, []
        out: list = []
        if not pending:
            return out
        signatures = self.hasher.signatures([page.text for _, page in pending])
        for (node, _), signature in zip(pending, signatures):
            member = pack_member(node, signature)
            for key in self.hasher.band_keys(signature):
                out += self.batcher.add(digest_bucket(key, self.buckets), (key, member), len(member) + 16)
        return out


def _both_directions(edge: tuple[int, int]):
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


def connected_components(edges, rounds: int):
    """{node: smallest id in its component} by Hash-to-Min (corpus.near_dedup.hash_to_min;
    Rastogi et al., "Finding Connected Components in Map-Reduce in Logarithmic Rounds", ICDE
    2013), unrolled ``rounds`` times on the engine: no collect-to-one-node step, one shuffle per
    round (plus one for the neighbour lists). Returns the labels and the nodes whose cluster
    still changed in the last round (none: the fixed point, every label final). Edges may repeat
    (a node's first cluster is a set)."""
    messages = edges | "both directions" >> beam.FlatMap(_both_directions)
    for r in range(rounds + 1):
        name = "neighbours" if r == 0 else f"cc{r - 1}"
        out = (messages
               | f"{name} gather" >> beam.GroupByKey()
               | f"{name} cluster" >> beam.ParDo(ClusterRoundFn(first=r == 0, last=r == rounds,
                                                                tell_self=r == rounds - 1))
               .with_outputs(ClusterRoundFn.CHANGED, main="out"))
        messages = out.out
    return out.out, out[ClusterRoundFn.CHANGED]


class ApplyClustersFn(Counting, Sampling, beam.DoFn):
    """Keep a page unless its cluster label is a smaller id; record the cluster size."""

    def __init__(self, config: CorpusConfig, samples_dir: Optional[str] = None) -> None:
        self.config = config
        self.samples_dir = samples_dir if config.rule_samples.on else None
        self.sample_options = config.rule_samples

    def finish_bundle(self):
        super().finish_bundle()
        self.write_samples()

    def process(self, element):
        """Every page of the node: several pages share one id when URL dedup is off and a URL
        was crawled twice; each gets its node's verdict, as in one process."""
        node, grouped = element
        labels = list(grouped["label"])
        sizes = list(grouped["size"])
        size = sizes[0] if sizes else 1
        survives = not labels or labels[0] == node
        for packed_page in grouped["page"]:
            page = from_bytes(packed_page)
            count_near_dedup(self.inc_for(NS_NEAR), text_bytes(page), survives, size)
            if survives:
                yield page.replace(near_dup_cluster_size=size)
            else:
                sample_dropped(page, labels[0], self.traced(page.normalized_url), self.samples())


def near_dedup(pages, config: CorpusConfig, rounds: int, samples_dir: Optional[str] = None,
               buckets: int = DEFAULT_BUCKETS):
    keyed = pages | "key by id" >> beam.Map(lambda p: (doc_id(p.normalized_url), p))
    threshold = config.minhash.threshold
    edges = (keyed
             | "signatures and band keys" >> beam.ParDo(BandKeysFn(config, buckets=buckets))
             | "group bands" >> beam.GroupByKey()
             | "bucket edges" >> beam.FlatMap(batch_edges, threshold))
    labels, changed = connected_components(edges, rounds)
    sizes = (labels
             | "root of node" >> beam.Map(lambda kv: (kv[1], 1))
             | "cluster size" >> beam.CombinePerKey(sum))
    deduped = ({"page": keyed | "pack pages for join" >> beam.Map(packed), "label": labels, "size": sizes}
               | "join clusters" >> beam.CoGroupByKey()
               | "apply clusters" >> beam.ParDo(ApplyClustersFn(config, samples_dir)))
    _ = changed | "count unconverged" >> beam.ParDo(_CountUnconverged())
    return deduped


class _CountUnconverged(Counting, beam.DoFn):
    """One count per node whose cluster still changed (the counter sums them)."""

    def process(self, _node: int):
        self.inc_for(NS_NEAR)("unconverged-nodes")
