"""The one interface of the lab's load tools (k6, ab, wrk)."""
from __future__ import annotations

from pathlib import Path

from harness.lab.backends.process import passed_env


class LoadTool:
    """What the runner asks of a load generator: its binary (found when made: a clear error names what to install),
    its version for step.json, the command of one process of a step, and what it recorded."""

    name = "tool"

    def __init__(self):
        self.binary = self.find()

    def find(self) -> Path:
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def command(self, step, target: str, workdir: Path, dashboard: bool, part: int = 1) -> tuple[list[str], dict]:
        """The argv and environment of process `part` (1 unless load.processes splits the test: k6 only)."""
        raise NotImplementedError

    def collect(self, workdir: Path, step=None):
        """The step's recording (harness.lab.load.recording.Recording, or ab's rows), None when it wrote nothing."""
        raise NotImplementedError

    def not_whole(self, workdir: Path, step, meta: dict) -> str:
        """Why the step's output is not whole ("" when it is), after the runner wrote its tables: a complete step
        has its recording."""
        if "recording" in meta:
            return ""
        return meta.get("reason") or f"{self.name} wrote no recording: see {self.name}.log.gz"


def tool_environment(extra: dict) -> dict:
    """The load tool's environment (k6, ab or wrk): the few variables of the user's shell every child gets
    (process.PASSED_ENV), then the tool's own (`extra`). Anything else could change the measurement: a K6_* setting,
    a variable lab.js reads (LAB_LINGER_MS, TARGET), a proxy (k6 would send chapter 6's requests through it),
    GOMAXPROCS or GOGC (k6's runtime), LD_PRELOAD."""
    return passed_env() | extra
