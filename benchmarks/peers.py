"""The requirements of .venv-peers, where `make bench` runs the peers that cannot share a venv
with apache-beam 2.62: datatrove needs a newer dill (through multiprocess) than Beam allows.
c4forge is installed there too (``--no-deps``), with its base dependencies (Beam is the [beam]
extra, not installed there), so the single-process rows (`corpus clean`, bench_clean.py) run
beside datatrove in one process on one fastText build; nothing there imports Beam.

    python benchmarks/peers.py > requirements.txt
"""
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
# datatrove (pinned: its filters' defaults are part of what is compared) and its WARC/WET reader
# and JSONL writer; python-magic needs libmagic. fasttext-numpy2-wheel, the fastText build
# datatrove's LanguageFilter needs, is installed after these (it must overwrite the `fasttext/`
# folder fasttext-predict installs), here and in .venv-bench, so every row shares one build.
# spaCy and tldextract come from c4forge's own pins (the same releases as ours: the exactness test
# of the Gopher, FineWeb and URL filters, tests/test_quality.py, compares datatrove with us).
# tokenizers: datatrove's DocumentTokenizer (its `tokens` extra), measured beside `tokenizer encode`
# in bench_tokenizer.py with the same release as ours (the newest, both venvs).
PEERS = ("datatrove==0.10.1", "warcio", "faust-cchardet", "python-magic", "orjson", "psutil",
         "fasteners", "tokenizers")


def requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *PEERS]


if __name__ == "__main__":
    print("\n".join(requirements()))
