"""k6's CSV output, streamed in chunks (never read whole), → one row per request or per-second series.

The CSV contract (experiments/k6/lab.js writes it; docs/architecture.md shows where it fits): k6 writes one row per metric sample. Just before each
request the script counts `lab_request_started`; k6 then writes `http_reqs` and the phase trends with the request's
`status`, `error_code`, `error` (and `name`) tags and, as sample metadata (or extra tags in older k6), `vu`, `iter`
and `req` (the request's index within its iteration; missing = 0). (vu, iter, req) is one request: the counter gives
its start, `http_reqs` its end and outcome. A request with a start and no end was cut off when k6 stopped.

Two recordings (`system.record`; "auto" picks by the requests a step asks for):
- "requests": one row per request (harness.lab.store writes them in the small format);
- "seconds": per second of the step (offsets from t0_ms, the first sample's ms): `series` (started, requests ended,
  active VUs, dropped iterations, the exact max latency), `outcomes` (requests ended per status / k6 error code /
  error) and `latency` (a harness.lab.histogram of every request's http_req_duration). Nothing is sampled: the sums
  of the per-second counts are k6's totals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from harness.lab import histogram
from harness.lab.store import answered
from harness.lab.spec import RECORDS as RECORD_MODES

AUTO_MAX_REQUESTS = 20_000  # "auto": per-request rows up to this many requests asked, per-second series beyond
# (and for ramping-vus, whose request count is not fixed in advance: it asks 0)
CHUNK_ROWS = 200_000  # CSV rows parsed at a time (about 40 MB of pandas memory)
INTERRUPTED_CODE = -1  # no response recorded: k6 stopped the iteration (gracefulStop / maxDuration)
INTERRUPTED_ERROR = "interrupted: k6 stopped before a response"
PHASES = {  # k6 metric → requests column (ms)
    "http_req_duration": "http_req_duration_ms",
    "http_req_blocked": "blocked_ms",
    "http_req_connecting": "connecting_ms",
    "http_req_waiting": "waiting_ms",
}
STARTED = "lab_request_started"
KEY = ["vu", "iter", "req"]
# µs since 1970 are exact in a float64 (< 2^53)
_DTYPES = {"metric_name": "string", "timestamp": "float64", "metric_value": "float64", "error": "string",
           "error_code": "float64", "status": "float64", "name": "string", "extra_tags": "string", "metadata": "string"}


@dataclass
class Recording:
    """What a step recorded: `requests` (one row per request) or, for format "seconds", `tables` keyed by
    store.SERIES_TABLES with `second` offsets from t0_ms; `totals` counts the whole step either way. Format "summary"
    (wrk) has totals only: step.json's `requests` without `asked` (harness.lab.load.wrk.summary_totals)."""

    format: str
    requests: pd.DataFrame | None = None
    t0_ms: int = 0
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    totals: dict = field(default_factory=dict)


def record_mode(record: str, asked: int) -> str:
    """"requests" or "seconds" for a step's system.record and the requests it asks for."""
    if record not in RECORD_MODES:
        raise ValueError(f"system.record must be one of {', '.join(RECORD_MODES)}, got {record!r}")
    if record == "auto":
        return "requests" if 0 < asked <= AUTO_MAX_REQUESTS else "seconds"  # 0: ramping-vus, open-ended
    return record


def write_recording(writer, recorded: Recording | pd.DataFrame) -> dict:
    """Into a store.StepWriter: requests.parquet (small format) or the per-second tables; returns step.json's
    `recording` ({"format", "t0_ms"}; {"format": "summary"} for totals only, which write no table). A frame (ab's
    rows) is written as requests."""
    if isinstance(recorded, Recording) and recorded.format == "summary":
        writer.summary()
    elif isinstance(recorded, Recording) and recorded.format == "seconds":
        writer.series(recorded.t0_ms, recorded.tables)
    else:
        writer.table("requests", recorded.requests if isinstance(recorded, Recording) else recorded)
    return writer.recording


def record(csv_path: Path, mode: str) -> Recording:
    return read_seconds(csv_path) if mode == "seconds" else read_recording(csv_path)


def _chunks(csv_path: Path, columns: set[str]):
    """The CSV (plain or gzip) in frames of CHUNK_ROWS rows, with only these columns (those k6 wrote)."""
    wanted = {"metric_name", "timestamp", "metric_value", *columns}
    _drop_cut_line(csv_path)
    yield from pd.read_csv(csv_path, usecols=lambda c: c in wanted, dtype=_DTYPES, chunksize=CHUNK_ROWS)


