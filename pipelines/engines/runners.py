"""Running `corpus build` on Flink or Spark: which cluster, which job server, which SDK workers.

Three ways per engine, one code path (a Java job server c4forge starts and stops, the Python
SDK submitting to it through Beam's portable job API, SDK workers that boot this installation):

- embedded: ``--runner FlinkRunner --flink_master [local]`` (Flink inside the job server's JVM),
  ``--runner SparkRunner --spark_master_url local[N]``;
- a cluster that is already running: ``--flink_master HOST:PORT``, ``--spark_master_url
  spark://HOST:PORT`` (workers elsewhere need ``--environment_type DOCKER`` or ``EXTERNAL``);
- managed: ``--runner flink-local`` / ``spark-local``: the engine embedded in a job server
  started for the build with one slot per worker (``--workers``, default every core) and a
  memory budget (JVM heap, Flink managed memory; both spill to disk beyond it), stopped after
  it, also on failure or Ctrl-C.

Standalone clusters on this machine (flink.py's JobManager + TaskManagers, spark.py's master +
worker) are the second case; the tests and benchmarks start them.

The job server is Beam's (``--flink_job_server_jar`` / ``--spark_job_server_jar`` when given,
else the launcher of the pinned jars, pipelines/engines/jvm/jars.py).
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Optional

import apache_beam
import requests
from apache_beam.options.pipeline_options import PipelineOptions

from c4forge.core.io import shown_place
from c4forge.pipelines.engines.clusters.flink import FLINK_VERSION, embedded_conf
from c4forge.pipelines.engines.clusters.processes import (
    Services,
    answers,
    disown,
    free_port,
    get_json,
    owned_folder,
    port_open,
)
from c4forge.pipelines.engines.clusters.spark import SPARK_VERSION
from c4forge.pipelines.engines.jvm.class_sharing import class_archive
from c4forge.pipelines.engines.jvm.jars import (
    LOG_PROPERTIES,
    SPARK_OPENS,
    EngineError,
    EngineUsageError,
    cache_dir,
    java_executable,
    java_version,
    launcher_jar,
    load_lock,
)
from c4forge.pipelines.engines.workers.worker_boot import PIN_ENV, ROOT_ENV
from c4forge.pipelines.engines.workers.worker_fork import ForkServer, client_command, forking_available

FLINK, SPARK = "FlinkRunner", "SparkRunner"
FLINK_LOCAL, SPARK_LOCAL = "flink-local", "spark-local"
MANAGED = (FLINK_LOCAL, SPARK_LOCAL)
ENGINE_RUNNERS = (FLINK, SPARK, *MANAGED)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
EMBEDDED_FLINK = ("[local]", "[auto]")
ENVIRONMENT_CACHE_MS = 60_000
KEEP_ENV = "C4FORGE_KEEP_ENGINE_FOLDER"  # 1: keep logs, worker folders and spill files
JOB_SERVER_LOCKS = {FLINK: "flink-1.19-job-server", SPARK: "spark-3-job-server"}
# Memory of the managed engines, in MB: a JVM's fixed part plus a part per slot (each slot's
# sorter and spill buffers, and the Python SDK worker beside it); measured in make bench.
JVM_BASE_MB, PER_SLOT_MB, MANAGED_MB = 768, 512, 256
# Pekko's schedulers (the threads of Flink's RPC and metrics actor systems, flink-scheduler-1
# and flink-metrics-scheduler-1) wake every 10 ms whether or not a timer is due: 0.006-0.008
# CPU s per second of a build's wall time (flink-local, 2 workers: 0.8 CPU s at 16x distinct
# input, 4.4 at 64x). Flink's own timers are seconds (heartbeats, ask timeouts: 10 s), so a
# tick of 100 ms. A system property: Flink sets no tick, and Pekko's reference configuration
# gives way to system properties.
PEKKO_TICK = "-Dpekko.scheduler.tick-duration=100ms"


class FlinkTuningOptions(PipelineOptions):
    """Options of Beam's Java Flink runner (FlinkPipelineOptions) that the Python SDK does not
    declare: declared here, they reach the job server (an undeclared option is dropped)."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        parser.add_argument("--faster_copy", action="store_const", const=True, default=None,
                            help="Flink: no deep copy of elements between chained operators.")
        parser.add_argument("--object_reuse", action="store_const", const=True, default=None,
                            help="Flink: reuse element objects between operators.")
        parser.add_argument("--execution_mode_for_batch", default=None,
                            choices=["PIPELINED", "PIPELINED_FORCED", "BATCH", "BATCH_FORCED"],
                            help="Flink: how batch stages exchange data (pipelined or blocking).")


