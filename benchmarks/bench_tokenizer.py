"""Tokenizer throughput: `tokenizer encode` end to end vs raw SentencePiece encode in one
process, on the same text, in one run; plus training times for 8k/32k vocabularies.

Corpus: the c4-noclean documents of ../shared/data/crawl (the larger of the two variants),
repeated under distinct URLs until about --megabytes of text, written as a corpus directory.
`tokenizer encode` is timed end to end (reading the Arrow shards, encoding in worker processes,
writing token shards and the manifest); the baseline is `sp.encode(texts, num_threads=1)` on the
same texts already in memory in one process. (sentencepiece's batch encode starts a thread per
core by default; that figure is shown too.) Target: encode >= 0.8 x cores x the raw
single-process, single-thread speed.

Run: make bench  (or: python benchmarks/bench_tokenizer.py [--megabytes 40] [--repeat 3] [--write]
     [--quick])
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402

from c4forge.core.counters import Counters
from c4forge.corpus.config import build_config
from c4forge.corpus.local import run_chain
from c4forge.corpus.shards import iter_corpus_documents, write_corpus
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.train import TokenizerConfig, TokenizerError, load_tokenizer, train_tokenizer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", type=Path, default=harness.SHARED / "crawl")
    parser.add_argument("--megabytes", type=float, default=40.0)
    parser.add_argument("--repeat", type=int, default=3,
                        help="interleaved rounds of raw, raw with threads and tokenizer encode")
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true",
                        help="About 2 MB, one 8k BPE training, one round, nothing written.")
    args = parser.parse_args()
    if args.quick:
        args.megabytes, args.repeat, args.write = 2.0, 1, False
    machine = harness.machine()
    files = sorted(str(p) for p in args.crawl.glob("*.wet.gz"))
    if not files:
        print(f"no crawl data at {args.crawl}", file=sys.stderr)
        return 2
    base = run_chain(files, build_config("c4-noclean"), Counters())
    base_mb = sum(len(d.text.encode("utf-8")) for d in base) / 1e6
    copies = max(1, round(args.megabytes / base_mb))
    docs = [d.replace(url=f"{d.url}#copy{i}", normalized_url=f"{d.normalized_url}#copy{i}")
            for i in range(copies) for d in base]
    cores = os.cpu_count() or 1
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        write_corpus(corpus, docs, {"config": {"preset": "c4-noclean"}, "counters": {}})
        texts = [d["text"] for s in ("train", "validation") for d in iter_corpus_documents(corpus, s)]
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6

        lines += [f"Training on {base_mb:.1f} MB ({len(base):,} documents, c4-noclean of the shared crawl), "
                  "one run each:", "",
                  "| model | vocab | seconds | training text MB/s |", "|---|---:|---:|---:|"]
        single_corpus = os.path.join(tmp, "base")
        write_corpus(single_corpus, base, {"config": {"preset": "c4-noclean"}, "counters": {}})
        for model_type in ("bpe",) if args.quick else ("bpe", "unigram"):
            for vocab in (8000,) if args.quick else (8000, 32000):
                try:
                    info = train_tokenizer(single_corpus, os.path.join(tmp, f"{model_type}{vocab}"),
                                           TokenizerConfig(model_type=model_type, vocab_size=vocab))
                    seconds = info["train_seconds"]
                    lines.append(f"| {model_type} | {vocab:,} | {seconds:.1f} | {base_mb / seconds:.2f} |")
                except TokenizerError as exc:
                    lines.append(f"| {model_type} | {vocab:,} | failed: {str(exc)[:90]}... | |")

        tok = os.path.join(tmp, "bpe8000")
        sp, _ = load_tokenizer(tok)
        sp.encode(texts[:100])
        systems = {
            "raw sp.encode(texts, num_threads=1), 1 process, text in memory":
                lambda: sp.encode(texts, num_threads=1),
            f"raw sp.encode(texts), sentencepiece's own threads ({cores}), text in memory":
                lambda: sp.encode(texts),
            f"tokenizer encode, {cores} workers, end to end (read + encode + write)":
                lambda: encode_corpus(corpus, tok, os.path.join(tmp, "ids"), workers=cores,
                                      overwrite=True, log=lambda *_: None),
        }
        _, _, wall = harness.interleave(systems, args.repeat)
        manifest = json.load(open(os.path.join(tmp, "ids", "manifest.json")))
    raw_name, ours_name = next(iter(systems)), list(systems)[-1]
    target = 0.8 * cores * megabytes / statistics.median(wall[raw_name])
    ours_rate = megabytes / statistics.median(wall[ours_name])
    lines += ["", f"Encoding {megabytes:.1f} MB ({len(texts):,} documents, {copies} copies), bpe 8k, {cores} cores, "
              f"{args.repeat} interleaved round(s); wall seconds median (min-max); speed vs raw per round:", "",
              "| method | wall s | MB/s (median) | speed vs raw |", "|---|---:|---:|---:|"]
    for name, seconds in wall.items():
        speed = harness.spread(harness.ratios(wall[raw_name], seconds)) + "x"
        lines.append(f"| {name} | {harness.spread(seconds)} | {megabytes / statistics.median(seconds):.2f} | {speed} |")
    lines += ["", f"Target 0.8 x {cores} cores x raw = {target:.2f} MB/s: "
              f"{'met' if ours_rate >= target else 'NOT met'} ({ours_rate:.2f} MB/s); "
              f"{manifest['splits']['train']['tokens']:,} tokens written."]
    harness.publish("tokenizer", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
