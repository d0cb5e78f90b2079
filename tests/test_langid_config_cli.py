"""Language ID, config presets/overrides, and the `corpus clean` command."""
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from c4forge.cli.corpus import cli
from c4forge.core.settings import ConfigError
from c4forge.corpus.config import build_config
from c4forge.corpus.document import Document
from c4forge.corpus.langid import lid176 as langid
from tests.conftest import shared_path
from tests.wetfiles import record, wet_file

ENGLISH = ("The committee met on Tuesday to discuss the new budget. Members agreed that the "
           "library needs more funding for children's books and evening classes.")
GERMAN = ("Der Ausschuss traf sich am Dienstag, um den neuen Haushalt zu besprechen. Die Mitglieder "
          "waren sich einig, dass die Bibliothek mehr Geld für Kinderbücher braucht.")


def test_predict_languages_with_bundled_model():
    assert langid.predict(ENGLISH)[0] == "en"
    assert langid.predict(GERMAN)[0] == "de"
    lang, score = langid.predict("line one\nline two of English text here")
    assert 0.0 <= score <= 1.0


def test_model_loaded_once_per_process():
    assert langid.load_model() is langid.load_model()


def test_language_filter_threshold_and_languages():
    keep_en = langid.LanguageFilter(("en",), threshold=0.5)
    verdict = keep_en(Document(text=ENGLISH))
    assert verdict.page.language == "en" and verdict.page.language_score > 0.5
    assert verdict.outcome == "passed" and [c.name for c in verdict.counts] == ["passed:en"]
    assert keep_en(Document(text=GERMAN)).outcome == "filtered:ignored_language"
    assert langid.LanguageFilter(("en",), threshold=1.01)(Document(text=ENGLISH)).outcome == "filtered:low_confidence"
    assert langid.LanguageFilter((), threshold=0.5)(Document(text=GERMAN)).page.language == "de"


def test_self_check_runs_predict_in_a_fresh_process():
    out = subprocess.run([sys.executable, "-m", "c4forge.cli.langid", "--self-check"],
                         capture_output=True, text=True, check=True)
    assert "fastText LID ok" in out.stdout
    shown = out.stdout.rsplit("(", 1)[1].rsplit(")", 1)[0]
    assert shown.endswith((".ftz", ".bin")) and not os.path.isabs(shown)  # never a machine's path


def test_shown_path_is_never_absolute(tmp_path, monkeypatch):
    import sysconfig

    from c4forge.core.io import shown_path

    monkeypatch.chdir(tmp_path)
    assert shown_path(str(tmp_path / "a" / "b.txt")) == os.path.join("a", "b.txt")
    assert shown_path("rel.txt") == "rel.txt"
    installed = os.path.join(sysconfig.get_paths()["purelib"], "pkg", "model.bin")
    assert shown_path(installed) == os.path.join("pkg", "model.bin")
    assert shown_path(os.path.join(os.sep, "elsewhere", "x", "lid.bin")) == "lid.bin"


def test_bad_model_path_is_a_clear_error(tmp_path):
    bogus = tmp_path / "lid.bin"
    bogus.write_bytes(b"not a model")
    with pytest.raises(RuntimeError, match="lid.bin is not a whole fastText model file"):
        langid.load_model(str(bogus))


def test_presets_and_overrides(tmp_path):
    c4 = build_config("c4")
    on = c4.settings_of
    assert on("clean-page").on and on("line-dedup").on and on("bad-words").fraction == 1.0
    assert on("language-id").languages == ("en",) and c4.runs("bad-words")
    noclean = build_config("c4-noclean")
    assert not noclean.runs("clean-page") and not noclean.runs("line-dedup") and not noclean.runs("bad-words")
    assert noclean.runs("url-dedup") and noclean.settings_of("length").max_chars == 1.9e5
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("clean-page:\n  min_words_per_line: 3\nlanguage-id: {threshold: 0.8}\n")
    cfg = build_config("c4", str(yaml_file), ["clean-page.end_marks=.,!", "length.on=false"])
    assert cfg.settings_of("clean-page").min_words_per_line == 3 and cfg.settings_of("language-id").threshold == 0.8
    assert cfg.settings_of("clean-page").end_marks == (".", "!") and not cfg.runs("length")
    with pytest.raises(ConfigError, match="unknown setting"):
        build_config("c4", overrides=["clean-page.nonsense=1"])
    with pytest.raises(ConfigError, match="unknown preset"):
        build_config("c5")
    with pytest.raises(ConfigError, match="true/false"):
        build_config("c4", overrides=["clean-page.on=maybe"])


