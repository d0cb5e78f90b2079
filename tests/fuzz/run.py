"""`make fuzz`: each harness of tests/fuzz/harnesses.py under atheris (libFuzzer's
coverage-guided engine for Python), from its seeds, for a set time or number of runs.

Run: python tests/fuzz/run.py HARNESS [-max_total_time=SECONDS] [-atheris_runs=N] [CORPUS_DIR]
A finding (an exception that breaks the contract) stops the run and libFuzzer writes the input
to crash-*; minimise it with -minimize_crash=1 and add it to tests/fuzz/findings/ with a
regression test.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import atheris  # noqa: E402

# Numeric and columnar libraries are imported first, so they stay uninstrumented: instrumenting
# numba's compiler (reached through MinHasher.signatures) alone takes minutes, and none of
# them parses the fuzzed bytes.
import numba  # noqa: E402,F401
import numpy  # noqa: E402,F401
import pyarrow  # noqa: E402,F401

# Every project module a harness reaches is imported here, inside the instrumented block, so
# libFuzzer sees its branches (a module first imported later, inside a harness, would run
# uninstrumented and guide nothing). The libraries they import are instrumented too (YAML,
# JSON, gzip's Python layer): what the parsers hand them is part of what is explored.
with atheris.instrument_imports():
    import c4forge.core.settings  # noqa: E402,F401
    import c4forge.corpus.config  # noqa: E402,F401
    import c4forge.corpus.extract.html  # noqa: E402,F401
    import c4forge.corpus.output.shards  # noqa: E402,F401
    import c4forge.corpus.read.gzip_members  # noqa: E402,F401
    import c4forge.corpus.read.records  # noqa: E402,F401
    import c4forge.corpus.read.warc  # noqa: E402,F401
    import c4forge.tokenizer.formats  # noqa: E402,F401
    import c4forge.train.config  # noqa: E402,F401
    from tests.fuzz import harnesses  # noqa: E402


def main() -> None:
    name = sys.argv.pop(1)
    harness = harnesses.HARNESSES[name]
    corpus = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if corpus:
        os.makedirs(corpus, exist_ok=True)
        for i, seed in enumerate(harnesses.seed_inputs(name)):
            with open(os.path.join(corpus, f"seed-{i}"), "wb") as handle:
                handle.write(seed)
    atheris.Setup(sys.argv, harness)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
