"""What every server backend shares: a fresh sample server for a step, started, checked healthy and stopped for sure.

A backend returns a `RunningServer`; the local backend runs the jar as a child process, the docker backend
(harness.lab.backends.docker) subclasses it for a container. Every child the lab starts (java, k6) gets its own
session, so the user's Ctrl-C reaches only the harness, which then stops them; and PR_SET_PDEATHSIG, so they die
even if the harness itself is killed.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from harness import SERVER_DIR, LabError
from harness.lab.spec import Step

JAR = SERVER_DIR / "target" / "sample-server.jar"


CDS_JAR = SERVER_DIR / "target" / "extracted" / "sample-server.jar"


CDS_ARCHIVE = SERVER_DIR / "target" / "extracted" / "app.jsa"


HEALTH_TIMEOUT_S = 90


STOP_GRACE_S = 10


PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "JAVA_HOME", "TMPDIR")


class StepFailed(Exception):
    """The step could not be measured; its reason goes into step.json and the run goes on."""


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def spawn(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    """Start a child in its own session, output appended to `log`, killed if the harness dies."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_die_with_parent,
        )


def terminate(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int:
    """SIGTERM the child's process group, SIGKILL after `grace_s`; returns its exit code."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def check_port_free(address: str, port: int, what: str) -> None:
    """Refuse a port another process listens on (TIME-WAIT leftovers are fine, as for Tomcat)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                raise
            raise LabError(
                f"{what} port {port} on {address} is in use{_listener(port)}: stop that process, "
                f"or give the experiment another SERVER_PORT / MANAGEMENT_PORT"
            ) from None


def _listener(port: int) -> str:
    found = listener(port)
    return f" by {found[0]} (pid {found[1]})" if found else ""


def listener(port: int) -> tuple[str, int] | None:
    """The command name and pid of the process listening on a TCP port, when `ss -p` may see it."""
    out = subprocess.run(["ss", "-Hltnp", f"( sport = :{port} )"], capture_output=True, text=True).stdout
    match = re.search(r'users:\(\("([^"]+)",pid=(\d+)', out)
    return (match.group(1), int(match.group(2))) if match else None


def http_json(url: str, timeout: float = 2.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read())


class RunningServer:
    """A started server: its pid, health, effective configuration and stop."""

    backend = "local"

    def __init__(self, step: Step, proc: subprocess.Popen, log: Path, started: float):
        self.step, self.proc, self.log, self.started = step, proc, log, started
        self.management_url = f"http://{step.address}:{step.management_port}"
        self.url = f"http://{step.address}:{step.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_reason(self) -> str:
        code = self.proc.poll()
        return f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"

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

    def _check_identity(self) -> None:
        """The server that answered must be ours, not one another process started on the same ports."""
        pid = self.info().get("pid")
        if pid != self.pid:
            raise StepFailed(f"another server (pid {pid}) answers on {self.management_url}, not the one started (pid {self.pid})")

    def info(self) -> dict:
        """Effective Tomcat settings and versions, read back from the running server."""
        return http_json(f"{self.management_url}/actuator/info").get("lab", {})

    def step_meta(self) -> dict:
        """What the backend adds to step.json (the docker backend: image and container limits)."""
        return {}

    def cgroups(self) -> dict:
        """Cgroups sampled besides the processes, by name (the docker backend: its container)."""
        return {}

    def stop(self) -> int:
        return terminate(self.proc)

    def log_tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"


# The JVM's heap rule, the same on every backend: at most this share of the memory the server may use (the machine's
# RAM for a local process, the container's --memory limit in docker). It is the JVM's own default, written out so
# that neither backend depends on an image's or a JDK's choice; step.json records it under `jvm_options`.
JVM_OPTIONS = ("-XX:MaxRAMPercentage=25",)


def server_env(step: Step) -> dict[str, str]:
    """The step's server settings as environment variables (booleans as Spring writes them), and the JVM options
    (JAVA_TOOL_OPTIONS: read by any java launcher, local or in a container)."""
    env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in step.server.items()}
    return env | {"JAVA_TOOL_OPTIONS": " ".join(JVM_OPTIONS)}
