"""`tokenizer export` (issue 80): the shared crawl's token shards in every trainer's format, read
back with that trainer's own reader (megatron-core, MosaicML streaming, litdata, datatrove; the
flat memmap with numpy), each opened by the call docs/formats.md's table gives for it, and
`train run` on a dataset megatron-core's own builder wrote.

megatron-core, streaming and litdata live in .venv-interop (marked interop), datatrove in .venv-hf
(marked hf): pyproject's [interop] says why; `make test` runs both; elsewhere these skip, saying
so."""
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from c4forge.cli.tokenizer import cli
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.exports import ExportError, export_tokens
from c4forge.tokenizer.formats import iter_token_documents, read_token_manifest
from tests.test_tokenizer_kinds import QUIET, byte_level_bpe, crawl_corpus  # noqa: F401 - the fixture

NEEDS = "the trainers' readers run in .venv-interop (make venv-interop; make test runs them there)"
NEEDS_HF = "datatrove runs in .venv-hf (make test runs the tests marked hf there)"
TABLE = Path(__file__).resolve().parents[1] / "docs" / "formats.md"


def table_call(fmt: str, namespace: dict, **replace: str):
    """Evaluate the first call in the "call that opens it" cell of docs/formats.md's token-export
    table for `fmt`, with its placeholders (OUT, N, the dtype) replaced: the docs' own line."""
    row = next(line for line in TABLE.read_text(encoding="utf-8").splitlines() if line.startswith(f"| `{fmt}` |"))
    call = re.findall(r"`([^`]+)`", row.split(" | ")[2])[0]
    for placeholder, value in replace.items():
        assert placeholder in call, (placeholder, call)
        call = call.replace(placeholder, value)
    return eval(call, namespace)  # the docs' line


def documents(token_dir, split):
    return [d.tolist() for d in iter_token_documents(token_dir, split)]


def stream(token_dir, split):
    return np.concatenate([d for d in iter_token_documents(token_dir, split)]).astype(np.int64)


