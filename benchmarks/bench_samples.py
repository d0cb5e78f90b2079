"""What recording the rule samples costs (issue 41: target < 3% of build CPU): `corpus clean -o`
and `corpus build -o` on the distinct 1x input (the shared crawl + crawl-extra, 5,351 real pages;
benchmarks/distinct_inputs.py), each with the samples at their default setting, at rate 1 (every
page traced: the most they can cost) and switched off (``rule_samples.per_rule=0``); settings
interleaved within every repeat, CPU of every process started, ratios to "off" per repeat as
median (min-max). Outputs are checked: the documents do not depend on the setting, and `corpus
clean` and `corpus build` write the same samples.

CPU seconds on a shared VM move by about 10% run to run for the same work (fastText's predict,
the same calls, took 2.4 s more in one of two profiled builds), more than the few % measured
here. So each command and setting also runs once under valgrind (cachegrind, no cache model,
every child process traced): the instructions executed do not depend on the machine's load and
repeat to within a fraction of a percent, and their ratio to "off" is the cost the target
(< 3%) is checked against. ``--no-instructions`` skips it (it takes about 8 minutes per run, two
at a time).

Run: make bench  (or: .venv/bin/python benchmarks/bench_samples.py [--repeat 3] [--copies 1] [--write])
"""
from __future__ import annotations

import argparse
import atexit
import hashlib
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_build  # noqa: E402
import distinct_inputs  # noqa: E402
import harness  # noqa: E402

SETTINGS = {"off": ["rule_samples.per_rule=0"], "default": [], "rate 1": ["rule_samples.rate=1"]}


def run(command: str, inputs: list[str], setting: str, outputs: dict) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        result = bench_build.measure(command_line(command, setting, inputs, f"{tmp}/c"))
        corpus = bench_build.digest_of_corpus(f"{tmp}/c")
        samples = Path(tmp, "c", "_rule-samples.json")
        digest = hashlib.sha256(samples.read_bytes()).hexdigest()[:16] if samples.exists() else None
        outputs.setdefault("corpus", set()).add(corpus)
        outputs.setdefault(setting, set()).add(digest)
        return result["cpu"]


def tmp_out() -> str:
    """A fresh output path (its folder removed at exit) for a run whose output is not read."""
    folder = tempfile.mkdtemp(prefix="bench-samples-")
    atexit.register(shutil.rmtree, folder, True)
    return f"{folder}/c"


def command_line(command: str, setting: str, inputs: list[str], out: str) -> list[str]:
    overrides = [arg for pair in (("--set", s) for s in SETTINGS[setting]) for arg in pair]
    return [str(BIN / "corpus"), command, "-i", *inputs, "-o", out, "--preset", "c4",
            "--badwords", str(harness.SHARED / "badwords"), *overrides]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1, help="distinct copies of the base input")
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="One run each on the shared crawl's two files.")
    parser.add_argument("--no-instructions", dest="instructions", action="store_false",
                        help="Skip the instruction counts under valgrind.")
    args = parser.parse_args()
    machine = harness.machine()
    if args.quick:
        inputs = sorted(str(p) for p in (harness.SHARED / "crawl").glob("*.wet.gz"))[:2]
        args.repeat, args.write, args.instructions = 1, False, False
    else:
        inputs = distinct_inputs.distinct_copies(args.copies, log=lambda m: print(m, file=sys.stderr))
    pages, _ = bench_build.text_size(inputs)
    cpu: dict[tuple[str, str], list[float]] = {}
    outputs: dict[str, set] = {}
    for _ in range(args.repeat):
        for command in ("clean", "build"):
            for setting in SETTINGS:
                cpu.setdefault((command, setting), []).append(run(command, inputs, setting, outputs))
    source = ("two files of the shared crawl" if args.quick else
              f"{args.copies} distinct cop{'y' if args.copies == 1 else 'ies'} of the shared crawl + crawl-extra")
    lines = [f"Input: {pages:,} pages ({len(inputs)} WET files: {source}); preset c4; "
             f"{args.repeat} run(s) per command and setting, interleaved; CPU = user + sys of every "
             "process started, median (min-max); vs off: per-repeat ratio, median (min-max).", "",
             "| command | rule samples | CPU s | vs off |", "|---|---|---:|---:|"]
    for command in ("clean", "build"):
        for setting in SETTINGS:
            runs = cpu[(command, setting)]
            vs = harness.ratios(runs, cpu[(command, "off")])
            lines.append(f"| corpus {command} | {setting} | {harness.spread(runs, '{:.1f}')} | "
                         f"{harness.spread(vs, '{:.3f}')}x |")
    if args.instructions and harness.have_valgrind():
        jobs = [(command, setting) for command in ("clean", "build") for setting in ("off", "default")]
        with ThreadPoolExecutor(2) as pool:  # instruction counts do not mind a neighbour
            counted = pool.map(lambda job: harness.instructions(command_line(*job, inputs, tmp_out())), jobs)
            counts = dict(zip(jobs, counted))
        lines += ["", "Instructions executed (valgrind cachegrind, every process; one run each, "
                  "deterministic to a fraction of a percent, unlike CPU seconds here):", "",
                  "| command | rule samples | instructions (billions) | vs off |", "|---|---|---:|---:|"]
        for command, setting in jobs:
            count = counts[(command, setting)]
            lines.append(f"| corpus {command} | {setting} | {count / 1e9:,.2f} | "
                         f"{count / counts[(command, 'off')]:.4f}x |")
    elif args.instructions:
        lines += ["", "Instruction counts skipped: valgrind is not installed."]
    same_corpus = len(outputs["corpus"]) == 1
    same_samples = all(len(outputs[s]) == 1 for s in SETTINGS)
    lines += ["", f"Same documents with and without samples, in both commands: {'yes' if same_corpus else 'NO'}; "
              f"the same samples from `corpus clean` and `corpus build`: {'yes' if same_samples else 'NO'}."]
    harness.publish("samples", lines, args.write, machine)
    return 0 if same_corpus and same_samples else 1


if __name__ == "__main__":
    sys.exit(main())
