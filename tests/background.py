"""The suite's two slow jobs that measure nothing, started as the session starts so that they use the core pytest
leaves idle while the unit tests run: Quarto's render of the book (checked by test_site.py) and the sample server's
JUnit tests (test_junit.py). Each is waited for by the fixture that needs it, and conftest.py orders the session so
that every waiting test runs before the first end-to-end test: those measure real servers and must have the machine
to themselves. A job is started only when a collected test needs it; one still running when the session ends (a
failure, Ctrl-C) is stopped with its process group."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import ROOT


@dataclass
class Job:
    name: str
    fixture: str  # the fixture that waits for it: a test using it needs the job
    command: list[str]
    cwd: Path
    env: dict[str, str]
    process: subprocess.Popen | None = None
    log: Path | None = None
    started: float = 0.0
    finished: dict = field(default_factory=dict)

    def start(self) -> None:
        handle, name = tempfile.mkstemp(prefix=f"lab-{self.name}-", suffix=".log")
        self.log = Path(name)
        self.started = time.monotonic()
        self.process = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdout=handle,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        os.close(handle)

    def wait(self, timeout: float) -> tuple[int, str, float]:
        """The job's exit code, its output and its wall time in seconds (stopped after `timeout`, exit code -9)."""
        if not self.finished:
            try:
                code = self.process.wait(timeout=max(1.0, timeout - (time.monotonic() - self.started)))
            except subprocess.TimeoutExpired:
                self.stop()
                code = -9
            self.finished = {"code": code, "output": self.log.read_text(errors="replace"),
                             "seconds": time.monotonic() - self.started}
            self.log.unlink(missing_ok=True)
        return self.finished["code"], self.finished["output"], self.finished["seconds"]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()


def jobs() -> dict[str, Job]:
    """The jobs this machine can start (Quarto on PATH, the Maven wrapper in the repository)."""
    found = {}
    quarto = shutil.which("quarto")
    if quarto:  # the book renders from data/, whatever LAB_DATA_DIR says
        env = {k: v for k, v in os.environ.items() if k != "LAB_DATA_DIR"}
        found["render"] = Job("render", "book", [quarto, "render"], ROOT, env)
    server = ROOT / "sample-server"
    found["junit"] = Job("junit", "junit", ["./mvnw", "-B", "-q", "test"], server, dict(os.environ))
    return found


RUNNING: dict[str, Job] = {}
WAITERS = ("book", "junit")  # the fixtures that wait for a job, whether or not this machine can start it


def start_needed(items) -> None:
    """Start every job a collected test needs, once."""
    for name, job in jobs().items():
        if name not in RUNNING and any(job.fixture in getattr(item, "fixturenames", ()) for item in items):
            job.start()
            RUNNING[name] = job


def stop_all() -> None:
    for job in RUNNING.values():
        job.stop()
