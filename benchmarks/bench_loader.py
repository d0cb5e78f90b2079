"""The trainer's data path at scale: c4forge's lazy packed loader vs the in-memory loader it
replaced (kept as tests/reference_loader.py), in one run, on token directories the benchmark
writes itself (uint16, document lengths log-normal around 400 tokens, like web pages).

Per row (each measured in a fresh process): time from opening the directory to the first batch,
peak RSS (includes the memory-mapped shard pages the process touched, which the kernel can drop
at any time), peak anonymous memory (what the process really holds) and its unique set size at
the end, then batch assembly throughput (prefetch off, so this is the work itself) for
seq 1024 x batch 32 per rank, with 1 rank and as rank 0 of 8 simulated ranks.

Then packing efficiency: best_fit's real-token share at seq 1024 against its chunk size, on the
synthetic set and on the shared crawl's c4 corpus, beside concat's cropped-token share.

Run: .venv/bin/python benchmarks/bench_loader.py [--sizes 100M,1B] [--batches 300]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c4forge.tokenizer.formats import write_manifest
from c4forge.train.data import PackedLoader, TokenDocuments

WORK = ROOT / ".cache" / "bench-loader"
SEQ, BATCH = 1024, 32
EOS, VOCAB = 2, 32000


def rel(path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def parse_size(text: str) -> int:
    units = {"K": 10 ** 3, "M": 10 ** 6, "B": 10 ** 9, "G": 10 ** 9}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def synthetic_dir(tokens: int, shards: int = 8, seed: int = 0) -> Path:
    """A token directory of about ``tokens`` tokens (made once, then reused)."""
    directory = WORK / f"synthetic-{tokens}"
    if (directory / "manifest.json").exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    entries, total_docs, total_tokens = [], 0, 0
    per_shard = tokens // shards
    for i in range(shards):
        lengths = []
        have = 0
        while have < per_shard:
            draw = np.clip(rng.lognormal(np.log(400), 1.0, size=100_000).astype(np.int64), 20, 50_000)
            lengths.append(draw)
            have += int(draw.sum())
        lengths = np.concatenate(lengths)
        lengths = lengths[:int(np.searchsorted(np.cumsum(lengths), per_shard)) + 1]
        offsets = np.zeros(len(lengths) + 1, dtype="<u8")
        np.cumsum(lengths, out=offsets[1:])
        ids = rng.integers(3, VOCAB, size=int(offsets[-1]), dtype=np.uint16)
        ids[offsets[1:].astype(np.int64) - 1] = EOS
        name = f"train-{i:05d}-of-{shards:05d}"
        ids.tofile(directory / f"{name}.bin")
        offsets.tofile(directory / f"{name}.idx")
        entries.append({"name": name, "documents": len(lengths), "tokens": int(offsets[-1])})
        total_docs += len(lengths)
        total_tokens += int(offsets[-1])
    write_manifest(str(directory), {
        "tokenizer": {"vocab_size": VOCAB, "model_sha256": "synthetic"}, "eos_id": EOS,
        "dtype": "<u2", "splits": {"train": {"documents": total_docs, "tokens": total_tokens,
                                              "bytes": 4 * total_tokens, "shards": entries}}})
    return directory


def _memory() -> dict:
    """Current anonymous memory and unique set size (kB) from /proc/self/smaps_rollup."""
    out = {}
    with open("/proc/self/smaps_rollup") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("Anonymous", "Private_Clean", "Private_Dirty", "Rss"):
                out[key] = int(value.split()[0])
    return out


def _peak_rss_kb() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class AnonymousPeak:
    """Samples anonymous memory every 5 ms in a thread (allocations inside one call count)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _memory()["Anonymous"])
            time.sleep(0.005)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, _memory()["Anonymous"])


def measure(directory: str, loader_kind: str, packing: str, world: int, batches: int) -> dict:
    """One row, in this process: first batch, memory, throughput."""
    baseline = _memory()["Anonymous"]
    sampler = AnonymousPeak()
    start = time.perf_counter()
    docs = TokenDocuments(directory, "train")
    if loader_kind == "c4forge":
        loader = PackedLoader(docs, SEQ, BATCH, packing, seed=0, rank=0, world_size=world)
    else:
        from tests.reference_loader import ReferenceLoader

        loader = ReferenceLoader(docs, SEQ, BATCH, packing, seed=0, rank=0, world_size=world)
    it = iter(loader)
    first = next(it)
    first_s = time.perf_counter() - start
    tick = time.perf_counter()
    tokens = 0
    for _ in range(batches):
        batch = next(it)
        tokens += batch.input_ids.size
    elapsed = time.perf_counter() - tick
    assert first.input_ids.shape == (BATCH, SEQ)
    wait_ms = None
    if loader_kind == "c4forge":  # a training step of 80 ms (a 124M model on one H100 at
        # 0.4M tokens/s) with prefetch 2: how long does the step wait for its next batch?
        loader.prefetch = 2
        waits = []
        with_thread = iter(loader)
        next(with_thread)
        for _ in range(30):
            time.sleep(0.08)
            tick = time.perf_counter()
            next(with_thread)
            waits.append(time.perf_counter() - tick)
        with_thread.close()
        wait_ms = round(1000 * float(np.mean(waits)), 2)
    anonymous = sampler.stop()
    mem = _memory()
    return {"loader": loader_kind, "packing": packing, "ranks": world,
            "documents": len(docs), "tokens": docs.total_tokens,
            "first_batch_s": round(first_s, 2), "peak_rss_mb": round(_peak_rss_kb() / 1024),
            "peak_anonymous_mb": round((anonymous - baseline) / 1024),
            "uss_mb": round((mem["Private_Clean"] + mem["Private_Dirty"]) / 1024),
            "batches_per_s": round(batches / elapsed, 1),
            "tokens_per_s": round(tokens / elapsed), "step_waits_ms": wait_ms}