def flag_value(args: Sequence[str], flag: str) -> Optional[str]:
    """The last value of ``flag`` among Beam arguments, as ``--flag=V`` or ``--flag V``."""
    value = None
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
        elif arg == flag and i + 1 < len(args):
            value = args[i + 1]
    return value


def without(args: Sequence[str], *flags: str) -> list[str]:
    """``args`` minus every ``--flag=V`` / ``--flag V`` of ``flags``."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in flags:
            skip = "=" not in arg
            continue
        out.append(arg)
    return out


def engine_of(runner: str) -> str:
    return "flink" if runner in (FLINK, FLINK_LOCAL) else "spark"


def is_local_master(master: str) -> bool:
    """Whether SDK workers started by this master's cluster run on this machine."""
    master = master.strip()
    if master in EMBEDDED_FLINK or master.startswith("local"):
        return True
    host = master.split("://", 1)[-1].rsplit(":", 1)[0]
    return host in LOCAL_HOSTS


def check_beam_release(runner: str, args: Sequence[str], release: str = apache_beam.__version__) -> None:
    """A job server must be the SDK's own release: c4forge pins the jars of one Beam release
    (``locks/``), so another installed release is one line before anything starts, saying which
    release works and how to pin it (unless a job server jar of one's own is given)."""
    if runner not in ENGINE_RUNNERS:
        return
    lock = load_lock(JOB_SERVER_LOCKS[FLINK if engine_of(runner) == "flink" else SPARK])
    if release == lock.beam or flag_value(list(args), "--flink_job_server_jar" if engine_of(runner) == "flink"
                                          else "--spark_job_server_jar"):
        return
    raise EngineUsageError(f"--runner {runner} needs Beam's job-server jars of apache-beam {release}, which c4forge "
                           f"does not pin (they do not resolve from Maven here); it pins those of {lock.beam}: "
                           f"pip install 'apache-beam=={lock.beam}' (the DirectRunner and Dataflow run on "
                           f"{release} as it is)")


def check_engine_options(runner: str, args: Sequence[str], workers: Optional[int]) -> None:
    """Usage errors of an engine run, found before anything starts."""
    if workers is not None and runner not in MANAGED:
        raise EngineUsageError(f"--workers applies to --runner {' or '.join(MANAGED)}; "
                          "other runners take Beam's own options (docs/distributed.md)")
    if workers is not None and workers < 1:
        raise EngineUsageError("--workers must be at least 1")
    check_beam_release(runner, args)
    if runner in MANAGED:
        for flag in ("--flink_master", "--spark_master_url", "--job_endpoint"):
            if flag_value(args, flag) is not None:
                raise EngineUsageError(f"--runner {runner} starts its own engine: drop {flag}")
        return
    master = flag_value(args, "--flink_master" if runner == FLINK else "--spark_master_url") or ""
    if not flag_value(args, "--environment_type") and not is_local_master(master):
        raise EngineUsageError(f"{master} may run SDK workers on other machines: give "
                          "--environment_type DOCKER --environment_config IMAGE (docker/dataflow) "
                               "or EXTERNAL with a worker pool on every node (docs/distributed.md)")


