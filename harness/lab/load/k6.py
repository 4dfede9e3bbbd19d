"""k6 for a step, and its output as one row per request.

The lab script (experiments/k6/lab.js) takes the step's load plan and target from -e variables. k6 writes one
CSV row per metric sample; with the `vu` and `iter` system tags and a counter emitted just before
each request, the rows of one request share (vu, iter): the counter gives its start, `http_reqs`
its end, status and error. A request with a start and no end was cut off when k6 stopped.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from harness import EXPERIMENTS, TOOLS, LabError
from harness.lab.load.options import load_plan
from harness.lab.spec import Step
from harness.lab.store import answered

K6_VERSION = "v1.8.1"


K6_MODULE = "go.k6.io/k6"


SCRIPT = EXPERIMENTS / "k6" / "lab.js"


PHASES = {  # k6 metric → requests.parquet column (ms)
    "http_req_duration": "http_req_duration_ms",
    "http_req_blocked": "blocked_ms",
    "http_req_connecting": "connecting_ms",
    "http_req_waiting": "waiting_ms",
}


DASHBOARD_REPORT = "k6-report.html"


DASHBOARD_PERIOD_MS = 1000  # with the default 10 s, k6 skips the report of a step shorter than two periods


INTERRUPTED_CODE = -1  # no response recorded: k6 stopped the iteration (gracefulStop / maxDuration)


def local_k6() -> Path:
    return TOOLS / "bin" / "k6"


def k6_version(binary: str | Path) -> str:
    try:
        out = subprocess.run([str(binary), "version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return ""
    match = re.search(r"k6 (v\d+\.\d+\.\d+)", out)
    return match.group(1) if match else ""


def find_k6() -> Path:
    """The pinned k6: the project-local build first, else one on PATH of the same version."""
    for candidate in (local_k6(), shutil.which("k6")):
        if candidate and Path(candidate).exists() and k6_version(candidate) == K6_VERSION:
            return Path(candidate)
    on_path = shutil.which("k6")
    found = f" (the k6 on PATH is {k6_version(on_path) or 'unreadable'})" if on_path else ""
    raise LabError(f"k6 {K6_VERSION} not found{found}: run `invoke setup` to build it into {local_k6().parent}")


def k6_command(k6: Path, step: Step, target: str, workdir: Path, dashboard: bool = False) -> tuple[list[str], dict]:
    """The k6 command line and the environment additions for a step: its load plan (options.load_plan) and target."""
    params = {"LAB_PLAN": json.dumps(load_plan(step.load), separators=(",", ":")), "TARGET": target}
    if dashboard:  # k6's dashboard drops the last unfinished period: the script lingers past the last response
        params["LAB_LINGER_MS"] = DASHBOARD_PERIOD_MS * 3 // 2
    cmd = [str(k6), "run", "--no-usage-report", "--no-color", "--quiet", "--address", "",
           "--out", f"csv={workdir / 'k6.csv.gz'}", "--summary-export", str(workdir / "k6-summary.json")]
    for key, value in params.items():
        cmd += ["-e", f"{key}={value}"]
    env = {"K6_CSV_TIME_FORMAT": "unix_micro", "K6_NO_USAGE_REPORT": "true"}
    if dashboard:
        env |= {"K6_WEB_DASHBOARD": "true", "K6_WEB_DASHBOARD_HOST": "127.0.0.1",
                "K6_WEB_DASHBOARD_PERIOD": f"{DASHBOARD_PERIOD_MS}ms", "K6_WEB_DASHBOARD_EXPORT": str(workdir / DASHBOARD_REPORT)}
    return cmd + [str(SCRIPT)], env


def summary_counts(summary_path: Path) -> dict:
    """Totals from k6's end-of-test summary (--summary-export) for step.json's `requests`: dropped_iterations (an
    open-model step that dropped some has not measured what it asked), and extract_failed when a scenario's value
    to extract was missing. Zero when k6 wrote no summary or never counted one."""
    try:
        metrics = json.loads(summary_path.read_text()).get("metrics", {})
    except (OSError, ValueError):
        metrics = {}
    counts = {"dropped_iterations": int(metrics.get("dropped_iterations", {}).get("count", 0))}
    if metrics.get("lab_extract_failed", {}).get("count"):
        counts["extract_failed"] = int(metrics["lab_extract_failed"]["count"])
    return counts


def read_requests(csv_path: Path) -> pd.DataFrame:
    """k6's CSV output (gzip or plain) → one row per request, sorted by start time."""
    raw = pd.read_csv(csv_path, dtype={"error": "string", "extra_tags": "string", "metadata": "string"}, low_memory=False)
    # k6 v1 writes the high-cardinality vu and iter as sample metadata, older versions as extra tags.
    tags = raw.get("metadata", pd.Series("", index=raw.index)).fillna("") + "&" + raw["extra_tags"].fillna("")
    for tag in ("vu", "iter"):
        raw[tag] = tags.str.extract(rf"(?:^|&){tag}=(\d+)", expand=False).astype("Int64")
    raw["ts_ms"] = raw["timestamp"] / 1000  # unix_micro → ms
    starts = raw[raw.metric_name == "lab_request_started"][["vu", "iter", "ts_ms"]]
    ends = raw[raw.metric_name == "http_reqs"][["vu", "iter", "ts_ms", "status", "error_code", "error"]]
    phases = raw[raw.metric_name.isin(PHASES)].pivot_table(
        index=["vu", "iter"], columns="metric_name", values="metric_value", aggfunc="first"
    ).rename(columns=PHASES)
    for duplicated, what in ((starts, "start"), (ends, "end")):
        if duplicated.duplicated(["vu", "iter"]).any():
            raise ValueError(f"k6 CSV has two request {what}s for one (vu, iter): the script sends one request per iteration")
    rows = starts.rename(columns={"ts_ms": "start_ms"}).merge(
        ends.rename(columns={"ts_ms": "end_ms"}), on=["vu", "iter"], how="left"
    ).merge(phases.reset_index(), on=["vu", "iter"], how="left")
    cut = rows["end_ms"].isna()
    rows["status"] = rows["status"].fillna(0).astype("int64")
    rows["error_code"] = rows["error_code"].fillna(0).astype("int64")
    rows.loc[cut, "error_code"] = INTERRUPTED_CODE
    rows["error"] = rows["error"].fillna("").astype("string")
    rows.loc[cut, "error"] = "interrupted: k6 stopped before a response"
    rows["duration_ms"] = rows["end_ms"] - rows["start_ms"]
    rows = rows.rename(columns={"iter": "iteration"})
    for column in PHASES.values():
        if column not in rows:
            rows[column] = float("nan")
    ordered = ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error", *PHASES.values()]
    return rows[ordered].sort_values(["start_ms", "vu"]).reset_index(drop=True)


def request_counts(requests: pd.DataFrame, asked: int) -> dict:
    ok = answered(requests)
    return {
        "asked": asked,
        "issued": int(len(requests)),
        "succeeded": int(ok.sum()),
        "failed": int((~ok).sum()),
        "interrupted": int((requests["error_code"] == INTERRUPTED_CODE).sum()),
        "errors": {str(k): int(v) for k, v in requests.loc[~ok, "error"].replace("", "http status").value_counts().items()},
    }


class K6Tool:
    name = "k6"

    def __init__(self):
        self.binary = find_k6()

    def version(self) -> str:
        return k6_version(self.binary)

    def command(self, step: Step, target: str, workdir: Path, dashboard: bool) -> tuple[list[str], dict]:
        return k6_command(self.binary, step, target, workdir, dashboard)

    def collect(self, workdir: Path) -> pd.DataFrame | None:
        """Requests from k6's CSV (then dropped: the parquet holds the same rows); None if k6 wrote none."""
        csv_path = workdir / "k6.csv.gz"
        if not csv_path.exists():
            return None
        requests = read_requests(csv_path)
        csv_path.unlink()
        return requests
