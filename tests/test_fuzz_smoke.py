"""The fuzz harnesses' smoke run (issue 42): every harness on its seeds and on random mutations
of them for a few seconds, asserting each harness's contract (tests/fuzz/harnesses.py). The
coverage-guided runs are `make fuzz`; every finding becomes a test here with its minimised
input in tests/fuzz/findings/."""
import random
import time
from pathlib import Path

import pytest

from tests.fuzz import harnesses

FINDINGS = Path(__file__).parent / "fuzz" / "findings"
SECONDS = 4.0


@pytest.mark.parametrize("name", sorted(harnesses.HARNESSES))
def test_harness_contract_holds_on_seeds_and_mutations(name):
    harness = harnesses.HARNESSES[name]
    seeds = harnesses.seed_inputs(name)
    assert seeds
    for seed in seeds:
        harness(seed)
    rng = random.Random(name)
    runs, deadline = 0, time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        data = harnesses.mutate(rng.choice(seeds), rng)
        try:
            harness(data)
        except Exception as exc:  # a finding: keep the input so it becomes a regression test
            FINDINGS.mkdir(exist_ok=True)
            path = FINDINGS / f"{name}-{abs(hash(data)) % 10**8}"
            path.write_bytes(data)
            raise AssertionError(f"{name}: contract broken on {path.name}: {type(exc).__name__}: {exc}") from exc
        runs += 1
    assert runs > 0


@pytest.mark.parametrize("path", sorted(FINDINGS.glob("*")) if FINDINGS.exists() else [],
                         ids=lambda p: p.name)
def test_every_finding_stays_fixed(path):
    harnesses.HARNESSES[path.name.split("-")[0]](path.read_bytes())


def test_garbage_between_records_loses_no_record_and_is_counted():
    """The resync contract on a hand-made case: junk lines between every pair of records."""
    harnesses.resync(b"some junk\n" * 8)
    records, counters = harnesses.read_records(b"junk\n".join(harnesses.SEED_RECORDS()))
    assert len(records) == len(harnesses.SEED_RECORDS()) and counters.get("r/skipped:junk_between_members")


def test_a_token_manifest_that_is_not_an_object_is_a_format_error(tmp_path):
    """Found by the manifests harness: a manifest.json holding a JSON list raised
    AttributeError (a traceback) instead of the format's one-line error."""
    from c4forge.tokenizer.formats import MANIFEST, TokenFormatError, read_token_manifest

    (tmp_path / MANIFEST).write_text("[1, 2]")
    with pytest.raises(TokenFormatError, match="not a c4forge token manifest"):
        read_token_manifest(str(tmp_path))


@pytest.mark.parametrize("text", ["steps: 10\nmodel:\n  d_oodel\n", "model_preset: [1]\n"])
def test_a_train_config_with_a_value_where_a_group_belongs_is_a_usage_error(text, tmp_path):
    """Found by the settings harness: `model: NAME` (a value where the model's settings go) and an
    unhashable model_preset raised AttributeError / TypeError instead of the one-line ConfigError."""
    from c4forge.core.settings import ConfigError
    from c4forge.train.config import build_train_config

    path = tmp_path / "train.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="model"):
        build_train_config(file=str(path))
