"""Measurements of the lab itself (not of Tomcat): how long a redeploy takes."""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from harness.lab.backends import backend as make_backend
from harness.lab.backends.local import check_launches
from harness.lab.samplers import now_ms, read_proc
from harness.lab.spec import Step, load_spec


def redeploys(step: Step, server_backend, starts: int, log: Path, rows: list[dict], info: dict, progress=None) -> None:
    """Start `starts` fresh servers one after another. Appends a row per start (start-to-healthy ms, RSS when
    healthy) to `rows` as it comes, so a failure keeps what was measured; `info` gets the server's own report."""
    for n in range(1, starts + 1):
        started_ms = now_ms()
        server = server_backend.start(step, log)
        try:
            healthy_ms = server.wait_healthy()
            rss = read_proc(server.pid)["rss_bytes"]
            info.update(server.info())
        finally:
            server.stop()
        rows.append({"start": n, "started_ms": started_ms, "startup_ms": round(healthy_ms, 1), "rss_bytes": rss})
        if progress:
            progress(f"    start {n}/{starts}: healthy after {healthy_ms:.0f} ms")


def redeploy_times(starts: int = 5, chapter: str = "smoke", backend: str = "local") -> list[float]:
    """Start-to-healthy milliseconds of `starts` fresh servers with the chapter's first step's configuration."""
    step = load_spec(chapter).steps[0]
    server_backend = make_backend(backend)
    server_backend.check()
    check_launches([step])
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        redeploys(step, server_backend, starts, Path(tmp) / "server.log", rows, {})
    return [row["startup_ms"] for row in rows]


def describe(times: list[float]) -> str:
    return (f"median {statistics.median(times):.0f} ms, min {min(times):.0f}, max {max(times):.0f} "
            f"over {len(times)} starts: {', '.join(f'{t:.0f}' for t in times)}")