def run_row(directory: Path, loader_kind: str, packing: str, world: int, batches: int) -> dict:
    cmd = [sys.executable, __file__, "--measure", str(directory), "--loader", loader_kind,
           "--packing", packing, "--world", str(world), "--batches", str(batches)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if result.returncode:
        return {"loader": loader_kind, "packing": packing, "ranks": world,
                "error": (result.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def crawl_tokens() -> Path:
    """The shared crawl (../shared/data/crawl) through the c4 chain, an 8k BPE tokenizer and one
    encode, made once into .cache/."""
    directory = WORK / "shared-crawl-c4"
    if (directory / "ids" / "manifest.json").exists():
        return directory / "ids"
    from c4forge.core.counters import Counters
    from c4forge.corpus.chain.local import run_chain
    from c4forge.corpus.config import build_config
    from c4forge.corpus.output.shards import write_corpus
    from c4forge.tokenizer.encode import encode_corpus
    from c4forge.tokenizer.train import TokenizerConfig, train_tokenizer

    shared = ROOT.parent / "shared" / "data"
    inputs = sorted(str(p) for p in (shared / "crawl").glob("*.wet.gz"))
    docs = run_chain(inputs, build_config("c4", badwords=str(shared / "badwords")), Counters())
    write_corpus(str(directory / "corpus"), docs, {"config": {"preset": "c4"}, "counters": {}},
                 overwrite=True)
    train_tokenizer(str(directory / "corpus"), str(directory / "tok"),
                    TokenizerConfig(vocab_size=8000), overwrite=True)
    encode_corpus(str(directory / "corpus"), str(directory / "tok"), str(directory / "ids"),
                  workers=2, log=lambda *_: None, overwrite=True)
    return directory / "ids"


def packing_table(directory: Path, chunks) -> list:
    docs = TokenDocuments(str(directory), "train")
    rows = []
    concat = PackedLoader(docs, SEQ, BATCH, "concat").stats()
    rows.append({"packing": "concat", "chunk_docs": "-", "real_token_share": 1.0,
                 "cropped_share": round(concat["cropped_share"], 4), "ms_per_chunk": "-"})
    for size in sorted({min(chunk, len(docs)) for chunk in chunks}):
        loader = PackedLoader(docs, SEQ, BATCH, "best_fit", chunk_docs=size)
        epoch = loader.streams[0].epoch(0)
        tick = time.perf_counter()
        first = epoch.chunk(0)
        ms = (time.perf_counter() - tick) * 1000
        s = loader.stats(max_chunks=None)
        rows.append({"packing": "best_fit", "chunk_docs": size if size < len(docs) else f"all ({size})",
                     "real_token_share": round(s["real_token_share"], 4),
                     "cropped_share": round(s["cropped_share"], 4),
                     "ms_per_chunk": round(ms, 1), "rows_first_chunk": first.rows})
    return rows


def table(rows, columns) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100M,1B", help="synthetic corpus sizes in tokens")
    parser.add_argument("--old-size", default="100M", help="size the in-memory loader runs at")
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--chunks", default="64,256,1024,8192,65536,1000000000")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--loader", default="c4forge", help=argparse.SUPPRESS)
    parser.add_argument("--packing", default="concat", help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.loader, args.packing, args.world, args.batches)))
        return

    rows = []
    for size in args.sizes.split(","):
        directory = synthetic_dir(parse_size(size))
        print(f"synthetic {size}: {rel(directory)}", file=sys.stderr)
        for packing in ("concat", "best_fit"):
            for world in (1, 8):
                rows.append({"size": size, **run_row(directory, "c4forge", packing, world, args.batches)})
            if size == args.old_size:
                rows.append({"size": size, **run_row(directory, "in-memory (landed)", packing, 1,
                                                     args.batches)})
            print(json.dumps(rows[-1]), file=sys.stderr)
    columns = ["size", "loader", "packing", "ranks", "first_batch_s", "peak_rss_mb",
               "peak_anonymous_mb", "uss_mb", "batches_per_s", "tokens_per_s", "step_waits_ms", "error"]
    print("## Loader: first batch, memory, throughput (seq 1024 x batch 32 per rank)\n")
    print(table(rows, columns))
    chunks = [int(c) for c in args.chunks.split(",")]
    print("\n## Packing efficiency at seq 1024\n")
    packing_rows = []
    try:
        crawl = crawl_tokens()
        packing_rows += [{"data": "shared crawl, c4 preset", **r} for r in packing_table(crawl, chunks)]
    except Exception as exc:  # noqa: BLE001 - the shared data may be absent on a user's machine
        print(f"shared crawl skipped: {exc}", file=sys.stderr)
    smallest = synthetic_dir(parse_size(args.sizes.split(",")[0]))
    packing_rows += [{"data": f"synthetic {args.sizes.split(',')[0]}", **r}
                     for r in packing_table(smallest, chunks)]
    print(table(packing_rows, ["data", "packing", "chunk_docs", "real_token_share", "cropped_share",
                               "ms_per_chunk"]))


if __name__ == "__main__":
    main()