def _drop_cut_line(csv_path: Path) -> None:
    """k6 stopped hard (SIGKILL, a full disk) may leave half a line at the end of its plain CSV: cut it off."""
    if csv_path.suffix != ".csv" or not csv_path.stat().st_size:
        return
    with open(csv_path, "r+b") as raw:
        size = raw.seek(0, 2)
        raw.seek(max(0, size - 65536))
        tail = raw.read()
        if not tail.endswith(b"\n"):
            raw.truncate(size - len(tail) + tail.rfind(b"\n") + 1)


def _keys(rows: pd.DataFrame) -> pd.DataFrame:
    """(vu, iter, req) of each sample from its extra tags, else its metadata (k6 v1); req defaults to 0. A tag wins:
    a background request (and each request of a batch) carries its own `req` tag, while the VU's metadata has moved
    on to a later request by the time its response is recorded."""
    empty = pd.Series("", index=rows.index, dtype="string")
    tags = rows.get("extra_tags", empty).fillna("") + "&" + rows.get("metadata", empty).fillna("")
    out = pd.DataFrame(index=rows.index)
    for tag in KEY:
        found = tags.str.extract(rf"(?:^|&){tag}=(\d+)", expand=False).astype("float64")
        out[tag] = found.fillna(0) if tag == "req" else found
    return out.astype("Int64")


# ---- one row per request -------------------------------------------------------------------------------

def read_requests(csv_path: Path) -> pd.DataFrame:
    """k6's CSV → one row per request, sorted by start time (see read_recording)."""
    return read_recording(csv_path).requests


def read_recording(csv_path: Path) -> Recording:
    """k6's CSV → one row per request: vu, iteration, start_ms, end_ms, duration_ms, status, error_code, error, the
    phases; plus `req` and `name` when an iteration sends several requests. Sorted by start time."""
    metrics = {STARTED, "http_reqs", *PHASES}
    parts, dropped = [], 0
    for chunk in _chunks(csv_path, {"error", "error_code", "status", "name", "extra_tags", "metadata"}):
        dropped += int(chunk.loc[chunk["metric_name"] == "dropped_iterations", "metric_value"].sum())
        chunk = chunk[chunk["metric_name"].isin(metrics)]
        parts.append(pd.concat([chunk.drop(columns=["extra_tags", "metadata"], errors="ignore"), _keys(chunk)], axis=1))
    raw = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["metric_name", "timestamp", *KEY])
    raw["ts_ms"] = raw["timestamp"] / 1000  # unix_micro → ms
    starts = raw[raw["metric_name"] == STARTED][[*KEY, "ts_ms"]]
    ends = raw[raw["metric_name"] == "http_reqs"][[*KEY, "ts_ms", "status", "error_code", "error",
                                                      *(["name"] if "name" in raw else [])]]
    for duplicated, what in ((starts, "start"), (ends, "end")):
        if duplicated.duplicated(KEY).any():
            raise ValueError(f"k6 CSV has two request {what}s for one (vu, iter, req): each request needs its own `req`")
    rows = starts.rename(columns={"ts_ms": "start_ms"}).merge(ends.rename(columns={"ts_ms": "end_ms"}), on=KEY, how="left")
    for metric, column in PHASES.items():
        phase = raw[raw["metric_name"] == metric][[*KEY, "metric_value"]].drop_duplicates(KEY)
        rows = rows.merge(phase.rename(columns={"metric_value": column}), on=KEY, how="left")
    cut = rows["end_ms"].isna()
    rows["status"] = rows["status"].fillna(0).astype("int64")
    rows["error_code"] = rows["error_code"].fillna(0).astype("int64")
    rows.loc[cut, "error_code"] = INTERRUPTED_CODE
    rows["error"] = rows["error"].astype("string").fillna("")  # a chunk without errors reads as all-NaN floats
    rows.loc[cut, "error"] = INTERRUPTED_ERROR
    rows["duration_ms"] = rows["end_ms"] - rows["start_ms"]
    rows = rows.rename(columns={"iter": "iteration"})
    several = bool((rows["req"] > 0).any())  # a scenario: which request of the iteration, and its name
    ordered = ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error",
               *(["req", "name"] if several and "name" in rows else ["req"] if several else []), *PHASES.values()]
    if "name" in ordered:
        rows["name"] = rows["name"].astype("string").fillna("")
    requests = rows[ordered].sort_values(["start_ms", "vu"]).reset_index(drop=True)
    return Recording("requests", requests=requests, totals={"dropped_iterations": dropped})


