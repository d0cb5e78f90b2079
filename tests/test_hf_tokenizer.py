"""The tokenizer.json c4forge writes: AutoTokenizer (transformers 4 in the Beam environment, 5 in
the current-HF one: `make test` runs both) gives sentencepiece's ids and exact decodes on every
document of the sample corpus and 50,000 characters of WikiText-2 (newlines, runs of spaces,
byte fallback), with the special ids the manifest names."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece as spm

from c4forge.corpus.output.shards import iter_corpus_documents
from tests.conftest import ROOT, shared_path

CHECK = ROOT / "scripts" / "hf_tokenizer_check.py"


def cases(tokens_root: Path, tmp_path: Path) -> Path:
    texts = [d["text"] for d in iter_corpus_documents(str(tokens_root / "corpus"), "train", columns=("text",))]
    try:
        wiki = shared_path("clean", "wikitext2-test.raw").read_text(encoding="utf-8")[:50_000]
        texts += [wiki[i:i + 5000] for i in range(0, len(wiki), 5000)]
    except pytest.skip.Exception:
        pass
    texts += ["two  spaces,   three, \ttab\n\n\nnewlines\n", " leading space", "digits 12345 and ünïcödé ✓ 漢字",
              "trailing spaces   ", "a\n b\n  c",
              "\nstarts with a newline", "literal </s> and <s> and <pad> are text"]
    sp = spm.SentencePieceProcessor(model_file=str(tokens_root / "tok" / "tokenizer.model"))
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"texts": texts, "ids": [sp.encode(t) for t in texts]}))
    return path


def run_check(python: str, directory: Path, case_file: Path) -> dict:
    result = subprocess.run([python, str(CHECK), str(directory), str(case_file)], capture_output=True,
                            text=True, timeout=600, env=dict(os.environ, TOKENIZERS_PARALLELISM="false"))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def assert_exact(report: dict, expected_documents: int) -> None:
    assert report["documents"] == expected_documents
    assert report["id_mismatches"] == 0, report
    assert report["decode_mismatches"] == 0, report
    assert report["with_special_tokens_mismatches"] == 0, report
    # BOS is the document start training put before every document: </s> (id 2), not <s>.
    assert (report["pad"], report["bos"], report["eos"], report["unk"], report["mask"]) == (0, 2, 2, 3, 4)


def transformers_major() -> int:
    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[hf]')")
    return int(transformers.__version__.split(".")[0])


@pytest.mark.hf
def test_tokenizer_json_gives_sentencepiece_ids_on_the_installed_transformers(sample_tokens, tmp_path):
    """transformers 4 in the Beam environment, 5 in the current-HF one."""
    major = transformers_major()
    root = Path(sample_tokens).parent
    case_file = cases(root, tmp_path)
    n = len(json.loads(case_file.read_text())["texts"])
    report = run_check(sys.executable, root / "tok", case_file)
    assert report["transformers"].startswith(f"{major}.") and major in (4, 5)
    assert_exact(report, n)


@pytest.mark.hf
def test_a_moved_run_exports_and_evaluates_without_its_data(sample_tokens, tmp_path, monkeypatch):
    """Trained with relative paths, then moved elsewhere with the token and tokenizer directories
    gone: export (with a fast tokenizer giving sentencepiece's ids) and eval still work."""
    import shutil

    from click.testing import CliRunner

    transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install '.[hf]')")

    from c4forge.cli.train import cli

    root = Path(sample_tokens).parent
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(root / "tok", work / "tok")
    shutil.copytree(root / "ids", work / "ids")
    manifest = json.loads((work / "ids" / "manifest.json").read_text())
    manifest["tokenizer"]["path"] = "tok"  # as a user's relative paths would be
    (work / "ids" / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.chdir(work)
    result = CliRunner().invoke(cli, ["run", "data.train=ids", "out_dir=run", "data.seq_len=32",
                                      "data.batch_size=2", "model.d_model=32", "model.n_layers=1",
                                      "model.n_heads=2", "progress=false", "steps=2"])
    assert result.exit_code == 0, result.output
    shutil.move(str(work / "run"), str(tmp_path / "moved"))
    shutil.rmtree(work / "tok")
    shutil.rmtree(work / "ids")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    text = tmp_path / "text.txt"
    text.write_text("A line of text.\nAnother  line, with two spaces.\n")
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(tmp_path / "moved"), "--data", str(text)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["export", "--checkpoint", str(tmp_path / "moved"), "-o", "hf"])
    assert result.exit_code == 0, result.output
    tok = transformers.AutoTokenizer.from_pretrained("hf")
    sp = spm.SentencePieceProcessor(model_file=str(root / "tok" / "tokenizer.model"))
    sample = text.read_text()
    assert tok(sample, add_special_tokens=False)["input_ids"] == sp.encode(sample)
    assert (tmp_path / "moved" / "tokenizer" / "tokenizer.json").exists()
