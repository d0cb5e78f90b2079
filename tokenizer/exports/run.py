"""Run one export: claim the output, write through the format's module, check, swap in."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

import c4forge.tokenizer.exports.datatrove as datatrove
import c4forge.tokenizer.exports.litdata as litdata
import c4forge.tokenizer.exports.mds as mds
import c4forge.tokenizer.exports.megatron as megatron
import c4forge.tokenizer.exports.memmap as memmap
from c4forge.core import progress
from c4forge.core.errors import C4forgeError
from c4forge.core.outdir import OutputError, OutputKind, claim, hook_from_env, writing
from c4forge.tokenizer.formats import (
    TokenFormatError,
    iter_shards,
    read_token_manifest,
    token_manifest_sha256,
)

FORMAT = "c4forge-token-export"
MANIFEST = "c4forge-token-export.json"


class ExportError(C4forgeError, RuntimeError):
    """An export that cannot start or whose output does not match its token directory."""


@dataclass(frozen=True)
class Export:
    """A format: ``write(source, staging, split, options) -> (files written, documents, tokens)``
    and how its users open it (printed after the export)."""

    name: str
    write: Callable
    opens_with: Callable[[str, str, np.dtype], str]


EXPORTS = {e.name: e for e in (
    Export("megatron", megatron.write, megatron.opens_with),
    Export("memmap", memmap.write, memmap.opens_with),
    Export("datatrove", datatrove.write, datatrove.opens_with),
    Export("mds", mds.write, mds.opens_with),
    Export("litdata", litdata.write, litdata.opens_with),
)}


@dataclass(frozen=True)
class Source:
    """The token directory an export reads: its manifest and its shards of a split, in order."""

    directory: str
    manifest: dict

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.manifest["dtype"])

    def shards(self, split: str) -> Iterator:
        return iter_shards(self.directory, split, self.manifest)

    def documents(self, split: str) -> Iterator[np.ndarray]:
        for shard in self.shards(split):
            for k in range(len(shard)):
                yield shard.document(k)


def _files(manifest: dict) -> list[str]:
    return list(manifest.get("files") or [])


EXPORT_KIND = OutputKind("token export", MANIFEST, FORMAT, _files)


def export_tokens(directory: str, output: str, fmt: str, splits=None, overwrite: bool = False,
                  options: dict | None = None, log=print) -> dict:
    """Export the token directory ``directory`` to ``output`` in format ``fmt``; returns the
    export manifest (files, per split documents and tokens, how to open it)."""
    if fmt not in EXPORTS:
        raise ExportError(f"--format {fmt!r}: choose one of {', '.join(EXPORTS)}")
    try:
        manifest = read_token_manifest(directory)
    except TokenFormatError as exc:
        raise ExportError(str(exc)) from exc
    chosen = list(splits or manifest["splits"])
    missing = [s for s in chosen if s not in manifest["splits"]]
    if missing:
        raise ExportError(f"{directory} has no split {missing[0]!r} (it has {', '.join(manifest['splits'])})")
    try:
        target = claim(output, EXPORT_KIND, overwrite)
    except OutputError as exc:
        raise ExportError(str(exc)) from exc
    source = Source(directory, manifest)
    export = EXPORTS[fmt]
    started = time.time()
    written: dict[str, dict] = {}
    files: list[str] = []
    total = sum(manifest["splits"][s]["documents"] for s in chosen)
    with writing(target, hook_from_env()) as staged:
        with progress.bar(total=total, desc=f"export {fmt}", unit=" docs", unit_scale=True) as bar:
            for split in chosen:
                names, documents, tokens = export.write(source, staged.path, split, dict(options or {}), bar)
                expected = manifest["splits"][split]
                if (documents, tokens) != (expected["documents"], expected["tokens"]):
                    raise ExportError(f"{fmt} export of {split}: wrote {documents:,} documents and {tokens:,} "
                                      f"tokens, the token manifest says {expected['documents']:,} and "
                                      f"{expected['tokens']:,}; nothing was written")
                files += names
                written[split] = {"documents": documents, "tokens": tokens,
                                  "opens_with": export.opens_with(output, split, source.dtype)}
        staged.manifest = {"format": FORMAT, "version": 1, "export": fmt, "files": sorted(files),
                           "tokens": {"path": os.path.abspath(directory),
                                      "manifest_sha256": token_manifest_sha256(directory)},
                           "tokenizer": manifest["tokenizer"], "dtype": manifest["dtype"],
                           "eos_id": manifest["eos_id"], "options": options or {},
                           "seconds": round(time.time() - started, 2), "splits": written}
    assert staged.result is not None
    return staged.result
