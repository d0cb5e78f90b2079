"""The README's "Use with other tools" snippets for pyarrow (corpus shards) and numpy (token
shards), run as written on real outputs."""
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from c4forge.corpus.output.shards import iter_corpus_documents
from c4forge.train.data import TokenDocuments


def test_pyarrow_reads_a_corpus_shard(sample_tokens):
    corpus = Path(sample_tokens).parent / "corpus"
    manifest = json.loads((corpus / "_manifest.json").read_text())
    name = manifest["splits"]["train"]["files"][0]
    table = pa.ipc.open_stream(str(corpus / name)).read_all()
    ours = [d["text"] for d in iter_corpus_documents(str(corpus), "train", columns=("text",))]
    assert table.column("text").to_pylist() == ours[:table.num_rows]
    assert {"url", "text", "timestamp"} <= set(table.column_names)


def test_numpy_reads_a_token_shard(sample_tokens):
    manifest = json.loads((Path(sample_tokens) / "manifest.json").read_text())
    base = Path(sample_tokens) / manifest["splits"]["train"]["shards"][0]["name"]
    ids = np.memmap(f"{base}.bin", dtype=manifest["dtype"], mode="r")
    offsets = np.memmap(f"{base}.idx", dtype="<u8", mode="r")
    document_3 = ids[offsets[3]:offsets[4]]
    assert document_3[-1] == manifest["eos_id"]
    assert np.array_equal(document_3, TokenDocuments(sample_tokens, "train").document(3))


def test_every_cli_says_its_version():
    from importlib import metadata

    from click.testing import CliRunner

    from c4forge.cli.corpus import cli as corpus_cli
    from c4forge.cli.tokenizer import cli as tokenizer_cli
    from c4forge.cli.train import cli as train_cli

    version = metadata.version("c4forge")
    for cli in (corpus_cli, tokenizer_cli, train_cli):
        result = CliRunner().invoke(cli, ["--version"])
        assert result.exit_code == 0 and f"c4forge {version}" in result.output, result.output


@pytest.mark.hf
def test_every_one_liner_of_the_docs_reads_the_whole_corpus(sample_tokens, tmp_path):
    """Each statement of docs/formats.md's "Use with other tools" corpus block, run as written on
    the sample corpus (DIR) and its `corpus export --format parquet` (PQDIR): every one reads
    every training document. A line added to the docs is run here too. The block uses HF
    datasets: the current-HF environment runs it."""
    import re

    pytest.importorskip("datasets", reason="HF datasets runs in the current-HF environment (.venv-hf; "
                        "`make test` runs it there)")

    from click.testing import CliRunner

    from c4forge.cli.corpus import cli as corpus_cli
    from c4forge.corpus.output.shards import read_manifest

    corpus = Path(sample_tokens).parent / "corpus"
    parquet = tmp_path / "pq"
    result = CliRunner().invoke(corpus_cli, ["export", "-i", str(corpus), "-o", str(parquet),
                                             "--format", "parquet", "-q"])
    assert result.exit_code == 0, result.output
    documents = read_manifest(str(corpus))["splits"]["train"]["documents"]
    assert read_manifest(str(parquet))["splits"]["train"]["documents"] == documents
    docs = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(import datasets\n.*?)```", docs, re.S).group(1)
    statements = [line.split("  #")[0].strip() for line in block.splitlines()]
    statements = [s.replace("PQDIR", str(parquet)).replace("DIR", str(corpus)) for s in statements if s]
    namespace: dict = {}
    lengths = []
    for statement in statements:
        exec(statement, namespace)  # the docs' own line
        if not statement.startswith("import"):
            lengths.append((statement, len(namespace[statement.split("=")[0].strip()])))
    for statement, length in lengths:
        assert length == documents, (statement, length)
    assert len(lengths) == 9
