"""Encode a corpus into token shards (see tokenizer/formats.py), in parallel processes.

Work is cut into tasks of consecutive documents of one corpus shard; each worker process loads
the SentencePiece model once, encodes its task's documents with EOS appended and writes one
token shard itself, so only small stats travel between processes. Token shards keep corpus
order: shard i of a split holds the documents of task i.

Output follows the rule of :mod:`c4forge.core.outdir`: an existing token directory is replaced only with
--overwrite (and then only its own files), any other non-empty directory is refused; shards go
to a staging folder and are swapped in crash-safely when every task has finished.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import time
from typing import Optional

import pyarrow.compute as pc

from c4forge.core import progress
from c4forge.core.io import shown_place
from c4forge.core.outdir import OutputError, claim, hook_from_env, writing
from c4forge.corpus.shards import (
    CorpusFormatError,
    manifest_path,
    read_manifest,
    read_shard,
    shard_paths,
    shard_rows,
)
from c4forge.tokenizer.formats import (
    TOKENS_KIND,
    TokenFormatError,
    file_sha256,
    full_manifest,
    read_token_manifest,
    shard_base,
    token_dtype,
    write_token_shard,
)
from c4forge.tokenizer.train import TokenizerError, load_tokenizer

_WORKER: dict[str, object] = {}


def _init_worker(tokenizer_dir: str, threads: int = 1) -> None:
    sp, info = load_tokenizer(tokenizer_dir)
    _WORKER["threads"] = threads
    _WORKER["sp"] = sp
    _WORKER["eos"] = info["special_ids"]["</s>"]
    _WORKER["dtype"] = token_dtype(sp.get_piece_size())


def _encode_task(task: tuple[str, int, int, str, str]) -> dict[str, int]:
    """Encode rows [start, stop) of one corpus shard into staging/BASE.{bin,idx}."""
    path, start, stop, staging, base = task
    column = read_shard(path, columns=["text"]).slice(start, stop - start).column("text")
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


def _existing_manifest(directory: str):
    try:
        return read_token_manifest(directory)
    except (TokenFormatError, KeyError):
        return None


def plan_tasks(corpus: str, workers: int, max_docs_per_shard: int) -> dict[str, list[tuple[str, int, int]]]:
    """{split: [(corpus shard path, start row, stop row)]}, one task per token shard: about 8
    tasks per worker when the corpus is large enough (so workers finish together), each at most
    ``max_docs_per_shard`` documents and, where possible, at least 256."""
    manifest = read_manifest(corpus)
    plan: dict[str, list[tuple[str, int, int]]] = {}
    for split in manifest["splits"]:
        paths = shard_paths(corpus, split, manifest)
        sizes = [(p, shard_rows(p)) for p in paths]
        total = sum(n for _, n in sizes)
        if not total:
            continue
        per_task = max(min(256, max_docs_per_shard),
                       min(max_docs_per_shard, math.ceil(total / (8 * workers))))
        tasks = []
        for path, rows in sizes:
            for start in range(0, rows, per_task):
                tasks.append((path, start, min(rows, start + per_task)))
        plan[split] = tasks
    return plan


def encode_corpus(corpus: str, tokenizer_dir: str, output: str, workers: Optional[int] = None,
                  max_docs_per_shard: int = 20_000, overwrite: bool = False, log=print,
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

    try:
        target = claim(output, TOKENS_KIND, overwrite)
    except OutputError as exc:
        message = str(exc)
        if target_manifest := _existing_manifest(output):
            same = target_manifest["tokenizer"]["model_sha256"] == info["model_sha256"]
            message += f" (it was made with {'the same' if same else 'a different'} tokenizer)"
        raise TokenizerError(message) from exc

    corpus_sha = file_sha256(manifest_path(corpus))
    if corpus_sha != info["corpus"]["manifest_sha256"]:
        log(f"note: the tokenizer was trained on {shown_place(info['corpus']['path'])}, not on this corpus "
            "(fine for comparing corpora with one tokenizer)")

    workers = workers or os.cpu_count() or 1
    try:
        plan = plan_tasks(corpus, workers, max_docs_per_shard)
    except (CorpusFormatError, OSError) as exc:
        raise TokenizerError(f"corpus {corpus}: {exc}") from exc
    with writing(target, hook_from_env()) as staged:
        started = time.time()
        tasks = [(path, start, stop, staged.path, shard_base(split, i, len(parts)))
                 for split, parts in plan.items() for i, (path, start, stop) in enumerate(parts)]
        results = _run_tasks(tasks, tokenizer_dir, workers, mode)
        staged.manifest = full_manifest({
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tokenizer": {"path": os.path.abspath(tokenizer_dir), "model_sha256": info["model_sha256"],
                          "vocab_size": sp.get_piece_size(), "special_ids": info["special_ids"],
                          "model_type": info["model_type"]},
            "corpus": {"path": os.path.abspath(corpus), "manifest_sha256": corpus_sha,
                       "preset": corpus_manifest["config"].get("preset")},
            "dtype": token_dtype(sp.get_piece_size()).str,
            "eos_id": info["special_ids"]["</s>"],
            "workers": workers, "mode": mode, "seconds": round(time.time() - started, 2),
            "splits": _token_splits(tasks, results),
        })
    assert staged.result is not None
    return staged.result


def _run_tasks(tasks: list, tokenizer_dir: str, workers: int, mode: str) -> list[dict]:
    """Every encoding task's statistics, in task order, with a progress bar: ``workers``
    processes, or one process with sentencepiece's own threads."""
    documents = sum(stop - start for _, start, stop, _, _ in tasks)
    bar = progress.bar(total=documents, desc="encoding", unit=" docs", unit_scale=True)
    rate = progress.Throughput(bar, "tokens")

    def done(task, stats):
        bar.update(task[2] - task[1])
        rate.add(stats["bytes"], stats["tokens"])
        return stats

    with bar:
        if mode == "processes" and workers > 1 and len(tasks) > 1:
            context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
            with context.Pool(workers, initializer=_init_worker, initargs=(tokenizer_dir,)) as pool:
                # imap keeps task order and lets the bar move as tasks finish
                return [done(t, r) for t, r in zip(tasks, pool.imap(_encode_task, tasks, chunksize=1))]
        _init_worker(tokenizer_dir, threads=workers)  # sentencepiece's own threads do the work
        return [done(t, _encode_task(t)) for t in tasks]


