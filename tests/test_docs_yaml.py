"""Every YAML example of the docs, run as written (issue 83, point 3): each fenced ```yaml block
and each inline span written as YAML `...` becomes a `--config` file of `corpus clean` on the
sample crawl, and every value it sets is the value the corpus manifest records. YAML 1.1 reads
a key `on`/`off`/`yes`/`no` as a boolean; settings files keep the name the user wrote."""
from __future__ import annotations

import json
import re

import pytest
import yaml
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.core.settings import ConfigError, load_yaml_mapping, read_settings_yaml
from tests.conftest import ROOT

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCED = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"YAML `([\w.-]+:[^`]*)`")  # YAML `key: value`


def yaml_examples() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        found += [(f"{path.name}:{text[:m.start()].count(chr(10)) + 1}", m.group(1))
                  for pattern in (FENCED, INLINE) for m in pattern.finditer(text)]
    return found


EXAMPLES = yaml_examples()


def leaves(mapping: dict, prefix: tuple = ()):
    for key, value in mapping.items():
        if isinstance(value, dict):
            yield from leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value


def test_the_docs_hold_yaml_examples_with_on_keys():
    assert len(EXAMPLES) >= 3, EXAMPLES
    assert any(re.search(r"\bon:", text) for _, text in EXAMPLES)


@pytest.mark.parametrize("where,text", EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_every_yaml_example_of_the_docs_runs_as_written(where, text, tmp_path):
    config = tmp_path / "settings.yaml"
    config.write_text(text, encoding="utf-8")
    written = load_yaml_mapping(str(config))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["clean", SAMPLE, "--badwords", BADWORDS, "--config", str(config),
                                      "-o", str(out), "-q"])
    assert result.exit_code == 0, f"{where}: {result.output}"
    recorded = json.loads((out / "_manifest.json").read_text())["config"]
    for path, value in leaves(written):
        node = recorded
        for part in path:
            node = node[part]
        assert node == (list(value) if isinstance(value, (list, tuple)) else value), (where, path)


def test_yaml_keys_are_the_names_written_and_values_keep_their_meaning(tmp_path):
    text = "near-dedup: {on: false}\nexact-dedup:\n  on: yes\nx: {off: 1, no: 2, Yes: 3, 'true': 4}\n"
    assert yaml.safe_load(text)["near-dedup"] == {True: False}  # what YAML 1.1 alone would give
    assert read_settings_yaml(text) == {"near-dedup": {"on": False}, "exact-dedup": {"on": True},
                                        "x": {"off": 1, "no": 2, "Yes": 3, "true": 4}}
    path = tmp_path / "c.yaml"
    path.write_text("[on, off]\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_yaml_mapping(str(path))
