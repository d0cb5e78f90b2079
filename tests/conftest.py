import functools
import http.server
import importlib.util
import os
import re
import shutil
import threading
from pathlib import Path

# Triton kernels run on the CPU through Triton's interpreter when there is no GPU. The variable
# must be set before triton is first imported, so it is set here, at collection time.
if not shutil.which("nvidia-smi"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

# HF datasets and the hub (the current-HF environment's tests): offline, and their caches in the
# checkout's .cache/ (git-ignored), never the user's ~/.cache/huggingface. Set before they import.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HOME", str(Path(__file__).resolve().parent.parent / ".cache" / "hf"))

# `make test` runs the tests in two processes (pytest-xdist): each gets one math thread, so two
# torch tests on two cores do not oversubscribe them (a torch test alone still gets what it asks).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("C4FORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))

# Three environments run the tests (Makefile): the engines' one (.venv, Beam 2.62.0) runs every test;
# the one of current releases (.venv-hf: the newest Beam, transformers 5, datasets 5, lm-eval,
# datatrove, NeMo Curator; C4FORGE_TEST_ENV=current) runs those marked `hf` or `newest_beam`, and
# the trainers' readers' one (.venv-interop: megatron-core, MosaicML streaming, litdata;
# C4FORGE_TEST_ENV=interop) those marked `interop`; each collects only the test modules that hold
# such tests. Where Beam is missing (a corpus-only install), the test modules
# that import it (directly, through c4forge.pipelines, or through another such module) are not
# collected.
BEAM = importlib.util.find_spec("apache_beam") is not None
CURRENT = os.environ.get("C4FORGE_TEST_ENV") == "current"
# The marks a test module must hold to be collected in each of the other two environments.
_ENV_MARKS = {"current": re.compile(r"mark\.(?:hf|newest_beam)\b"), "interop": re.compile(r"mark\.interop\b")}
_MARKS = _ENV_MARKS.get(os.environ.get("C4FORGE_TEST_ENV", ""))
_BEAM_IMPORT = re.compile(r"^(?:from|import) (?:apache_beam|c4forge\.pipelines)\b", re.M)
_TEST_IMPORT = re.compile(r"^from tests\.(\w+) import", re.M)


@functools.cache
def _needs_beam(module: str) -> bool:
    source = (ROOT / "tests" / f"{module}.py").read_text(encoding="utf-8")
    return bool(_BEAM_IMPORT.search(source)) or any(
        (ROOT / "tests" / f"{name}.py").exists() and _needs_beam(name) for name in _TEST_IMPORT.findall(source))


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix != ".py" or collection_path.parent != ROOT / "tests":
        return None
    if _MARKS and collection_path.name.startswith("test_"):
        return not _MARKS.search(collection_path.read_text(encoding="utf-8")) or None
    if not BEAM:
        return _needs_beam(collection_path.stem) or None
    return None


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with the reason (a user's machine has no
    such folder; CI does)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (set C4FORGE_SHARED_DATA)")
    return path


def flink_local_or_skip(purpose: str) -> None:
    """Skip, saying why, where flink-local cannot run here: no Java 11+, or its job-server jars
    cannot be had (a test of a Flink behaviour, run in make test-slow)."""
    from c4forge.pipelines.engines.jvm import jars  # Beam's venv only: conftest loads everywhere

    try:
        jars.java_executable(purpose)
        jars.fetch_jars(jars.load_lock("flink-1.19-job-server"))
    except jars.EngineError as exc:
        pytest.skip(f"flink unavailable here: {exc}")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Downloads (bad-word lists) go to a per-test cache, never the user's."""
    monkeypatch.setenv("C4FORGE_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def sample_tokens(tmp_path_factory) -> str:
    """Real token shards, made once per session: the embedded sample crawl through the c4 chain,
    a 600-piece tokenizer, one encode. Tests must not write into it."""
    from c4forge.core.counters import Counters
    from c4forge.corpus.chain.local import run_chain
    from c4forge.corpus.config import build_config
    from c4forge.corpus.output.shards import write_corpus
    from c4forge.tokenizer.encode import encode_corpus
    from c4forge.tokenizer.train import TokenizerConfig, train_tokenizer

    root = tmp_path_factory.mktemp("sample-tokens")
    docs = run_chain([str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")],
                     build_config("c4", badwords=str(ROOT / "corpus/data/demo-badwords")), Counters())
    write_corpus(str(root / "corpus"), docs, {"config": {"preset": "c4"}, "counters": {}})
    train_tokenizer(str(root / "corpus"), str(root / "tok"), TokenizerConfig(vocab_size=600))
    encode_corpus(str(root / "corpus"), str(root / "tok"), str(root / "ids"), workers=1,
                  log=lambda *_: None)
    return str(root / "ids")


@pytest.fixture(scope="session")
def crawl_tokens(tmp_path_factory) -> str:
    """Real token shards of the shared crawl (../shared/data/crawl/*.wet.gz) through the c4
    chain (10% of documents held out as the validation split) with a 2,000-piece tokenizer
    holding T5's 100 sentinels; made once per session."""
    from c4forge.core.counters import Counters
    from c4forge.corpus.chain.local import run_chain
    from c4forge.corpus.config import build_config
    from c4forge.corpus.output.shards import write_corpus
    from c4forge.tokenizer.encode import encode_corpus
    from c4forge.tokenizer.train import TokenizerConfig, train_tokenizer

    crawl = shared_path("crawl")
    root = tmp_path_factory.mktemp("crawl-tokens")
    files = sorted(str(p) for p in crawl.glob("*.wet.gz"))
    docs = run_chain(files, build_config("c4", badwords=str(ROOT / "corpus/data/demo-badwords")), Counters())
    write_corpus(str(root / "corpus"), docs, {"config": {"preset": "c4"}, "counters": {}},
                 validation_per_mille=100)
    train_tokenizer(str(root / "corpus"), str(root / "tok"), TokenizerConfig(vocab_size=2000, t5_sentinels=100))
    encode_corpus(str(root / "corpus"), str(root / "tok"), str(root / "ids"), workers=1, log=lambda *_: None)
    return str(root / "ids")


@pytest.fixture
def local_server(tmp_path):
    """An http server on 127.0.0.1 serving a directory; yields (base url, request log)."""
    log = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            log.append(self.path)

    def serve(directory):
        handler = functools.partial(Handler, directory=str(directory))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", log

    servers = []
    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def sample_corpus(sample_tokens):
    """The session's sample corpus (the corpus the sample tokens were encoded from)."""
    return str(Path(sample_tokens).parent / "corpus")


@pytest.fixture(scope="module")
def tokens(sample_tokens):
    """The sample crawl's token directory (alias used by the training tests)."""
    return sample_tokens
