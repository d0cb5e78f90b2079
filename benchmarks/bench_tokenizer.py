"""Tokenizer throughput: `tokenizer encode` end to end vs raw SentencePiece encode in one
process, on the same text, in one run; plus training times for 8k/32k vocabularies.

Corpus: the c4-noclean documents of ../shared/data/crawl (the larger of the two variants),
repeated under distinct URLs until about --megabytes of text, written as a corpus directory.
`tokenizer encode` is timed end to end (reading the Arrow shards, encoding in worker processes,
writing token shards and the manifest); the baseline is `sp.encode(texts, num_threads=1)` on the
same texts already in memory in one process. (sentencepiece's batch encode starts a thread per
core by default; that figure is shown too.) Target: encode >= 0.8 x cores x the raw
single-process, single-thread speed.

Run: .venv/bin/python benchmarks/bench_tokenizer.py [--megabytes 40]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c4forge.core.counters import Counters
from c4forge.corpus.config import build_config
from c4forge.corpus.local import run_chain
from c4forge.corpus.shards import iter_documents, write_corpus
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.train import TokenizerConfig, TokenizerError, load_tokenizer, train_tokenizer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", type=Path, default=ROOT.parent / "shared" / "data" / "crawl")
    parser.add_argument("--megabytes", type=float, default=40.0)
    args = parser.parse_args()
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
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        write_corpus(corpus, docs, {"config": {"preset": "c4-noclean"}, "counters": {}})
        texts = [d["text"] for s in ("train", "validation") for d in iter_documents(corpus, s)]
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6

        print(f"training on {base_mb:.1f} MB ({len(base):,} documents, c4-noclean of the shared crawl)\n")
        print("| model | vocab | seconds | training text MB/s |")
        print("|---|---:|---:|---:|")
        single_corpus = os.path.join(tmp, "base")
        write_corpus(single_corpus, base, {"config": {"preset": "c4-noclean"}, "counters": {}})
        for model_type in ("bpe", "unigram"):
            for vocab in (8000, 32000):
                try:
                    info = train_tokenizer(single_corpus, os.path.join(tmp, f"{model_type}{vocab}"),
                                           TokenizerConfig(model_type=model_type, vocab_size=vocab))
                    seconds = info["train_seconds"]
                    print(f"| {model_type} | {vocab:,} | {seconds:.1f} | {base_mb / seconds:.2f} |")
                except TokenizerError as exc:
                    print(f"| {model_type} | {vocab:,} | failed: {str(exc)[:90]}... | |")

        tok = os.path.join(tmp, "bpe8000")
        sp, _ = load_tokenizer(tok)
        sp.encode(texts[:100])

        def best_of(fn, repeat=2):
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return min(times)

        raw = best_of(lambda: sp.encode(texts, num_threads=1))
        raw_threads = best_of(lambda: sp.encode(texts))
        ours = best_of(lambda: encode_corpus(corpus, tok, os.path.join(tmp, "ids"), workers=cores,
                                             overwrite=True, log=lambda *_: None))
        manifest = json.load(open(os.path.join(tmp, "ids", "manifest.json")))
    target = 0.8 * cores * (megabytes / raw)
    print(f"\nencoding {megabytes:.1f} MB ({len(texts):,} documents, {copies} copies), bpe 8k, {cores} cores\n")
    print("| method | seconds | MB/s | vs raw |")
    print("|---|---:|---:|---:|")
    print(f"| raw sp.encode(texts, num_threads=1), 1 process, text in memory | {raw:.2f} | {megabytes / raw:.2f} | 1.00x |")
    print(f"| raw sp.encode(texts), sentencepiece's own threads ({cores}), text in memory | {raw_threads:.2f} | "
          f"{megabytes / raw_threads:.2f} | {raw / raw_threads:.2f}x |")
    print(f"| tokenizer encode, {cores} workers, end to end (read + encode + write) | {ours:.2f} | "
          f"{megabytes / ours:.2f} | {raw / ours:.2f}x |")
    print(f"\ntarget 0.8 x {cores} cores x raw = {target:.2f} MB/s: "
          f"{'met' if megabytes / ours >= target else 'NOT met'}; "
          f"{manifest['splits']['train']['tokens']:,} tokens written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
