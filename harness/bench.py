"""Measurements of the lab itself (not of Tomcat): how long a redeploy takes."""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from harness.deploy import backend as make_backend
from harness.spec import load_spec


def redeploy_times(starts: int = 5, chapter: str = "smoke", backend: str = "local") -> list[float]:
    """Start-to-healthy milliseconds of `starts` fresh servers with the first step's configuration."""
    step = load_spec(chapter).steps[0]
    server_backend = make_backend(backend)
    server_backend.check()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(starts):
            server = server_backend.start(step, Path(tmp) / f"server-{n}.log")
            try:
                times.append(server.wait_healthy())
            finally:
                server.stop()
    return times


def describe(times: list[float]) -> str:
    return (f"median {statistics.median(times):.0f} ms, min {min(times):.0f}, max {max(times):.0f} "
            f"over {len(times)} starts: {', '.join(f'{t:.0f}' for t in times)}")
