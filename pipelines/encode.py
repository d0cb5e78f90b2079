"""``tokenizer encode --runner``: the token stage as a Beam pipeline, on the runners ``corpus
build`` has (DirectRunner, flink-local, spark-local, Flink and Spark clusters, Dataflow).

The work is the local path's, task for task: :func:`c4forge.tokenizer.encode.plan_tasks` cuts
the corpus into the same tasks (consecutive rows of one corpus shard, one token shard each) and
each Beam worker runs :func:`c4forge.tokenizer.encode.encode_task` on its share, so the token
shards are the local path's bytes for the same ``--workers`` (the plan's parallelism). The
graph, as tfds' c4.py would write it::

    Tasks      beam.Create(tasks)             one element per token shard, in shard order
    Spread     beam.Reshuffle()               tasks over the workers (Create is one bundle)
    Encode     beam.ParDo(EncodeShards(...))  open the tokenizer once per worker, write shards
    Count      Map(...)                       each shard's stats as a JSON line for the driver

Shards go to a staging folder inside the output, which the workers must reach (a local path,
or a filesystem every worker mounts); the manifest is written, and the folder swapped in, only
when every task has finished (c4forge/core/outdir.py), so a failed, interrupted or killed run
leaves no finished-looking output. Memory is one task's text at a time per worker, flat in the
corpus size.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from c4forge.core.outdir import hook_from_env, writing
from c4forge.pipelines.build import (
    BuildError,
    InterruptFlag,
    local_runner,
    pipeline_options,
    runner_and_args,
    worker_folder,
)
from c4forge.pipelines.engines.runners import ENGINE_RUNNERS, MANAGED, engine
from c4forge.tokenizer.encode import as_spec, encode_task, plan_shards, prepare_encode, token_manifest
from c4forge.tokenizer.kinds import Tokenizer, TokenizerSpec, open_tokenizer
from c4forge.tokenizer.load import TokenizerError

STATS_SUFFIX = ".stats.json"  # beside each staged shard until the driver has read it


class EncodeShards(beam.DoFn):
    """Encode one task per element into its token shard; the tokenizer opens once per worker."""

    def __init__(self, spec: TokenizerSpec) -> None:
        self.spec = spec
        self.tokenizer: Optional[Tokenizer] = None

    def setup(self) -> None:
        self.tokenizer = open_tokenizer(self.spec).with_threads(1)

    def process(self, task):
        path, start, stop, staging, base = task
        assert self.tokenizer is not None
        stats = encode_task(self.tokenizer, path, start, stop, staging, base)
        with open(os.path.join(staging, base + STATS_SUFFIX), "w", encoding="utf-8") as handle:
            json.dump(stats, handle)
        yield base


def build_encode_graph(pipeline, tasks: list, spec: TokenizerSpec):
    """The encode graph (module docstring); its output: the names of the shards written."""
    return (pipeline
            | "Tasks" >> beam.Create(tasks)
            | "Spread" >> beam.Reshuffle()
            | "Encode" >> beam.ParDo(EncodeShards(spec)))


def run_encode(corpus: str, tokenizer, output: str, *, runner: Optional[str] = None,
               beam_args: Sequence[str] = (), workers: Optional[int] = None,
               max_docs_per_shard: int = 20_000, overwrite: bool = False, log=print,
               verbose: bool = False) -> dict:
    """Encode ``corpus`` on a Beam runner; returns the token manifest. ``workers``: the plan's
    parallelism (default every core; the same value gives the local path's shards) and, on
    flink-local and spark-local, the engine's slots."""
    name, args = runner_and_args(runner, beam_args, verbose, workers if runner in MANAGED else None)
    if "://" in output or "://" in corpus:
        raise BuildError("tokenizer encode --runner reads and writes paths every worker opens as "
                         "files (a local disk, or a shared filesystem on a cluster); gs:// and s3:// "
                         "are not supported yet: encode to a shared path, then copy")
    spec = as_spec(tokenizer)
    tok = open_tokenizer(spec)
    workers = workers or os.cpu_count() or 1
    corpus_manifest, plan, target = prepare_encode(corpus, tok, output, overwrite, log, workers,
                                                   max_docs_per_shard)
    log(f"encoding {sum(len(p) for p in plan.values())} shard(s) of {corpus} -> {output} (runner {name})")
    with writing(target, hook_from_env()) as staged:
        started = time.time()
        tasks = plan_shards(plan, worker_folder(staged.path))
        if name in ENGINE_RUNNERS:
            with engine(name, args, workers=workers if name in MANAGED else None, log=log) as running:
                _run(PipelineOptions(running.beam_args), tasks, spec, output)
        else:
            _run(pipeline_options(name, args, verbose), tasks, spec, output)
        results = [_read_stats(staged.path, task[4]) for task in tasks]
        staged.manifest = token_manifest(tok, corpus, corpus_manifest, tasks, results,
                                         {"workers": workers, "mode": "beam", "runner": name,
                                          "seconds": round(time.time() - started, 2)})
    assert staged.result is not None
    return staged.result


def _run(options: PipelineOptions, tasks: list, spec: TokenizerSpec, output: str) -> None:
    pipeline = beam.Pipeline(runner=local_runner(options), options=options)
    build_encode_graph(pipeline, tasks, spec)
    interrupted = InterruptFlag()
    try:
        with interrupted:
            state = pipeline.run().wait_until_finish()
    except Exception as exc:  # a worker's error surfaces here, with its traceback text
        if interrupted.seen:
            raise KeyboardInterrupt from exc
        lines = [line for line in str(exc).strip().splitlines() if "TokenizerError" in line]
        message = lines[-1].split("TokenizerError: ", 1)[-1] if lines else (
            str(exc).strip().splitlines() or [""])[-1]
        raise BuildError(f"encode pipeline failed ({message}); {output} is unchanged") from exc
    if str(state).split(".")[-1] not in ("DONE", "None"):
        raise BuildError(f"encode pipeline finished in state {state}; {output} is unchanged")


def _read_stats(staging: str, base: str) -> dict:
    """A shard's stats, written by its worker; the file removed (it is not part of the output)."""
    path = os.path.join(staging, base + STATS_SUFFIX)
    try:
        with open(path, encoding="utf-8") as handle:
            stats = json.load(handle)
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"token shard {base} has no stats from its worker ({exc}): the "
                             "pipeline did not write every shard") from exc
    os.remove(path)
    return stats
