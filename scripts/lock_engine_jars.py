"""Regenerate the engine lock files (pipelines/engines/jvm/locks/*.json): which jars, from Maven
Central, make each Java process a Flink or Spark run needs, with their sha256.

Beam publishes ready-made job-server jars (``beam-runners-flink-1.19-job-server``), but the
Maven Central this project is built against serves none of them for any release (checked for
2.50-2.77: every ``*-job-server`` coordinate answers 404). It does serve the runners they are
made of - ``beam-runners-flink-1.19`` and ``beam-runners-spark-3`` of 2.62.0, with every
dependency - so c4forge resolves those with Maven once, here, and pins the result: at run time
``pipelines/engines/jvm/jars.py`` fetches exactly these files (plain HTTPS, no Maven needed), checks
each sha256 and starts the job server from them. Run with Maven on the PATH:

    .venv/bin/python scripts/lock_engine_jars.py            # all locks
    .venv/bin/python scripts/lock_engine_jars.py flink-1.19-job-server

A lock changes only when this script's specs change; say so in the commit.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from apache_beam.version import __version__ as BEAM

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ROOT / "pipelines" / "engines" / "jvm" / "locks"
FLINK, SPARK, SCALA = "1.19.0", "3.5.7", "2.12"

# What each process runs: the Maven coordinates to resolve, versions forced where two paths
# disagree, and the class it starts.
SPECS = {
    "flink-1.19-job-server": {
        "what": f"Beam {BEAM}'s Flink 1.19 job server (the classes of beam-runners-flink-1.19-job-server)",
        "dependencies": [f"org.apache.beam:beam-runners-flink-1.19:{BEAM}", "org.slf4j:slf4j-simple:1.7.30"],
        "managed": [],
        "main_class": "org.apache.beam.runners.flink.FlinkJobServerDriver",
    },
    "flink-1.19-cluster": {
        "what": f"Apache Flink {FLINK}: the JobManager and TaskManagers of a standalone cluster "
                "(the modules of flink-dist)",
        "dependencies": [f"org.apache.flink:{a}:{FLINK}" for a in (
            "flink-runtime", "flink-clients", "flink-java", "flink-streaming-java", "flink-optimizer",
            "flink-rpc-akka-loader")] + ["org.slf4j:slf4j-simple:1.7.36"],
        "managed": [],
        "main_class": "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
    },
    "spark-3-job-server": {
        "what": f"Beam {BEAM}'s Spark 3 job server with Spark {SPARK} (the classes of "
                "beam-runners-spark-3-job-server)",
        "dependencies": [f"org.apache.beam:beam-runners-spark-3:{BEAM}",
                         f"org.apache.spark:spark-core_{SCALA}:{SPARK}",
                         f"org.apache.spark:spark-streaming_{SCALA}:{SPARK}"],
        # Spark logs through slf4j 2 (log4j-slf4j2-impl); Beam's 1.7 API would silence it
        "managed": ["org.slf4j:slf4j-api:2.0.7"],
        "main_class": "org.apache.beam.runners.spark.SparkJobServerDriver",
    },
    "spark-3.5-cluster": {
        "what": f"Apache Spark {SPARK}: the master and workers of a standalone cluster",
        "dependencies": [f"org.apache.spark:spark-core_{SCALA}:{SPARK}"],
        # Maven's nearest-wins picks jackson-core 2.14.3 through a transitive path; Spark's own
        # distribution (its parent pom) ships 2.15.2, which jackson-databind 2.15.2 needs
        "managed": ["com.fasterxml.jackson.core:jackson-core:2.15.2"],
        "main_class": "org.apache.spark.deploy.master.Master",
    },
}


def dependency(coordinates: str) -> str:
    group, artifact, version = coordinates.split(":")
    return (f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version></dependency>")


def pom(name: str, spec: dict) -> str:
    managed = "".join(dependency(c) for c in spec["managed"])
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>c4forge.engines</groupId><artifactId>{name}</artifactId><version>1</version>
  <dependencyManagement><dependencies>{managed}</dependencies></dependencyManagement>
  <dependencies>{''.join(dependency(c) for c in spec['dependencies'])}</dependencies>
</project>
"""


def resolve(name: str, spec: dict) -> list[dict]:
    """Every runtime jar of the spec: its path in a Maven repository, sha256 and size."""
    repository = Path(os.environ.get("MAVEN_REPOSITORY", Path.home() / ".m2" / "repository"))
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "pom.xml").write_text(pom(name, spec))
        listing = Path(folder, "deps.txt")
        subprocess.run(["mvn", "-q", "-B", "-C", "dependency:list", "-DincludeScope=runtime",
                        "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}"],
                       cwd=folder, check=True)
        jars = []
        for line in listing.read_text().splitlines():
            line = line.strip()
            if not line.endswith(".jar") or ":" not in line:
                continue
            path = Path(line[line.index(str(repository)):])
            data = path.read_bytes()
            jars.append({"path": path.relative_to(repository).as_posix(),
                         "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
    return sorted(jars, key=lambda j: j["path"])


def main(names: list[str]) -> int:
    LOCKS.mkdir(parents=True, exist_ok=True)
    for name in names or list(SPECS):
        spec = SPECS[name]
        jars = resolve(name, spec)
        lock = {"name": name, "what": spec["what"], "beam": BEAM, "main_class": spec["main_class"],
                "dependencies": spec["dependencies"], "managed": spec["managed"], "jars": jars}
        (LOCKS / f"{name}.json").write_text(json.dumps(lock, indent=1) + "\n")
        print(f"{name}: {len(jars)} jars, {sum(j['size'] for j in jars) / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
