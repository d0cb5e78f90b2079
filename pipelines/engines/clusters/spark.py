"""A standalone Apache Spark cluster on this machine: a master and N workers, each its own JVM,
bound to 127.0.0.1, started from the pinned Spark jars (locks/spark-3.5-cluster.json) laid out as
a SPARK_HOME (workers start executors from its ``jars/``), and stopped on exit.

    with SparkCluster(folder, workers=1, cores=2) as cluster:
        ... --runner SparkRunner --spark_master_url cluster.master ...
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from c4forge.pipelines.engines.clusters.processes import LocalCluster, Services, free_port, get_json
from c4forge.pipelines.engines.jvm.jars import (
    SPARK_OPENS,
    classpath,
    fetch_jars,
    java_executable,
    load_lock,
)

CLUSTER_LOCK = "spark-3.5-cluster"
SPARK_VERSION = "3.5.7"
MODULE_OPTIONS = [f"--add-opens={module}=ALL-UNNAMED" for module in SPARK_OPENS]


@dataclass
class SparkCluster(LocalCluster):
    """``workers`` workers offering ``cores`` cores and ``worker_mb`` MB of executor memory each;
    shuffle and spill files go under ``folder``."""

    folder: str
    workers: int = 1
    cores: int = 2
    worker_mb: int = 3072
    log: Optional[object] = None
    services: Services = field(init=False)
    port: int = field(init=False, default=0)
    ui_port: int = field(init=False, default=0)

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def spark_home(self) -> str:
        """A SPARK_HOME whose jars/ links the pinned jars: workers build executor classpaths
        from it, as in an unpacked Spark distribution."""
        home = os.path.join(self.folder, "spark-home")
        jars = os.path.join(home, "jars")
        os.makedirs(jars, exist_ok=True)
        for path in fetch_jars(load_lock(CLUSTER_LOCK), self.log):
            link = os.path.join(jars, path.name)
            if not os.path.lexists(link):
                os.symlink(path, link)
        os.makedirs(os.path.join(home, "conf"), exist_ok=True)
        with open(os.path.join(home, "conf", "log4j2.properties"), "w") as handle:
            handle.write("rootLogger.level = warn\nrootLogger.appenderRef.stdout.ref = console\n"
                         "appender.console.type = Console\nappender.console.name = console\n"
                         "appender.console.layout.type = PatternLayout\n"
                         "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n")
        return home

    def environment(self, home: str) -> dict:
        local = os.path.join(self.folder, "local")
        os.makedirs(local, exist_ok=True)
        return dict(os.environ, SPARK_HOME=home, SPARK_SCALA_VERSION="2.12",
                    SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_DIRS=local,
                    SPARK_CONF_DIR=os.path.join(home, "conf"))

    def start(self) -> None:
        java = java_executable("a Spark cluster")
        cp = classpath(load_lock(CLUSTER_LOCK), self.log)
        home = self.spark_home()
        env = self.environment(home)
        conf = os.path.join(home, "conf")
        self.port, self.ui_port = free_port(), free_port()
        daemon = [java, "-Xmx512m", *MODULE_OPTIONS, "-cp", f"{conf}{os.pathsep}{cp}"]
        self.services.start("master", [*daemon, "org.apache.spark.deploy.master.Master",
                                       "--host", "127.0.0.1", "--port", str(self.port),
                                       "--webui-port", str(self.ui_port)], env=env)
        self.services.wait_for(lambda: get_json(f"http://127.0.0.1:{self.ui_port}/json/")
                               .get("status") == "ALIVE", "the Spark master")
        for index in range(self.workers):
            work = os.path.join(self.folder, f"work-{index}")
            self.services.start(f"worker-{index}", [
                *daemon, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--cores", str(self.cores), "--memory", f"{self.worker_mb}m",
                "--work-dir", work, "--webui-port", str(free_port()), self.master], env=env)
        self.services.wait_for(lambda: self.alive_workers() >= self.workers,
                               f"{self.workers} Spark worker(s)")

    def alive_workers(self) -> int:
        return int(get_json(f"http://127.0.0.1:{self.ui_port}/json/").get("aliveworkers", 0))