@pytest.fixture(scope="module")
def token_dirs(crawl_corpus, tmp_path_factory):  # noqa: F811 - the fixture imported above
    """Two token directories of the shared crawl's c4 corpus: a GPT-2-style byte-level BPE
    (uint16) and the same BPE with reserved tokens past 65,535 ids (uint32, Llama 3's way)."""
    root, corpus, texts = crawl_corpus
    work = tmp_path_factory.mktemp("exports")
    tok = byte_level_bpe(texts["train"], vocab_size=1200)
    tok.save(str(work / "bpe.json"))
    data = json.loads(tok.to_str())
    data["model"]["vocab"].update({f"<|reserved_{i}|>": i for i in range(1200, 70_000)})
    data["added_tokens"].append({"id": 70_000, "content": "<|end_of_text|>", "single_word": False,
                                 "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    (work / "big.json").write_text(json.dumps(data))
    from c4forge.tokenizer.kinds import TokenizerSpec

    encode_corpus(corpus, str(work / "bpe.json"), str(work / "u16"), workers=2, **QUIET)
    encode_corpus(corpus, TokenizerSpec(str(work / "big.json"), eos="<|end_of_text|>"), str(work / "u32"),
                  workers=2, **QUIET)
    assert read_token_manifest(str(work / "u32"))["dtype"] == "<u4"
    return work


@pytest.fixture(params=["c4forge", "u16", "u32"])
def tokens(request, token_dirs):
    """The crawl's c4 corpus encoded by c4forge's own SentencePiece tokenizer (conftest's
    crawl_tokens), by a byte-level BPE (uint16) and by its 70,001-id variant (uint32)."""
    if request.param == "c4forge":
        return request.getfixturevalue("crawl_tokens")
    return str(token_dirs / request.param)


@pytest.mark.interop
def test_megatron_core_reads_every_document(tokens, tmp_path):
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset", reason=NEEDS)
    result = CliRunner().invoke(cli, ["export", "-i", tokens, "--format", "megatron", "-o", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert f"--data-path {tmp_path / 'm'}/train_text_document" in result.output
    for split in ("train", "validation"):
        ours = documents(tokens, split)
        dataset = table_call("megatron", {"IndexedDataset": indexed.IndexedDataset},
                             **{"OUT/train": f"{tmp_path / 'm'}/{split}"})
        assert len(dataset) == len(ours) and list(dataset.document_indices) == list(range(len(ours) + 1))
        assert [dataset[k].tolist() for k in range(len(dataset))] == ours
        assert np.array_equal(dataset.sequence_lengths, [len(d) for d in ours])


@pytest.mark.interop
def test_mosaicml_streaming_reads_documents_and_llm_foundry_samples(tokens, tmp_path):
    streaming = pytest.importorskip("streaming", reason=NEEDS)
    export_tokens(tokens, str(tmp_path / "docs"), "mds", log=lambda *_: None)
    index = json.load(open(tmp_path / "docs" / "train" / "index.json"))
    assert index["shards"][0]["column_names"] == ["tokens"]
    assert index["shards"][0]["column_encodings"] == ["ndarray:int32"]  # llm-foundry's pre-tokenized column
    dataset = table_call("mds", {"streaming": streaming}, OUT=str(tmp_path / "docs"))
    assert [dataset[k]["tokens"].tolist() for k in range(len(dataset))] == documents(tokens, "train")
    export_tokens(tokens, str(tmp_path / "concat"), "mds", splits=["train"], options={"seq_len": 128},
                  log=lambda *_: None)
    samples = streaming.StreamingDataset(local=str(tmp_path / "concat" / "train"), shuffle=False, batch_size=1)
    got = np.concatenate([samples[k]["tokens"] for k in range(len(samples))])
    ours = stream(tokens, "train")
    assert len(got) == len(ours) // 128 * 128 and np.array_equal(got, ours[:len(got)])
    assert all(len(samples[k]["tokens"]) == 128 for k in range(len(samples)))


@pytest.mark.interop
def test_litdata_tokens_loader_gives_the_token_stream(tokens, tmp_path):
    litdata = pytest.importorskip("litdata", reason=NEEDS)
    from litdata.streaming.item_loader import TokensLoader

    export_tokens(tokens, str(tmp_path / "lit"), "litdata", splits=["train"], options={"chunk_tokens": 10**8},  # one chunk: TokensLoader drops each chunk's tail
                  log=lambda *_: None)
    dataset = table_call("litdata", {"litdata": litdata, "TokensLoader": TokensLoader},
                         OUT=str(tmp_path / "lit"), N="257")
    got = np.concatenate([np.asarray(dataset[k]) for k in range(len(dataset))]).astype(np.int64)
    ours = stream(tokens, "train")
    assert len(got) > 0.9 * len(ours) and np.array_equal(got, ours[:len(got)])


@pytest.mark.hf
def test_datatrove_folder_dataset_gives_the_token_stream(tokens, tmp_path):
    dataset_module = pytest.importorskip("datatrove.utils.dataset", reason=NEEDS_HF)
    export_tokens(tokens, str(tmp_path / "dt"), "datatrove", log=lambda *_: None)
    token_size = np.dtype(read_token_manifest(tokens)["dtype"]).itemsize
    dataset = table_call("datatrove", {"DatatroveFolderDataset": dataset_module.DatatroveFolderDataset},
                         OUT=str(tmp_path / "dt"), N="127", **{"token_size=2": f"token_size={token_size}"})
    got = np.concatenate([np.asarray(dataset[k]["input_ids"]) for k in range(len(dataset))]).astype(np.int64)
    ours = stream(tokens, "train")
    assert len(got) == len(ours) // 128 * 128 and np.array_equal(got, ours[:len(got)])
    ends = np.fromfile(tmp_path / "dt" / "train" / "train_00000.ds.index", dtype="<u8")
    assert np.array_equal(ends, np.cumsum([len(d) for d in documents(tokens, "train")]))


def test_memmap_is_the_stream_with_document_offsets(tokens, tmp_path):
    export_tokens(tokens, str(tmp_path / "mm"), "memmap", log=lambda *_: None)
    dtype = np.dtype(read_token_manifest(tokens)["dtype"])
    for split in ("train", "validation"):
        flat = table_call("memmap", {"np": np}, **{"OUT/train": f"{tmp_path / 'mm'}/{split}",
                                                   "np.uint16": f"np.{dtype.name}"})
        offsets = np.load(tmp_path / "mm" / f"{split}.offsets.npy")
        assert 'np.load("OUT/train.offsets.npy")' in TABLE.read_text(encoding="utf-8")
        assert np.array_equal(flat, stream(tokens, split))
        assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == documents(tokens, split)


def test_an_export_is_checked_and_refuses_what_it_should(tokens, tmp_path):
    with pytest.raises(ExportError, match="no split 'test'"):
        export_tokens(tokens, str(tmp_path / "x"), "memmap", splits=["test"], log=lambda *_: None)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("a user's file")
    with pytest.raises(ExportError):
        export_tokens(tokens, str(tmp_path / "mine"), "megatron", log=lambda *_: None)
    assert sorted(os.listdir(tmp_path / "mine")) == ["notes.txt"]
    export_tokens(tokens, str(tmp_path / "e"), "megatron", log=lambda *_: None)
    export_tokens(tokens, str(tmp_path / "e"), "memmap", overwrite=True, log=lambda *_: None)
    assert not [n for n in os.listdir(tmp_path / "e") if "text_document" in n]  # only its own files replaced


@pytest.mark.interop
def test_train_run_on_a_megatron_core_builder_dataset_sees_the_same_batches(token_dirs, tmp_path):
    """megatron-core's own IndexedDatasetBuilder writes the shards' ids; `train run` on it (with
    data.tokenizer) gives the same first batch, and the same losses, as on the c4forge shards."""
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset", reason=NEEDS)
    import torch

    from c4forge.cli.train import cli as train_cli
    from c4forge.train.data import PackedLoader, TokenDocuments
    from tests.test_train_loop import settings

    tokens = str(token_dirs / "u16")
    prefix = str(tmp_path / "built_text_document")
    builder = indexed.IndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
    for doc in iter_token_documents(tokens, "train"):
        builder.add_item(torch.from_numpy(doc.astype(np.int64)))
        builder.end_document()
    builder.finalize(prefix + ".idx")
    tokenizer = str(token_dirs / "bpe.json")
    ours, theirs = TokenDocuments(tokens, "train"), TokenDocuments(prefix, "train", tokenizer)
    assert len(ours) == len(theirs) and np.array_equal(ours.lengths, theirs.lengths)
    first = [next(iter(PackedLoader([d], 32, 4, "concat", seed=7))) for d in (ours, theirs)]
    assert first[0].keys() == first[1].keys()
    assert all(np.array_equal(np.asarray(first[0][k]), np.asarray(first[1][k])) for k in first[0])
    losses = []
    for name, data in (("ours", tokens), ("megatron", prefix)):
        run = tmp_path / name
        result = CliRunner().invoke(train_cli, ["run", "--set", *settings(data, run, "steps=20",
                                                                          f"data.tokenizer={tokenizer}")])
        assert result.exit_code == 0, result.output
        losses.append([json.loads(line)["loss"] for line in open(run / "metrics.jsonl") if '"loss"' in line])
    assert len(losses[0]) == 20 and losses[0] == losses[1]


def test_a_megatron_dataset_without_its_tokenizer_is_one_line(token_dirs, tmp_path):
    from c4forge.cli.train import cli as train_cli
    from tests.test_train_loop import settings

    export_tokens(str(token_dirs / "u16"), str(tmp_path / "m"), "megatron", log=lambda *_: None)
    result = CliRunner().invoke(train_cli, ["run", "--set", *settings(str(tmp_path / "m" / "train_text_document"),
                                                                      tmp_path / "run", "steps=2")])
    assert result.exit_code == 1 and "data.tokenizer=PATH" in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