def test_the_flat_names_of_earlier_releases_are_read_as_step_settings(tmp_path):
    """Configs written for the flat config (``rules.*``, ``lid_threshold``, ``max_page_chars``,
    ``near_dedup``...) keep working: each name is the step setting it became."""
    yaml_file = tmp_path / "old.yaml"
    yaml_file.write_text("rules:\n  min_words_per_line: 3\nlid_threshold: 0.8\nminhash: {threshold: 0.7}\n")
    old = build_config("c4", str(yaml_file), ["rules.end_marks=.,!", "max_page_chars=none", "near_dedup=false",
                                             "badwords_fraction=0.5", "languages=en,de", "dedupe_lines=false"])
    new = build_config("c4", overrides=["clean-page.min_words_per_line=3", "language-id.threshold=0.8",
                                        "near-dedup.threshold=0.7", "clean-page.end_marks=.,!", "length.on=false",
                                        "near-dedup.on=false", "bad-words.fraction=0.5",
                                        "language-id.languages=en,de", "line-dedup.on=false"])
    assert old == new
    assert build_config("c4", overrides=["gopher_quality.on=true"]) == \
        build_config("c4", overrides=["gopher-quality.on=true"])


def sample_crawl(tmp_path):
    article = "\n".join([
        "Home | News | Contact",
        "The committee met on Tuesday to discuss the new budget for the town.",
        "Members agreed that the library needs more funding for children's books.",
        "Evening classes will also be offered to adults who want to learn new skills.",
        "This site uses cookies to improve your experience on our website.",
    ])
    records = [
        record("http://news.example.com/budget", article, date="2019-01-01T00:00:00Z"),
        record("https://www.news.example.com/budget/", article + "\nA newer revision of the page adds a line.",
               date="2020-01-01T00:00:00Z"),
        record("http://de.example.com/haushalt", GERMAN + "\n" + GERMAN.replace("Dienstag", "Montag")
               + "\nEin dritter Satz steht hier auch noch."),
        record("http://lorem.example.com/", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n" * 3),
    ]
    path = tmp_path / "crawl.warc.wet.gz"
    path.write_bytes(wet_file(records))
    badwords = tmp_path / "badwords"
    badwords.mkdir()
    (badwords / "en").write_text("verybadword\n")
    return path, badwords


def test_corpus_clean_command(tmp_path):
    path, badwords = sample_crawl(tmp_path)
    out = tmp_path / "out.jsonl"
    counters = tmp_path / "counters.json"
    result = CliRunner().invoke(cli, ["clean", str(path), "--jsonl", str(out), "--badwords", str(badwords),
                                      "--counters", str(counters)])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [d["url"] for d in docs] == ["https://www.news.example.com/budget/"]
    assert docs[0]["text"].endswith("A newer revision of the page adds a line.")
    assert "cookies" not in docs[0]["text"] and docs[0]["language"] == "en"
    values = json.loads(counters.read_text())["counters"]
    assert values["duplicate-url-filter/filtered"] == 1
    assert values["clean-page/filtered:loremipsum"] == 1
    assert values["language-filter/filtered:ignored_language"] == 1
    assert "| clean-page | line-filtered:policy | 1 |" in result.output


def test_corpus_clean_noclean_keeps_boilerplate(tmp_path):
    path, badwords = sample_crawl(tmp_path)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["clean", str(path), "--jsonl", str(out), "--preset", "c4-noclean"])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    texts = {d["url"]: d["text"] for d in docs}
    assert "Home | News | Contact" in texts["https://www.news.example.com/budget/"]


def test_corpus_clean_errors_are_clear(tmp_path):
    result = CliRunner().invoke(cli, ["clean", str(tmp_path / "none.wet.gz"), "--jsonl", str(tmp_path / "o")])
    assert result.exit_code != 0 and "no such file" in result.output
    result = CliRunner().invoke(cli, ["clean", "x", "--jsonl", "o", "--set", "bogus=1"])
    assert result.exit_code == 2 and "unknown setting" in result.output
    assert not (tmp_path / "o").exists()


def test_corpus_clean_on_shared_crawl(tmp_path):
    crawl = shared_path("crawl")
    out = tmp_path / "c4.jsonl"
    result = CliRunner().invoke(cli, ["clean", *map(str, sorted(crawl.glob("*.wet.gz"))), "--jsonl", str(out),
                                      "--badwords", str(shared_path("badwords"))])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    assert 300 < len(docs) < 500
    assert all(d["language"] == "en" and d["language_score"] >= 0.65 for d in docs)


def test_help_everywhere():
    runner = CliRunner()
    assert "clean" in runner.invoke(cli, ["--help"]).output
    assert "--preset" in runner.invoke(cli, ["clean", "--help"]).output
