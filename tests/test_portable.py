"""The portable path Flink, Spark and Dataflow run Python through: Beam's job service, an
external pool of SDK worker processes that boot as Beam's container does (the project staged
with its setup.py, pip-installed per worker), pickled DoFns, gRPC data and state planes.
Same corpus (documents, texts, shard bytes, every counter) as the DirectRunner."""
import os
import re

import pytest

from c4forge.corpus.config import build_config
from c4forge.corpus.output.shards import iter_corpus_documents, read_manifest
from c4forge.pipelines.build import run_build
from c4forge.pipelines.engines.workers.worker_pool import local_portable_services
from tests.conftest import ROOT, shared_path

pytestmark = pytest.mark.slow


def _corpus(directory):
    return {d["url"]: d for s in ("train", "validation") for d in iter_corpus_documents(str(directory), s)}


def progress_seen(lines: list) -> list:
    """The progress lines a build logged that show reading under way: pages counted and an ETA."""
    found = []
    for line in lines:
        match = re.match(r"progress: (\d+)/(\d+) files, ([\d,]+) pages read, .* (reading ETA \d+:\d\d:\d\d|reading done)",
                         str(line))
        if match and int(match.group(3).replace(",", "")) > 0:
            found.append(line)
    return found


def test_portable_runner_with_external_workers_equals_direct_runner(tmp_path, monkeypatch):
    shared = shared_path()
    crawl = sorted(os.path.relpath(p, shared) for p in (shared / "crawl").glob("*.wet.gz"))
    services = tmp_path / "services"
    # relative paths, as a user types them: workers start in folders of their own, and documents
    # record the paths as given (their ``source``), in both runs
    cwd = os.getcwd()
    os.chdir(shared)
    try:
        cfg = build_config("c4", badwords="badwords")
        direct = run_build(crawl, str(tmp_path / "direct"), cfg, log=lambda *_: None,
                           beam_args=["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
        logged: list = []
        monkeypatch.setenv("C4FORGE_PROGRESS_SECONDS", "0.5")
        with local_portable_services(str(services), workers=2) as beam_args:
            portable = run_build(crawl, str(tmp_path / "portable"), cfg, log=logged.append,
                                 beam_args=beam_args)
    finally:
        os.chdir(cwd)
    assert portable["build"]["runner"] == "PortableRunner"
    # progress while it ran, from workers that write no file the launcher reads (they report to
    # its sink over HTTP; pipelines/progress.py): pages read and the reading ETA
    assert progress_seen(logged), [str(line) for line in logged][-5:]
    assert portable["counters"] == direct["counters"]  # every step's element and byte counts
    assert portable["counters"]["split-wet-file/passed"] > 1500
    built, expected = _corpus(tmp_path / "portable"), _corpus(tmp_path / "direct")
    assert built == expected and len(built) > 300
    samples = (tmp_path / "direct" / "_rule-samples.json").read_bytes()
    assert (tmp_path / "portable" / "_rule-samples.json").read_bytes() == samples  # what every rule did
    for name in read_manifest(str(tmp_path / "direct"))["splits"]["train"]["files"]:
        assert (tmp_path / "portable" / name).read_bytes() == (tmp_path / "direct" / name).read_bytes()
    # Several workers booted, each from the staged sdist of this project, not the checkout.
    workers = [w for w in services.iterdir() if w.name.startswith("c4forge-worker-")]
    assert len(workers) >= 2
    for worker in workers:
        staged = worker / "site" / "c4forge" / "pipelines" / "c4.py"
        assert staged.read_bytes() == (ROOT / "pipelines" / "c4.py").read_bytes()
        assert list((worker / "staged").glob("workflow.tar.gz"))
