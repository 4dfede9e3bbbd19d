"""Building what the lab runs: the Maven projects (the sample server's wrapper builds every Java service) and the
one way a build command's failure is reported (its output's tail, in a LabError)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from harness import SERVER_DIR, LabError, say

MAVEN_WRAPPER = SERVER_DIR / "mvnw"


def maven_package(project: Path, what: str, skip_tests: bool = False) -> None:
    """`mvnw package` of `project` (a directory with a pom.xml) with the sample server's Maven wrapper. The jar is
    made anew each time (forceCreation): a jar the jar plugin found up to date was the one Spring Boot had already
    repackaged in place, and the sample server's pair-room jar, repackaged from it, started JarLauncher, not the app."""
    say(f"building {what} (Maven wrapper) …")
    run_build([str(MAVEN_WRAPPER), "-B", "-q", "-f", str(project / "pom.xml"), "-Dmaven.jar.forceCreation=true",
               "package"] + (["-DskipTests"] if skip_tests else []), cwd=project)


def run_build(cmd: list[str], **kwargs) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
        raise LabError(f"`{' '.join(cmd)}` failed (exit {done.returncode}):\n{tail}")
