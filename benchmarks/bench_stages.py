"""Where `corpus build` spends its CPU: every stage of the C4 chain on distinct pages, beside the
best peer component on the same pages, and what a worker pays before its first page.

Stages: corpus/chain/local.py's ``run_chain`` with a StageClock (c4forge/core/stageclock.py: one
current stage, so every CPU second is counted once and the shares add up to the chain): read
(decompress, parse WET records into pages), length, url-dedup, clean-page (paragraph filter and
C4's line and page rules), line-dedup, language-id, bad-words, minhash-signatures,
near-dup-clusters; then write (the Arrow shards, ``write_corpus``). The same functions run in
``corpus build``'s Beam DoFns; the Beam graph adds its shuffles, measured as the build's CPU over
``corpus clean``'s in the build section.

Peers, each on exactly the pages our stage saw (captured in the run): read - FastWARC's
ArchiveIterator over the same files (decompress, parse, read every body: no text decoding, no
page objects); language-id - fastText's ``predict`` alone (lid.176, k=1, newlines as spaces,
which is what ours calls, without the counters and the page record); minhash-signatures -
datasketch's ``MinHash.bulk`` over the same 5-word shingles, 112 permutations (shingling
included: bench_dedup times the two halves); bad-words - the automaton library alone
(pyahocorasick, the same words per language, one full pass over each lower-cased page, every
occurrence reported, no word-boundary check), and, below the table, tfds' regex it replaced on
the same pages. The other stages have no standalone peer component (bench_clean compares the
C4 rules as a whole with datatrove).

Start-up: CPU seconds of a fresh process that imports what a Beam SDK worker imports for the
chain (``c4forge.pipelines.c4``, so apache_beam too) and loads everything a worker loads before
its first page (Punkt, the fastText model, the bad-word lists); the same without Beam (what
`corpus clean` pays); and Beam's SDK worker harness alone, which any Beam worker imports
whatever it runs: the difference is what c4forge adds to a worker. Median of the repeats.

Inputs: copies 0..N-1 of the shared crawl + crawl-extra made distinct (benchmarks/
distinct_inputs.py). Each repeat runs in its own process (interleaved with the peers).

Run: python benchmarks/bench_stages.py [--scale 4] [--repeat 3] [--write] [--quick]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import distinct_inputs  # noqa: E402
import harness  # noqa: E402

STAGES = ("read", "length", "url-dedup", "clean-page", "line-dedup", "language-id", "bad-words",
          "minhash-signatures", "near-dup-clusters", "write")
PEERS = {"read": "FastWARC ArchiveIterator", "language-id": "fastText predict alone",
         "bad-words": "pyahocorasick, one full pass", "minhash-signatures": "datasketch MinHash.bulk"}

STARTUP = """
import resource, sys
{imports}
from c4forge.corpus.config import build_config
from c4forge.corpus.chain.chains import load_steps
from c4forge.corpus.text import sentences
config = build_config("c4", badwords=sys.argv[1])
load_steps(config)
sentences.has_at_least("Punkt is built on first use. Like this.", 2)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
"""


FORKED = """
import gc, os, resource, sys
import c4forge.pipelines.c4
from c4forge.corpus.config import build_config
from c4forge.corpus.chain.chains import load_steps
from c4forge.corpus.text import sentences
from c4forge.pipelines.engines.workers import worker_fork
from c4forge.pipelines.dofns import load_worker_models
config = build_config("c4", badwords=sys.argv[1])
worker_fork.prepare(lambda: load_worker_models(config.for_workers()))
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # the worker: its own usage starts at zero
    load_steps(config.for_workers())
    sentences.has_at_least("Punkt is built on first use. Like this.", 2)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    os.write(write, str(usage.ru_utime + usage.ru_stime).encode())
    os._exit(0)
