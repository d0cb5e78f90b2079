"""What a missing extra does to each command it affects (issue 75): `--help` works and names the
extra to install, and running the command is one line naming it (exit 2), never a traceback."""
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# Run the console scripts with one package made unimportable, as a corpus-only install has it.
WITHOUT = ("import sys; sys.modules[{module!r}] = None; "
           "from c4forge.cli.{cli} import main; main(sys.argv[1:])")


def without(module: str, cli: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT.format(module=module, cli=cli), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("module,cli,command,extra", [
    ("sentencepiece", "tokenizer", ["train", "-i", "corpus", "-o", "never"], "tokenizer"),
    ("apache_beam", "corpus", ["build", "-i", "corpus/data/sample.warc.wet.gz", "-o", "never"], "beam"),
    ("apache_beam", "corpus", ["estimate", "-i", "corpus/data/sample.warc.wet.gz"], "beam"),
])
def test_help_names_the_extra_and_the_command_says_it_in_one_line(module, cli, command, extra):
    helped = without(module, cli, *command[:1], "--help")
    assert helped.returncode == 0 and f"[{extra}] extra" in helped.stdout, helped.stderr[-2000:]
    ran = without(module, cli, *command)
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1, ran.stderr[-2000:]
    assert f"pip install 'c4forge[{extra}]'" in lines[0] and "Traceback" not in ran.stderr
    assert not (ROOT / "never").exists()


def test_the_tokenizer_group_help_runs_without_sentencepiece():
    """Regression: `tokenizer --help` in a corpus-only install was a ModuleNotFoundError traceback."""
    helped = without("sentencepiece", "tokenizer", "--help")
    assert helped.returncode == 0 and "pip install 'c4forge[tokenizer]'" in helped.stdout
