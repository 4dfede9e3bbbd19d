"""The JDK the lab starts its Java services with (the sample server, the Netty service): JAVA_HOME's when set, else
the java on PATH, checked to run and to be 17 or newer, with where it came from in the message. Imports nothing of the
lab, so the backends and the service kinds can both use it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
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
