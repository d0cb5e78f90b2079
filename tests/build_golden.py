"""The fingerprint of a `corpus build` of the shared crawl, pinned in tests/golden/: every shard's
rows (every column, in file order) hashed per file, every counter, and the rule samples' file
(corpus/output/samples.py; added 2026-11-26, the rest unchanged by it). Changes to the Beam wiring
(batching, coders, fused steps) must leave it unchanged: tests/test_pipeline.py compares a fresh
build with the fingerprint recorded before such a change.

The fingerprint must not depend on where the crawl sits: sources are reduced to file names, and
of equally new crawls of one URL the smaller record id (file name and offset) is kept. It was
regenerated once for that rule (the first version followed input order, which follows the
folders' names: 9 of 370 rows named another of three identical crawls); text, shards and
counters were unchanged by it.

Regenerate (only when a change of *output* is intended, and say so in the commit):
    .venv/bin/python -m tests.build_golden
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "build-shared-crawl.json"
GOLDEN_COPIES = 3  # copies 2 and 3 lose their lines to copy 1's owners, or own them


def corpus_fingerprint(directory: str) -> dict:
    """{"files": {split/name: {"documents": n, "sha256": rows' hash}}, "counters": {...}}."""
    from c4forge.corpus.output.shards import read_manifest, read_shard, shard_paths

    manifest = read_manifest(directory)
    files = {}
    for split in ("train", "validation"):
        for path in shard_paths(directory, split):
            table = read_shard(path)
            digest = hashlib.sha256()
            for row in table.to_pylist():
                if row.get("source"):  # the input's folder differs per run: its name does not
                    row["source"] = Path(row["source"]).name
                digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
            files[f"{split}/{Path(path).name}"] = {"documents": table.num_rows, "sha256": digest.hexdigest()}
    samples = manifest.get("rule_samples")
    samples_sha = (hashlib.sha256((Path(directory) / samples["file"]).read_bytes()).hexdigest()
                   if samples else None)
    return {"files": files, "counters": manifest["counters"], "rule_samples": samples_sha}


def copies_of(crawl: list[str], copies: int, folder: str) -> list[str]:
    """The crawl files, then ``copies - 1`` more copies with every host renamed ``c<k>.<host>``
    (new URLs, same text: line dedup and near-dedup see mirrors, as in benchmarks/bench_build.py)."""
    import gzip

    from c4forge.corpus.read.records import iter_records
    from tests.wetfiles import renamed_copy

    out = list(crawl)
    for copy in range(1, copies):
        for path in crawl:
            target = Path(folder) / f"c{copy}-{Path(path).name}"
            with open(target, "wb") as handle:
                for record in iter_records(path):
                    handle.write(gzip.compress(renamed_copy(record, copy)))
            out.append(str(target))
    return out


def build_shared_crawl(folder: str, crawl: list[str], badwords: str, copies: int,
                       runner: str | None = None, beam_args: tuple = (),
                       workers: int | None = None, inputs: list[str] | None = None, log=None) -> dict:
    """The fingerprint of the pinned build's input (``inputs``, made by :func:`copies_of` when
    not given) built on ``runner`` (default DirectRunner) into ``folder``/c4; the manifest's
    ``build`` record is returned beside it as ``build``."""
    from c4forge.corpus.config import build_config
    from c4forge.pipelines.build import run_build

    cfg = build_config("c4", badwords=badwords)
    inputs = inputs or copies_of(crawl, copies, folder)
    manifest = run_build(inputs, f"{folder}/c4", cfg, log=log or (lambda *_: None), docs_per_shard=100,
                         runner=runner, beam_args=beam_args, workers=workers)
    return {**corpus_fingerprint(f"{folder}/c4"), "build": manifest["build"]}


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import shared_path

    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    found = {"made_at_commit": commit,
             "input": f"shared crawl/*.wet.gz x {GOLDEN_COPIES} copies (hosts renamed), preset c4, "
                      "shared badwords, 100 documents per shard"}
    with tempfile.TemporaryDirectory() as tmp:
        built = build_shared_crawl(tmp, crawl, str(shared_path("badwords")), GOLDEN_COPIES)
        found.update(files=built["files"], counters=built["counters"], rule_samples=built["rule_samples"])
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN.relative_to(ROOT)}: {len(found['files'])} shard files, "
          f"{sum(f['documents'] for f in found['files'].values())} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
