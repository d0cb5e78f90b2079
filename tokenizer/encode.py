"""Encode a corpus into token shards (see tokenizer/formats.py), in parallel processes.

Any tokenizer :mod:`c4forge.tokenizer.kinds` opens (a c4forge directory, a Hugging Face
tokenizer.json, a SentencePiece model, a tiktoken ranks file) encodes with its own library.
Work is cut into tasks of consecutive documents of one corpus shard; each worker process opens
the tokenizer once, encodes its task's documents in one batch call of the library (EOS appended,
BOS prepended when asked) and writes one token shard itself, so only small stats travel between
processes. Token shards keep corpus order: shard i of a split holds the documents of task i. The
Beam path (tokenizer/beam_encode.py) runs the same tasks through :func:`encode_task`, so its
shards are the same bytes.

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
from c4forge.corpus.output.shards import (
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
from c4forge.tokenizer.kinds import Tokenizer, TokenizerSpec, open_tokenizer
from c4forge.tokenizer.load import TokenizerError, tokenizer_settings

_WORKER: dict[str, Tokenizer] = {}


def as_spec(tokenizer) -> TokenizerSpec:
    """A TokenizerSpec from a spec or a bare path."""
    return tokenizer if isinstance(tokenizer, TokenizerSpec) else TokenizerSpec(str(tokenizer))


def _init_worker(spec: TokenizerSpec, threads: int = 1) -> None:
    # One library thread per worker process: the processes are the parallelism (sentencepiece,
    # tokenizers and tiktoken would otherwise each start a thread per core in every worker).
    _WORKER["tokenizer"] = open_tokenizer(spec).with_threads(threads)


def encode_task(tokenizer: Tokenizer, path: str, start: int, stop: int, staging: str,
                base: str) -> dict[str, int]:
    """Encode rows [start, stop) of one corpus shard into STAGING/BASE.{bin,idx}: one batch
    call of the tokenizer's library, then the shard format. Returns documents, tokens, bytes."""
    column = read_shard(path, columns=["text"]).slice(start, stop - start).column("text")
    text_bytes = pc.sum(pc.binary_length(column)).as_py() or 0
    documents = [tokenizer.document(ids) for ids in tokenizer.encode_batch(column.to_pylist())]
    stats = write_token_shard(staging, base, documents, token_dtype(tokenizer.vocab_size))
    stats["bytes"] = text_bytes
    return stats


def _encode_task(task: tuple[str, int, int, str, str]) -> dict[str, int]:
    return encode_task(_WORKER["tokenizer"], *task)


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


def encode_corpus(corpus: str, tokenizer, output: str, workers: Optional[int] = None,
                  max_docs_per_shard: int = 20_000, overwrite: bool = False, log=print,
                  mode: str = "processes") -> dict:
    """Encode every split of ``corpus`` with ``tokenizer`` (a TokenizerSpec or a path); returns
    the token manifest.

    mode "processes": ``workers`` processes, one library thread each (default);
    "threads": one process, the library's own threads (``workers`` of them)."""
    if mode not in ("processes", "threads"):
        raise TokenizerError(f"mode {mode!r}: choose processes or threads")
    spec = as_spec(tokenizer)
    tok = open_tokenizer(spec)
    workers = workers or os.cpu_count() or 1
    corpus_manifest, plan, target = prepare_encode(corpus, tok, output, overwrite, log, workers,
                                                   max_docs_per_shard)
    with writing(target, hook_from_env()) as staged:
        started = time.time()
        tasks = plan_shards(plan, staged.path)
        results = _run_tasks(tasks, spec, workers, mode)
        staged.manifest = token_manifest(tok, corpus, corpus_manifest, tasks, results,
                                         {"workers": workers, "mode": mode,
                                          "seconds": round(time.time() - started, 2)})
    assert staged.result is not None
    return staged.result


