"""Tokenizers at the library's speed (issue 79): training and `tokenizer encode` with a GPT-2-style
byte-level BPE (Hugging Face `tokenizers`) and a SentencePiece BPE of the same vocabulary size,
beside the raw library and datatrove's DocumentTokenizer, on the same distinct documents.

Input: the c4-noclean documents of every WET file of ../shared/data/crawl and crawl-extra (the
largest distinct sample the shared data gives: 3,961 pages, 42.9 MB of text; never copies of
one text). Every row is a whole process, timed from outside (bench_build.measure: wall, the CPU of
the process and every worker it starts, the peak RSS of the tree), rows interleaved per round.

- training: `tokenizer train` (SentencePiece BPE; `--library tokenizers --model-type byte-bpe`)
  on the whole sample, same vocabulary size; CPU, wall and peak memory.
- encode, per tokenizer: `raw` is the library encoding the texts already in memory, one thread
  (``Tokenizer.encode_batch`` with TOKENIZERS_PARALLELISM=false; ``sp.encode(num_threads=1)``),
  its CPU measured around the encode call alone (reading the texts is not counted): the library's
  speed per core. `tokenizer encode` is end to end (start, read the Arrow shards, encode in 2
  worker processes, write the shards and the manifest), all its CPU counted. datatrove
  (``.venv-peers``): JsonlReader on the same documents as JSONL, DocumentTokenizer with the same
  tokenizer.json and EOS (``shuffle_documents=False``: we do not shuffle either), local executor,
  one task; the library's own threads on (its default).
  Targets: ours >= 0.85x the raw library's MB per CPU second; more documents per CPU second than
  datatrove's tokenizer.

Run: make bench  (or: python benchmarks/bench_tokenizer.py [--repeat 3] [--vocab 50000] [--write]
     [--quick])
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402
from bench_build import RunFailed, measure  # noqa: E402

from c4forge.core.counters import Counters  # noqa: E402
from c4forge.corpus.chain.local import run_chain  # noqa: E402
from c4forge.corpus.config import build_config  # noqa: E402
from c4forge.corpus.output.shards import iter_corpus_documents, write_corpus  # noqa: E402

BIN = Path(sys.executable).parent
TARGET_VS_RAW = 0.85


def raw_worker(kind: str, tokenizer: str, corpus: str) -> None:
    """--raw-worker: the library alone on the texts in memory, one thread; prints its CPU."""
    texts = [d["text"] for split in ("train", "validation")
             for d in iter_corpus_documents(corpus, split, ["text"])]
    if kind == "hf":
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tokenizer)
        tok.encode_batch(texts[:50], add_special_tokens=False)
        encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
        cpu = time.process_time()
        ids = encode(texts, add_special_tokens=False)
        cpu = time.process_time() - cpu
        tokens = sum(len(e.ids) for e in ids)
    else:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=tokenizer)
        sp.encode(texts[:50], num_threads=1)
        cpu = time.process_time()
        ids = sp.encode(texts, num_threads=1)
        cpu = time.process_time() - cpu
        tokens = sum(len(x) for x in ids)
    print(json.dumps({"cpu": cpu, "tokens": tokens, "documents": len(texts)}))


def datatrove_worker(out: str, jsonl: str, tokenizer: str, eos: str) -> None:
    """--datatrove-worker (in .venv-peers): JsonlReader -> DocumentTokenizer, one task."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    LocalPipelineExecutor(pipeline=[
        JsonlReader(os.path.dirname(jsonl), glob_pattern=os.path.basename(jsonl), doc_progress=False),
        DocumentTokenizer(output_folder=os.path.join(out, "tokens"), local_working_dir=None,
                          tokenizer_name_or_path=tokenizer, eos_token=eos, shuffle_documents=False),
    ], tasks=1, workers=1, logging_dir=os.path.join(out, "logs")).run()


def distinct_corpus(quick: bool):
    files = sorted(str(p) for p in (harness.SHARED / "crawl").glob("*.wet.gz"))
    if not quick:
        files += sorted(str(p) for p in (harness.SHARED / "crawl-extra").glob("*.wet.gz"))
    docs = run_chain(files, build_config("c4-noclean"), Counters())
    assert len({d.url for d in docs}) == len(docs), "the sample must be distinct pages"
    return files, docs


