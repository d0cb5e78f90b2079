"""The peers' chains of benchmarks/bench_peer_tools.py (issue 81) hold what the benchmark says of
them: dolma's mix reads only attributes its taggers write and every tagger run is read, the peers'
Gopher thresholds are our gopher preset's, and, where `make peers` made their venvs, NeMo
Curator's language ID keeps exactly the pages ours keeps (same model, threshold and text) and
every attribute the mix asks for is one dolma wrote."""
import gzip
import json
import re
import sys
from pathlib import Path

import pytest

from c4forge.corpus.config import build_config

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_peer_tools as peers  # noqa: E402 - a benchmark module, beside its helpers

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
RULES = (*peers.PRESETS, "language-id")


def referenced_attributes(config: dict) -> set[str]:
    return set(re.findall(r"x__[a-z0-9_]+?__[A-Za-z0-9_]+", json.dumps(config)))


def test_dolma_mix_reads_only_what_its_taggers_write():
    for rules in RULES:
        attributes = referenced_attributes(peers.dolma_mix_config(rules, "FOLDER"))
        taggers = {name.split("__")[1] for name in attributes}
        assert taggers == set(peers.dolma_taggers(rules)), rules
    fineweb = json.dumps(peers.dolma_mix_config("fineweb", "FOLDER"))
    assert "lines_with_too_few_words" in fineweb and "lines_with_no_ending_punctuation" not in fineweb
    assert "has_naughty_word" not in fineweb and "has_naughty_word" in json.dumps(peers.dolma_mix_config("c4", "F"))


def test_the_peers_gopher_thresholds_are_our_settings():
    limits = peers.gopher_limits()
    quality = build_config(preset="gopher").settings_of("gopher-quality")
    assert limits["min_words"] == quality.min_doc_words == 50 and limits["stop_words"] == quality.min_stop_words
    assert limits["top_ngrams"] == [[2, 0.2], [3, 0.18], [4, 0.16]] and len(limits["dup_ngrams"]) == 6
    changed = build_config(preset="gopher", overrides=["gopher-quality.min_doc_words=77",
                                                       "gopher-repetition.dup_line_frac=0.25"])
    exclude = peers.gopher_exclude(peers.gopher_limits(changed))
    assert any("word_count[0][2] < 77" in rule for rule in exclude)
    assert any("fraction_of_duplicate_lines[0][2] > 0.25" in rule for rule in exclude)
    sys.path.insert(0, str(ROOT / "benchmarks" / "peer_tools"))
    source = (ROOT / "benchmarks" / "peer_tools" / "curator_chain.py").read_text(encoding="utf-8")
    defaults = json.loads(json.dumps(eval(re.search(r"GOPHER = (\{.*?\})\n", source, re.S).group(1))))  # noqa: S307
    assert defaults == limits  # the worker's own defaults, where no limits are passed, are the same


@pytest.mark.slow
def test_curator_language_id_keeps_the_pages_ours_keeps(tmp_path):
    if not peers.CURATOR_PYTHON.exists():
        pytest.skip("NeMo Curator's venv is absent: make peers")
    pages = peers.write_documents([SAMPLE], str(tmp_path))
    url_of = {p["id"]: p["url"] for p in pages}
    kept = {url_of[i] for i in peers.run_curator("language-id", str(tmp_path))["kept"]}
    ours = peers.our_rules_only("language-id", [SAMPLE], "")
    assert len(ours) >= 100 and kept == ours


@pytest.mark.slow
def test_dolma_writes_every_attribute_its_mix_reads(tmp_path):
    if not peers.DOLMA.exists():
        pytest.skip("dolma's venv is absent: make peers")
    peers.write_documents([SAMPLE], str(tmp_path))
    for rules in ("c4", "fineweb"):
        result = peers.run_dolma(rules, f"{tmp_path}/dolma")
        written = set()
        for path in Path(tmp_path, "dolma", "attributes", "x").glob("*.gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                written |= {key for line in handle for key in json.loads(line)["attributes"]}
        wanted = referenced_attributes(peers.dolma_mix_config(rules, f"{tmp_path}/dolma"))
        # a has_* flag or a PII span is written only where it is found
        assert {a for a in wanted if "__has_" not in a and "pii" not in a} <= written, rules
        assert 0 < len(result["kept"]) < 171


def test_the_versions_of_peers_whose_venv_is_absent_are_not_installed(monkeypatch, tmp_path):
    """`make bench` without `make peers`: an absent venv is "not installed" (its rows left
    out), not a FileNotFoundError from the versions line (it was, in `run_all.py --quick`)."""
    monkeypatch.setattr(peers, "CURATOR_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    monkeypatch.setattr(peers, "DOLMA", tmp_path / "no-venv" / "bin" / "dolma")
    found = peers.versions()
    assert found["curator"] == "not installed" and found["dolma"] == "not installed"
    assert found["c4forge"]
