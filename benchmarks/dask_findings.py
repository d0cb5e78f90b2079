"""Beam's DaskRunner on a dask.distributed LocalCluster: a minimal reproduction of each reason
c4forge does not ship it as a runner (README, "Runners"), and the full c4 graph on it.

Needs ``pip install "apache-beam[dask]"`` (dask and distributed), which c4forge does not
install. Each finding prints REPRODUCED or NOT REPRODUCED, so a Beam release that fixes one
shows up here.

Run: .venv/bin/python benchmarks/dask_findings.py [--graph] [--timeout 300]
"""
from __future__ import annotations

import argparse
import glob
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DASK = "apache_beam.runners.dask.dask_runner.DaskRunner"
DIRECT_DOCUMENTS = 371  # `corpus build` of the shared crawl, preset c4, DirectRunner


def _options(runner: str, client_address: str):
    from apache_beam.options.pipeline_options import PipelineOptions

    return PipelineOptions([f"--runner={runner}", f"--dask_client_address={client_address}"])


def refused_by_name(address: str) -> str:
    import apache_beam as beam

    try:
        with beam.Pipeline(options=_options("DaskRunner", address)) as p:
            _ = p | beam.Create([1, 2, 3])
    except Exception as exc:  # noqa: BLE001 - the finding is the exception
        return f"REPRODUCED: --runner DaskRunner -> {type(exc).__name__}: {str(exc)[:120]}"
    return "NOT REPRODUCED: --runner DaskRunner accepted"


def metrics_unsupported(address: str) -> str:
    import apache_beam as beam
    from apache_beam.metrics import Metrics

    class Count(beam.DoFn):
        def process(self, x):
            Metrics.counter("repro", "seen").inc()
            yield x

    p = beam.Pipeline(options=_options(DASK, address))
    _ = p | beam.Create(list(range(10))) | beam.ParDo(Count())
    result = p.run()
    result.wait_until_finish()
    try:
        counters = result.metrics().query()["counters"]
    except Exception as exc:  # noqa: BLE001
        return f"REPRODUCED: result.metrics() -> {type(exc).__name__}: {str(exc)[:120]}"
    return f"NOT REPRODUCED: metrics returned {[(c.key.metric.name, c.committed) for c in counters]}"


def batch_elements_loses_finish_bundle_output(address: str, folder: str) -> str:
    """BatchElements emits its last batch from finish_bundle; the Dask translation collects a
    bundle's outputs before finish_bundle runs."""
    import apache_beam as beam

    out = os.path.join(folder, "batched")
    p = beam.Pipeline(options=_options(DASK, address))
    _ = (p | beam.Create(list(range(1000)))
         | beam.BatchElements(min_batch_size=64, max_batch_size=512)  # as pipelines/c4.py
         | beam.Map(len)
         | beam.CombineGlobally(sum)
         | beam.Map(lambda n: open(out, "w").write(str(n))))
    p.run().wait_until_finish()
    seen = int(open(out).read()) if os.path.exists(out) else 0
    if seen != 1000:
        return f"REPRODUCED: 1,000 elements through BatchElements -> {seen:,} out"
    return "NOT REPRODUCED: 1,000 in, 1,000 out"


def tagged_outputs_mixed(address: str, folder: str) -> str:
    """A ParDo with a tagged output (pipelines/c4.py: NewestPageFn's pages and its keyed bytes
    for the line-dedup join): each output should get only its own elements."""
    import apache_beam as beam

    class Split(beam.DoFn):
        def process(self, x):
            yield x
            if x % 2:
                yield beam.pvalue.TaggedOutput("odd", -x)

    out = os.path.join(folder, "tagged")
    p = beam.Pipeline(options=_options(DASK, address))
    outputs = p | beam.Create(list(range(10))) | beam.ParDo(Split()).with_outputs("odd", main="all")
    _ = (outputs.all
         | beam.Map(lambda x: int(x < 0))
         | beam.CombineGlobally(sum)
         | beam.Map(lambda n: open(out, "w").write(str(n))))
    p.run().wait_until_finish()
    stray = int(open(out).read()) if os.path.exists(out) else None
    if stray:
        return f"REPRODUCED: the main output got {stray} of the tagged output's 5 elements"
    if stray is None:
        return "REPRODUCED: the pipeline failed or wrote nothing"
    return "NOT REPRODUCED: each output got only its own elements"


def c4_graph(address: str, folder: str, rounds: int, timeout: float) -> str:
    """The whole `corpus build` graph on the shared crawl (run in a child process, stopped at
    ``timeout`` seconds)."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_build_child, args=(address, folder, rounds, queue))
    start = time.time()
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.terminate()
        child.join()
        return f"did not finish in {timeout:.0f} s ({rounds} connected-components rounds)"
    return f"{queue.get() if not queue.empty() else 'crashed'} in {time.time() - start:.0f} s"


def _build_child(address, folder, rounds, queue):
    import apache_beam as beam

    from c4forge.corpus.config import build_config
    from c4forge.pipelines.c4 import build_graph

    crawl = sorted(glob.glob(str(ROOT.parent / "shared" / "data" / "crawl" / "*.wet.gz")))
    cfg = build_config("c4", badwords=str(ROOT.parent / "shared" / "data" / "badwords")).for_workers()
    staging = os.path.join(folder, "staging")
    os.makedirs(staging, exist_ok=True)
    p = beam.Pipeline(options=_options(DASK, address))
    build_graph(p, crawl, cfg, staging, cc_rounds=rounds)
    result = p.run()
    result.wait_until_finish()
    from c4forge.corpus.output.shards import shard_rows

    shards = [n for n in os.listdir(staging) if not n.endswith(".json") and "-of-" in n]
    documents = sum(shard_rows(os.path.join(staging, n)) for n in shards)
    try:
        result.metrics().query()
        metrics = "metrics ok"
    except Exception as exc:  # noqa: BLE001
        metrics = f"metrics failed ({type(exc).__name__})"
    queue.put(f"finished: {documents:,} documents in {len(shards)} shard(s) left in staging "
              f"(the DirectRunner builds {DIRECT_DOCUMENTS:,}), {metrics}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="store_true", help="also run the whole c4 graph")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    try:
        from dask.distributed import LocalCluster
    except ImportError:
        print("dask is not installed: pip install 'apache-beam[dask]'", file=sys.stderr)
        return 2
    import apache_beam
    import dask

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, \
            tempfile.TemporaryDirectory() as folder:
        address = cluster.scheduler_address
        print(f"apache-beam {apache_beam.__version__}, dask {dask.__version__}, LocalCluster 2 workers")
        print("1. runner by name:", refused_by_name(address))
        print("2. metrics:", metrics_unsupported(address))
        print("3. BatchElements:", batch_elements_loses_finish_bundle_output(address, folder))
        print("4. tagged outputs:", tagged_outputs_mixed(address, folder))
        if args.graph:
            print("5. c4 graph:", c4_graph(address, folder, args.rounds, args.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
