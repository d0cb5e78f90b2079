"""The kernels compiled without numba's reference counts (c4forge/core/jit.py) stay so: each
helper called per token or per chunk holds no ``NRT_incref``/``NRT_decref`` call once compiled,
and a kernel that allocates still does (so the check can fail). Compiled afresh in a child
process (numba's inspection is off for code loaded from its disk cache)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r'''
import json
import numpy as np
from c4forge.core.jit import counts_references
from c4forge.corpus.langid import fasttext_numba
from c4forge.corpus.langid.lid176 import compiled_predictor
from c4forge.corpus.text import chunk_table, ngram_kernels, page_words

assert compiled_predictor().predict("a few words of English text") is not None
page_words.page_words("Words, words and more words (plenty of them) for the table.")
ngram_kernels.compiled()(np.arange(12, dtype=np.uint32), np.full(4, 3), np.array([2, 2]), np.array([0, 1]))
dispatchers = {f"fasttext_numba.{name}": getattr(fasttext_numba, name) for name in fasttext_numba._KERNELS}
dispatchers.update({f"chunk_table.{name}": kernel for name, kernel in zip(chunk_table._KERNELS, chunk_table.compiled())})
dispatchers["chunk_table._find"] = chunk_table._find
dispatchers.update({f"ngram_kernels.{name}": getattr(ngram_kernels, name) for name in ngram_kernels._HELPERS})
dispatchers["ngram_kernels.counts"] = ngram_kernels.compiled()
found = {name: counts_references(d) for name, d in dispatchers.items() if getattr(d, "signatures", None)}
print(json.dumps(found))
'''


def test_per_call_helpers_hold_no_reference_counts(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    uncounted = ["fasttext_numba._sum_rows", "fasttext_numba._add_row", "fasttext_numba._cached_entry",
                 "fasttext_numba._same_bytes", "fasttext_numba._subword_rows", "fasttext_numba._remember",
                 "chunk_table._find", "ngram_kernels._same"]
    for name in uncounted:
        assert found.get(name) is False, (name, found)
    # kernels that allocate keep their counts: the check sees them
    for name in ("fasttext_numba._predict", "chunk_table.cut", "ngram_kernels.counts"):
        assert found.get(name) is True, (name, found)
