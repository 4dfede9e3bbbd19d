"""What every server backend shares: a fresh sample server for a step, started, checked healthy and stopped for sure.

A backend returns a `RunningServer`; the local backend runs the jar as a child process, the docker backend
(harness.lab.backends.docker) subclasses it for a container. Every child the lab starts (java, k6, nginx) is started
by harness.lab.backends.process: its own session and PR_SET_PDEATHSIG. A RunningServer is the sample server's
RunningService (harness.lab.services.base): same pid/url/alive/exit_reason/wait_ready/info/stop/log_tail.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness import SERVER_DIR
# The process mechanics every backend and service kind shares, in harness.lab.backends.process (re-exported here).
from harness.lab.backends.process import (  # noqa: F401
    PASSED_ENV, STOP_GRACE_S, StepFailed, check_port_free, http_json, listener, spawn, terminate,
)
from harness.lab.services.base import RunningService
from harness.lab.spec import Step

JAR = SERVER_DIR / "target" / "sample-server.jar"
# Chapter 5's jar: the same application with the pair-room API's stack (JPA, Hibernate, HikariCP, the PostgreSQL driver),
# which the plain jar leaves out so that every other chapter's server starts and runs without it (sample-server/pom.xml).
PAIR_ROOM_JAR = SERVER_DIR / "target" / "sample-server-pair-room.jar"
PAIR_ROOM_PROFILE = "pair-room"  # the Spring profile that turns on the pair-room API and its database


CDS_JAR = SERVER_DIR / "target" / "extracted" / "sample-server.jar"


CDS_ARCHIVE = SERVER_DIR / "target" / "extracted" / "app.jsa"


HEALTH_TIMEOUT_S = 90


class RunningServer(RunningService):
    """A started sample server: the implicit service `server`; ready when Actuator says UP, its effective
    configuration read back from Actuator (pid, liveness, stop and log tail as every RunningService)."""

    backend = "local"
    kind = "tomcat"

    def __init__(self, step: Step, proc: subprocess.Popen, log: Path, started: float):
        super().__init__("server", proc, log, started, f"http://{step.address}:{step.port}")
        self.step = step
        self.management_url = f"http://{step.address}:{step.management_port}"

    def wait_healthy(self, timeout_s: float = HEALTH_TIMEOUT_S) -> float:
        """Block until Actuator says UP; returns start-to-healthy milliseconds."""
        deadline = self.started + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise StepFailed(f"server exited during start-up ({self.exit_reason()}): {self.log_tail()}")
            try:
                if http_json(f"{self.management_url}/actuator/health", 1.0).get("status") == "UP":
                    healthy_ms = (time.monotonic() - self.started) * 1000
                    self._check_identity()
                    return healthy_ms
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise StepFailed(f"server not healthy after {timeout_s:.0f} s: {self.log_tail()}")

    wait_ready = wait_healthy

    def _check_identity(self) -> None:
        """The server that answered must be ours, not one another process started on the same ports."""
        pid = self.info().get("pid")
        if pid != self.pid:
            raise StepFailed(f"another server (pid {pid}) answers on {self.management_url}, not the one started (pid {self.pid})")

    def info(self) -> dict:
        """Effective Tomcat settings and versions, read back from the running server."""
        return http_json(f"{self.management_url}/actuator/info").get("lab", {})

    def cgroups(self) -> dict:
        """Cgroups sampled besides the processes, by name (the docker backend: its container)."""
        return {}


# The JVM's heap rule, the same on every backend: at most this share of the memory the server may use (the machine's
# RAM for a local process, the container's --memory limit in docker). It is the JVM's own default, written out so
# that neither backend depends on an image's or a JDK's choice; step.json records it under `jvm_options`.
JVM_OPTIONS = ("-XX:MaxRAMPercentage=25",)


def pair_room(step: Step) -> bool:
    return bool(step.server.get("PAIR_ROOM"))


def server_env(step: Step, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The step's server settings as environment variables (booleans as Spring writes them), what the services started
    before it give it (`extra`: the database's SPRING_DATASOURCE_*), and the JVM options (JAVA_TOOL_OPTIONS: read by
    any java launcher, local or in a container)."""
    env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in step.server.items()}
    if pair_room(step):
        env["SPRING_PROFILES_ACTIVE"] = PAIR_ROOM_PROFILE
    return env | (extra or {}) | {"JAVA_TOOL_OPTIONS": " ".join(JVM_OPTIONS)}
