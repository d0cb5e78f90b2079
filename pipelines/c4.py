"""The corpus graph, read as its recipe, top to bottom as tfds' c4.py reads: every transform the
build applies is in this module, in the order it is applied. Crawl files -> (the page steps, per
page) -> each corpus-wide step of the chain (corpus/chain/chains.py) in the chain's order:
``url_dedup``, ``exact_dedup``, ``line_dedup``, ``near_dedup`` -> ``write_shards``. Wiring only:
what a transform does to an element is a DoFn or function of the step's Beam twin
(pipelines/twins/<step>.py) over corpus/, and every decision is corpus/'s.

``fusions`` is the graph's one planning pass (its choices are named: pipelines/pages.py ``Fused``):
where the page steps run (fused into the DoFn that next touches the pages), whether URL dedup's
groups claim the lines for a line dedup right after it (the two then meet the pages at one
join), and where the pages wait (carried through the shuffles or parked on local disk:
pipelines/store.py). Each corpus-wide step is handed the pages (pipelines/pages.py: one value),
its segment of the plan (the step and the page steps after it) and what the plan decided for
it. Counters use the namespaces the steps declare, the names the manifest and ``corpus stats``
report. The graph each preset plans is drawn in docs/architecture.md (``planned_labels``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Optional

import apache_beam as beam

from c4forge.corpus.chain.chains import Plan, Segment, plan
from c4forge.corpus.chain.step import Scope, Step
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup.exact_dedup import text_key
from c4forge.corpus.dedup.near_dedup import DEFAULT_CC_ROUNDS, NS_NEAR, doc_id
from c4forge.corpus.output.shards import DEFAULT_DOCS_PER_SHARD, DEFAULT_SHARD_FORMAT, shard_metadata
from c4forge.pipelines.dofns import DEFAULT_BUCKETS, packed
from c4forge.pipelines.pages import BeamJob, Form, Fused, Fusion, Pages
from c4forge.pipelines.shards import WriteShardFn, assign_shard, page_split
from c4forge.pipelines.store import INLINE, PageStore
from c4forge.pipelines.twins.exact_dedup import EarliestPageFn
from c4forge.pipelines.twins.line_dedup import ClaimLinesFn, LineOwnersFn, keep_owned_lines
from c4forge.pipelines.twins.near_dedup import (
    ApplyClustersFn,
    BandKeysFn,
    CandidatesFn,
    ClusterRoundFn,
    CountUnconvergedFn,
    NodeBatchesFn,
    answer_requests,
    both_directions,
    checked_edges,
)
from c4forge.pipelines.twins.url_dedup import NewestPagesFn, ReadCandidatesFn, keep_winners

# ---------------------------------------------------------------------------------------------
# The graph: files in, shards out.


def build_graph(pipeline, paths: Iterable[str], config: CorpusConfig, staging: str,
                docs_per_shard: int = DEFAULT_DOCS_PER_SHARD, num_shards: Optional[int] = None,
                cc_rounds: int = DEFAULT_CC_ROUNDS, shard_format: str = DEFAULT_SHARD_FORMAT,
                progress_dir: Optional[str] = None, buckets: int = DEFAULT_BUCKETS,
                launch_dir: Optional[str] = None, recorded: Optional[CorpusConfig] = None,
                chain: Optional[Sequence[Step]] = None, samples_dir: Optional[str] = None,
                parking: Optional[str] = None):
    """The whole graph on ``pipeline`` (``chain``: the steps, default the config's); returns the
    (file name, stats) PCollection. ``recorded``: the config as the manifest records it
    (``config`` by default), whose hash every shard carries; ``config`` itself may be its worker
    form (absolute paths). ``samples_dir``: where the rule samples' parts go (None: none
    recorded). ``parking``: a folder where pages wait on disk, every worker's local path (None:
    the pages cross the shuffles; pipelines/store.py)."""
    job = BeamJob(config, buckets, progress_dir, launch_dir, samples_dir, cc_rounds, parking)
    files = pipeline | "input files" >> beam.Create(sorted(paths))
    refs, store = end_of_chain(files, job, chain).refs(job, "end of chain")
    return write_shards(refs, store, staging, docs_per_shard=docs_per_shard, num_shards=num_shards,
                        per_mille=config.validation_per_mille, shard_format=shard_format,
                        metadata=shard_metadata((recorded or config).to_dict(), shard_format),
                        progress_dir=progress_dir)


def c4_pages(files, config: CorpusConfig, cc_rounds: int = DEFAULT_CC_ROUNDS,
             progress_dir: Optional[str] = None, buckets: int = DEFAULT_BUCKETS,
             launch_dir: Optional[str] = None, chain: Optional[Sequence[Step]] = None,
             samples_dir: Optional[str] = None, parking: Optional[str] = None):
    """The filtered, deduplicated pages (a PCollection of Documents) from crawl file paths
    (``progress_dir``: where the reading step reports, see pipelines/progress.py; ``buckets``:
    see dofns.shuffle_buckets; ``launch_dir``: what relative paths are relative to;
    ``samples_dir``: where the DoFns write the rule samples they find, see
    dofns.merge_sample_parts; ``parking``: a folder where pages may wait, pipelines/store.py)."""
    job = BeamJob(config, buckets, progress_dir, launch_dir, samples_dir, cc_rounds, parking)
    return end_of_chain(files, job, chain).documents(job, "end of chain")


def end_of_chain(files, job: BeamJob, chain: Optional[Sequence[Step]] = None) -> Pages:
    """The pages after the last corpus-wide step of ``chain`` (default: the config's): the files
    reshuffled, then each corpus-wide step's transforms in the chain's order, as planned."""
    layout = plan(job.config, chain)
    pages = Pages.files(files | "reshuffle files" >> beam.Reshuffle(), pending=layout.first)
    for stage in fusions(layout, job):
        pages = CORPUS_WIDE[stage.segment.step.name](pages, stage.segment, job, stage.fusion)
    return pages


class Stage(NamedTuple):
    """A corpus-wide step as the graph runs it: its segment of the plan and the fusions chosen."""

    segment: Segment
    fusion: Fusion


# The steps whose transforms hand on pages they have put in a store (URL dedup's reader,
# near-dedup's cluster join): parked there when the build has a local folder for it.
STORING = (Scope.URL_GROUPS, Scope.CLUSTERS)


def fusions(layout: Plan, job: BeamJob) -> tuple[Stage, ...]:
    """The planning pass: for each corpus-wide step that runs, what it fuses with its
    neighbours. URL dedup (always first: check_chain) runs the page steps after it where the
    pages are read and counts them for each URL's winner; when line dedup comes right after
    it, URL dedup's groups claim the winners' lines and line dedup meets the pages at URL
    dedup's join (one CoGroupByKey for both); URL dedup and near-dedup park the pages they
    hand on when ``job.parking`` is a folder."""
    parked = PageStore(job.parking) if job.parking else INLINE
    wide = [segment.step for segment in layout.wide]
    stages = []
    for i, segment in enumerate(layout.wide):
        step = segment.step
        before = wide[i - 1] if i else None
        after = wide[i + 1] if i + 1 < len(wide) else None
        fused = set()
        if step.scope is Scope.URL_GROUPS:
            fused.add(Fused.PAGE_STEPS_AT_READER)
            if after is not None and after.scope is Scope.LINE_OWNERS:
                fused.add(Fused.CLAIM_LINES_IN_URL_GROUPS)
        if step.scope is Scope.LINE_OWNERS and before is not None and before.scope is Scope.URL_GROUPS:
            fused.add(Fused.LINES_CLAIMED_AT_URL_JOIN)
        stages.append(Stage(segment, Fusion(frozenset(fused), parked if step.scope in STORING else INLINE)))
    return tuple(stages)


# ---------------------------------------------------------------------------------------------
# The corpus-wide steps, in the order the c4 chain runs them. Each: (pages, its segment, the job,
# its fusions) -> the pages after it and after the page steps its segment holds.


def url_dedup(pages: Pages, segment: Segment, job: BeamJob, fusion: Fusion) -> Pages:
    """Each URL's newest crawl (pipelines/twins/url_dedup.py): the reader reads the crawl files,
    runs the page steps, sends each page's small candidate to its URL group and its text to the
    join, where only the groups' winners go on."""
    if pages.form is not Form.FILES:  # check_chain keeps URL dedup the first corpus-wide step
        raise ValueError("url-dedup reads its candidates where the pages are read")
    at_reader = Fused.PAGE_STEPS_AT_READER in fusion
    claim_lines = Fused.CLAIM_LINES_IN_URL_GROUPS in fusion
    after = segment.after if at_reader else ()
    read = (pages.pcoll
            | "read, page steps, url candidates" >> beam.ParDo(
                ReadCandidatesFn(job, pages.pending, after, claim_lines, fusion.store))
            .with_outputs(ReadCandidatesFn.PAGES, main="candidates"))
    newest = (read.candidates
              | "group by url bucket" >> beam.GroupByKey()
              | "newest per url" >> beam.ParDo(NewestPagesFn(claim_lines, job.buckets, job.samples_dir,
                                                             job.config.rule_samples))
              .with_outputs(NewestPagesFn.CLAIMS, main="winners"))
    joined = Pages.joined(read[ReadCandidatesFn.PAGES], fusion.store, {"winners": newest.winners},
                          (keep_winners,), newest[NewestPagesFn.CLAIMS] if claim_lines else None)
    return joined if at_reader else joined.then(segment.after)


def exact_dedup(pages: Pages, segment: Segment, job: BeamJob, fusion: Fusion) -> Pages:
    """Each normalised text's earliest crawl (pipelines/twins/exact_dedup.py): one shuffle of the
    packed pages by text key."""
    kept = (pages.documents(job, "exact-dedup")
            | "key by text" >> beam.Map(lambda page: (text_key(page.text), page))
            | "pack pages for text groups" >> beam.Map(packed)
            | "group by text" >> beam.GroupByKey()
            | "earliest per text" >> beam.ParDo(EarliestPageFn(job.config, job.samples_dir)))
    return Pages(Form.DOCUMENTS, kept, pending=segment.after)


def line_dedup(pages: Pages, segment: Segment, job: BeamJob, fusion: Fusion) -> Pages:
    """Each line kept by its owner only (pipelines/twins/line_dedup.py): the claims (made here, or
    by URL dedup's groups where fused) grouped by line bucket, each line's owner sent to its
    page's join."""
    if Fused.LINES_CLAIMED_AT_URL_JOIN in fusion:
        claims = pages.claims
    else:
        documents = pages.documents(job, "line-dedup")
        claims = documents | "line claims" >> beam.ParDo(ClaimLinesFn(buckets=job.buckets))
        pages = Pages(Form.DOCUMENTS, documents)
    owners = (claims
              | "group claims by line bucket" >> beam.GroupByKey()
              | "owner of line" >> beam.ParDo(LineOwnersFn(job.buckets)))
    return pages.meet(job, "lines", owners, keep_owned_lines).then(segment.after)


def near_dedup(pages: Pages, segment: Segment, job: BeamJob, fusion: Fusion) -> Pages:
    """One page per MinHash cluster (pipelines/twins/near_dedup.py): band edges, connected
    components, then each page meets its cluster's label and size."""
    store, buckets = fusion.store, job.buckets
    keyed = (pages.documents(job, "near-dedup")
             | "key by id" >> beam.Map(lambda p: (doc_id(p.normalized_url), p)))
    edges = band_edges(keyed, job.config.settings_of(NS_NEAR), buckets)
    labels, changed = connected_components(edges, job.cc_rounds)
    sizes = (labels
             | "root of node" >> beam.Map(lambda kv: (kv[1], 1))
             | "cluster size" >> beam.CombinePerKey(sum))
    kept = ({"page": keyed | ("park pages, tickets for join" if store.parks else "pack pages for join")
             >> beam.ParDo(NodeBatchesFn(buckets, store)),
             "label": labels | "labels by node bucket" >> beam.ParDo(NodeBatchesFn(buckets)),
             "size": sizes | "sizes by node bucket" >> beam.ParDo(NodeBatchesFn(buckets))}
            | "join clusters" >> beam.CoGroupByKey()
            | "apply clusters" >> beam.ParDo(ApplyClustersFn(job.config, store, job.samples_dir)))
    _ = changed | "count unconverged" >> beam.ParDo(CountUnconvergedFn())
    return Pages(Form.REFS, kept, store=store, pending=segment.after)


def band_edges(keyed, settings, buckets: int, batch: int = 512, batch_bytes: int = 4 << 20):
    """Pages keyed by id -> the edges of their band buckets (corpus/dedup/near_dedup.py's): band keys
    (and signatures) grouped by shuffle bucket; without a threshold the stars of the buckets of
    two or more ids; with one, their members' signatures fetched and checked per band bucket."""
    threshold = settings.threshold
    candidates = (keyed
                  | "signatures and band keys" >> beam.ParDo(BandKeysFn(settings, batch, buckets, batch_bytes))
                  | "group bands" >> beam.GroupByKey()
                  | "band candidates" >> beam.ParDo(CandidatesFn(threshold, buckets))
                  .with_outputs(CandidatesFn.REQUESTS, main="edges"))
    if threshold is None:
        return candidates.edges
    return (candidates[CandidatesFn.REQUESTS]
            | "fetch candidates' signatures" >> beam.GroupByKey()
            | "signatures to band buckets" >> beam.FlatMap(answer_requests)
            | "group candidates" >> beam.GroupByKey()
            | "checked edges" >> beam.FlatMap(checked_edges, threshold))


def connected_components(edges, rounds: int):
    """{node: smallest id in its component} by Hash-to-Min (corpus/dedup/near_dedup.py hash_to_min;
    Rastogi et al., "Finding Connected Components in Map-Reduce in Logarithmic Rounds", ICDE
    2013), unrolled ``rounds`` times on the engine: no collect-to-one-node step, one shuffle per
    round (plus one for the neighbour lists). Returns the labels and the nodes whose cluster
    still changed in the last round (none: the fixed point, every label final). Edges may repeat
    (a node's first cluster is a set)."""
    messages = edges | "both directions" >> beam.FlatMap(both_directions)
    for r in range(rounds + 1):
        name = "neighbours" if r == 0 else f"cc{r - 1}"
        out = (messages
               | f"{name} gather" >> beam.GroupByKey()
               | f"{name} cluster" >> beam.ParDo(ClusterRoundFn(first=r == 0, last=r == rounds,
                                                                tell_self=r == rounds - 1))
               .with_outputs(ClusterRoundFn.CHANGED, main="out"))
        messages = out.out
    return out.out, out[ClusterRoundFn.CHANGED]


# Each corpus-wide step's transforms, by the step's name (corpus/steps/<step>.py declares it).
CORPUS_WIDE = {"url-dedup": url_dedup, "exact-dedup": exact_dedup,
               "line-dedup": line_dedup, "near-dedup": near_dedup}


# ---------------------------------------------------------------------------------------------
# The output: pages split (train/validation), assigned to shards, each shard written by one
# worker (pipelines/shards.py's WriteShardFn, corpus/output/shards.py's format).


def write_shards(refs, store: PageStore, staging: str, docs_per_shard: int = DEFAULT_DOCS_PER_SHARD,
                 num_shards: Optional[int] = None, per_mille: int = 1,
                 shard_format: str = DEFAULT_SHARD_FORMAT, metadata: Optional[dict] = None,
                 progress_dir: Optional[str] = None):
    """Split and shard the pages (``refs``: PageRefs of pages in ``store``); returns a
    PCollection of (file name, stats). A shard's pages sort by url before they are read."""
    counts = (refs
              | "split of page" >> beam.Map(page_split, per_mille)
              | "count per split" >> beam.CombinePerKey(sum))
    return (refs
            | "assign shard" >> beam.Map(assign_shard, counts=beam.pvalue.AsDict(counts),
                                         docs_per_shard=docs_per_shard, fixed=num_shards,
                                         per_mille=per_mille)
            | "group shards" >> beam.GroupByKey()
            | "write shards" >> beam.ParDo(WriteShardFn(staging, shard_format, metadata or {}, store,
                                                        progress_dir)))


# ---------------------------------------------------------------------------------------------
# The graph as the docs draw it (make docs; nothing runs).


def planned_labels(config: CorpusConfig) -> list[str]:
    """The graph ``build_graph`` makes for ``config``, as the labels of its transforms in the
    order they are applied (composites by their own label; nothing runs): what docs/architecture.md
    shows for each preset (``make docs``)."""
    pipeline = beam.Pipeline(runner="DirectRunner")
    build_graph(pipeline, ["CRAWL"], config, "STAGING")
    labels: list[str] = []

    class TopLevel(beam.pipeline.PipelineVisitor):
        def enter_composite_transform(self, node) -> None:
            if node.full_label and "/" not in node.full_label:
                labels.append(node.full_label)

        def visit_transform(self, node) -> None:
            if "/" not in node.full_label:
                labels.append(node.full_label)

    pipeline.visit(TopLevel())
    return labels


def planned_fusions(config: CorpusConfig) -> dict[str, list[str]]:
    """Each corpus-wide step's fusions as the planning pass names them, for a build with a local
    folder where pages may wait (docs/architecture.md, ``make docs``)."""
    job = BeamJob(config, parking="PARKING")
    return {stage.segment.step.name: stage.fusion.names() for stage in fusions(plan(config), job)}
