"""A standalone Apache Flink cluster on this machine: one JobManager and N TaskManagers, each its
own JVM, bound to 127.0.0.1, started from the pinned Flink jars (locks/flink-1.19-cluster.json)
the way Flink's own ``jobmanager.sh``/``taskmanager.sh`` start them (memory settings computed by
Flink's BashJavaUtils from the same configuration), and stopped on exit.

    with FlinkCluster(folder, taskmanagers=2, slots=1) as cluster:
        ... --runner FlinkRunner --flink_master cluster.master ...
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from typing import Optional

from c4forge.pipelines.engines.clusters.processes import LocalCluster, Service, Services, free_port, get_json
from c4forge.pipelines.engines.jvm.jars import (
    LOG_PROPERTIES,
    EngineError,
    classpath,
    java_executable,
    load_lock,
)

CLUSTER_LOCK = "flink-1.19-cluster"
BEAM_LOCK = "flink-1.19-job-server"
FLINK_VERSION = "1.19.0"


def common_settings(spill: str, restart_attempts: int) -> dict:
    """Settings of every Flink this module configures: spill files in ``spill``, failed tasks
    retried."""
    os.makedirs(spill, exist_ok=True)
    return {"io.tmp.dirs": spill, "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": restart_attempts,
            "restart-strategy.fixed-delay.delay": "2 s"}


def write_conf(folder: str, settings: dict) -> str:
    """``folder``/flink-conf.yaml holding ``settings``; returns ``folder``."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "flink-conf.yaml"), "w") as handle:
        handle.writelines(f"{key}: {value}\n" for key, value in settings.items())
    return folder


def embedded_conf(folder: str, slots: int, managed_mb: int, restart_attempts: int = 3) -> str:
    """The configuration of Flink embedded in the job server (``--flink_master [local]`` with
    ``--flink-conf-dir``): ``slots`` slots, ``managed_mb`` MB of managed memory in which batch
    sorts and joins run and beyond which they spill to ``folder``/tmp. The blocking shuffle
    does not compress: the pages that are most of its bytes are compressed already
    (corpus/document.py), and the line keys are digests (flink-local, 4x distinct input, two
    runs each, pages then LZ4-compressed: the JVM 14.4 and 14.4 CPU s against 15.8 and 15.8
    with Flink's compression)."""
    return write_conf(os.path.join(folder, "conf"), {
        "taskmanager.numberOfTaskSlots": slots, "parallelism.default": slots,
        "taskmanager.memory.managed.size": f"{managed_mb}m",
        "taskmanager.network.batch-shuffle.compression.enabled": "false",
        **common_settings(os.path.join(folder, "tmp"), restart_attempts)})