def interleaved(systems: dict, repeats: int) -> dict[str, list[dict]]:
    """Each system once per round, the order shuffled from the second round on (seeded)."""
    import random

    runs: dict[str, list[dict]] = {name: [] for name in systems}
    for repeat in range(repeats):
        names = list(systems)
        for name in random.Random(repeat).sample(names, len(names)) if repeat else names:
            runs[name].append(systems[name]())
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds of the encode rows")
    parser.add_argument("--train-repeat", type=int, default=2, help="interleaved rounds of training")
    parser.add_argument("--vocab", type=int, default=50_000)
    parser.add_argument("--write", action="store_true", help="Regenerate the RESULTS.md section.")
    parser.add_argument("--quick", action="store_true",
                        help="The shared crawl/ only, an 8k vocabulary, one round, nothing written.")
    parser.add_argument("--raw-worker", nargs=3, metavar=("KIND", "TOKENIZER", "CORPUS"))
    parser.add_argument("--datatrove-worker", nargs=4, metavar=("OUT", "JSONL", "TOKENIZER", "EOS"))
    args = parser.parse_args()
    if args.raw_worker:
        raw_worker(*args.raw_worker)
        return 0
    if args.datatrove_worker:
        datatrove_worker(*args.datatrove_worker)
        return 0
    if args.quick:
        args.repeat, args.train_repeat, args.vocab, args.write = 1, 1, 8000, False
    machine = harness.machine()
    files, docs = distinct_corpus(args.quick)
    if not files:
        print("no crawl data under ../shared/data", file=sys.stderr)
        return 2
    megabytes = sum(len(d.text.encode("utf-8")) for d in docs) / 1e6
    workers = 2
    peers = harness.peer_importable("datatrove")
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        write_corpus(corpus, docs, {"config": {"preset": "c4-noclean"}, "counters": {}})
        jsonl = os.path.join(tmp, "jsonl", "docs.jsonl")
        os.makedirs(os.path.dirname(jsonl))
        with open(jsonl, "w", encoding="utf-8") as handle:
            for split in ("train", "validation"):
                for d in iter_corpus_documents(corpus, split, ["text", "url"]):
                    handle.write(json.dumps({"id": d["url"], "text": d["text"]}) + "\n")

        train = {
            "SentencePiece BPE": lambda: measure([str(BIN / "tokenizer"), "train", "-i", corpus, "-o",
                                                  f"{tmp}/sp", "--overwrite", "--vocab-size", str(args.vocab),
                                                  "--t5-sentinels", "0", "-q"]),
            "tokenizers byte-level BPE": lambda: measure([
                str(BIN / "tokenizer"), "train", "-i", corpus, "-o", f"{tmp}/bpe", "--overwrite",
                "--library", "tokenizers", "--model-type", "byte-bpe", "--vocab-size", str(args.vocab),
                "--t5-sentinels", "0", "-q"]),
        }
        trained = interleaved(train, args.train_repeat)
        lines += [f"Training on the whole sample ({megabytes:.1f} MB, {len(docs):,} distinct documents: "
                  f"c4-noclean of {len(files)} shared WET files), vocabulary {args.vocab:,}, "
                  f"{args.train_repeat} interleaved round(s), median (min-max):", "",
                  "| trainer | wall s | CPU s | peak memory GB |", "|---|---:|---:|---:|"]
        for name, runs in trained.items():
            lines.append(f"| {name} | {harness.spread([r['wall'] for r in runs], '{:.1f}')} | "
                         f"{harness.spread([r['cpu'] for r in runs], '{:.1f}')} | "
                         f"{harness.spread([r['peak_total'] / 1e9 for r in runs])} |")

        tokenizers = {"byte-level BPE (tokenizers)": ("hf", f"{tmp}/bpe/tokenizer.json", f"{tmp}/bpe"),
                      "SentencePiece BPE": ("sp", f"{tmp}/sp/tokenizer.model", f"{tmp}/sp")}
        systems = {}
        peer_tokens: list[int] = []
        for label, (kind, file, directory) in tokenizers.items():
            def raw(kind=kind, file=file):
                out = subprocess.run([sys.executable, __file__, "--raw-worker", kind, file, corpus],
                                     capture_output=True, text=True, check=True)
                return json.loads(out.stdout)

            def ours(directory=directory, label=label):
                return measure([str(BIN / "tokenizer"), "encode", "-i", corpus, "--tokenizer", directory,
                                "-o", f"{tmp}/ids-{label[:4]}", "--overwrite", "--workers", str(workers), "-q"])

            systems[(label, "raw library, 1 thread, text in memory")] = raw
            systems[(label, f"tokenizer encode, {workers} workers, end to end")] = ours
            if kind == "hf" and peers:
                def peer(file=file):
                    # a fresh folder each run: datatrove skips a task its logs say is complete
                    out = tempfile.mkdtemp(dir=tmp, prefix="datatrove-")
                    result = measure([harness.peers_python(), __file__, "--datatrove-worker", out, jsonl,
                                      file, "<|endoftext|>"])
                    peer_tokens.append(sum(os.path.getsize(p) for p in Path(out, "tokens").glob("*.ds")) // 2)
                    shutil.rmtree(out)
                    return result

                systems[(label, "datatrove DocumentTokenizer, end to end")] = peer
        try:
            runs = interleaved(systems, args.repeat)
        except (RunFailed, subprocess.CalledProcessError) as exc:
            print(f"a row failed: {exc}", file=sys.stderr)
            return 1
        tokens = {label: json.load(open(f"{tmp}/ids-{label[:4]}/manifest.json")) for label in tokenizers}

    lines += ["", f"Encoding the same {len(docs):,} documents ({megabytes:.1f} MB), {os.cpu_count()} cores, "
              f"{args.repeat} interleaved round(s), median (min-max); CPU s counts every process of the row:", "",
              "| tokenizer | method | CPU s | wall s | MB per CPU s | docs per CPU s | vs raw (MB per CPU s) |",
              "|---|---|---:|---:|---:|---:|---:|"]
    verdicts = []
    for label in tokenizers:
        rows = {method: results for (lab, method), results in runs.items() if lab == label}
        raw_cpu = [r["cpu"] for r in rows["raw library, 1 thread, text in memory"]]
        for method, results in rows.items():
            cpu = [r["cpu"] for r in results]
            wall = "" if "raw" in method else harness.spread([r["wall"] for r in results])
            lines.append(f"| {label} | {method} | {harness.spread(cpu)} | {wall} | "
                         f"{megabytes / statistics.median(cpu):.2f} | {len(docs) / statistics.median(cpu):.0f} | "
                         f"{harness.spread(harness.ratios(raw_cpu, cpu))}x |")
        ours = [r["cpu"] for m, rs in rows.items() if m.startswith("tokenizer encode") for r in rs]
        ratio = statistics.median(harness.ratios(raw_cpu, ours))
        verdicts.append(f"{label}: tokenizer encode {ratio:.2f}x the raw library's MB per CPU second "
                        f"(target >= {TARGET_VS_RAW}: {'met' if ratio >= TARGET_VS_RAW else 'NOT met'})")
        peer = rows.get("datatrove DocumentTokenizer, end to end")
        if peer:
            theirs = statistics.median(r["cpu"] for r in peer)
            verdicts.append(f"{label}: {statistics.median(theirs / c for c in ours):.2f}x datatrove's documents "
                            f"per CPU second (target > 1: {'met' if statistics.median(ours) < theirs else 'NOT met'}); "
                            f"datatrove wrote {sorted(set(peer_tokens))} tokens (2-byte ids), ours "
                            f"{sum(s['tokens'] for s in tokens[label]['splits'].values()):,}")
        elif label.startswith("byte"):
            verdicts.append(f"{label}: datatrove not measured (.venv-peers absent: make peers)")
    lines += [""] + [f"- {v}" for v in verdicts]
    lines += [f"- {label}: {m['splits']['train']['tokens'] + m['splits'].get('validation', {}).get('tokens', 0):,} "
              f"tokens written ({m['dtype']})" for label, m in tokens.items()]
    harness.publish("tokenizer", lines, args.write, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