def check_master_answers(runner: str, args: Sequence[str]) -> None:
    """A cluster named by ``--spark_master_url spark://HOST:PORT`` or ``--flink_master HOST:PORT``
    answers, or an EngineError in one line now (Beam's job server would try for a minute and
    print its traceback)."""
    if runner not in (FLINK, SPARK):
        return
    master = flag_value(list(args), "--flink_master" if runner == FLINK else "--spark_master_url") or ""
    address = master.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return
    why = answers(host, int(port))
    if why is not None:
        flag = "--flink_master" if runner == FLINK else "--spark_master_url"
        raise EngineError(f"{flag} {master}: nothing answers there ({why}); start the cluster "
                          "(`corpus cluster`, docs/distributed.md) or name the one that runs; nothing was written")


def boot_command(folder: str, forked: bool = False) -> str:
    """An executable that boots one SDK worker of this installation (PROCESS environment):
    pipelines/engines/workers/worker_boot.py with this interpreter, its folders under ``folder``; ``forked``:
    forked by the fork server listening in ``folder`` (pipelines/engines/workers/worker_fork.py)."""
    path = os.path.join(folder, "c4forge-worker-boot")
    workers = os.path.join(folder, "workers")
    os.makedirs(workers, exist_ok=True)
    start = (client_command(folder) if forked else
             f"exec {shlex.quote(sys.executable)} -m c4forge.pipelines.engines.workers.worker_boot \"$@\"")
    with open(path, "w") as handle:
        pin = f"export {PIN_ENV}=${{{PIN_ENV}-{shlex.quote(workers)}}}\n"
        handle.write(f"#!/bin/sh\nexport {ROOT_ENV}={shlex.quote(workers)}\n{pin}{start}\n")
    os.chmod(path, 0o755)
    return path


@dataclass
class EngineRun:
    """A running engine: the Beam arguments that submit to it, and what the manifest records."""

    beam_args: list[str]
    description: dict
    services: Services = field(repr=False)


def _job_server(services: Services, runner: str, jar: Optional[str], master: str, folder: str,
                java: str, jvm: Sequence[str], server_args: Sequence[str], log) -> int:
    """Start the job server (``java -jar``) for ``master``; its job port once it listens."""
    if jar is None:
        add_opens = SPARK_OPENS if runner == SPARK else ()
        jar = str(launcher_jar(load_lock(JOB_SERVER_LOCKS[runner]), log, add_opens))
    port = free_port()
    master_flag = "--flink-master" if runner == FLINK else "--spark-master-url"
    artifacts = os.path.join(folder, "artifacts")
    os.makedirs(artifacts, exist_ok=True)
    archive = class_archive(java, java_version(java), jar, cache_dir() / "class-archives")
    server = services.start("job-server", [java, *LOG_PROPERTIES, *jvm, *archive.flags, "-jar", jar,
                                           master_flag, master, "--job-port", str(port),
                                           "--artifact-port", "0", "--expansion-port", "0",
                                           "--artifacts-dir", artifacts, *server_args])
    services.on_stop(lambda: archive.settle(server.process.returncode))
    services.wait_for(lambda: port_open(port), f"the {engine_of(runner).title()} job server",
                      timeout=180)
    return port


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass
class Plan:
    """Where a build runs: the master the job server is given, the JVM options and server
    arguments it starts with, SDK workers per worker node, parallelism, and what to record."""

    runner: str          # FLINK or SPARK: which job server
    master: str
    slots: int           # SDK worker processes per worker node (--sdk_worker_parallelism)
    parallelism: int     # Flink's --parallelism (-1: the cluster's default)
    mode: str
    jvm: list[str] = field(default_factory=list)
    server_args: list[str] = field(default_factory=list)


