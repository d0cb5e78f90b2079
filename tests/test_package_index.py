"""The `fineweb` preset needs nothing but the package index (issue 75): datatrove's URL block
lists come from datatrove's pinned wheel, fetched through the simple API of PyPI or the index
pip is pointed at (corpus/assets/package_index.py), checked against the pinned sha256, cached; here a
fake index on 127.0.0.1 serves a wheel built for the test (GitHub is never asked)."""
import hashlib
import io
import json
import tarfile
import zipfile
from collections import OrderedDict

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli as corpus_cli
from c4forge.corpus.assets.package_index import IndexUnavailable, PinnedWheel, wheel_member
from c4forge.corpus.chain import step
from c4forge.corpus.steps import url_filter
from tests.conftest import ROOT

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")


def fake_datatrove_wheel(domains: list[str]) -> bytes:
    lists = io.BytesIO()
    with tarfile.open(fileobj=lists, mode="w:gz") as archive:
        for name, content in (("blacklists/adult/domains", "\n".join(domains) + "\n"),
                              ("blacklists/domains", "\n".join(domains) + "\n")):
            info = tarfile.TarInfo(name)
            info.size = len(content.encode())
            archive.addfile(info, io.BytesIO(content.encode()))
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"datatrove/assets/{url_filter.DATATROVE_TARBALL}", lists.getvalue())
        archive.writestr("datatrove/assets/banned_words.txt", "casino\n")
        archive.writestr("datatrove/assets/banned_subwords.txt", "xxxporn\n")
        archive.writestr("datatrove/assets/soft_banned_words.txt", "bet\nodds\n")
    return wheel.getvalue()


@pytest.fixture
def fake_index(tmp_path, monkeypatch, local_server):
    """A PEP 503 index serving the fake wheel, the pin set to it, an empty cache."""
    served = tmp_path / "index"
    (served / "simple" / "datatrove").mkdir(parents=True)
    (served / "files").mkdir()
    data = fake_datatrove_wheel(["example.com", "www.example.org"])
    name = "datatrove-0.10.1-py3-none-any.whl"
    (served / "files" / name).write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    (served / "simple" / "datatrove" / "index.html").write_text(
        f'<html><body><a href="../../files/{name}#sha256={sha}" data-requires-python="&gt;=3.10">{name}</a>'
        "</body></html>")
    base, log = local_server(served)
    monkeypatch.setenv("C4FORGE_INDEX_URL", f"{base}/simple")
    monkeypatch.setenv("C4FORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(url_filter, "DATATROVE_WHEEL", PinnedWheel("datatrove", name, sha))
    monkeypatch.setattr(step, "_LOADED", OrderedDict())  # lists an earlier test loaded in this process
    return log, served


def test_the_fineweb_preset_takes_its_url_lists_from_the_package_index(tmp_path, fake_index):
    log, served = fake_index
    result = CliRunner().invoke(corpus_cli, ["clean", SAMPLE, "--preset", "fineweb", "-o", str(tmp_path / "out"),
                                             "--counters", str(tmp_path / "counters.json"), "-q"])
    assert result.exit_code == 0, result.output
    counters = json.loads((tmp_path / "counters.json").read_text())["counters"]
    assert counters["url-filter/passed"] > 0 and not any("raw.githubusercontent" in line for line in log)
    assert log.count("/simple/datatrove/") == 1 and sum("/files/" in line for line in log) == 1
    lists = url_filter.load_lists(url_filter.DATATROVE_LISTS)
    assert "example.com" in lists.domains and lists.banned_words == {"casino"}
    # the index gone: the cached, unpacked lists serve every later build
    (served / "simple" / "datatrove" / "index.html").unlink()
    again = CliRunner().invoke(corpus_cli, ["clean", SAMPLE, "--preset", "fineweb", "--jsonl",
                                            str(tmp_path / "again.jsonl"), "-q"])
    assert again.exit_code == 0, again.output


def test_a_wheel_that_is_not_the_pinned_one_is_refused_and_not_cached(tmp_path, fake_index, monkeypatch):
    monkeypatch.setattr(url_filter, "DATATROVE_WHEEL", url_filter.DATATROVE_WHEEL._replace(sha256="0" * 64))
    with pytest.raises(IndexUnavailable, match="not the pinned 000000000000"):
        wheel_member(url_filter.DATATROVE_WHEEL, "datatrove/assets/banned_words.txt")
    assert not (tmp_path / "cache" / "wheels").exists() or not any((tmp_path / "cache" / "wheels").iterdir())
    result = CliRunner().invoke(corpus_cli, ["clean", SAMPLE, "--preset", "fineweb", "--jsonl",
                                             str(tmp_path / "x.jsonl")])
    assert result.exit_code != 0 and len(result.output.strip().splitlines()) == 1, result.output
    assert "url-filter.lists=DIR" in result.output and not (tmp_path / "x.jsonl").exists()
