"""Java for the engines (Flink, Spark): found and checked before any jar or job server, and
without Beam, so the CLI checks it (`corpus estimate --runner flink-local`) before loading the
Beam SDK."""
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
    """The ``java`` to run (JAVA_HOME's, else the PATH's), checked to be new enough."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.isfile(java):
        raise EngineError(f"{purpose} needs Java {MIN_JAVA} or newer and none was found "
                          "(install a JDK, e.g. `apt install openjdk-17-jre-headless`, or set JAVA_HOME)")
    version = java_version(java)
    if version is not None and version < MIN_JAVA:
        raise EngineError(f"{purpose} needs Java {MIN_JAVA} or newer; {java} is Java {version} "
                          "(set JAVA_HOME to a newer JDK)")
    return java


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
