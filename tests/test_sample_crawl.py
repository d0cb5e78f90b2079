"""The sample crawl shipped for `make demo` exercises every C4 rule, and is reproducible."""
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from c4forge.core.counters import Counters
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "corpus" / "data" / "sample.warc.wet.gz"
DEMO_BADWORDS = ROOT / "corpus" / "data" / "demo-badwords"


def test_sample_fires_every_rule():
    counters = Counters()
    config = build_config("c4", badwords=str(DEMO_BADWORDS))
    docs = run_chain([str(SAMPLE)], config, counters)
    c = counters.as_dict()
    for name in ["duplicate-url-filter/filtered", "clean-page/filtered:loremipsum",
                 "clean-page/filtered:squigglybracket", "clean-page/filtered:too_few_sentences",
                 "clean-page/line-filtered:javascript", "clean-page/line-filtered:policy",
                 "clean-page/line-filtered:no_endmark", "dedupe-lines/line-filtered:global_duplicate",
                 "language-filter/filtered:ignored_language", "badwords-filter/filtered",
                 "near-dedup/filtered"]:
        assert c.get(name, 0) > 0, name
    assert len(docs) > 100
    assert not any("[1]" in d.text or "cookies" in d.text for d in docs)
    # URL revisits: the newest crawl of each page wins.
    revisits = [d for d in docs if "updated with new information" in d.text]
    assert revisits


def test_sample_is_reproducible(tmp_path):
    out = tmp_path / "sample.warc.wet.gz"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_sample_crawl.py"), "--output", str(out)],
                   check=True, capture_output=True)
    assert out.read_bytes() == SAMPLE.read_bytes()


def test_all_console_scripts_have_help():
    from c4forge.cli.corpus import cli as corpus_cli
    from c4forge.cli.tokenizer import cli as tokenizer_cli
    from c4forge.cli.train import cli as train_cli

    for group in (corpus_cli, tokenizer_cli, train_cli):
        result = CliRunner().invoke(group, ["--help"])
        assert result.exit_code == 0 and "Usage" in result.output
