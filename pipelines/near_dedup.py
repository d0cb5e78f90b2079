"""MinHash near-dedup on Beam (the twin of corpus/near_dedup.py; contract: corpus/chain.py's
NEAR_DEDUP): band keys per page, star edges per band bucket, connected components by
Hash-to-Min unrolled on the engine, then each page meets its cluster's label and size.
"""
from __future__ import annotations

from typing import Optional

import apache_beam as beam

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
from c4forge.pipelines.dofns import Counting, Sampling, in_global_window, packed
from c4forge.pipelines.wide import BeamJob, Stream, pages_of


def expand(stream: Stream, segment: Segment, job: BeamJob) -> Stream:
    pages = pages_of(stream, job, "near-dedup")
    return Stream(pages=near_dedup(pages, job.config, job.cc_rounds, job.samples_dir),
                  pending=segment.after)


class BandKeysFn(beam.DoFn):
    """(id, page) -> (band key, (id, signature)) for each band of its MinHash signature; the
    signatures are computed vectorised over up to ``batch`` pages of the bundle at a time (one
    DoFn instead of Beam's BatchElements composite, a signature step and a band step: fewer
    transforms to build, translate and start)."""

    def __init__(self, config: CorpusConfig, batch: int = 512) -> None:
        self.config = config
        self.batch = batch
        self.hasher: Optional[MinHasher] = None
        self.pending: list[tuple[int, Document]] = []

    def setup(self) -> None:
        self.hasher = MinHasher(self.config.minhash)

    def start_bundle(self) -> None:
        self.pending = []

    def process(self, element):
        self.pending.append(element)
        if len(self.pending) >= self.batch:
            yield from self._flush()

    def finish_bundle(self):
        yield from in_global_window(self._flush())

    def _flush(self):
        pending, self.pending = self.pending, []
        if not pending:
            return
        signatures = self.hasher.signatures([page.text for _, page in pending])
        for (node, _), signature in zip(pending, signatures):
            for key in self.hasher.band_keys(signature):
                yield key, (node, signature)


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


def near_dedup(pages, config: CorpusConfig, rounds: int, samples_dir: Optional[str] = None):
    keyed = pages | "key by id" >> beam.Map(lambda p: (doc_id(p.normalized_url), p))
    threshold = config.minhash.threshold
    edges = (keyed
             | "signatures and band keys" >> beam.ParDo(BandKeysFn(config))
             | "group bands" >> beam.GroupByKey()
             | "bucket edges" >> beam.FlatMap(lambda kv: bucket_edges(list(kv[1]), threshold)))
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
