"""What a corpus manifest records of how it was made, whoever wrote it (``corpus clean``, the
Beam build, the ablation): the config, the steps that ran and the code that declares each (its
module and the sha256 of its source), the inputs, the extraction settings and the counters.
This is the chain's side of the manifest; the format (the shard writer, corpus/output/shards.py)
adds the shard format and the splits and imports nothing of the chain."""
from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from typing import Any, Optional

from c4forge.corpus.chain.chains import plan
from c4forge.corpus.extract.html import extraction_info
from c4forge.corpus.steps import MODULE_OF


def provenance(config: Any) -> list[dict]:
    """Every step that runs under ``config``, as a manifest records it: name, counter namespace,
    page-flow row, the module that declares it (a user's step: the module its config names)
    and the sha256 of that module's source, so a corpus says which code made it."""
    out = []
    for step in plan(config).steps():
        module = step.origin.partition(":")[0] if step.origin else MODULE_OF[step.name]
        out.append({"step": step.name, "namespace": step.namespace, "flow": step.flow,
                    "passed": list(step.passed), "module": module, "sha256": source_sha256(module)})
    return out


def source_sha256(module: str) -> Optional[str]:
    """sha256 of a loaded module's source file (None where it has none)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    if not path:
        return None
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def corpus_manifest(config, inputs: Sequence[str], counters: dict[str, int], runner: str,
                    command: Optional[Sequence[str]] = None, **build) -> dict:
    """When, the command, the config, the steps, the runner and its ``build`` details (seconds,
    input bytes, shard settings), the inputs, the extraction settings, the counters. The writer
    adds the shard format and the splits (``write_corpus``, ``pipelines.build``)."""
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": list(command) if command is not None else list(sys.argv),
            "config": config.to_dict(), "steps": provenance(config), "build": {"runner": runner, **build},
            "inputs": list(inputs), "extraction": extraction_info(config.read),
            "counters": dict(counters)}