def prepare_encode(corpus: str, tok: Tokenizer, output: str, overwrite: bool, log,
                   workers: int, max_docs_per_shard: int):
    """What every encode checks before work, on any runner: (corpus manifest, task plan, the
    claimed output). A corpus without documents, an output that is not ours to replace or a
    tokenizer that cannot hold the ids is one line."""
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
            old = target_manifest["tokenizer"]
            same = (old.get("sha256") or old.get("model_sha256")) == tok.sha256
            message += f" (it was made with {'the same' if same else 'a different'} tokenizer)"
        raise TokenizerError(message) from exc
    trained_on = _trained_on(tok)
    if trained_on and file_sha256(manifest_path(corpus)) != trained_on.get("manifest_sha256"):
        log(f"note: the tokenizer was trained on {shown_place(trained_on.get('path', '?'))}, not on this "
            "corpus (fine for comparing corpora with one tokenizer)")
    try:
        plan = plan_tasks(corpus, workers, max_docs_per_shard)
    except (CorpusFormatError, OSError) as exc:
        raise TokenizerError(f"corpus {corpus}: {exc}") from exc
    return corpus_manifest, plan, target


def _trained_on(tok: Tokenizer) -> Optional[dict]:
    """The corpus a c4forge tokenizer directory was trained on (None for other kinds)."""
    if tok.kind != "c4forge":
        return None
    info = tokenizer_settings(tok.spec.path) or {}
    return info.get("corpus") if isinstance(info.get("corpus"), dict) else None


def plan_shards(plan: dict[str, list[tuple[str, int, int]]], staging: str) -> list[tuple[str, int, int, str, str]]:
    """The encoding tasks of a plan, in shard order: (corpus shard, start, stop, staging, base)."""
    return [(path, start, stop, staging, shard_base(split, i, len(parts)))
            for split, parts in plan.items() for i, (path, start, stop) in enumerate(parts)]


def token_manifest(tok: Tokenizer, corpus: str, corpus_manifest: dict, tasks: list,
                   results: list[dict], run: dict) -> dict:
    """The token manifest of an encode: the tokenizer, the corpus, how it ran, the splits."""
    return full_manifest({
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tokenizer": tok.describe(),
        "corpus": {"path": os.path.abspath(corpus), "manifest_sha256": file_sha256(manifest_path(corpus)),
                   "preset": corpus_manifest["config"].get("preset")},
        "dtype": token_dtype(tok.vocab_size).str,
        "eos_id": tok.eos_id,
        **({"bos_id": tok.bos_id} if tok.bos_id is not None else {}),
        **run,
        "splits": _token_splits(tasks, results),
    })


def _run_tasks(tasks: list, spec: TokenizerSpec, workers: int, mode: str) -> list[dict]:
    """Every encoding task's statistics, in task order, with a progress bar: ``workers``
    processes, or one process with the library's own threads."""
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
            with context.Pool(workers, initializer=_init_worker, initargs=(spec,)) as pool:
                # imap keeps task order and lets the bar move as tasks finish
                return [done(t, r) for t, r in zip(tasks, pool.imap(_encode_task, tasks, chunksize=1))]
        _init_worker(spec, threads=workers)  # the library's own threads do the work
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


def encode_text_file(path: str, tokenizer, output: str, split: str = "validation",
                     overwrite: bool = False) -> dict:
    """A raw text file (such as WikiText-2's test set) as a token directory of one document in
    ``split``, EOS appended as for every corpus document: what an objective that does not score
    text left to right (span corruption, BART, MLM) is evaluated on, with its own loss. The
    manifest names the file and its sha256 in place of a corpus. Returns the manifest."""

    tok = open_tokenizer(as_spec(tokenizer))
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
    ids = tok.document(tok.encode(text))
    base = shard_base(split, 0, 1)
    with writing(target, hook_from_env()) as staged:
        stats = write_token_shard(staged.path, base, [ids], token_dtype(tok.vocab_size))
        text_bytes = len(text.encode("utf-8"))
        staged.manifest = full_manifest({
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tokenizer": tok.describe(),
            "corpus": {"text_file": os.path.abspath(path), "text_sha256": file_sha256(path)},
            "dtype": token_dtype(tok.vocab_size).str,
            "eos_id": tok.eos_id,
            **({"bos_id": tok.bos_id} if tok.bos_id is not None else {}),
            "splits": {split: {**stats, "bytes": text_bytes,
                               "bytes_per_token": round(text_bytes / max(1, stats["tokens"] - 1), 4),
                               "shards": [{"name": base, **stats}]}},
        })
    assert staged.result is not None
    return staged.result