@dataclass
class FlinkCluster(LocalCluster):
    """``taskmanagers`` TaskManagers of ``slots`` slots and ``taskmanager_mb`` MB each (Flink's
    process size: heap, managed memory for sorting and spilling, network buffers, overhead).
    Spill files go under ``folder``. A failed task is retried (``restart_attempts``)."""

    folder: str
    taskmanagers: int = 2
    slots: int = 1
    taskmanager_mb: int = 1536
    jobmanager_mb: int = 1024
    restart_attempts: int = 3
    # Beam's runner jars on the cluster's own classpath, loaded parent-first (as if in Flink's
    # lib/): Beam then keeps a job's SDK workers from one stage to the next
    # (--environment_cache_millis); loaded from each job's jars instead, it must release them
    # after every stage (ReferenceCountingExecutableStageContextFactory), and a new worker
    # process per stage costs seconds.
    beam_in_lib: bool = True
    log: Optional[object] = None
    services: Services = field(init=False)
    rest_port: int = field(init=False, default=0)
    _taskmanager_count: int = field(init=False, default=0)

    @property
    def master(self) -> str:
        return f"127.0.0.1:{self.rest_port}"

    @property
    def parallelism(self) -> int:
        return self.taskmanagers * self.slots

    def _write_conf(self) -> str:
        conf = os.path.join(self.folder, "conf")
        spill = os.path.join(self.folder, "tmp")
        os.makedirs(conf, exist_ok=True)
        os.makedirs(spill, exist_ok=True)
        self.rest_port = free_port()
        settings = {
            "jobmanager.rpc.address": "127.0.0.1", "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.rpc.port": free_port(), "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1", "rest.port": self.rest_port,
            "blob.server.port": free_port(),
            "taskmanager.host": "127.0.0.1", "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.numberOfTaskSlots": self.slots, "parallelism.default": self.parallelism,
            "jobmanager.memory.process.size": f"{self.jobmanager_mb}m",
            "taskmanager.memory.process.size": f"{self.taskmanager_mb}m",
            # a lost TaskManager is noticed in seconds, not the default 50
            "heartbeat.interval": 2000, "heartbeat.timeout": 10000,
            "web.submit.enable": "false",
        }
        if self.beam_in_lib:
            settings["classloader.resolve-order"] = "parent-first"
        settings.update(common_settings(spill, self.restart_attempts))
        return write_conf(conf, settings)

    def _resource_params(self, java: str, cp: str, conf: str, which: str) -> tuple[list, list]:
        """(JVM options, -D dynamic settings), as Flink's start scripts get them."""
        out = subprocess.run([java, "-cp", cp, "org.apache.flink.runtime.util.bash.BashJavaUtils",
                              which, "--configDir", conf], capture_output=True, text=True,
                             timeout=120)
        results = [line.split("BASH_JAVA_UTILS_EXEC_RESULT:", 1)[1]
                   for line in out.stdout.splitlines() if "BASH_JAVA_UTILS_EXEC_RESULT:" in line]
        if out.returncode or len(results) < 2:
            raise EngineError(f"Flink could not size its processes: {out.stdout[-300:]}"
                              f"{out.stderr[-300:]}")
        return results[0].split(), results[1].split()

    def start(self) -> None:
        java = java_executable("a Flink cluster")
        self._java, self._cp = java, classpath(load_lock(CLUSTER_LOCK), self.log)
        if self.beam_in_lib:
            own = self._cp.split(os.pathsep)
            beam = [p for p in classpath(load_lock(BEAM_LOCK), self.log).split(os.pathsep)
                    if p not in set(own)]
            self._cp = os.pathsep.join(own + beam)
        self._conf = self._write_conf()
        jvm, dynamic = self._resource_params(java, self._cp, self._conf, "GET_JM_RESOURCE_PARAMS")
        self.services.start("jobmanager", [
            java, *jvm, *LOG_PROPERTIES, "-cp", self._cp, "org.apache.flink.runtime.entrypoint."
            "StandaloneSessionClusterEntrypoint", "--configDir", self._conf, *dynamic])
        self.services.wait_for(lambda: "flink-version" in get_json(f"http://{self.master}/config"),
                               "the Flink JobManager")
        for _ in range(self.taskmanagers):
            self.add_taskmanager(wait=False)
        self.services.wait_for(lambda: self.registered() >= self.taskmanagers,
                               f"{self.taskmanagers} Flink TaskManager(s)")

    def add_taskmanager(self, wait: bool = True) -> Service:
        """One more TaskManager (a supervisor replacing a lost one does this)."""
        jvm, dynamic = self._resource_params(self._java, self._cp, self._conf,
                                             "GET_TM_RESOURCE_PARAMS")
        before = self.taskmanager_ids() if wait else set()
        self._taskmanager_count += 1
        service = self.services.start(f"taskmanager-{self._taskmanager_count}", [
            self._java, *jvm, *LOG_PROPERTIES, "-cp", self._cp,
            "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
            "--configDir", self._conf, *dynamic])
        if wait:
            self.services.wait_for(lambda: bool(self.taskmanager_ids() - before),
                                   "a Flink TaskManager")
        return service

    def taskmanager_ids(self) -> set:
        return {t["id"] for t in get_json(f"http://{self.master}/taskmanagers").get("taskmanagers", [])}

    def registered(self) -> int:
        return len(self.taskmanager_ids())

    def taskmanager_services(self) -> list[Service]:
        return [s for s in self.services.started if s.name.startswith("taskmanager-")]

    def jobs(self) -> list[dict]:
        return get_json(f"http://{self.master}/jobs/overview").get("jobs", [])
