"""The corpus graph, read as its recipe: crawl files -> the chain's steps (corpus/chain/chains.py) ->
split -> shards. Wiring only: every decision is a function from corpus/.

``fusions`` is the graph's one planning pass: where the page steps run (fused into the DoFn that
next touches the pages), whether URL dedup's groups claim the lines for a line dedup right after
it (the two then meet the pages at one join), and where the pages wait (carried through the
shuffles or parked on local disk: pipelines/store.py). Each corpus-wide step is then the
composite transform of its twin (``TWINS``: pipelines/<twin>.py), in the chain's order, handed
the pages (pipelines/pages.py: one value) and what the plan decided for it; counters use the
namespaces the steps declare, the names the manifest and ``corpus stats`` report.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Optional

import apache_beam as beam

from c4forge.corpus.chain.chains import Plan, Segment, plan
from c4forge.corpus.chain.step import Scope, Step
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup.near_dedup import DEFAULT_CC_ROUNDS
from c4forge.corpus.output.shards import DEFAULT_DOCS_PER_SHARD, DEFAULT_SHARD_FORMAT, shard_metadata
from c4forge.pipelines.dofns import DEFAULT_BUCKETS
from c4forge.pipelines.pages import BeamJob, Fused, Fusion, Pages
from c4forge.pipelines.shards import write_shards
from c4forge.pipelines.store import INLINE, PageStore
from c4forge.pipelines.twins import exact_dedup, line_dedup, near_dedup, url_dedup

# Each corpus-wide step's Beam twin: expand(pages, segment, job, fusion) -> pages
TWINS = {"url-dedup": url_dedup.expand, "exact-dedup": exact_dedup.expand,
         "line-dedup": line_dedup.expand, "near-dedup": near_dedup.expand}
# The steps whose twins hand on pages they have put in a store (URL dedup's reader, near-dedup's
# cluster join): parked there when the build has a local folder for it.
STORING = (Scope.URL_GROUPS, Scope.CLUSTERS)


class Stage(NamedTuple):
    """A corpus-wide step as the graph runs it: its segment of the plan and the fusions chosen."""

    segment: Segment
    fusion: Fusion


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


def end_of_chain(files, job: BeamJob, chain: Optional[Sequence[Step]] = None) -> Pages:
    """The pages after the last corpus-wide step of ``chain`` (default: the config's)."""
    layout = plan(job.config, chain)
    pages = Pages.files(files | "reshuffle files" >> beam.Reshuffle(), pending=layout.first)
    for segment, fusion in fusions(layout, job):
        pages = TWINS[segment.step.name](pages, segment, job, fusion)
    return pages


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
