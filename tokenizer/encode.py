"""Encode a corpus into token shards (see tokenizer/formats.py), in parallel processes.

Work is cut into tasks of consecutive documents of one corpus shard; each worker process loads
the SentencePiece model once, encodes its task's documents with EOS appended and writes one
token shard itself, so only small stats travel between processes. Token shards keep corpus
order: shard i of a split holds the documents of task i.

Output goes to ``DIR/.staging-<id>/`` and is moved into DIR when every task has finished, old
shards (with --overwrite) removed first, manifest.json last.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import time
import uuid
from typing import Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from corpus.shards import CorpusFormatError, read_manifest, shard_paths
from tokenizer.formats import (MANIFEST, read_token_manifest, shard_base, token_dtype,
                               write_manifest, write_token_shard)
from tokenizer.train import TokenizerError, load_tokenizer

_WORKER: Dict[str, object] = {}


def _rows(path: str) -> int:
    with pa.memory_map(path) as source:
        reader = ipc.open_file(source)
        return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))


def _init_worker(tokenizer_dir: str, threads: int = 1) -> None:
    sp, info = load_tokenizer(tokenizer_dir)
    _WORKER["threads"] = threads
    _WORKER["sp"] = sp
    _WORKER["eos"] = info["special_ids"]["</s>"]
    _WORKER["dtype"] = token_dtype(sp.get_piece_size())


def _encode_task(task: Tuple[str, int, int, str, str]) -> Dict[str, int]:
    """Encode rows [start, stop) of one corpus shard into staging/BASE.{bin,idx}."""
    path, start, stop, staging, base = task
    with pa.memory_map(path) as source:
        column = ipc.open_file(source).read_all().slice(start, stop - start).column("text")
        texts = column.to_pylist()
        text_bytes = pc.sum(pc.binary_length(column)).as_py() or 0
    sp, eos = _WORKER["sp"], _WORKER["eos"]
    # One thread per worker: the processes are the parallelism (sentencepiece would otherwise
    # start a thread per core in every worker).
    documents = sp.encode(texts, num_threads=_WORKER["threads"])
    for ids in documents:
        ids.append(eos)
    stats = write_token_shard(staging, base, documents, _WORKER["dtype"])
    stats["bytes"] = text_bytes
    return stats


def plan_tasks(corpus: str, workers: int, docs_per_task: int) -> Dict[str, List[Tuple[str, int, int]]]:
    """{split: [(corpus shard path, start row, stop row)]}: about 8 tasks per worker when the
    corpus is large enough (so workers finish together), each at most ``docs_per_task``
    documents and, where possible, at least 256."""
    manifest = read_manifest(corpus)
    plan: Dict[str, List[Tuple[str, int, int]]] = {}
    for split in manifest["splits"]:
        paths = shard_paths(corpus, split, manifest)
        sizes = [(p, _rows(p)) for p in paths]
        total = sum(n for _, n in sizes)
        if not total:
            continue
        per_task = max(min(256, docs_per_task), min(docs_per_task, math.ceil(total / (8 * workers))))
        tasks = []
        for path, rows in sizes:
            for start in range(0, rows, per_task):
                tasks.append((path, start, min(rows, start + per_task)))
        plan[split] = tasks
    return plan


def encode_corpus(corpus: str, tokenizer_dir: str, output: str, workers: Optional[int] = None,
                  docs_per_task: int = 20_000, overwrite: bool = False, log=print,
                  mode: str = "processes") -> dict:
    """Encode every split of ``corpus``; returns the token manifest.

    mode "processes": ``workers`` processes, one sentencepiece thread each (default);
    "threads": one process, sentencepiece's own C++ threads (``workers`` of them)."""
    if mode not in ("processes", "threads"):
        raise TokenizerError(f"mode {mode!r}: choose processes or threads")
    sp, info = load_tokenizer(tokenizer_dir)
    try:
        corpus_manifest = read_manifest(corpus)
    except CorpusFormatError as exc:
        raise TokenizerError(str(exc)) from exc
    if not any(s.get("documents") for s in corpus_manifest["splits"].values()):
        raise TokenizerError(f"corpus {corpus} has no documents to encode")
    if os.path.exists(os.path.join(output, MANIFEST)):
        previous = read_token_manifest(output)
        if not overwrite:
            same = previous["tokenizer"]["model_sha256"] == info["model_sha256"]
            raise TokenizerError(
                f"{output} already holds token shards "
                f"({'same tokenizer' if same else 'made with a different tokenizer'}); "
                "pass --overwrite to replace them")
    from tokenizer.formats import file_sha256

    corpus_sha = file_sha256(os.path.join(corpus, "manifest.json"))
    if corpus_sha != info["corpus"]["manifest_sha256"]:
        log(f"note: the tokenizer was trained on {info['corpus']['path']}, not on this corpus "
            "(fine for comparing corpora with one tokenizer)")

    workers = workers or os.cpu_count() or 1
    plan = plan_tasks(corpus, workers, docs_per_task)
    os.makedirs(output, exist_ok=True)
    for name in os.listdir(output):  # left by a crashed run; never read
        if name.startswith(".staging-"):
            shutil.rmtree(os.path.join(output, name), ignore_errors=True)
    staging = os.path.join(output, f".staging-{uuid.uuid4().hex[:8]}")
    os.makedirs(staging)
    started = time.time()
    tasks = []
    for split, parts in plan.items():
        for i, (path, start, stop) in enumerate(parts):
            tasks.append((path, start, stop, staging, shard_base(split, i, len(parts))))
    try:
        if mode == "processes" and workers > 1 and len(tasks) > 1:
            context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
            with context.Pool(workers, initializer=_init_worker, initargs=(tokenizer_dir,)) as pool:
                results = pool.map(_encode_task, tasks, chunksize=1)
        else:  # one process: sentencepiece's own threads do the parallel work
            _init_worker(tokenizer_dir, threads=workers)
            results = [_encode_task(t) for t in tasks]
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    seconds = time.time() - started

    splits: Dict[str, dict] = {}
    for task, stats in zip(tasks, results):
        split = task[4].split("-", 1)[0]
        entry = splits.setdefault(split, {"documents": 0, "tokens": 0, "bytes": 0, "shards": []})
        entry["documents"] += stats["documents"]
        entry["tokens"] += stats["tokens"]
        entry["bytes"] += stats["bytes"]
        entry["shards"].append({"name": task[4], "documents": stats["documents"],
                                "tokens": stats["tokens"]})
    for entry in splits.values():
        # EOS tokens carry no text: bytes per token counts text tokens only.
        text_tokens = entry["tokens"] - entry["documents"]
        entry["bytes_per_token"] = round(entry["bytes"] / text_tokens, 4) if text_tokens else None

    for name in os.listdir(output):
        if name.endswith((".bin", ".idx")) or name == MANIFEST:
            os.remove(os.path.join(output, name))
    for name in os.listdir(staging):
        os.replace(os.path.join(staging, name), os.path.join(output, name))
    os.rmdir(staging)
    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tokenizer": {"path": os.path.abspath(tokenizer_dir), "model_sha256": info["model_sha256"],
                      "vocab_size": sp.get_piece_size(), "special_ids": info["special_ids"],
                      "model_type": info["model_type"]},
        "corpus": {"path": os.path.abspath(corpus), "manifest_sha256": corpus_sha,
                   "preset": corpus_manifest["config"].get("preset")},
        "dtype": token_dtype(sp.get_piece_size()).str,
        "eos_id": info["special_ids"]["</s>"],
        "workers": workers, "mode": mode, "seconds": round(seconds, 2),
        "splits": splits,
    }
    write_manifest(output, manifest)
    return manifest
