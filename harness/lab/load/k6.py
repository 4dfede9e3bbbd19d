"""k6 for a step, and its output as a recording (harness.lab.load.recording: per request or per second).

The lab script (experiments/k6/lab.js) reads the step's load plan from a file of the step's folder, whose path and the
target k6's environment holds, not its command line, where `ps` would show them to every user (harness.lab.load.plan).
k6-operator's runners get them the same way, the plan beside the script (harness.lab.load.kubernetes).

k6 writes one CSV row per metric sample; recording.py streams them into one row per request or per-second series.
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from harness.lab.load.tool import LoadTool
from harness import EXPERIMENTS, TOOLS, LabError
from harness.lab.load.options import peak_vus
from harness.lab.load.plan import k6_environment, write_plan
from harness.lab.load.recording import (  # noqa: F401 (read_requests, PHASES: the k6 reader's API, kept here)
    INTERRUPTED_CODE,
    INTERRUPTED_ERROR,
    PHASES,
    Recording,
    read_requests,
    record,
    record_mode,
)
from harness.lab.spec import Step
from harness.lab.store import answered

K6_VERSION = "v1.8.1"


K6_MODULE = "go.k6.io/k6"


SCRIPT = EXPERIMENTS / "k6" / "lab.js"
# k6 merges a config file into every test's options, by default the user's own (~/.config/k6/config.json, written by
# `k6 cloud login` and by hand): its noVUConnectionReuse, minIterationDuration, tags or outputs would change a step
# where lab.js sets none. An empty one of the lab's replaces it.
EMPTY_CONFIG = Path(__file__).with_name("k6-config.json")


DASHBOARD_REPORT = "k6-report.html"


DASHBOARD_PERIOD_MS = 1000  # with the default 10 s, k6 skips the report of a step shorter than two periods


LINGER_VARIABLE = "LAB_LINGER_MS"  # lab.js lingers this long after the last response (with the dashboard only)


# Plain CSV, not gzip: k6 spends ~12 % more CPU per request compressing (measured at saturation, issue 13); the file
# is streamed and deleted once aggregated (gzipped only when it could not be read, to keep for a look).
CSV_FILE = "k6.csv"
SUMMARY_FILE = "k6-summary.json"


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


def part_name(name: str, part: int) -> str:
    """The file of k6 process `part` (1, 2, …): the first keeps the one-process name (k6.csv), the others k6-2.csv …"""
    stem, dot, suffix = name.partition(".")
    return name if part == 1 else f"{stem}-{part}{dot}{suffix}"


def segment_args(part: int, parts: int) -> list[str]:
    """k6's execution segment of process `part` of `parts`: equal shares of the test, in one sequence so that the
    processes together run exactly what one would (k6-operator splits a test over pods the same way)."""
    if parts == 1:
        return []
    cuts = ["0", *(f"{i}/{parts}" for i in range(1, parts)), "1"]
    return ["--execution-segment", f"{cuts[part - 1]}:{cuts[part]}", "--execution-segment-sequence", ",".join(cuts)]


def source_args(step: Step, part: int, parts: int) -> list[str]:
    """On loopback, each k6 process of a split test connects from a source address of its own (127.0.<part>.1: every
    127/8 address is the loopback's), so each has the whole ephemeral port range towards the one server address, as
    the client hosts of network = "hosts" do. One process keeps the kernel's choice (127.0.0.1)."""
    if parts == 1 or step.system["network"] != "loopback":
        return []
    return ["--local-ips", f"127.0.{part}.1"]


def k6_command(k6: Path, step: Step, target: str, workdir: Path, dashboard: bool = False,
               part: int = 1) -> tuple[list[str], dict]:
    """The k6 command line and the environment additions for a step: its load plan (options.load_plan), written into
    `workdir` for lab.js to open, and target (in the environment: lab.js reads __ENV, which k6 fills from its
    environment and -e alike); with load.processes > 1, the execution segment of process `part` and files of its own
    (the plan is one file for all)."""
    env = k6_environment(str(write_plan(step.load, workdir)), target)
    parts = step.load.get("processes", 1)
    cmd = [str(k6), "run", "--no-usage-report", "--no-color", "--quiet", "--address", "", "--config", str(EMPTY_CONFIG),
           "--out", f"csv={workdir / part_name(CSV_FILE, part)}",
           "--summary-export", str(workdir / part_name(SUMMARY_FILE, part)), *segment_args(part, parts),
           *source_args(step, part, parts)]
    if dashboard:  # k6's dashboard drops the last unfinished period: the script lingers past the last response
        env |= {LINGER_VARIABLE: str(DASHBOARD_PERIOD_MS * 3 // 2),
                "K6_WEB_DASHBOARD": "true", "K6_WEB_DASHBOARD_HOST": "127.0.0.1",
                "K6_WEB_DASHBOARD_PERIOD": f"{DASHBOARD_PERIOD_MS}ms", "K6_WEB_DASHBOARD_EXPORT": str(workdir / DASHBOARD_REPORT)}
    return cmd + [str(SCRIPT)], env


def summary_metrics(workdir: Path, parts: int) -> tuple[list[dict], str]:
    """Each k6 process's end-of-test metrics (--summary-export: k6-summary.json, k6-summary-2.json …), and why not all
    of them could be read ("" when they could): a full disk leaves a summary empty while k6 itself exits 0."""
    found = []
    for part in range(1, parts + 1):
        path = workdir / part_name(SUMMARY_FILE, part)
        try:
            metrics = json.loads(path.read_text())["metrics"]
            metrics.get("lab_request_started")  # a mapping, or AttributeError
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            return found, f"k6's summary {path.name} is missing or unreadable ({type(err).__name__}: {err}); a full disk?"
        found.append(metrics)
    return found, ""


def total(metrics: list[dict], name: str) -> int:
    """A counter summed over the k6 processes' summaries (0 where a summary has none)."""
    return sum(int((m.get(name) or {}).get("count", 0)) for m in metrics)


def summary_counts(workdir: Path, parts: int) -> dict:
    """Totals from k6's summaries for step.json's `requests`: dropped_iterations (an open-model step that dropped some
    has not measured what it asked), and extract_failed when a scenario's value to extract was missing. Zero where k6
    wrote no summary."""
    metrics, _ = summary_metrics(workdir, parts)
    failed = total(metrics, "lab_extract_failed")
    return {"dropped_iterations": total(metrics, "dropped_iterations")} | ({"extract_failed": failed} if failed else {})


def summaries_not_whole(workdir: Path, parts: int, issued: int) -> str:
    """Why k6's output is not whole ("" when it is): each process's summary readable, and the recording holding
    every request the summaries counted (`lab_request_started`). A disk that fills during the load truncates k6.csv
    and leaves the summary empty, while k6 itself exits 0."""
    metrics, problem = summary_metrics(workdir, parts)
    started = total(metrics, "lab_request_started")
    if problem:
        return problem
    if issued != started:
        return (f"k6.csv held {issued:,} requests where k6's summary counted {started:,} started: its output is not "
                f"whole (a full disk?)")
    return ""


def request_counts(recorded: Recording | pd.DataFrame, asked: int) -> dict:
    """step.json's `requests`: asked, issued, succeeded, failed, interrupted, errors (by message), dropped iterations;
    from per-request rows (a Recording of them, or ab's frame) or from a per-second recording's totals; a summary
    recording (wrk) carries them whole but for asked (no interrupted: wrk does not count them)."""
    if isinstance(recorded, Recording) and recorded.format == "summary":
        return {"asked": asked} | recorded.totals
    if isinstance(recorded, Recording) and recorded.format == "seconds":
        totals = recorded.totals
        interrupted = totals["started"] - totals["ended"]
        return {"asked": asked, "issued": totals["started"], "succeeded": totals["succeeded"],
                "failed": totals["started"] - totals["succeeded"], "interrupted": interrupted,
                "errors": totals["errors"] | ({INTERRUPTED_ERROR: interrupted} if interrupted else {}),
                "dropped_iterations": totals["dropped_iterations"]}
    requests = recorded.requests if isinstance(recorded, Recording) else recorded
    ok = answered(requests)
    counts = {
        "asked": asked,
        "issued": int(len(requests)),
        "succeeded": int(ok.sum()),
        "failed": int((~ok).sum()),
        "interrupted": int((requests["error_code"] == INTERRUPTED_CODE).sum()),
        "errors": {str(k): int(v) for k, v in requests.loc[~ok, "error"].replace("", "http status").value_counts().items()},
    }
    if isinstance(recorded, Recording):
        counts["dropped_iterations"] = recorded.totals.get("dropped_iterations", 0)
    return counts


VU_TAG = re.compile(rb"(?<![A-Za-z_])vu=(\d+)")


def _vu_shift(offset: int):
    return lambda match: b"vu=%d" % (int(match.group(1)) + offset)


def merge_parts(workdir: Path, parts: int, vus: int = 0) -> None:
    """The CSVs of a test split over k6 processes appended into one k6.csv (one header), so that it reads as if one
    k6 had run the whole test. Each process numbers its VUs from 1: process n's become (n - 1) × `vus` + its own, so
    that (vu, iter, req) still names one request."""
    if parts == 1:
        return
    with open(workdir / CSV_FILE, "ab") as merged:
        for part in range(2, parts + 1):
            path = workdir / part_name(CSV_FILE, part)
            if not path.exists():
                continue
            shift = _vu_shift((part - 1) * vus)
            with open(path, "rb") as rows:
                rows.readline()  # its header: the first file's stands for all
                for line in rows:
                    merged.write(VU_TAG.sub(shift, line))
            path.unlink()


class K6Tool(LoadTool):
    name = "k6"

    def find(self) -> Path:
        return find_k6()

    def version(self) -> str:
        return k6_version(self.binary)

    def command(self, step: Step, target: str, workdir: Path, dashboard: bool, part: int = 1) -> tuple[list[str], dict]:
        return k6_command(self.binary, step, target, workdir, dashboard, part)

    def not_whole(self, workdir: Path, step: Step, meta: dict) -> str:
        return (super().not_whole(workdir, step, meta)
                or summaries_not_whole(workdir, step.load.get("processes", 1), meta["requests"]["issued"]))

    def collect(self, workdir: Path, step: Step | None = None) -> Recording | None:
        """The step's recording from k6's CSV (then deleted: the tables hold what it said); None if k6 wrote none.
        An unreadable CSV is kept, gzipped, in the step directory."""
        if step is not None:
            merge_parts(workdir, step.load.get("processes", 1), peak_vus(step.load))
        csv_path = next((p for p in (workdir / CSV_FILE, workdir / f"{CSV_FILE}.gz") if p.exists()), None)
        if csv_path is None:
            return None
        mode = record_mode(step.system.get("record", "auto"), step.requests_asked) if step else "requests"
        try:
            recorded = record(csv_path, mode)
        except Exception:
            if csv_path.suffix == ".csv":
                with open(csv_path, "rb") as raw, gzip.open(f"{csv_path}.gz", "wb") as packed:
                    shutil.copyfileobj(raw, packed)
                csv_path.unlink()
            raise
        csv_path.unlink()
        return recorded
