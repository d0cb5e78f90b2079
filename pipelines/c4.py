"""The corpus graph, read as its recipe: crawl files -> the chain's steps (corpus/chain.py) ->
split -> shards. Wiring only: every decision is a function from corpus/. A run of page steps
is fused into the DoFn where the pages are (pipelines/wide.py); each corpus-wide step is the
composite transform of its twin module (pipelines/<twin>.py: url_dedup, exact_dedup,
line_dedup, near_dedup), in the chain's order; counters use the namespaces of corpus/steps.py,
the names the manifest and ``corpus stats`` report.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Optional

import apache_beam as beam

from c4forge.corpus.chain import Step, plan
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.near_dedup import DEFAULT_CC_ROUNDS
from c4forge.corpus.shards import DEFAULT_DOCS_PER_SHARD, DEFAULT_SHARD_FORMAT, shard_metadata
from c4forge.pipelines.dofns import DEFAULT_BUCKETS
from c4forge.pipelines.shards import write_shards
from c4forge.pipelines.wide import BeamJob, Stream, beam_twin, packed_pages_of, pages_of


def c4_pages(pipeline_or_paths, config: CorpusConfig, cc_rounds: int = DEFAULT_CC_ROUNDS,
             progress_dir: Optional[str] = None, buckets: int = DEFAULT_BUCKETS,
             launch_dir: Optional[str] = None, chain: Optional[Sequence[Step]] = None,
             samples_dir: Optional[str] = None, packed: bool = False, parking: Optional[str] = None):
    """The filtered, deduplicated pages (a PCollection of Documents, or with ``packed`` their
    corpus.document.to_bytes form) from crawl file paths: ``chain`` compiled into the graph
    (``progress_dir``: where the reading step reports, see pipelines/progress.py;
    ``buckets``: see dofns.shuffle_buckets; ``launch_dir``: what relative paths are relative
    to; ``samples_dir``: where the DoFns write the rule samples they find, see
    dofns.merge_sample_parts; ``parking``: where pages wait on disk, pipelines/parking.py)."""
    job = BeamJob(config, buckets, progress_dir, launch_dir, samples_dir, cc_rounds, parking)
    stream = end_of_chain(pipeline_or_paths, job, chain)
    return (packed_pages_of if packed else pages_of)(stream, job, "end of chain")


def end_of_chain(pipeline_or_paths, job: BeamJob, chain: Optional[Sequence[Step]] = None) -> Stream:
    """The stream after the last corpus-wide step of ``chain`` (pipelines/wide.py)."""
    layout = plan(job.config, chain)
    files = pipeline_or_paths | "reshuffle files" >> beam.Reshuffle()
    stream = Stream(files=files, pending=layout.first)
    for segment in layout.wide:
        stream = beam_twin(segment.step)(stream, segment, job)
    return stream


def build_graph(pipeline, paths: Iterable[str], config: CorpusConfig, staging: str,
                docs_per_shard: int = DEFAULT_DOCS_PER_SHARD, num_shards: Optional[int] = None,
                cc_rounds: int = DEFAULT_CC_ROUNDS, shard_format: str = DEFAULT_SHARD_FORMAT,
                progress_dir: Optional[str] = None, buckets: int = DEFAULT_BUCKETS,
                launch_dir: Optional[str] = None, recorded: Optional[CorpusConfig] = None,
                chain: Optional[Sequence[Step]] = None, samples_dir: Optional[str] = None,
                parking: Optional[str] = None):
    """The whole graph on ``pipeline`` (``chain``: corpus/chain.py's steps); returns the (file
    name, stats) PCollection.
    ``recorded``: the config as the manifest records it (``config`` by default), whose hash
    every shard carries; ``config`` itself may be its worker form (absolute paths).
    ``samples_dir``: where the rule samples' parts go (None: none recorded). ``parking``: a
    folder where pages wait on disk, every worker's local path (None: the pages cross the
    shuffles; pipelines/parking.py)."""
    job = BeamJob(config, buckets, progress_dir, launch_dir, samples_dir, cc_rounds, parking)
    files = pipeline | "input files" >> beam.Create(sorted(paths))
    stream = end_of_chain(files, job, chain)
    parked = stream.parked is not None and not stream.pending
    pages = stream.parked if parked else packed_pages_of(stream, job, "end of chain")
    return write_shards(pages, staging, docs_per_shard=docs_per_shard, num_shards=num_shards,
                        per_mille=config.validation_per_mille, shard_format=shard_format,
                        metadata=shard_metadata((recorded or config).to_dict(), shard_format),
                        progress_dir=progress_dir, parking=parking if parked else None)
