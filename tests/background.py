"""The suite's two slow jobs that measure nothing, started as the session starts so that they use the core pytest
leaves idle while the unit tests run: Quarto's render of the book (the site checked by test_site.py; the notebooks
it executed checked by test_book.py, which so need not run every chapter a second time) and the sample server's JUnit
tests (test_junit.py). Each is waited for by the fixtures that need it, and conftest.py orders the session so that
every waiting test runs before the first end-to-end test: those measure real servers and must have the machine to
themselves. A job is started only when a collected test needs it; one still running when the session ends (a
failure, Ctrl-C) is stopped with its process group."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import nbformat
import pytest

from harness import ROOT

TIMEOUT_S = 900  # a job still running this long after its start is stopped
STOP_GRACE_S = 15  # between the Ctrl-C that stops a job and its SIGKILL

@dataclass
class Job:
    name: str
    command: list[str]
    cwd: Path
    env: dict[str, str]
    waiters: tuple[str, ...]  # the fixtures that wait for it
    tidy: Callable[[], None] | None = None  # removes what it leaves in the work tree: before it starts, and at the end
    process: subprocess.Popen | None = None
    log: Path | None = None
    started: float = 0.0
    started_at: float = 0.0  # wall clock, to tell the files the job wrote
    finished: dict = field(default_factory=dict)
    timeout_s: float = TIMEOUT_S

    def start(self) -> None:
        if self.tidy:
            self.tidy()
        self.started_at = time.time()
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
                code = self.process.wait(timeout=max(1.0, self.timeout_s - (time.monotonic() - self.started)))
            except subprocess.TimeoutExpired:
                self.stop()
                code = -9
            self.finished = {"code": code, "output": self.log.read_text(errors="replace"),
                             "seconds": time.monotonic() - self.started}
            self.log.unlink(missing_ok=True)
        return self.finished["code"], self.finished["output"], self.finished["seconds"]

    def stop(self) -> None:
        """Ctrl-C to its process group (a lane's runs save and clean up as on a user's Ctrl-C), then SIGKILL to what
        is left of the group; nothing for a job that has ended (its group may be gone, its pid another's)."""
        if not self.process or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGINT)
            self.process.wait(timeout=STOP_GRACE_S)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


RENDER_WAITERS = ("book", "rendered_notebooks")
WAITERS = (*RENDER_WAITERS, "junit")  # the fixtures that wait for a job, whether or not this machine can start it


def jobs() -> list[Job]:
    """The jobs this machine can start (Quarto on PATH; the Maven wrapper is in the repository)."""
    found = []
    quarto = shutil.which("quarto")
    if quarto:  # as `invoke render` runs it (harness.book.quarto); each page's executed notebook is kept
        found.append(Job("render", [sys.executable, "-m", "harness.book.quarto", "-M", "keep-ipynb:true"], ROOT,
                         dict(os.environ), RENDER_WAITERS, tidy=remove_notebooks))
    found.append(Job("junit", ["./mvnw", "-B", "-q", "test"], ROOT / "sample-server", dict(os.environ), ("junit",)))
    return found


RUNNING: dict[str, Job] = {}  # by name


def start_needed(items) -> None:
    """Start every job a collected test needs, once."""
    for job in jobs():
        needed = any(set(job.waiters) & set(getattr(item, "fixturenames", ())) for item in items)
        if job.name not in RUNNING and needed:
            job.start()
            RUNNING[job.name] = job


def waited_by(fixture: str) -> Job | None:
    """The started job that `fixture` waits for, if any."""
    return next((job for job in RUNNING.values() if fixture in job.waiters), None)


def result(fixture: str) -> tuple[int, str, float]:
    """What the job behind `fixture` gave (waiting for it): exit code, output, seconds; a failed test if no test
    of this session started it."""
    job = waited_by(fixture)
    if job is None:
        pytest.fail(f"no background job was started for `{fixture}`: conftest starts it when a collected test "
                    "needs the fixture")
    return job.wait()


def render_job(fixture: str) -> Job:
    """The render `fixture` waits for; without Quarto on PATH the test is skipped, or failed where
    LAB_REQUIRE_QUARTO=1 (the site must be checked there)."""
    job = waited_by(fixture)
    if job is None:
        missing_quarto()
    return job


def missing_quarto() -> NoReturn:
    """The test that needs Quarto is skipped for want of it, or failed where LAB_REQUIRE_QUARTO=1 (the book must be
    rendered there)."""
    reason = "quarto not on PATH: install it from https://quarto.org/docs/get-started/ to render the book"
    if os.environ.get("LAB_REQUIRE_QUARTO") == "1":
        pytest.fail(f"{reason} (LAB_REQUIRE_QUARTO=1: the site must be checked, not skipped)")
    pytest.skip(reason)


def kept_notebooks() -> list[Path]:
    return [*ROOT.glob("*.quarto_ipynb*"), *ROOT.glob("chapters/*.quarto_ipynb*")]


def remove_notebooks() -> None:
    """Quarto numbers a page's notebook after any left beside it (x.quarto_ipynb_1): none may be left."""
    for path in kept_notebooks():
        path.unlink(missing_ok=True)


def executed_notebooks() -> dict[str, nbformat.NotebookNode]:
    """The notebooks this session's render executed, by page (`chapters/x.qmd`), their code cells only; {} when no
    render ran or it failed. A page Quarto kept frozen ran no cell (no execution counts) and is left out, as is a
    notebook older than the render: their pages must be executed by whoever needs them."""
    job = waited_by("rendered_notebooks")
    if job is None or job.wait()[0] != 0:
        return {}
    found = {}
    for path in (p for p in kept_notebooks() if p.suffix == ".quarto_ipynb"):
        notebook = nbformat.reads(path.read_text(), as_version=4)
        notebook.cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
        ran = notebook.cells and all(cell.get("execution_count") for cell in notebook.cells)
        if ran and path.stat().st_mtime >= job.started_at:
            found[str(path.relative_to(ROOT).with_suffix(".qmd"))] = notebook
    return found


def stop_all() -> None:
    for job in RUNNING.values():
        job.stop()
        if job.tidy:  # what it left was read by then
            job.tidy()