def budget_flags(heap_mb: int) -> list[str]:
    """JVM options of a managed engine: its heap is its budget, taken whole at start (minimum =
    maximum, pages touched up front), so the JVM's memory is the same whatever the input and
    no heap resizing happens during the build. A JVM out of heap exits (the build then fails
    and says so) instead of living on with a dead thread while the SDK workers wait for data
    that never comes (seen: Spark embedded, 16x distinct input, 1 worker).

    The JIT stops at C1 (``TieredStopAtLevel=1``): the engine's JVM moves bytes between the SDK
    workers and its sort buffers, and C2's compiling of Flink's and Beam's classes was most of
    its CPU (flink-local, 4x distinct input, 2 workers: compiler threads 12.6 of the JVM's 23
    sampled CPU s; the JVM 29.6 -> 18.6 CPU s with C1 alone, 17.8 -> 10.0 at 1x, and at 16x
    58.3 -> 53.0, the per-page cost no higher)."""
    return [f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m", "-XX:+AlwaysPreTouch", "-XX:+ExitOnOutOfMemoryError",
            "-XX:TieredStopAtLevel=1"]


def plan(runner: str, args: Sequence[str], workers: Optional[int], folder: str) -> Plan:
    """The engine layout for ``runner``. The managed runners embed the engine in the job
    server's JVM (no second JVM, no jar upload per job) with one slot per worker and memory
    bounded by the JVM's heap and Flink's managed memory, spilling to ``folder``."""
    n = workers or cores()
    heap_mb = JVM_BASE_MB + PER_SLOT_MB * n
    if runner == FLINK_LOCAL:
        conf = embedded_conf(os.path.join(folder, "flink"), slots=n, managed_mb=MANAGED_MB * n)
        return Plan(FLINK, "[local]", n, n, f"embedded in the job server, {n} slot(s)",
                    jvm=[*budget_flags(heap_mb), PEKKO_TICK], server_args=["--flink-conf-dir", conf])
    if runner == SPARK_LOCAL:
        spill = os.path.join(folder, "spark-local")
        os.makedirs(spill, exist_ok=True)
        return Plan(SPARK, f"local[{n}]", n, -1, f"embedded in the job server, {n} core(s)",
                    jvm=[*budget_flags(heap_mb), f"-Dspark.local.dir={spill}"])
    if runner == FLINK:
        master = flag_value(args, "--flink_master") or "[local]"
        if master in EMBEDDED_FLINK:
            return Plan(FLINK, master, cores(), cores(), "embedded in the job server")
        # Beam's default parallelism for a remote Flink is the job server's own default (1):
        # use every slot the cluster offers
        return Plan(FLINK, master, 1, flink_slots(master), f"cluster at {master}")
    master = flag_value(args, "--spark_master_url") or f"local[{cores()}]"
    if master.startswith("local"):
        count = master[len("local["):-1] if master.startswith("local[") else "1"
        slots = cores() if count == "*" else int(count)
        return Plan(SPARK, master, slots, -1, "embedded in the job server")
    return Plan(SPARK, master, 1, -1, f"cluster at {master}")


def flink_slots(master: str) -> int:
    """The slots of the Flink cluster at ``master`` (its REST API), -1 when it cannot be asked."""
    url = master if "://" in master else f"http://{master}"
    try:
        return int(get_json(f"{url.rstrip('/')}/overview").get("slots-total", -1)) or -1
    except (requests.RequestException, ValueError):
        return -1


def _fork_server(services: Services, folder: str, warm: Optional[Callable[[], None]]) -> bool:
    """Start the fork server SDK workers are forked from (pipelines/engines/workers/worker_fork.py), stopped
    after the engine (which stops the workers first); whether it runs. Started before the job
    server, it warms while the JVM starts."""
    if not forking_available(folder):
        return False
    os.makedirs(services.folder, exist_ok=True)
    server = ForkServer(folder, os.path.join(services.folder, "worker-fork.log"), warm)
    server.start()
    services.on_stop(server.stop)
    return True


def process_environment(folder: str, forked: bool) -> list[str]:
    """Beam arguments for SDK workers of this installation (PROCESS environment)."""
    return ["--environment_type=PROCESS",
            "--environment_config=" + json.dumps({"command": boot_command(folder, forked)}),
            # the workers run this installation: Beam's list of the submitting environment's
            # packages (a `pip freeze` per build, 0.2-0.4 CPU s) would be compared with itself
            "--experiments=disable_logging_submission_environment"]


