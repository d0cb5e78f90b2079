"""The chain against an earlier commit: `corpus clean` of this checkout and of a baseline commit
(default 5aea831, main when issue 55 asked for a chain 1.5x cheaper) on the same distinct pages,
interleaved, in the same environment; the outputs must be identical.

Why a baseline run and not the figure of the day the issue was filed: this VM's CPU speed drifts
5-20% within a day and was about 3x slower on 2026-11-26 than on 2026-11-27 for the same code,
so "pages per second then" against "pages per second now" measures the machine. Only the two
commits side by side on one machine, in alternation, measure the code.

The baseline is the commit's own tree (``git archive``), installed without dependencies into
.cache/baseline-<commit>/ and put first on PYTHONPATH, so both run under this checkout's
interpreter and libraries: the difference is c4forge's code alone.

With ``--instructions``: the same two `corpus clean` runs counted in instructions under valgrind
(every process, one count each, side by side; about 3 minutes at 1 copy), written as the
section ``baseline-instructions``. CPU seconds on this VM moved by up to 20% between the two
runs of one pair (2026-11-27: the baseline 194.0 to 218.7 CPU s over three pairs); a count
does not, so it says what the code changed where the seconds cannot. Each side first runs once
uncounted on one small file (harness.warm_up_for_instructions).

Run: python benchmarks/bench_baseline.py [--baseline 5aea831] [--scale 16] [--repeat 3] [--write] [--quick]
     python benchmarks/bench_baseline.py --instructions [--scale 1] [--write]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import distinct_inputs  # noqa: E402
import harness  # noqa: E402
from bench_build import BIN, digest_of_jsonl, measure, text_size  # noqa: E402

DEFAULT_BASELINE = "5aea831"
CACHE = ROOT / ".cache"


def baseline_site(commit: str) -> Path:
    """A folder holding the ``c4forge`` package of ``commit`` (made once, kept in .cache)."""
    full = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    site = CACHE / f"baseline-{full[:10]}"
    if (site / "c4forge" / "cli" / "corpus.py").exists():
        return site
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", full], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(site), tmp], check=True, capture_output=True)
    return site


def clean_run(inputs: list[str], common: list[str], site: Path | None) -> tuple[dict, str]:
    """One `corpus clean` (this checkout, or the package in ``site`` first on PYTHONPATH):
    measurement and digest of its output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/c.jsonl"
        result = measure(clean_command(inputs, common, site, out))
        return result, digest_of_jsonl(out)


def clean_command(inputs: list[str], common: list[str], site: Path | None, out: str) -> list[str]:
    """`corpus clean` of this checkout, or of the package in ``site`` first on PYTHONPATH."""
    path = ["env", f"PYTHONPATH={site}"] if site is not None else ["env", "-u", "PYTHONPATH"]
    return [*path, str(BIN / "corpus"), "clean", "-i", *inputs, "--jsonl", out, "-q", *common]


