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

import pytest

from harness import ROOT

TIMEOUT_S = 900  # a job still running this long after its start is stopped

@dataclass
class Job:
    name: str
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

    def wait(self) -> tuple[int, str, float]:
        """The job's exit code, its output and its wall time in seconds (stopped after TIMEOUT_S, exit code -9)."""
        if not self.finished:
            try:
                code = self.process.wait(timeout=max(1.0, TIMEOUT_S - (time.monotonic() - self.started)))
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
    """The jobs this machine can start, by the fixture that waits for each (Quarto on PATH; the Maven wrapper is in
    the repository)."""
    found = {}
    quarto = shutil.which("quarto")
    if quarto:  # the book renders from data/, whatever LAB_DATA_DIR says
        env = {k: v for k, v in os.environ.items() if k != "LAB_DATA_DIR"}
        found["book"] = Job("render", [quarto, "render"], ROOT, env)
    found["junit"] = Job("junit", ["./mvnw", "-B", "-q", "test"], ROOT / "sample-server", dict(os.environ))
    return found


WAITERS = ("book", "junit")  # the fixtures that wait for a job, whether or not this machine can start it
RUNNING: dict[str, Job] = {}  # by the fixture that waits for it


def start_needed(items) -> None:
    """Start every job a collected test needs, once."""
    for fixture, job in jobs().items():
        if fixture not in RUNNING and any(fixture in getattr(item, "fixturenames", ()) for item in items):
            job.start()
            RUNNING[fixture] = job


def result(fixture: str) -> tuple[int, str, float]:
    """What the job behind `fixture` gave (waiting for it): exit code, output, seconds; a failed test if no test
    of this session started it."""
    job = RUNNING.get(fixture)
    if job is None:
        pytest.fail(f"no background job was started for `{fixture}`: conftest starts it when a collected test "
                    "needs the fixture")
    return job.wait()


def stop_all() -> None:
    for job in RUNNING.values():
        job.stop()
