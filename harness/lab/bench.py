"""Measurements of the lab itself (not of Tomcat): how long a redeploy takes."""
from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from harness import LabError
from harness.lab import backends
from harness.lab.backends.process import StepFailed
from harness.lab.samplers import now_ms, read_proc
from harness.lab.services.deploy import Deployment, check_services
from harness.lab.spec import Step, load_spec


def redeploys(step: Step, backend: str, workdir: Path, rows: list[dict], progress=None) -> dict:
    """Start `step.starts` fresh servers one after another, each timed from start to ready, then stopped. Appends a
    row per start (start-to-ready ms, RSS when ready) to `rows` as it comes, so a failure keeps what was measured;
    returns what the last server said of itself (step.json's top-level facts)."""
    facts: dict = {}
    for n in range(1, step.starts + 1):
        started_ms = now_ms()
        services = Deployment(step, workdir, backend=backend)
        try:
            services.start()
            rss = read_proc(services.server.pid)["rss_bytes"]
        finally:
            services.stop()
            facts = services.server_meta
        rows.append({"start": n, "started_ms": started_ms, "startup_ms": facts["startup_ms"], "rss_bytes": rss})
        if progress:
            progress(f"    start {n}/{step.starts}: ready after {facts['startup_ms']} ms")
    return facts


def redeploy_times(starts: int = 5, chapter: str = "smoke", backend: str = "local") -> list[float]:
    """Start-to-ready milliseconds of `starts` fresh servers with the chapter's first step's configuration."""
    step = load_spec(chapter).steps[0]
    step = replace(step, kind="redeploy", starts=starts)
    backends.check(backend)
    check_services([step], backend)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 closes it to the servers' users, who may lack CAP_DAC_READ_SEARCH
        try:
            redeploys(step, backend, Path(tmp), rows)
        except StepFailed as err:  # a run keeps it as the step's reason; here there is no step to keep it in
            raise LabError(f"start {len(rows) + 1} of {starts} failed: {err}") from None
    return [row["startup_ms"] for row in rows]


def describe(times: list[float]) -> str:
    return (f"median {statistics.median(times):,.0f} ms, min {min(times):,.0f}, max {max(times):,.0f} "
            f"over {len(times)} starts: {', '.join(f'{t:,.0f}' for t in times)}")