@contextlib.contextmanager
def engine(runner: str, args: Sequence[str], *, workers: Optional[int] = None,
           log=print, warm: Optional[Callable[[], None]] = None) -> Iterator[EngineRun]:
    """Start the job server ``runner`` needs, yield the Beam arguments that submit to it, stop
    it on exit (also on failure or Ctrl-C). Its folder (logs, spill files, worker folders) is
    removed on success; after a failure the logs stay and their place is said.

    SDK workers of this installation (no ``--environment_type`` given) are forked from a fork
    server that ran ``warm`` (pipelines/engines/workers/worker_fork.py), where forking is available."""
    java = java_executable(f"--runner {runner}", log)
    check_master_answers(runner, args)
    folder = owned_folder(f"c4forge-{engine_of(runner)}-")
    services = Services(os.path.join(folder, "logs"))
    outcome = "refused"  # -> "started" once the job server answers, "done" at the end
    try:
        args = list(args)
        layout = plan(runner, args, workers, folder)
        jar_flag = "--flink_job_server_jar" if layout.runner == FLINK else "--spark_job_server_jar"
        given_jar = flag_value(args, jar_flag)
        environment = flag_value(args, "--environment_type")
        forked = not environment and _fork_server(services, folder, warm)
        port = _job_server(services, layout.runner, given_jar, layout.master, folder, java,
                           layout.jvm, layout.server_args, log)
        outcome = "started"
        beam_args = without(args, "--flink_master", "--spark_master_url", "--flink_job_server_jar",
                            "--spark_job_server_jar")
        beam_args += ["--runner=PortableRunner", f"--job_endpoint=localhost:{port}"]
        if not environment:
            beam_args += process_environment(folder, forked)
        if not flag_value(args, "--environment_cache_millis"):
            # keep a job's SDK workers from one stage to the next where the engine allows it
            beam_args.append(f"--environment_cache_millis={ENVIRONMENT_CACHE_MS}")
        if not flag_value(args, "--sdk_worker_parallelism"):
            beam_args.append(f"--sdk_worker_parallelism={layout.slots}")
        if layout.runner == FLINK and layout.parallelism > 0 and not flag_value(args, "--parallelism"):
            beam_args.append(f"--parallelism={layout.parallelism}")
        if runner == FLINK_LOCAL and not flag_value(args, "--execution_mode_for_batch"):
            # stages one after another, exchanging through disk: the memory of one stage at a
            # time, not of every stage of a pipelined region (measured: 2.9 -> 2.4 GB at 4x)
            beam_args.append("--execution_mode_for_batch=BATCH_FORCED")
        base = engine_of(runner)
        description = {
            "engine": base, "version": FLINK_VERSION if base == "flink" else SPARK_VERSION,
            "mode": layout.mode,
            "job_server": os.path.basename(given_jar) if given_jar
            else load_lock(JOB_SERVER_LOCKS[layout.runner]).what,
            "sdk_workers": environment or "PROCESS (this installation{})".format(
                ", forked from a warm process" if forked else ""),
        }
        yield EngineRun(beam_args, description, services)
        outcome = "done"
    except KeyboardInterrupt:
        outcome = "interrupted"  # the user stopped it: nothing of it to keep
        raise
    except Exception as exc:
        if outcome == "refused" and shown_place(services.folder) in str(exc):
            outcome = "started"  # a service started and failed: the error names its log, kept
        raise
    finally:
        services.stop()
        _leave(folder, outcome, runner, log)



def _leave(folder: str, outcome: str, runner: str, log) -> None:
    """The engine's folder after it stopped: kept whole where asked, its logs kept where it ran
    and failed (and said), removed otherwise (done, interrupted, or never started)."""
    if os.environ.get(KEEP_ENV) == "1":
        disown(folder)
        log(f"{engine_of(runner)} folder kept ({KEEP_ENV}=1): {shown_place(folder)}")
    elif outcome == "started":  # it ran and failed: its logs say why
        for name in ("artifacts", "workers", "flink", "spark-local"):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        disown(folder)
        log(f"{engine_of(runner)} logs kept in {shown_place(folder)}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