os.waitpid(pid, 0)
os.close(write)
print(os.read(read, 100).decode())
"""


HARNESS = """
import resource
import apache_beam.runners.worker.sdk_worker_main
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
"""


def startup_seconds(badwords: str, beam: bool) -> float:
    """CPU seconds of a fresh process from its start to the point a worker can take a page."""
    imports = "import c4forge.pipelines.c4" if beam else "import c4forge.corpus.chain.local"
    out = subprocess.run([sys.executable, "-c", STARTUP.format(imports=imports), badwords],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def forked_seconds(badwords: str) -> float:
    """CPU seconds of a worker forked from a warm fork server (pipelines/engines/workers/worker_fork.py, the
    managed engines' workers) until it can take a page: the same set-up on the server's caches."""
    out = subprocess.run([sys.executable, "-c", FORKED, badwords], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def harness_seconds() -> float:
    """CPU seconds of a fresh process that imports Beam's SDK worker harness and nothing of
    ours: what every Beam worker pays, whatever pipeline it runs."""
    out = subprocess.run([sys.executable, "-c", HARNESS], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def worker(paths: list[str], badwords: str, captured: str) -> dict:
    """One timed chain (in this process, started fresh by the parent); the pages language ID
    and MinHash saw are written to ``captured`` for the peers."""
    from c4forge.core.counters import Counters
    from c4forge.core.stageclock import StageClock
    from c4forge.corpus.chain.chains import load_steps, steps_of
    from c4forge.corpus.chain.local import run_chain
    from c4forge.corpus.chain.provenance import corpus_manifest
    from c4forge.corpus.config import build_config
    from c4forge.corpus.output.shards import write_corpus

    config = build_config("c4", badwords=badwords)
    load_steps(config)
    lid_texts: list[str] = []
    minhash_texts: list[str] = []
    badword_pages: list[tuple[str, str]] = []
    chain = {step.name: step for step in steps_of(config.chain)}
    identify, badwords = chain["language-id"].apply, chain["bad-words"].apply

    def identify_seen(model, page):
        lid_texts.append(page.text)
        return identify(model, page)

    def badwords_seen(lists, page):
        badword_pages.append(((page.language or "").split("-")[0], page.text))
        verdict = badwords(lists, page)
        if verdict.kept:
            minhash_texts.append(page.text)
        return verdict

    chain["language-id"] = dataclasses.replace(chain["language-id"], apply=identify_seen)
    chain["bad-words"] = dataclasses.replace(chain["bad-words"], apply=badwords_seen)
    clock = StageClock()
    counters = Counters()
    started = time.process_time()
    docs = run_chain(paths, config, counters, clock, chain=tuple(chain.values()))
    with tempfile.TemporaryDirectory() as tmp, clock.stage("write", len(docs)):
        manifest = corpus_manifest(config, paths, counters.as_dict(), "bench", ["bench"])
        write_corpus(f"{tmp}/c4", docs, manifest, validation_per_mille=config.validation_per_mille)
    total = time.process_time() - started
    # the capture's own cost (two list appends a page) is inside language-id and bad-words
    with open(captured, "w", encoding="utf-8") as handle:
        json.dump({"language-id": lid_texts, "minhash-signatures": minhash_texts,
                   "bad-words": badword_pages}, handle)
    return {"seconds": clock.seconds, "items": clock.items, "total": total,
            "pages_read": clock.items.get("read", 0), "documents": len(docs)}


def badword_lists(badwords: str, pages) -> dict:
    from c4forge.corpus.steps.bad_words import load_badwords

    return load_badwords(badwords, sorted({lang for lang, _ in pages if lang}))


def regex_seconds(badwords: str, pages) -> float:
    """CPU seconds of tfds' bad-words regex (``compile_badwords``) on the pages bad-words saw."""
    from c4forge.corpus.steps.bad_words import compile_badwords

    patterns = compile_badwords(badword_lists(badwords, pages))
    started = time.process_time()
    for lang, text in pages:
        pattern = patterns.get(lang)
        if pattern is not None:
            pattern.search(text.lower())
    return time.process_time() - started


def peer_seconds(stage: str, paths: list[str], texts: list, badwords: str = "") -> float:
    """CPU seconds of the peer component on the same input as our stage."""
    started = time.process_time()
    if stage == "read":
        from fastwarc.warc import ArchiveIterator, WarcRecordType

        for path in paths:
            for record in ArchiveIterator(path, record_types=WarcRecordType.any_type,
                                          parse_http=False, fsspec_args=False):
                record.reader.read()
    elif stage == "language-id":
        from c4forge.corpus.langid.lid176 import load_model

        model = load_model(None)
        started = time.process_time()  # the model is loaded once per worker: start-up, not this
        for text in texts:
            model.predict(text.replace("\n", " "), k=1)
    elif stage == "bad-words":
        import ahocorasick

        automata = {}
        for lang, words in badword_lists(badwords, texts).items():
            automata[lang] = automaton = ahocorasick.Automaton()
            for word in words:
                if word:
                    automaton.add_word(word, len(word))
            automaton.make_automaton()
        started = time.process_time()  # built once per worker, as ours
        for lang, text in texts:
            automaton = automata.get(lang)
            if automaton is not None:
                for _ in automaton.iter(text.lower()):
                    pass
    elif stage == "minhash-signatures":
        from datasketch import MinHash

        from c4forge.corpus.dedup.minhash import shingle_set

        MinHash.bulk([[" ".join(s).encode("utf-8") for s in shingle_set(t)] for t in texts],
                     num_perm=112)
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--badwords", default=str(harness.SHARED / "badwords"))
    parser.add_argument("--scale", type=int, default=4, help="Distinct copies of crawl + crawl-extra.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true", help="The embedded sample crawl, one repeat, nothing written.")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(worker(spec["paths"], args.badwords, spec["captured"])))
        return 0
    if args.quick:
        paths = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
        args.badwords, args.repeat = str(ROOT / "corpus" / "data" / "demo-badwords"), 1
    else:
        paths = distinct_inputs.distinct_copies(args.scale, log=lambda m: print(m, file=sys.stderr))
    machine = harness.machine()
    runs, peers = [], {stage: [] for stage in PEERS}
    startup = {"with Beam (a `corpus build` worker)": [], "without Beam (`corpus clean`)": []}
    forked: list[float] = []
    harness_only: list[float] = []
    regex: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        captured = f"{tmp}/captured.json"
        for _ in range(args.repeat):
            spec = json.dumps({"paths": paths, "captured": captured})
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run([sys.executable, __file__, "--worker", spec, "--badwords", args.badwords],
                                 capture_output=True, text=True, check=True)
            run = json.loads(out.stdout.strip().splitlines()[-1])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            run["process"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            runs.append(run)
            with open(captured, encoding="utf-8") as handle:
                texts = json.load(handle)
            for stage in PEERS:
                peers[stage].append(peer_seconds(stage, paths, texts.get(stage, []), args.badwords))
            regex.append(regex_seconds(args.badwords, texts.get("bad-words", [])))
            for name, beam in zip(startup, (True, False)):
                startup[name].append(startup_seconds(args.badwords, beam))
            harness_only.append(harness_seconds())
            forked.append(forked_seconds(args.badwords))
            print(f"repeat: chain {run['total']:.1f} CPU s, process {run['process']:.1f} s", file=sys.stderr)
    pages = runs[0]["pages_read"]
    total = [r["total"] for r in runs]
    lines = [f"Input: {'the embedded sample' if args.quick else f'{args.scale} distinct copies of crawl + crawl-extra'} "
             f"({pages:,} pages read, {runs[0]['documents']:,} documents written); preset c4; one process, "
             f"{args.repeat} repeat(s), each in a fresh process; median (min-max) CPU seconds. "
             f"The chain's stages add up to {harness.spread(total, '{:.1f}')} CPU s "
             f"({pages / statistics.median(total):.0f} pages/s per core end to end).", "",
             "| stage | pages in | CPU s | share of the chain | pages/s per core | peer component on the same pages | peer CPU s | ours / peer |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for stage in STAGES:
        seconds = [r["seconds"].get(stage, 0.0) for r in runs]
        items = runs[0]["items"].get(stage, 0)
        mid = statistics.median(seconds)
        share = f"{100 * mid / statistics.median(total):.1f}%"
        rate = f"{items / mid:,.0f}" if mid > 0 and items else "-"
        peer, peer_cpu, ratio = PEERS.get(stage, "-"), "-", "-"
        if stage in PEERS:
            peer_cpu = harness.spread(peers[stage], "{:.2f}")
            ratio = harness.spread(harness.ratios(seconds, peers[stage]), "{:.1f}") + "x"
        lines.append(f"| {stage} | {items:,} | {harness.spread(seconds, '{:.2f}')} | {share} | {rate} | "
                     f"{peer} | {peer_cpu} | {ratio} |")
    bad_words = [r["seconds"].get("bad-words", 0.0) for r in runs]
    lines += ["", f"Bad words beside the regex it replaced (tfds' `(?:\\W|^)(w1|...)(?:\\W|$)` per "
              f"language, the same pages): {harness.spread(regex, '{:.2f}')} CPU s, so ours is "
              f"{harness.spread(harness.ratios(bad_words, regex), '{:.2f}')}x the regex's CPU."]
    lines += ["", "Worker start-up (CPU s of a fresh process until it can take its first page; "
              "median (min-max)): " + "; ".join(f"{name} {harness.spread(v, '{:.2f}')}"
                                                for name, v in startup.items()) + "; "
              f"Beam's SDK worker harness alone (`import apache_beam.runners.worker.sdk_worker_main`, "
              f"paid by any Beam worker) {harness.spread(harness_only, '{:.2f}')}, so ours in a Beam "
              f"worker {harness.spread([w - h for w, h in zip(startup['with Beam (a `corpus build` worker)'], harness_only)], '{:.2f}')}. "
              f"A managed engine's worker forked from its build's fork server (pipelines/engines/workers/worker_fork.py: "
              f"imports, models and kernels loaded once per build) {harness.spread(forked, '{:.2f}')}."]
    harness.publish("stages", lines, args.write and not args.quick, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
