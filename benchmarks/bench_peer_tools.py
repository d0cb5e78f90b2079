"""The tools a user would pick instead, on the same pages (issue 81): c4forge's c4, gopher and
fineweb presets beside datatrove 0.10, NeMo Curator 1.4 and dolma 1.2 doing the closest
equivalent each offers, timed as whole processes, and the pages each keeps beside ours.

Input: copies 0..N-1 of the shared crawl + crawl-extra made distinct (benchmarks/
distinct_inputs.py: 5,351 real pages a copy), at each ``--scales`` entry. c4forge and datatrove
read the WET files; Curator and dolma read JSONL documents (id, text, url: what both take), written
once per scale from our reader's pages, untimed (their reading is not in their rows: it favours
them by what reading costs ours, ~0.7 CPU s of 5,351 pages).

Rows (each a fresh process tree; CPU = user + sys of every process, workers included, as
bench_build.measure counts it):

- ``c4forge``: `corpus clean -o` with the preset, its URL filter on (datatrove's lists, held
  locally), c4 with the shared bad words: the whole job, dedup included (bench_presets.py's row);
- ``c4forge-rules``: `corpus clean --jsonl` with the preset's rules alone (its corpus-wide steps
  and URL filter off): the like-for-like row beside Curator's and dolma's, which do no dedup;
- ``datatrove``: its WarcReader, the same filters in the preset's order, its JsonlWriter, in one
  process (bench_presets.py's row; no dedup, no bad words);
- ``curator``: benchmarks/peer_tools/curator_chain.py in .venv-curator, one process (Curator's
  executors all start Ray; in one process its stages run as they do inside a Ray worker, without
  the cluster's own CPU);
- ``dolma``: `dolma tag` (its Python taggers, ``--processes 2``) then `dolma mix` (its Rust
  mixer: the filter expressions and line removal below) in .venv-dolma.

``FILTERS`` lists, per preset, each of our steps and what stands for it in each peer (equal,
different, missing): it is printed under the table. Curator and dolma do no dedup in these rows
(Curator's exact and fuzzy dedup are separate Ray/GPU workflows, dolma's Bloom-filter `dedupe` a
separate pass), nor URL filtering: their rows are a lower bound for the job ours does.

Decisions: on the first scale, each system's kept pages by URL beside ours with the same rules and
no dedup or URL filter (our preset with its corpus-wide steps switched off, the URL filter off),
for each preset and for language ID alone (the one rule all three run with the same model and
threshold): kept by both, by ours only, by the peer only.

Run: make bench  (or: .venv-bench/bin/python benchmarks/bench_peer_tools.py [--scales 1]
     [--repeat 3] [--write] [--quick]); `make peers` makes .venv-peers, .venv-curator, .venv-dolma.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_build  # noqa: E402
import bench_presets  # noqa: E402
import distinct_inputs  # noqa: E402
import harness  # noqa: E402

from c4forge.corpus.chain.chains import CHAINS  # noqa: E402
from c4forge.corpus.config import build_config  # noqa: E402
from c4forge.corpus.langid.lid176 import default_model_path  # noqa: E402
from c4forge.corpus.read.wet import iter_crawl_documents  # noqa: E402
from c4forge.corpus.steps import REGISTRY  # noqa: E402

PRESETS = ("c4", "gopher", "fineweb")
SYSTEMS = ("c4forge", "c4forge-rules", "datatrove", "curator", "dolma")
CURATOR_PYTHON = ROOT / ".venv-curator" / "bin" / "python"
DOLMA = ROOT / ".venv-dolma" / "bin" / "dolma"
CURATOR_CHAIN = ROOT / "benchmarks" / "peer_tools" / "curator_chain.py"
DOLMA_FILES = 4  # dolma tags one file per process: 4 files for its 2 processes
LID_THRESHOLD = 0.65  # every preset's language-id threshold (checked in main)

# Our step -> (datatrove, NeMo Curator, dolma): what stands for it, and how it compares.
FILTERS: dict[str, list[tuple[str, str, str, str]]] = {
    "c4": [
        ("url-filter", "URLFilter: equal (tests/test_quality.py)", "missing", "missing (its URL taggers download lists)"),
        ("url-dedup", "missing", "missing (a separate workflow)", "missing (`dolma dedupe`, a separate pass)"),
        ("clean-page: C4's line rules (terminal punctuation, >= 3 words, javascript, policy, "
         "citations, >= 5 sentences, lorem ipsum, curly brace)",
         "C4QualityFilter: equal with C4's settings (bench_clean.py)",
         "different: BoilerPlateStringModifier (policy lines at top/bottom, lorem ipsum) + "
         "PunctuationFilter (drop a page whose sentences lack end marks over 85%) + LongWordFilter "
         "(1,000); no line removal, no sentence count",
         "different: c4_v1 tags; the mix removes lines without end punctuation or under 3 words and "
         "drops pages with lorem ipsum or a curly brace (as C4); its javascript tag is per page, where "
         "C4 removes the line (a page drop would lose 71% of the sample's pages: not used); no policy "
         "or sentence rules"),
        ("line-dedup", "missing", "missing", "missing (`dolma dedupe` paragraphs: a Bloom filter)"),
        ("language-id (lid.176, en >= 0.65)", "LanguageFilter: equal",
         "FastTextLangId: equal (same model, threshold, newlines as spaces)",
         "different: ft tagger on the lowercased page (same model, threshold)"),
        ("bad-words (LDNOOBW, per language)", "missing", "missing",
         "different: c4_v1's has_naughty_word (its own English list), drops the page"),
        ("near-dedup (MinHash)", "missing (a separate 4-stage pipeline)", "missing (a GPU/Ray workflow)",
         "missing"),
    ],
    "gopher": [
        ("url-filter", "URLFilter: equal", "missing", "missing"),
        ("url-dedup, exact-dedup, near-dedup", "missing", "missing", "missing"),
        ("language-id", "LanguageFilter: equal", "FastTextLangId: equal", "ft tagger: different (lowercased)"),
        ("gopher-quality (words, mean word length, symbols, bullets, ellipsis, alpha words, stop words)",
         "GopherQualityFilter: equal (spaCy words)",
         "different: WordCount, MeanWordLength, SymbolsToWords, Bullets, Ellipsis, "
         "WordsWithoutAlphabets, CommonEnglishWords with Gopher's thresholds, whitespace words",
         "different: gopher_v1 (whitespace words, *median* word length, required words) + mix thresholds"),
        ("gopher-repetition (duplicate lines/paragraphs, top and duplicate n-grams)",
         "GopherRepetitionFilter: equal",
         "different: RepeatedLines/Paragraphs(ByChar), RepeatingTopNGrams, RepeatingDuplicateNGrams "
         "(Gopher's thresholds, its word split)",
         "different: gopher_v1 (lines only, no paragraphs) + mix thresholds"),
    ],
    "fineweb": [
        ("url-filter", "URLFilter: equal", "missing", "missing"),
        ("url-dedup, exact-dedup, near-dedup", "missing", "missing", "missing"),
        ("language-id", "LanguageFilter: equal", "FastTextLangId: equal", "ft tagger: different (lowercased)"),
        ("gopher-repetition, gopher-quality", "equal", "as in gopher", "as in gopher"),
        ("c4-quality (FineWeb's settings)", "C4QualityFilter: equal",
         "different: BoilerPlateStringModifier + PunctuationFilter + LongWordFilter",
         "different: c4_v1 line removal"),
        ("fineweb-quality (line punctuation, short lines, duplicate line chars)",
         "FineWebQualityFilter: equal",
         "different: its PunctuationFilter (the c4-quality row) stands for the line-punctuation rule; "
         "short lines and duplicate line characters missing", "missing"),
        ("pii (emails, IPs replaced)", "PIIFormatter: equal", "missing (a GPU/presidio module)",
         "different: pii_regex_v2 tags; the mix replaces the spans"),
    ],
}


def write_documents(inputs: list[str], folder: str) -> list[dict]:
    """The pages of ``inputs`` (our reader) as JSONL documents for Curator (plain) and dolma
    (gzipped, ``DOLMA_FILES`` files); returns them (id, url)."""
    pages = [{"id": str(i), "text": d.text, "url": d.url, "source": "cc", "metadata": {"url": d.url}}
             for i, d in enumerate(d for path in inputs for d in iter_crawl_documents(path))]
    os.makedirs(f"{folder}/curator")
    os.makedirs(f"{folder}/dolma/documents")
    with open(f"{folder}/curator/pages.jsonl", "w", encoding="utf-8") as handle:
        for page in pages:
            handle.write(json.dumps(page) + "\n")
    for part in range(DOLMA_FILES):
        with gzip.open(f"{folder}/dolma/documents/part-{part}.jsonl.gz", "wt", encoding="utf-8") as handle:
            for page in pages[part::DOLMA_FILES]:
                handle.write(json.dumps(page) + "\n")
    return [{"id": p["id"], "url": p["url"]} for p in pages]


def lid_model() -> str:
    return str(default_model_path())


def dolma_taggers(preset: str) -> list[str]:
    return {"c4": ["c4_v1", "ft_lid176_local_en_doc"], "gopher": ["gopher_v1", "ft_lid176_local_en_doc"],
            "fineweb": ["gopher_v1", "c4_v1", "ft_lid176_local_en_doc", "pii_regex_v2"],
            "language-id": ["ft_lid176_local_en_doc"]}[preset]


def _attr(tagger: str, name: str) -> str:
    return f"@.x__{tagger}__{name}"


def _score(tagger: str, name: str, op: str, limit: float) -> str:
    """A mix filter: the page-wide score ``name`` of ``tagger`` compared (``op``) with ``limit``."""
    a = _attr(tagger, name)
    return f"$.attributes[?({a} && {a}[0] && {a}[0][2] {op} {limit})]"


def _above(tagger: str, name: str, limit: float) -> str:
    return _score(tagger, name, ">", limit)


def _below(tagger: str, name: str, limit: float) -> str:
    return _score(tagger, name, "<", limit)


def gopher_limits(config=None) -> dict:
    """Gopher's thresholds as ``config`` (default: our gopher preset) sets them: what the peers'
    Gopher rules get."""
    config = config or build_config(preset="gopher")
    quality, repetition = config.settings_of("gopher-quality"), config.settings_of("gopher-repetition")
    return {"min_words": quality.min_doc_words, "max_words": quality.max_doc_words,
            "min_word_length": quality.min_avg_word_length, "max_word_length": quality.max_avg_word_length,
            "symbols": quality.max_symbol_word_ratio, "bullets": quality.max_bullet_lines_ratio,
            "ellipsis": quality.max_ellipsis_lines_ratio, "alpha_words": quality.max_non_alpha_words_ratio,
            "stop_words": quality.min_stop_words, "dup_lines": repetition.dup_line_frac,
            "dup_paragraphs": repetition.dup_para_frac, "dup_line_chars": repetition.dup_line_char_frac,
            "dup_paragraph_chars": repetition.dup_para_char_frac,
            "top_ngrams": [list(pair) for pair in repetition.top_n_grams],
            "dup_ngrams": [list(pair) for pair in repetition.dup_n_grams]}


def gopher_exclude(limits: dict) -> list[str]:
    """dolma's gopher_v1 attributes against Gopher's thresholds (it has no paragraph rules)."""
    return [
        _below("gopher_v1", "word_count", limits["min_words"]),
        _above("gopher_v1", "word_count", limits["max_words"]),
        _below("gopher_v1", "median_word_length", limits["min_word_length"]),
        _above("gopher_v1", "median_word_length", limits["max_word_length"]),
        _above("gopher_v1", "symbol_to_word_ratio", limits["symbols"]),
        _below("gopher_v1", "fraction_of_words_with_alpha_character", limits["alpha_words"]),
        _below("gopher_v1", "required_word_count", limits["stop_words"]),
        _above("gopher_v1", "fraction_of_lines_starting_with_bullet_point", limits["bullets"]),
        _above("gopher_v1", "fraction_of_lines_ending_with_ellipsis", limits["ellipsis"]),
        _above("gopher_v1", "fraction_of_duplicate_lines", limits["dup_lines"]),
        _above("gopher_v1", "fraction_of_characters_in_duplicate_lines", limits["dup_line_chars"]),
        *[_above("gopher_v1", f"fraction_of_characters_in_most_common_{n}grams", r) for n, r in limits["top_ngrams"]],
        *[_above("gopher_v1", f"fraction_of_characters_in_duplicate_{n}grams", r) for n, r in limits["dup_ngrams"]],
    ]


C4_EXCLUDE = [f"$.attributes[?({_attr('c4_v1', kind)})]"
              for kind in ("has_naughty_word", "has_lorem_ipsum", "has_curly_brace")]
C4_LINES = ["lines_with_no_ending_punctuation", "lines_with_too_few_words"]
LID_INCLUDE = [_score("ft_lid176_local_en_doc", "en", ">=", LID_THRESHOLD)]


def dolma_mix_config(preset: str, folder: str) -> dict:
    """`dolma mix`'s config for ``preset``: LID as an include, the page rules as excludes, C4's
    line rules and PII as span replacements."""
    gopher = gopher_exclude(gopher_limits())
    exclude = {"c4": C4_EXCLUDE, "gopher": gopher, "fineweb": gopher + C4_EXCLUDE[1:],  # no bad words
               "language-id": []}[preset]
    spans = []
    if preset in ("c4", "fineweb"):  # FineWeb's C4 rules keep lines without end punctuation
        spans += [{"span": f"$.attributes.x__c4_v1__{kind}", "min_score": 0.5, "replacement": ""}
                  for kind in (C4_LINES if preset == "c4" else C4_LINES[1:])]
    if preset == "fineweb":
        spans += [{"span": f"$.attributes.x__pii_regex_v2__{kind}", "min_score": 0.5, "replacement": f"|||{kind}|||"}
                  for kind in ("EMAIL_ADDRESS", "IP_ADDRESS")]
    stream = {"name": "kept", "documents": [f"{folder}/documents/*.jsonl.gz"], "attributes": ["x"],
              "output": {"path": f"{folder}/out", "max_size_in_bytes": 10**10},
              "filter": {"syntax": "jsonpath", "include": LID_INCLUDE, "exclude": exclude}}
    if spans:
        stream["span_replacement"] = spans
    return {"streams": [stream], "processes": 2}


def run_dolma(preset: str, folder: str) -> dict:
    """`dolma tag` then `dolma mix`, one measured process tree; the kept pages' ids."""
    for sub in ("attributes", "out"):
        shutil.rmtree(f"{folder}/{sub}", ignore_errors=True)
    config = f"{folder}/mix-{preset}.json"
    with open(config, "w", encoding="utf-8") as handle:
        json.dump(dolma_mix_config(preset, folder), handle)
    tag = [str(DOLMA), "tag", "--documents", f"{folder}/documents/*.jsonl.gz", "--experiment", "x",
           "--taggers", *dolma_taggers(preset), "--tagger_modules", "dolma_lid", "--processes", "2"]
    mix = [str(DOLMA), "-c", config, "mix"]
    script = " ".join(map(shlex.quote, tag)) + " && " + " ".join(map(shlex.quote, mix))
    env_prefix = (f"PYTHONPATH={shlex.quote(str(ROOT / 'benchmarks' / 'peer_tools'))} "
                  f"C4FORGE_LID176={shlex.quote(lid_model())} NLTK_DATA=/nonexistent ")
    result = bench_build.measure(["bash", "-c", env_prefix + script], timeout=7200)
    kept = set()
    for path in Path(folder, "out").glob("*.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            kept |= {json.loads(line)["id"] for line in handle}
    result["kept"] = kept
    return result


def run_curator(preset: str, folder: str) -> dict:
    """curator_chain.py in .venv-curator, one measured process; the kept pages' ids."""
    with tempfile.TemporaryDirectory() as out:
        result = bench_build.measure([str(CURATOR_PYTHON), str(CURATOR_CHAIN), preset, f"{folder}/curator",
                                      out, lid_model(), json.dumps(gopher_limits())], timeout=7200)
        kept = set()
        for path in Path(out).glob("*.jsonl"):
            with open(path, encoding="utf-8") as handle:
                kept |= {json.loads(line)["id"] for line in handle}
    result["kept"] = kept
    return result


def rules_only_args(preset: str, badwords: str) -> list[str]:
    """`corpus clean`'s arguments for ``preset``'s rules alone: its corpus-wide steps and the URL
    filter off (``language-id``: that step alone), as the peers run them."""
    if preset == "language-id":
        return ["--preset", "c4", "--set", "chain=language-id"]
    off = [name for name in CHAINS[preset] if REGISTRY[name].local is not None] + ["url-filter"]
    extra = ["--badwords", badwords] if bench_build.has_bad_words(preset) else []
    return ["--preset", preset, *[arg for name in off for arg in ("--set", f"{name}.on=false")], *extra]


def run_rules_only(preset: str, inputs: list[str], badwords: str, timed: bool = True) -> dict:
    """`corpus clean --jsonl` with ``preset``'s rules alone (measured as the other rows when
    ``timed``); the kept pages' URLs."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(bench_build.BIN / "corpus"), "clean", "-i", *inputs, "--jsonl", f"{tmp}/k.jsonl",
               *rules_only_args(preset, badwords)]
        if timed:
            result = bench_build.measure(cmd, timeout=7200)
        else:
            subprocess.run(cmd, check=True, capture_output=True, timeout=7200)
            result = {}
        with open(f"{tmp}/k.jsonl", encoding="utf-8") as handle:
            result["urls"] = {json.loads(line)["url"] for line in handle}
    return result


def our_rules_only(preset: str, inputs: list[str], badwords: str) -> set[str]:
    """The URLs our preset keeps with its rules alone (untimed): what the peers' decisions are
    set beside."""
    return run_rules_only(preset, inputs, badwords, timed=False)["urls"]


def run_peer(system: str, preset: str, folder: str) -> dict:
    """One run of NeMo Curator's or dolma's chain for ``preset`` on the documents in ``folder``."""
    return run_curator(preset, folder) if system == "curator" else run_dolma(preset, f"{folder}/dolma")


def measure_scale(scale: int, inputs: list[str], repeats: int, badwords: str, systems: tuple[str, ...]) -> dict:
    """Every (preset, system) run at ``scale``, interleaved in a seeded order per repeat."""
    with tempfile.TemporaryDirectory() as folder:
        pages = write_documents(inputs, folder)
        jobs = [(p, s) for p in PRESETS for s in systems]
        runs: dict[tuple[str, str], list] = {job: [] for job in jobs}
        kept: dict[tuple[str, str], set] = {}  # the peers' kept ids
        ours_kept: dict[str, set] = {}  # the URLs our rules-only row kept
        for repeat in range(repeats):
            for preset, system in random.Random(7000 + scale * 10 + repeat).sample(jobs, len(jobs)):
                if system == "c4forge":
                    result = bench_build.run_engine("clean", inputs, bench_presets.preset_args(preset, badwords),
                                                    2, {})
                elif system == "c4forge-rules":
                    result = run_rules_only(preset, inputs, badwords)
                    ours_kept[preset] = result.pop("urls")
                elif system == "datatrove":
                    result = bench_presets.run_datatrove(preset, inputs)
                else:
                    result = run_peer(system, preset, folder)
                kept[(preset, system)] = result.pop("kept", None)
                runs[(preset, system)].append(result)
                print(f"x{scale} repeat {repeat}: {preset} {system} {result['cpu']:.1f} CPU s",
                      file=sys.stderr, flush=True)
        url_of = {p["id"]: p["url"] for p in pages}
        decisions = {}
        for preset in (*PRESETS, "language-id"):
            ours = ours_kept.get(preset) or our_rules_only(preset, inputs, badwords)
            for system in (s for s in systems if s in ("curator", "dolma")):
                theirs = kept.get((preset, system))
                if theirs is None:  # language ID alone is not one of the timed rows
                    theirs = run_peer(system, preset, folder)["kept"]
                decisions[(preset, system)] = (ours, {url_of[i] for i in theirs})
    return {"scale": scale, "pages": len(pages), "runs": runs, "decisions": decisions}


def versions() -> dict[str, str]:
    def version(python: Path, package: str) -> str:
        try:
            out = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                                 capture_output=True, text=True)
        except OSError:  # its venv is absent (make peers): its rows are left out
            return "not installed"
        return out.stdout.strip() or "not installed"

    return {"c4forge": harness.commit(), "c4forge-rules": harness.commit(), "datatrove": version(Path(harness.peers_python()), "datatrove"),
            "curator": version(CURATOR_PYTHON, "nemo-curator"), "dolma": version(DOLMA.parent / "python", "dolma")}


NAMES = {"c4forge": "c4forge", "c4forge-rules": "c4forge, rules only", "datatrove": "datatrove",
         "curator": "NeMo Curator", "dolma": "dolma"}


def cost_table(measured: list[dict], systems: tuple[str, ...], version: dict[str, str]) -> list[str]:
    lines = [f"| scale | preset | system | CPU s | CPU ms per page | pages per CPU s | {NAMES[systems[0]]} / system, CPU "
             "| wall s |",
             "|---:|---|---|---:|---:|---:|---:|---:|"]
    for m in measured:
        for preset in PRESETS:
            ours = [r["cpu"] for r in m["runs"][(preset, systems[0])]]
            for system in systems:
                cpu = [r["cpu"] for r in m["runs"][(preset, system)]]
                per_page = [1000 * c / m["pages"] for c in cpu]
                rate = [m["pages"] / c for c in cpu]
                wall = sorted(r["wall"] for r in m["runs"][(preset, system)])[len(cpu) // 2]
                lines.append(f"| {m['scale']}x | {preset} | {NAMES[system]} {version[system]} | "
                             f"{harness.spread(cpu, '{:.1f}')} | {harness.spread(per_page)} | "
                             f"{harness.spread(rate, '{:.0f}')} | {harness.spread(harness.ratios(ours, cpu))}x | "
                             f"{wall:.1f} |")
    return lines


def decision_table(measured: dict) -> list[str]:
    lines = ["| rules | peer | pages | kept by both | by c4forge only | by the peer only | agreement |",
             "|---|---|---:|---:|---:|---:|---:|"]
    total = measured["pages"]
    for (preset, system), (ours, theirs) in measured["decisions"].items():
        both, only_ours, only_theirs = len(ours & theirs), len(ours - theirs), len(theirs - ours)
        lines.append(f"| {preset} | {NAMES[system]} | {total:,} | {both:,} | {only_ours:,} | {only_theirs:,} | "
                     f"{100 * (total - only_ours - only_theirs) / total:.1f}% |")
    return lines


def filters_table() -> list[str]:
    lines = ["| preset | c4forge step | datatrove | NeMo Curator | dolma |", "|---|---|---|---|---|"]
    for preset, rows in FILTERS.items():
        lines += [f"| {preset} | {ours} | {dt} | {cur} | {dol} |" for ours, dt, cur, dol in rows]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--badwords", default=str(harness.SHARED / "badwords"))
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="The embedded sample, once, nothing written.")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="Which rows to run (comma-separated; the ratio is to the first).")
    args = parser.parse_args()
    assert all(build_config(preset=p).steps.get("language-id").threshold == LID_THRESHOLD for p in PRESETS)
    chosen = args.systems.split(",")
    if set(chosen) - set(SYSTEMS):
        parser.error(f"--systems: choose among {', '.join(SYSTEMS)}")
    systems = tuple(s for s in chosen if s.startswith("c4forge")
                    or (s == "datatrove" and bench_build.datatrove_available())
                    or (s == "curator" and CURATOR_PYTHON.exists()) or (s == "dolma" and DOLMA.exists()))
    missing = sorted(set(chosen) - set(systems))
    if missing:
        print(f"left out (make peers): {', '.join(missing)}", file=sys.stderr)
    machine = harness.machine()
    if args.quick:
        args.write, args.repeat = False, 1
        sample = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
        measured = [measure_scale(1, sample, 1, str(ROOT / "corpus" / "data" / "demo-badwords"), systems)]
    else:
        measured = [measure_scale(scale, distinct_inputs.distinct_copies(scale, log=lambda m: print(m, file=sys.stderr)),
                                  args.repeat, args.badwords, systems)
                    for scale in map(int, args.scales.split(","))]
    version = versions()
    lines = [f"Input: copies 0..N-1 of crawl + crawl-extra made distinct (benchmarks/distinct_inputs.py; "
             f"{measured[0]['pages'] // measured[0]['scale']:,} real pages a copy); {args.repeat} repeat(s), every "
             "(preset, system) run of a scale interleaved in a seeded order; CPU = user + sys of every process, "
             "median (min-max); ratios per repeat (below 1: c4forge cheaper). c4forge: `corpus clean` with the "
             "preset, URL filter on, dedup included; c4forge, rules only: the preset without its corpus-wide steps "
             "and URL filter; the peers: the closest rules each offers (below), no dedup.",
             "", *cost_table(measured, systems, version), "",
             f"Decisions on the {measured[0]['pages']:,} pages of {measured[0]['scale']}x: the pages (by URL) each "
             "peer keeps beside c4forge's preset with the same rules and no dedup or URL filter; `language-id`: "
             "that rule alone.", "", *decision_table(measured[0]), "",
             "What stands for each of our steps (equal: the same decisions, tested; different: a rule of the same "
             "intent, other definitions; missing: nothing in that tool's filtering pass):", "", *filters_table()]
    harness.publish("peer-tools", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
