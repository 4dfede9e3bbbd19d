"""wrk (Debian's 4.1.0), a cross-check load generator for closed loops, behind the same interface as k6 and ab.

wrk runs constant-vus only: `vus` connections, each sending its next GET of load.path as soon as the last response
arrived, for `duration`. It records no per-request rows: its end-of-test summary (written by wrk_summary.lua's done()
hook) becomes wrk-summary.json in the step directory and a Recording of format "summary" (totals only, no tables).

What wrk's counters mean (wrk.c, 4.1.0):
- `requests`: responses received, whatever their status;
- `errors.status`: those with a status above 399;
- `errors.timeout`: those that arrived --timeout or more after their request was sent (counted in `requests`, left
  out of the latency histogram); a request never answered is counted nowhere;
- `errors.connect`, `read`, `write`: socket errors (a refused connect, a connection closed or reset before its
  response was complete, a failed send); each cost a request its response, and wrk reconnects.
Hence issued = requests + connect + read + write and succeeded = requests − status − timeout (a response both late
and 4xx/5xx is subtracted twice: wrk does not say how many there were). Requests in flight when wrk stops are dropped
unseen (at most one per connection): wrk has no graceful stop. Its latency percentiles include the values its
stats_correct adds for coordinated omission (see wrk_summary.lua). A target refusing connections from the start makes
wrk exit 1 before any load ("unable to connect"): the step fails.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness.lab.load.tool import LoadTool
from harness import LabError
from harness.lab.load.recording import Recording
from harness.lab.spec import Step
from harness.lab.units import duration_ms

SCRIPT = Path(__file__).with_name("wrk_summary.lua")
SUMMARY_FILE = "wrk-summary.json"
SUMMARY_ENV = "LAB_WRK_SUMMARY"  # where the script's done() writes (it cannot see the script's arguments)
ERRORS = {  # wrk's error counter → the step's `errors` key (k6's words where k6 has the same failure)
    "status": "http status",
    "timeout": "request timeout",
    "connect": "connect error",
    "read": "read error",
    "write": "write error",
}


def find_wrk() -> Path:
    wrk = shutil.which("wrk")
    if not wrk:
        raise LabError("wrk not found: install it, e.g. `apt-get install wrk` (Debian's wrk 4.1.0)")
    return Path(wrk)


def wrk_version(wrk: Path) -> str:
    """`wrk -v` prints "wrk 4.1.0 [epoll] …" (Debian: "wrk debian/4.1.0-3+b2 [epoll] …") and exits 1."""
    try:
        out = subprocess.run([str(wrk), "-v"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    match = re.search(r"^wrk (?:\S+/)?(\S+) \[", out, re.MULTILINE)
    return match.group(1) if match else ""


def wrk_threads(step: Step) -> int:
    """wrk's -t: one thread per CPU it may use (those placement.wrk pins it to, else the machine's), at most one per
    connection, and a divisor of the connections: wrk gives each thread connections // threads, so a remainder would
    never be opened."""
    cpus = len(step.placement.get("wrk", {}).get("cpus", [])) or os.cpu_count() or 1
    vus = step.load["vus"]
    return max(t for t in range(1, min(vus, cpus) + 1) if vus % t == 0)


def wrk_command(wrk: Path, step: Step, target: str, workdir: Path) -> tuple[list[str], dict]:
    """`wrk -c vus -t threads -d duration --timeout request_timeout --latency -s wrk_summary.lua URL` (whole seconds:
    options._check_tool); `Connection: close` on every request when the spec does not reuse connections."""
    load = step.load
    cmd = [str(wrk), "-c", str(load["vus"]), "-t", str(wrk_threads(step)),
           "-d", f"{duration_ms(load['duration']) // 1000}s", "--timeout", f"{duration_ms(load['request_timeout']) // 1000}s",
           "--latency", "-s", str(SCRIPT)]
    if not load["connection_reuse"]:
        cmd += ["-H", "Connection: close"]
    return cmd + [f"{target}{load['path']}"], {SUMMARY_ENV: str(workdir / SUMMARY_FILE)}


def summary_totals(summary: dict) -> dict:
    """wrk's summary → step.json's `requests` (without `asked`): issued, succeeded, failed, errors by kind."""
    errors = {kind: int(summary["errors"].get(kind, 0)) for kind in ERRORS}
    responses = int(summary["requests"])
    issued = responses + errors["connect"] + errors["read"] + errors["write"]
    succeeded = max(0, responses - errors["status"] - errors["timeout"])
    return {"issued": issued, "succeeded": succeeded, "failed": issued - succeeded,
            "errors": {ERRORS[kind]: n for kind, n in errors.items() if n}}


def collect_summary(workdir: Path, step: Step | None = None) -> Recording | None:
    """wrk-summary.json as the script wrote it, plus wrk's threads and connections (rewritten in place), as a
    summary Recording; None when wrk wrote none (it exited before its done() hook)."""
    path = workdir / SUMMARY_FILE
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    if step is not None:
        summary |= {"threads": wrk_threads(step), "connections": step.load["vus"]}
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return Recording("summary", totals=summary_totals(summary))


class WrkTool(LoadTool):
    name = "wrk"

    def find(self) -> Path:
        return find_wrk()

    def version(self) -> str:
        return wrk_version(self.binary)

    def command(self, step: Step, target: str, workdir: Path, dashboard: bool, part: int = 1) -> tuple[list[str], dict]:
        return wrk_command(self.binary, step, target, workdir)

    def collect(self, workdir: Path, step: Step | None = None) -> Recording | None:
        return collect_summary(workdir, step)
