"""Today's rule sets at scale: the c4, gopher and fineweb presets through `corpus clean` and
flink-local on distinct pages, beside datatrove's pipeline doing the same filters on the same
pages; each preset's stages; core-hours per dump per preset and engine (issue 74).

Inputs: copies 0..N-1 of the shared crawl + crawl-extra (5,351 real pages a copy) made distinct
by benchmarks/distinct_inputs.py, at each ``--scales`` entry. Every preset runs with its URL
filter on, over datatrove 0.10.1's own lists held locally (the wheel's, as `--preset fineweb`
takes them; no download), c4 with the shared bad-word lists.

Engines, measured as bench_build.py measures them (CPU = user + sys of every process started,
orphaned SDK workers included; peak RSS of the process tree):

- ``clean``: `corpus clean -o` (shards, manifest, rule samples: what `corpus build` writes);
- ``flink-local``: `corpus build --runner flink-local --workers 2`; its output is checked equal
  to clean's at every scale and preset;
- ``datatrove`` (in .venv-peers, at ``--peer-scales``): its WarcReader, then the same filters in
  the preset's order, then its JsonlWriter, in one process: URLFilter (its integrated lists),
  LanguageFilter (the same lid.176 model and threshold), for c4 C4QualityFilter with C4's
  settings (as bench_clean.py), for gopher GopherQualityFilter + GopherRepetitionFilter, for
  fineweb GopherRepetitionFilter + GopherQualityFilter + C4QualityFilter (FineWeb's settings)
  + FineWebQualityFilter + PIIFormatter. It does no exact or MinHash dedup (four separate
  stages with their own files in datatrove) and no bad words (its lists download), so its
  cost is a lower bound for the job ours does.

Every (preset, engine) run of a scale is interleaved in a seeded order within each repeat, so
drifting load hits each alike. Ratios are per repeat: median (min-max).

Stages: one fresh process per preset at 1x runs corpus/local.run_chain with a StageClock (every
CPU second counted once, c4forge/core/stageclock.py) and writes the shards, once per repeat.

Run: make bench  (or: .venv-bench/bin/python benchmarks/bench_presets.py [--scales 1,4,16]
     [--peer-scales 1] [--repeat 3] [--write] [--quick])
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_build  # noqa: E402
import distinct_inputs  # noqa: E402
import harness  # noqa: E402

from c4forge.corpus.chain.chains import CHAINS  # noqa: E402

PRESETS = ("c4", "gopher", "fineweb")
NEAR_DEDUP_STAGES = ("minhash-signatures", "near-dup-clusters")  # the clock's names for near-dedup
ENGINES = ("clean", "flink-local")
WORKERS = 2


def preset_args(preset: str, badwords: str) -> list[str]:
    """The settings every engine runs ``preset`` with: URL filter on (datatrove's lists)."""
    return ["--preset", preset, "--set=url-filter.on=true",
            *(["--badwords", badwords] if bench_build.has_bad_words(preset) else [])]


def run_datatrove(preset: str, inputs: list[str]) -> dict[str, float]:
    """datatrove's pipeline for ``preset`` on ``inputs`` (bench_build.run_datatrove's child)."""
    return bench_build.run_datatrove(inputs, __file__, (preset,), timeout=7200)


def datatrove_filters(preset: str) -> list:
    """datatrove's steps for ``preset``, in our chain's order, with our settings."""
    import bench_clean
    from datatrove.pipeline import filters
    from datatrove.pipeline.formatters import PIIFormatter
    from tldextract import TLDExtract

    from c4forge.corpus.config import build_config

    url = filters.URLFilter()  # its integrated lists: the files our default lists are read from
    url.tldextractor = TLDExtract(suffix_list_urls=(), cache_dir=None)  # offline, as ours
    c4_quality, language = bench_clean.datatrove_filters()
    language.language_threshold = build_config(preset=preset).steps.get("language-id").threshold
    if preset == "c4":
        return [url, c4_quality, language]
    if preset == "gopher":
        return [url, language, filters.GopherQualityFilter(), filters.GopherRepetitionFilter()]
    return [url, language, filters.GopherRepetitionFilter(), filters.GopherQualityFilter(),
            filters.C4QualityFilter(filter_no_terminal_punct=False), filters.FineWebQualityFilter(),
            PIIFormatter()]


STAGES_WORKER = r'''
import json, sys, tempfile, time
from c4forge.core.counters import Counters
from c4forge.core.stageclock import StageClock
from c4forge.corpus.chain.chains import load_steps
from c4forge.corpus.config import build_config
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.chain.provenance import corpus_manifest
from c4forge.corpus.output.shards import write_corpus
spec = json.loads(sys.argv[1])
config = build_config(spec["preset"], overrides=spec["overrides"], badwords=spec["badwords"])
load_steps(config)
clock, counters = StageClock(), Counters()
started = time.process_time()
docs = run_chain(spec["paths"], config, counters, clock)
with tempfile.TemporaryDirectory() as tmp, clock.stage("write", len(docs)):
    manifest = corpus_manifest(config, spec["paths"], counters.as_dict(), "bench", ["bench"])
    write_corpus(f"{tmp}/c", docs, manifest, validation_per_mille=config.validation_per_mille)
print(json.dumps({"seconds": clock.seconds, "items": clock.items, "total": time.process_time() - started,
                  "documents": len(docs)}))
'''


def stage_seconds(preset: str, paths: list[str], badwords: str) -> dict:
    """One timed chain of ``preset`` in a fresh process: CPU seconds per stage."""
    spec = {"preset": preset, "paths": paths, "overrides": ["url-filter.on=true"],
            "badwords": badwords if bench_build.has_bad_words(preset) else None}
    out = subprocess.run([sys.executable, "-c", STAGES_WORKER, json.dumps(spec)], capture_output=True,
                         text=True, check=True, timeout=7200)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_scale(scale: int, inputs: list[str], engines: tuple[str, ...], repeats: int, badwords: str,
                  with_stages: bool) -> dict:
    """Every (preset, engine) run at ``scale``, interleaved in a seeded order per repeat."""
    pages, n_bytes = bench_build.text_size(inputs)
    jobs = [(p, e) for p in PRESETS for e in engines]
    jobs += [(p, "stages") for p in PRESETS] if with_stages else []
    runs: dict[tuple[str, str], list] = {job: [] for job in jobs}
    digests: dict[str, dict[str, set]] = {p: {} for p in PRESETS}
    for repeat in range(repeats):
        for preset, engine in random.Random(1000 * scale + repeat).sample(jobs, len(jobs)):
            if engine == "datatrove":
                result = run_datatrove(preset, inputs)
            elif engine == "stages":
                result = stage_seconds(preset, inputs, badwords)
            else:
                result = bench_build.run_engine(engine, inputs, preset_args(preset, badwords), WORKERS,
                                                digests[preset])
            runs[(preset, engine)].append(result)
            cpu = result["total"] if engine == "stages" else result["cpu"]
            print(f"x{scale} repeat {repeat}: {preset} {engine} {cpu:.1f} CPU s", file=sys.stderr, flush=True)
    same = {p: len(set().union(*digests[p].values())) == 1 for p in PRESETS}
    return {"scale": scale, "pages": pages, "text_mb": n_bytes / 1e6, "runs": runs, "same": same}


def cost_table(measured: list[dict]) -> list[str]:
    lines = ["| scale | pages | preset | engine | CPU s | vs clean, same preset | vs clean c4 | "
             "pages/s per core | wall s | peak RSS GB | same output as clean |",
             "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for m in measured:
        for preset in PRESETS:
            clean = [r["cpu"] for r in m["runs"][(preset, "clean")]]
            c4 = [r["cpu"] for r in m["runs"][("c4", "clean")]]
            for engine in ENGINES + ("datatrove",):
                results = m["runs"].get((preset, engine))
                if not results:
                    continue
                cpu = [r["cpu"] for r in results]
                same = "-" if engine == "datatrove" else ("yes" if m["same"][preset] else "NO")
                lines.append(
                    f"| {m['scale']}x | {m['pages']:,} | {preset} | {engine} | {harness.spread(cpu, '{:.1f}')} | "
                    f"{harness.spread(harness.ratios(cpu, clean))}x | {harness.spread(harness.ratios(cpu, c4))}x | "
                    f"{m['pages'] / statistics.median(cpu):,.0f} | "
                    f"{statistics.median(r['wall'] for r in results):.1f} | "
                    f"{max(r['peak_total'] for r in results) / 1e9:.2f} | {same} |")
    return lines


def dump_table(measured: list[dict]) -> list[str]:
    """Core-hours per dump: ours fitted over the scales (fixed + per copy); the peer's from its
    per-page cost at the scales it ran (start-up included, so a slight overstatement)."""
    per_copy_pages = measured[0]["pages"] / measured[0]["scale"]
    scales = [m["scale"] for m in measured]
    lines = [f"Core-hours per Common Crawl dump ({bench_build.DUMP_WET_FILES:,} WET files, about "
             f"{bench_build.DUMP_PAGES / 1e9:.1f} billion pages; **extrapolated**, linear: a real dump's "
             "duplicate structure and near-dedup rounds are not modelled). Ours: CPU = fixed + per copy x "
             f"copies, least squares over {', '.join(f'{s}x' for s in scales)} (medians); datatrove: its "
             "CPU per page where it ran (start-up included).", "",
             "| preset | engine | fixed CPU s | marginal pages/s per core | core-hours per dump | "
             "vs c4 on the same engine |", "|---|---|---:|---:|---:|---:|"]
    hours: dict[tuple[str, str], float] = {}
    for preset in PRESETS:
        for engine in ENGINES + ("datatrove",):
            rows = [(m["scale"], statistics.median(r["cpu"] for r in m["runs"][(preset, engine)]))
                    for m in measured if m["runs"].get((preset, engine))]
            if not rows:
                continue
            if engine == "datatrove" or len(rows) < 2:
                fixed = 0.0
                per_page = statistics.median(cpu / (s * per_copy_pages) for s, cpu in rows)
            else:
                fixed, per_copy = bench_build.fit_per_copy([s for s, _ in rows], [c for _, c in rows])
                per_page = per_copy / per_copy_pages
            hours[(preset, engine)] = bench_build.DUMP_PAGES * per_page / 3600
            lines.append(f"| {preset} | {engine} | {fixed:.1f} | {1 / per_page:,.0f} | "
                         f"{hours[(preset, engine)]:,.0f} | "
                         f"{hours[(preset, engine)] / hours[('c4', engine)]:.2f}x |")
    return lines


def in_chain_order(seen: set[str]) -> list[str]:
    """The stage clock's names in the chains' order (read first, write last)."""
    in_order = [s for name in ("read", *CHAINS["fineweb"], *CHAINS["gopher"], *CHAINS["c4"])
                for s in (NEAR_DEDUP_STAGES if name == "near-dedup" else (name,))]
    names = [s for s in dict.fromkeys([*in_order, *sorted(seen), "write"]) if s in seen and s != "write"]
    return names + (["write"] if "write" in seen else [])


def stage_table(measured: list[dict]) -> list[str]:
    m = next((m for m in measured if m["runs"].get(("c4", "stages"))), None)
    if m is None:
        return []
    runs = {p: m["runs"][(p, "stages")] for p in PRESETS}
    names = in_chain_order({s for p in PRESETS for r in runs[p] for s in r["seconds"]})
    totals = {p: statistics.median(r["total"] for r in runs[p]) for p in PRESETS}
    lines = [f"Stages at {m['scale']}x ({m['pages']:,} pages; one fresh process per preset and repeat, "
             "corpus/local.run_chain with a StageClock, then the shards written): CPU s, median (min-max), "
             "and share of the preset's chain; a stage a chain lacks is blank.", "",
             "| stage | " + " | ".join(PRESETS) + " |", "|---|" + "---:|" * len(PRESETS)]
    for name in names:
        cells = []
        for preset in PRESETS:
            seconds = [r["seconds"][name] for r in runs[preset] if name in r["seconds"]]
            cells.append(f"{harness.spread(seconds)} ({100 * statistics.median(seconds) / totals[preset]:.0f}%)"
                         if seconds else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **chain** | " + " | ".join(
        harness.spread([r["total"] for r in runs[p]]) for p in PRESETS) + " |")
    return lines


def stages_at_scales(scales: list[int], repeats: int, badwords: str) -> list[dict]:
    """Each preset's stages (``stage_seconds``) at every scale, presets interleaved per repeat."""
    measured = []
    for scale in scales:
        inputs = distinct_inputs.distinct_copies(scale, log=lambda m: print(m, file=sys.stderr))
        pages, _ = bench_build.text_size(inputs)
        runs: dict[str, list] = {p: [] for p in PRESETS}
        for repeat in range(repeats):
            for preset in random.Random(2000 * scale + repeat).sample(PRESETS, len(PRESETS)):
                runs[preset].append(stage_seconds(preset, inputs, badwords))
                print(f"stages x{scale} repeat {repeat}: {preset} {runs[preset][-1]['total']:.1f} CPU s",
                      file=sys.stderr, flush=True)
        measured.append({"scale": scale, "pages": pages, "runs": runs})
    return measured


def growth_table(measured: list[dict]) -> list[str]:
    """CPU per input page of every stage at each scale: a stage whose cost per page grows with
    the input (a cache, dedup state) shows in the last column."""
    scales = [m["scale"] for m in measured]
    lines = ["| preset | stage | " + " | ".join(f"{s}x µs/page" for s in scales)
             + f" | {scales[-1]}x / {scales[0]}x |", "|---|---|" + "---:|" * (len(scales) + 1)]
    for preset in PRESETS:
        seen = in_chain_order({name for m in measured for r in m["runs"][preset] for name in r["seconds"]})
        for name in [*seen, "chain"]:
            per_page = []
            for m in measured:
                seconds = [r["total"] if name == "chain" else r["seconds"].get(name, 0.0) for r in m["runs"][preset]]
                per_page.append(1e6 * statistics.median(seconds) / m["pages"])
            growth = f"{per_page[-1] / per_page[0]:.2f}x" if per_page[0] > 0 else "-"
            label = "**chain**" if name == "chain" else name
            lines.append(f"| {preset} | {label} | " + " | ".join(f"{v:,.0f}" for v in per_page) + f" | {growth} |")
    return lines


def main() -> int:
    if len(sys.argv) > 4 and sys.argv[1] == "--datatrove-worker":  # TMP PRESET INPUTS...
        bench_build.datatrove_worker(sys.argv[2], sys.argv[4:], datatrove_filters(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,4,16")
    parser.add_argument("--peer-scales", default="1", help="scales datatrove also runs at ('' for none)")
    parser.add_argument("--stages-scale", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--badwords", default=str(harness.SHARED / "badwords"))
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true",
                        help="The embedded sample, clean (and datatrove), once, nothing written.")
    parser.add_argument("--stages-scales", default="",
                        help="Only the stages, at these scales (section presets-stages), e.g. 1,4,16.")
    args = parser.parse_args()
    if args.stages_scales:
        machine = harness.machine()
        measured = stages_at_scales([int(s) for s in args.stages_scales.split(",")], args.repeat, args.badwords)
        scales = ", ".join(f"{m['scale']}x" for m in measured)
        lines = [f"Each preset's stages at {scales} distinct copies (one fresh process per preset and repeat, "
                 f"corpus/local.run_chain with a StageClock, the shards written; {args.repeat} repeat(s), presets interleaved): CPU microseconds per "
                 "input page, median; the last column is the growth of the cost per page.", "",
                 *growth_table(measured)]
        harness.publish("presets-stages", lines, args.write, machine)
        return 0
    peer_scales = {int(s) for s in args.peer_scales.split(",") if s}
    if peer_scales and not bench_build.datatrove_available():
        print("datatrove is not in .venv-peers (make peers): its rows are left out", file=sys.stderr)
        peer_scales = set()
    machine = harness.machine()
    if args.quick:  # the embedded sample: each kind of run once, no JVM
        args.write, args.repeat, sample = False, 1, [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
        engines = ("clean",) + (("datatrove",) if peer_scales else ())
        measured = [measure_scale(1, sample, engines, args.repeat, str(ROOT / "corpus" / "data" / "demo-badwords"),
                                  True)]
    else:
        measured = []
        for scale in map(int, args.scales.split(",")):
            inputs = distinct_inputs.distinct_copies(scale, log=lambda m: print(m, file=sys.stderr))
            engines = ENGINES + (("datatrove",) if scale in peer_scales else ())
            measured.append(measure_scale(scale, inputs, engines, args.repeat, args.badwords,
                                          scale == args.stages_scale))
    lines = [f"Input: copies 0..N-1 of crawl + crawl-extra made distinct (benchmarks/distinct_inputs.py; "
             f"{measured[0]['pages'] // measured[0]['scale']:,} real pages a copy); every preset with its URL "
             "filter on (datatrove 0.10.1's lists, held locally), c4 with the shared bad words; "
             f"flink-local with {WORKERS} workers; {args.repeat} repeat(s), every run of a scale interleaved in "
             "a seeded order; CPU = user + sys of every process, median (min-max); ratios per repeat. "
             "datatrove: its reader + the same filters + its writer, no dedup or bad words (a lower bound).",
             "", *cost_table(measured), "", *dump_table(measured), "", *stage_table(measured)]
    harness.publish("presets", lines, args.write, machine)
    if not all(all(m["same"].values()) for m in measured):
        print("flink-local's output differs from corpus clean's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