# ---- per second ----------------------------------------------------------------------------------------

def read_seconds(csv_path: Path) -> Recording:
    """k6's CSV → per-second tables, summed chunk by chunk (memory bounded by the seconds, not the requests)."""
    t0_us = None
    started, vus, dropped, outcomes, latency, maxes = [], [], [], [], [], []
    for chunk in _chunks(csv_path, {"error", "error_code", "status"}):
        if not len(chunk):
            continue
        if t0_us is None:
            t0_us = int(chunk["timestamp"].iloc[0]) // 1000 * 1000
        chunk = chunk.assign(second=((chunk["timestamp"] - t0_us) // 1_000_000).astype("int32"))
        metric = chunk["metric_name"]
        per_second = chunk.groupby([metric, "second"])["metric_value"]
        sums, peaks = per_second.sum(), per_second.max()
        started.append(sums.get(STARTED, pd.Series(dtype="float64")))
        dropped.append(sums.get("dropped_iterations", pd.Series(dtype="float64")))
        vus.append(peaks.get("vus", pd.Series(dtype="float64")))
        ended = chunk[metric == "http_reqs"]
        outcomes.append(ended.assign(status=ended["status"].fillna(0), error_code=ended["error_code"].fillna(0),
                                     error=ended["error"].astype("string").fillna(""))
                        .groupby(["second", "status", "error_code", "error"])["metric_value"].sum())
        durations = chunk[metric == "http_req_duration"]
        latency.append(histogram.counts(durations["second"], durations["metric_value"]))
        maxes.append(peaks.get("http_req_duration", pd.Series(dtype="float64")))
    tables = _tables(started, vus, dropped, outcomes, latency, maxes)
    return Recording("seconds", t0_ms=(t0_us or 0) // 1000, tables=tables, totals=_totals(tables))


def _sum(parts: list[pd.Series], how: str = "sum") -> pd.Series:
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.Series(dtype="float64")
    joined = pd.concat(parts)
    return joined.groupby(level=list(range(joined.index.nlevels))).agg(how)


def _tables(started, vus, dropped, outcomes, latency, maxes) -> dict[str, pd.DataFrame]:
    outcome = _sum(outcomes).round().astype("int64").rename("requests").reset_index() if any(len(o) for o in outcomes) \
        else pd.DataFrame(columns=["second", "status", "error_code", "error", "requests"])
    outcome = outcome.astype({"second": "int32", "status": "int16", "error_code": "int32", "requests": "int32"})
    outcome["error"] = outcome["error"].astype("category")
    hist = histogram.merge(latency)
    columns = {"started": _sum(started), "requests": outcome.groupby("second")["requests"].sum(),
               "vus": _sum(vus, "max"), "dropped_iterations": _sum(dropped), "max_ms": _sum(maxes, "max")}
    seconds = sorted(set().union(*(c.index for c in columns.values())))
    series = pd.DataFrame({"second": np.asarray(seconds, dtype="int32")})
    for name, values in columns.items():
        values = values.reindex(seconds).reset_index(drop=True)
        if name == "max_ms":
            series[name] = values.astype("float64")
        elif name == "vus":  # k6 samples it about once a second: a second may have none
            series[name] = values.round().astype("Int32")
        else:
            series[name] = values.fillna(0).round().astype("int32")
    return {"series": series, "outcomes": outcome, "latency": hist}


def _totals(tables: dict[str, pd.DataFrame]) -> dict:
    series, outcomes = tables["series"], tables["outcomes"]
    ok = answered(outcomes)  # the book's one classification, on per-second outcome counts
    errors = outcomes[~ok].assign(error=outcomes["error"].astype(str).replace("", "http status")) \
        .groupby("error")["requests"].sum()
    return {"started": int(series["started"].sum()), "ended": int(outcomes["requests"].sum()),
            "succeeded": int(outcomes.loc[ok, "requests"].sum()), "dropped_iterations": int(series["dropped_iterations"].sum()),
            "errors": {str(k): int(v) for k, v in errors.items() if v}}
