"""The one interface of the lab's load tools (k6, ab, wrk)."""
from __future__ import annotations

import os
from pathlib import Path


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


# A proxy of the user's shell: k6 (Go) would send a step's requests to any address but loopback through it, chapter
# 6's hosts included. Every spelling Go and curl-like tools read.
PROXY_VARIABLES = {f"{name}_proxy" for name in ("http", "https", "all", "no")}


def tool_environment(extra: dict) -> dict:
    """The load tool's environment (k6, ab or wrk): the user's, minus what would change the measurement: any K6_*
    setting, the variables lab.js reads (LAB_*, TARGET), which k6 would hand it from the user's shell where the
    step sets none (LAB_LINGER_MS), and proxies (HTTP_PROXY …); then the tool's own (`extra`)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("K6_", "LAB_")) and k != "TARGET" and k.lower() not in PROXY_VARIABLES} | extra
