"""ab (Apache Bench), the load tool of seed 002's article, behind the same interface as k6.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from harness.lab.load.tool import LoadTool
from harness import LabError
from harness.lab.spec import Step
from harness.lab.units import duration_ms

AB_SUMMARY = {  # ab's report line → ab-summary.json key
    "Complete requests": "complete_requests",
    "Failed requests": "failed_requests",
    "Non-2xx responses": "non_2xx_responses",
    "Time taken for tests": "time_taken_s",
    "Requests per second": "requests_per_s",
    "Time per request": "time_per_request_ms",
}


AB_START_RESOLUTION_MS = 1000  # ab -g gives each request's start in whole seconds


def find_ab() -> Path:
    ab = shutil.which("ab")
    if not ab:
        raise LabError("ab (ApacheBench) not found: install it, e.g. `apt-get install apache2-utils`")
    return Path(ab)


def ab_command(ab: Path, step: Step, target: str, workdir: Path) -> list[str]:
    """`ab -n iterations -c vus`; -r keeps going after socket errors, -k only when the spec reuses connections."""
    load = step.load
    cmd = [str(ab), "-r", "-n", str(load["iterations"]), "-c", str(load["vus"]),
           "-s", str(duration_ms(load["request_timeout"]) // 1000), "-g", str(workdir / "ab.tsv")]
    return cmd + (["-k"] if load["connection_reuse"] else []) + [f"{target}{load['path']}"]


def parse_ab_report(text: str) -> dict:
    """ab's end-of-test report → numbers (first value on each known line)."""
    summary = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key.strip() in AB_SUMMARY and rest.split():  # the first "Time per request" is per request
            summary.setdefault(AB_SUMMARY[key.strip()], float(rest.split()[0]))
    return summary


def read_ab_requests(tsv_path: Path) -> pd.DataFrame:
    """ab's -g output → one row per completed request (start to the second; duration exact)."""
    raw = pd.read_csv(tsv_path, sep="\t")
    rows = pd.DataFrame({
        "vu": pd.Series(-1, index=raw.index, dtype="int64"),  # ab does not say which connection slot
        "iteration": raw.index.astype("int64"),
        "start_ms": raw["seconds"].astype("float64") * 1000,
        "duration_ms": raw["ttime"].astype("float64"),
        "status": 200,  # -g lists answered requests; failures are only counted in the report
        "error_code": 0,
        "error": pd.Series("", index=raw.index, dtype="string"),
        "connecting_ms": raw["ctime"].astype("float64"),
        "waiting_ms": raw["wait"].astype("float64"),
    })
    rows["end_ms"] = rows["start_ms"] + rows["duration_ms"]
    ordered = ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error", "connecting_ms", "waiting_ms"]
    return rows[ordered].sort_values("start_ms", kind="stable").reset_index(drop=True)


def ab_version(ab: Path) -> str:
    out = subprocess.run([str(ab), "-V"], capture_output=True, text=True).stdout
    match = re.search(r"Version (\S+)", out)
    return match.group(1) if match else ""


class AbTool(LoadTool):
    name = "ab"

    def find(self) -> Path:
        return find_ab()

    def version(self) -> str:
        return ab_version(self.binary)

    def command(self, step: Step, target: str, workdir: Path, dashboard: bool, part: int = 1) -> tuple[list[str], dict]:
        return ab_command(self.binary, step, target, workdir), {}

    def collect(self, workdir: Path, step: Step | None = None) -> pd.DataFrame | None:
        """Requests from ab's -g file and its report (kept as ab-summary.json)."""
        tsv, log = workdir / "ab.tsv", workdir / f"{self.name}.log"
        if log.exists():
            summary = parse_ab_report(log.read_text(errors="replace"))
            summary["start_resolution_ms"] = AB_START_RESOLUTION_MS
            (workdir / "ab-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if not tsv.exists():
            return None
        requests = read_ab_requests(tsv)
        tsv.unlink()
        return requests
