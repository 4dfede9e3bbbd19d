"""The local backend (the default): the server jar as a child process of the harness, with CDS when trained.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from harness import SERVER_DIR, LabError
from harness.lab import placement
from harness.lab.backends.base import CDS_ARCHIVE, CDS_JAR, JAR, PASSED_ENV, RunningServer, server_env, spawn
from harness.lab.jdk import check_java_home, java_command
from harness.lab.spec import Step


class LocalProcessBackend:
    """The sample server as a local `java -jar` process (Class Data Sharing when `invoke setup` made the archive)."""

    name = "local"

    def check(self) -> None:
        check_java_home(java_command())
        if not JAR.exists():
            raise LabError(f"the server jar {JAR.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup`")

    def start(self, step: Step, log: Path, extra_env: dict[str, str] | None = None) -> RunningServer:
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ} | server_env(step, extra_env)
        started = time.monotonic()
        return RunningServer(step, spawn(placement.command(step, "server", server_command(step.system.get("launch", "auto"))), env, log), log, started)


def cds_ready() -> bool:
    return CDS_JAR.exists() and CDS_ARCHIVE.exists()


def server_command(launch: str = "auto") -> list[str]:
    """The JVM command: `cds` starts from the extracted jar with the trained archive, `jar` from the fat jar,
    `auto` uses CDS when `invoke setup` made the archive."""
    if launch == "cds" or (launch == "auto" and cds_ready()):
        return [java_command(), f"-XX:SharedArchiveFile={CDS_ARCHIVE}", "-Xshare:auto", "-jar", str(CDS_JAR)]
    return [java_command(), "-jar", str(JAR)]


def check_launches(steps) -> None:
    """A step that asks for CDS needs the archive `invoke setup` trains; say so before anything starts."""
    needing = [s.id for s in steps if s.system.get("launch") == "cds"]
    if needing and not cds_ready():
        raise LabError(f"step(s) {', '.join(needing)} start the server with Class Data Sharing, but "
                       f"{CDS_ARCHIVE.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup`")
