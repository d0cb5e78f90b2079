"""Start a standalone Flink or Spark cluster on this machine (127.0.0.1 only) from the pinned
Maven Central jars, print its master, and stop it on Ctrl-C or after ``--minutes``: what the
tests use, for a user who wants to point `corpus build --runner FlinkRunner/SparkRunner` at a
real cluster without installing one.

    python -m c4forge.pipelines.engines.clusters.cluster flink --taskmanagers 2 --slots 1
    python -m c4forge.pipelines.engines.clusters.cluster spark --workers 1 --cores 2
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

from c4forge.core.io import shown_place
from c4forge.pipelines.engines.clusters.flink import FlinkCluster
from c4forge.pipelines.engines.clusters.spark import SparkCluster
from c4forge.pipelines.engines.jvm.jars import EngineError
from c4forge.pipelines.engines.runners import KEEP_ENV


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m c4forge.pipelines.engines.clusters.cluster",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=("flink", "spark"))
    parser.add_argument("--taskmanagers", type=int, default=2, help="Flink: TaskManager processes")
    parser.add_argument("--slots", type=int, default=1, help="Flink: slots per TaskManager")
    parser.add_argument("--taskmanager-mb", type=int, default=1536, help="Flink: MB per TaskManager")
    parser.add_argument("--workers", type=int, default=1, help="Spark: worker processes")
    parser.add_argument("--cores", type=int, default=2, help="Spark: cores per worker")
    parser.add_argument("--worker-mb", type=int, default=3072, help="Spark: executor MB per worker")
    parser.add_argument("--minutes", type=float, default=60.0,
                        help="stop the cluster after this long (default 60)")
    args = parser.parse_args(argv)
    for name in ("taskmanagers", "slots", "taskmanager_mb", "workers", "cores", "worker_mb"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    folder = tempfile.mkdtemp(prefix=f"c4forge-{args.engine}-cluster-")
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    if args.engine == "flink":
        cluster: FlinkCluster | SparkCluster = FlinkCluster(
            folder, taskmanagers=args.taskmanagers, slots=args.slots,
            taskmanager_mb=args.taskmanager_mb, log=log)
        flag = "--runner FlinkRunner --flink_master"
    else:
        cluster = SparkCluster(folder, workers=args.workers, cores=args.cores,
                               worker_mb=args.worker_mb, log=log)
        flag = "--runner SparkRunner --spark_master_url"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with cluster:
            print(f"{args.engine} cluster up (logs: {shown_place(folder)}); for the next "
                  f"{args.minutes:g} minutes, or until Ctrl-C:\n"
                  f"  corpus build ... {flag} {cluster.master}", flush=True)
            time.sleep(args.minutes * 60)
    except EngineError as exc:
        print(f"error: {exc} (logs kept in {shown_place(folder)})", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM (its handler exits)
        pass
    # stopped as asked: its folder (logs, spill files) goes with it, unless asked to keep it
    if os.environ.get(KEEP_ENV) == "1":
        print(f"{args.engine} cluster stopped; its folder kept ({KEEP_ENV}=1): {shown_place(folder)}",
              file=sys.stderr)
    else:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"{args.engine} cluster stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
