"""What every benchmark shares: interleaved repeats, min/median/max summaries, and the generated
sections of benchmarks/RESULTS.md (each stamped with its command, date, commit and machine).

A comparison is timed *interleaved* - ours, peer, ours, peer, ... for N repeats, in a seeded
shuffled order after the first repeat - so a load spike on a shared machine hits both sides and
no side always follows the same other one; every ratio is reported as min / median / max over
the repeats, never as one lucky run. A section of RESULTS.md between ``<!-- generated:NAME -->``
and ``<!-- /generated:NAME -->`` is rewritten by the benchmark that owns it; the text around it is
the analysis, written by people, and is left alone.
"""
from __future__ import annotations

import gc
import glob
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
# ../shared/data, or where C4FORGE_SHARED_DATA says (as the tests read it)
SHARED = Path(os.environ.get("C4FORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
# Where the peers that cannot share a venv with apache-beam run (Makefile, benchmarks/peers.py)
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"


def peers_python() -> str:
    """.venv-peers's python where `make bench` made it, else this one."""
    return str(PEERS_PYTHON) if PEERS_PYTHON.exists() else sys.executable


def peer_importable(module: str) -> bool:
    return subprocess.run([peers_python(), "-c", f"import {module}"], capture_output=True).returncode == 0


def timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    """(result, CPU seconds of this process, wall seconds). A full garbage collection runs first,
    untimed, so a collection owed for objects another system left does not land in this one."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def interleave(systems: dict[str, Callable[[], object]], repeats: int, settle: bool = False) \
        -> tuple[dict[str, object], dict[str, list[float]], dict[str, list[float]]]:
    """Run every system once per repeat, in turn (the first repeat in the given order, later ones
    in a seeded shuffled order). Returns (last result, CPU seconds per repeat, wall seconds per
    repeat) keyed by system name.

    ``settle``: each timed call comes right after an untimed call of the same system, for
    in-process benchmarks of short calls on one batch, where a call's cost depends on the state
    the previous call left (power tables grown, the heap warm or trimmed): each system is timed
    in its own steady state, as in a loop over batches, not in whatever state another left
    (measured here: our MinHash signatures cost 1.5-1.8x shingling when run right after
    datasketch - ~0.05 s of kernel time for memory datasketch released - and 1.07-1.10x alone)."""
    results: dict[str, object] = {}
    cpu: dict[str, list[float]] = {name: [] for name in systems}
    wall: dict[str, list[float]] = {name: [] for name in systems}
    names = list(systems)
    for repeat in range(repeats):
        # A fresh order each repeat (seeded: the same schedule every run), so no system always
        # runs right after the same one.
        for name in random.Random(repeat).sample(names, len(names)) if repeat else names:
            if settle:
                systems[name]()
            results[name], c, w = timed(systems[name])
            cpu[name].append(c)
            wall[name].append(w)
    return results, cpu, wall


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """'median (min-max)' of a list of numbers."""
    lo, mid, hi = min(values), statistics.median(values), max(values)
    if len(values) == 1:
        return fmt.format(mid)
    return f"{fmt.format(mid)} ({fmt.format(lo)}-{fmt.format(hi)})"


def mean_std(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """'mean ± std' of a list of numbers (the std over repeats or seeds; just the mean for one)."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return fmt.format(mean)
    return f"{fmt.format(mean)} ± {fmt.format(statistics.stdev(values))}"


def ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Per-repeat ratios of two interleaved series (repeat i against repeat i)."""
    return [n / d for n, d in zip(numerator, denominator) if d > 0]


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
            f"load average {load:.2f} at start")


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
        # RESULTS.md itself is what the benchmarks write: a run of several sections is not "dirty"
        # because an earlier section of the same run already wrote its part.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)benchmarks/RESULTS.md"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return out + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def stamp(command: str, started_load: str) -> str:
    return (f"Generated by `{command}` on {time.strftime('%Y-%m-%d')}, commit {commit()}; "
            f"{started_load}.")


def write_section(name: str, body: str, command: str, machine_line: str,
                  path: Path = RESULTS) -> None:
    """Replace the generated section ``name`` of RESULTS.md (appended at the end if new)."""
    start, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
    block = f"{start}\n{stamp(command, machine_line)}\n\n{body.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def publish(name: str, lines: list[str], write: bool, machine_line: str) -> str:
    """Print a benchmark's table and, with ``write``, make it the generated section ``name``."""
    table = "\n".join(lines)
    print(table)
    if write:
        write_section(name, table, command_line(), machine_line)
        print(f"wrote benchmarks/RESULTS.md section {name}")
    return table


def command_line() -> str:
    """The command that ran this benchmark, relative to the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script_name = str(script.relative_to(ROOT))
    except ValueError:
        script_name = script.name
    return " ".join(["python", script_name, *sys.argv[1:]])


def warm_up_for_instructions(cmd: list[str]) -> None:
    """Run ``cmd`` once under valgrind, uncounted, before counting anything: numba keys its
    disk cache of compiled kernels (the MinHash passes) by the CPU, and valgrind's emulated CPU
    is not the host's, so the first run under valgrind compiles them whatever the cache holds
    (a small build: 15.7 G instructions, then 10.6 G the second time). Without this the counts
    depend on which run compiled: CI's estimate projection came out 49% low so (2026-11-27)."""
    instructions(cmd)


def instructions(cmd: list[str]) -> int:
    """Instructions executed by ``cmd`` and every process it starts, counted by valgrind
    (cachegrind without its cache model; about 40x slower than a plain run). Unlike CPU seconds
    on a shared VM (about 10% run to run for the same work), the count repeats to within a
    fraction of a percent, whatever else the machine runs."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
                        f"--cachegrind-out-file={tmp}/ir.%p", *cmd],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for path in glob.glob(f"{tmp}/ir.*"):
            with open(path, encoding="utf-8") as handle:
                total += next(int(line.split()[1]) for line in handle if line.startswith("summary:"))
        return total


def have_valgrind() -> bool:
    return shutil.which("valgrind") is not None