def counted(inputs: list[str], common: list[str], baseline: str) -> tuple[list[str], bool]:
    """Both `corpus clean` runs counted in instructions, side by side (see the docstring)."""
    site = baseline_site(baseline)
    sides = {"baseline": site, "ours": None}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        smallest = min(inputs, key=lambda path: Path(path).stat().st_size)
        list(pool.map(lambda name: harness.warm_up_for_instructions(
            clean_command([smallest], common, sides[name], f"{tmp}/warm-{name}.jsonl")), sides))
        counts = dict(zip(sides, pool.map(lambda name: harness.instructions(
            clean_command(inputs, common, sides[name], f"{tmp}/{name}.jsonl")), sides)))
        same = digest_of_jsonl(f"{tmp}/baseline.jsonl") == digest_of_jsonl(f"{tmp}/ours.jsonl")
    return ["| code | instructions (G) | baseline / this |", "|---|---:|---:|",
            f"| {baseline} (baseline) | {counts['baseline'] / 1e9:.2f} | 1.00 |",
            f"| this checkout | {counts['ours'] / 1e9:.2f} | {counts['baseline'] / counts['ours']:.3f}x |",
            "", f"Same documents (url, text) from both: {'yes' if same else 'NO'}."], same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE)
    parser.add_argument("--scale", type=int, help="distinct copies (default 16; 1 with --instructions)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--preset", default="c4")
    parser.add_argument("--badwords", default=str(harness.SHARED / "badwords"))
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--quick", action="store_true", help="Scale 1, one repeat, nothing written.")
    parser.add_argument("--instructions", action="store_true",
                        help="Count instructions under valgrind instead (section baseline-instructions; "
                             "--scale defaults to 1 here).")
    args = parser.parse_args()
    if args.scale is None:
        args.scale = 1 if args.instructions else 16
    if args.quick:
        args.scale, args.repeat, args.write = 1, 1, False
    if not (harness.SHARED / "crawl").exists():
        print("bench_baseline: ../shared/data/crawl not found", file=sys.stderr)
        return 2
    machine = harness.machine()
    common = ["--preset", args.preset, "--badwords", args.badwords]
    if args.instructions:
        if not harness.have_valgrind():
            print("bench_baseline: valgrind (Debian package) counts the instructions", file=sys.stderr)
            return 2
        inputs = distinct_inputs.distinct_copies(args.scale, log=lambda m: print(m, file=sys.stderr))
        pages, _ = text_size(inputs)
        table, same = counted(inputs, common, args.baseline)
        harness.publish("baseline-instructions", [
            f"Input: {args.scale} distinct cop{'y' if args.scale == 1 else 'ies'} of crawl + crawl-extra "
            f"({pages:,} pages read); preset {args.preset}; `corpus clean` of commit {args.baseline} and "
            "of this checkout, counted side by side under valgrind (every process, start-up included, "
            "one count each, after one uncounted run each).", "", *table], args.write, machine)
        return 0 if same else 1
    site = baseline_site(args.baseline)
    inputs = distinct_inputs.distinct_copies(args.scale, log=lambda m: print(m, file=sys.stderr))
    pages, _ = text_size(inputs)
    cpu: dict[str, list[float]] = {"baseline": [], "ours": []}
    digests: dict[str, set] = {"baseline": set(), "ours": set()}
    for _ in range(args.repeat):
        for name, where in (("baseline", site), ("ours", None)):
            result, digest = clean_run(inputs, common, where)
            cpu[name].append(result["cpu"])
            digests[name].add(digest)
            print(f"{name}: {result['cpu']:.1f} CPU s", file=sys.stderr)
    same = len(digests["baseline"] | digests["ours"]) == 1
    speedups = harness.ratios(cpu["baseline"], cpu["ours"])
    lines = [
        f"Input: {args.scale} distinct copies of crawl + crawl-extra ({pages:,} pages read); preset "
        f"{args.preset}; `corpus clean` of commit {args.baseline} and of this checkout, alternating, "
        f"{args.repeat} run(s) each, same interpreter and libraries (.venv); CPU = user + sys, "
        "median (min-max).",
        "",
        "| code | CPU s | pages/s per core | baseline CPU / this CPU |",
        "|---|---:|---:|---:|",
        f"| {args.baseline} (baseline) | {harness.spread(cpu['baseline'], '{:.1f}')} | "
        f"{harness.spread([pages / c for c in cpu['baseline']], '{:,.0f}')} | 1.00 |",
        f"| this checkout | {harness.spread(cpu['ours'], '{:.1f}')} | "
        f"{harness.spread([pages / c for c in cpu['ours']], '{:,.0f}')} | {harness.spread(speedups)}x |",
        "",
        f"Same documents (url, text) from both in every run: {'yes' if same else 'NO'}.",
    ]
    harness.publish("baseline", lines, args.write, machine)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