def _token_splits(tasks: list, results: list[dict]) -> dict[str, dict]:
    """The manifest's per-split summary from the tasks (one shard each) and their statistics."""
    splits: dict[str, dict] = {}
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
    return splits


def encode_text_file(path: str, tokenizer_dir: str, output: str, split: str = "validation",
                     overwrite: bool = False) -> dict:
    """A raw text file (such as WikiText-2's test set) as a token directory of one document in
    ``split``, EOS appended as for every corpus document: what an objective that does not score
    text left to right (span corruption, BART, MLM) is evaluated on, with its own loss. The
    manifest names the file and its sha256 in place of a corpus. Returns the manifest."""

    sp, info = load_tokenizer(tokenizer_dir)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenizerError(f"{path}: {exc}") from exc
    if not text.strip():
        raise TokenizerError(f"{path} has no text to encode")
    try:
        target = claim(output, TOKENS_KIND, overwrite)
    except OutputError as exc:
        raise TokenizerError(str(exc)) from exc
    ids = sp.encode(text)
    ids.append(info["special_ids"]["</s>"])
    base = shard_base(split, 0, 1)
    with writing(target, hook_from_env()) as staged:
        stats = write_token_shard(staged.path, base, [ids], token_dtype(sp.get_piece_size()))
        text_bytes = len(text.encode("utf-8"))
        staged.manifest = full_manifest({
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tokenizer": {"path": os.path.abspath(tokenizer_dir), "model_sha256": info["model_sha256"],
                          "vocab_size": sp.get_piece_size(), "special_ids": info["special_ids"],
                          "model_type": info["model_type"]},
            "corpus": {"text_file": os.path.abspath(path), "text_sha256": file_sha256(path)},
            "dtype": token_dtype(sp.get_piece_size()).str,
            "eos_id": info["special_ids"]["</s>"],
            "splits": {split: {**stats, "bytes": text_bytes,
                               "bytes_per_token": round(text_bytes / max(1, stats["tokens"] - 1), 4),
                               "shards": [{"name": base, **stats}]}},
        })
    assert staged.result is not None
    return staged.result
