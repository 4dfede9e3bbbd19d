"""Chapter 7, past thread-per-request: one row per step (server model × users), from its per-second recording, the
serving process's own samples (Tomcat's Actuator, or the WebFlux service's), /proc of every process, and k6's
outcomes; and the per-second completions the charts draw.

The serving process is the sample server (`server`) for Tomcat on platform or virtual threads and the WebFlux
service (`flux`) for the event loop. Memory per connection is what its resident memory grew from before the load to
the sample where it held the most connections, over those connections; a k6 user's memory is every k6 process's
peak over the users. What limited a step is named from the data (`limit_of`).
"""
from __future__ import annotations

import functools
import gzip

import numpy as np
import pandas as pd

from harness import ROOT
from harness.lab import store
from harness.lab.spec import Step, load_spec
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms
from harness.models.spike import simulate, server_of

MODELS = ("platform threads", "virtual threads", "event loop")  # the spec's roles, in the chapter's order
SERVICE = "flux"  # the spec's name of the WebFlux service
OPEN_FILES_MARGIN = 100  # a process this close to its open-files limit is at it (the JVM's own files vary)
THREADS, OPEN_FILES, ACCEPTOR, LOAD, NONE = "threads", "open files", "acceptor", "load generator", "none"

COLUMNS = ["step", "model", "users", "processes", "asked", "issued", "succeeded", "failed", "dial_timeouts",
           "request_timeouts", "other_errors", "predicted_ok", "arrivals_ok", "start_spread_s", "last_start_s", "first_ok_s", "last_ok_s",
           "peak_connections", "peak_open_files", "nofile", "backlog", "peak_threads", "rss_before", "rss_peak",
           "per_connection_bytes", "k6_rss_peak", "per_user_k6_bytes", "accept_queue_max", "listen_overflows", "emfile_logged",
           "sleep_s", "limit"]


def serving_process(meta: dict) -> str:
    return SERVICE if meta["config"]["load"].get("target") == SERVICE else "server"


def model_of(meta: dict) -> str:
    if serving_process(meta) == SERVICE:
        return "event loop"
    return "virtual threads" if meta["config"]["server"].get("VIRTUAL_THREADS") else "platform threads"


def ch7_table(data: ChapterData) -> pd.DataFrame:
    rows = [step_row(data, step) for step in data.steps]
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["model"] = pd.Categorical(table["model"], MODELS, ordered=True)
    return table.sort_values(["users", "model"]).reset_index(drop=True)


def step_row(data: ChapterData, step: str) -> dict:
    meta = data.steps[step]
    load, requests = meta["config"]["load"], meta["requests"]
    row = {"step": step, "model": model_of(meta), "users": load["vus"], "processes": load.get("processes", 1),
           "asked": requests["asked"], "issued": requests["issued"], "succeeded": requests["succeeded"],
           "failed": requests["failed"], "predicted_ok": meta["model"]["succeeded"],
           "nofile": meta["machine"]["nofile_limit"], "backlog": backlog_of(meta),
           "sleep_s": meta["model"]["service_ms"] / 1000}
    row |= _errors(data, step) | _timing(data, step) | _server(data, step, meta) | _client(data, step, meta)
    row |= _queue(data, step)
    row["arrivals_ok"] = arrivals_model_ok(data, step)
    row["emfile_logged"] = emfile_logged(data.chapter, step, serving_process(meta))
    row["limit"] = limit_of(row)
    return row


def backlog_of(meta: dict) -> int:
    """The listening socket's queue: Tomcat's accept-count, Reactor Netty's somaxconn, both capped by the kernel's."""
    somaxconn = meta["machine"]["somaxconn"]
    if serving_process(meta) == SERVICE:
        return somaxconn
    return min(meta["server_info"]["tomcat"]["acceptCount"], somaxconn)


def _errors(data: ChapterData, step: str) -> dict:
    """Failures by k6's words: a connect that never completed (dial i/o timeout), a request without an answer in
    60 s (request timeout), anything else."""
    failed = data.outcomes[(data.outcomes.step == step) & (data.outcomes.error != "")]
    text = failed["error"].astype(str)
    dial = failed.loc[text.str.contains("dial"), "requests"].sum()
    timeout = failed.loc[text.str.contains("request timeout"), "requests"].sum()
    return {"dial_timeouts": int(dial), "request_timeouts": int(timeout),
            "other_errors": int(failed["requests"].sum() - dial - timeout)}


def _timing(data: ChapterData, step: str) -> dict:
    """Seconds of the recording (from k6's start): the spread of the users' first requests and the second the last
    one started, the first and the last second that saw an answer."""
    series = data.series[data.series.step == step]
    started = series.loc[series.started > 0, "second"]
    ok = completions(data, step)
    answered = ok.loc[ok.answered > 0, "second"]
    return {"start_spread_s": float(started.max() - started.min()) if len(started) else np.nan,
            "last_start_s": float(started.max()) if len(started) else np.nan,
            "first_ok_s": float(answered.min()) if len(answered) else np.nan,
            "last_ok_s": float(answered.max()) if len(answered) else np.nan}


def completions(data: ChapterData, step: str) -> pd.DataFrame:
    """Answered requests per second of the recording (second, answered)."""
    outcomes = data.outcomes[(data.outcomes.step == step) & (data.outcomes.error == "") & (data.outcomes.status < 400)
                             & (data.outcomes.status > 0)]
    return outcomes.groupby("second", as_index=False)["requests"].sum().rename(columns={"requests": "answered"})


def held_connections(data: ChapterData, step: str) -> pd.DataFrame:
    """Connections the serving process held (ts_ms, value), as the kernel counts them: established sockets on the
    port less those still in the accept queue. Not from Actuator: at the open-files limit its own port cannot accept
    the sampler either."""
    ss = data.ss[data.ss.step == step]
    return pd.DataFrame({"ts_ms": ss.ts_ms, "value": ss.estab - ss.accept_queue}).sort_values("ts_ms")


def _server(data: ChapterData, step: str, meta: dict) -> dict:
    name = serving_process(meta)
    proc = data.process[(data.process.step == step) & (data.process.process == name)].sort_values("ts_ms")
    metrics = data.service(SERVICE, step) if name == SERVICE else data.actuator[data.actuator.step == step]
    connections = held_connections(data, step)
    threads = metrics.loc[metrics.metric == "jvm.threads.live", "value"]
    before = proc[proc.ts_ms < meta["load_started_ms"]]
    rss_before = float(before["rss_bytes"].iloc[-1]) if len(before) else float(proc["rss_bytes"].iloc[0])
    peak = connections.loc[connections["value"].idxmax()] if len(connections) else None
    rss_at_peak = _nearest(proc, peak["ts_ms"], "rss_bytes") if peak is not None else np.nan
    peak_connections = float(peak["value"]) if peak is not None else np.nan
    return {"peak_connections": peak_connections, "peak_open_files": float(proc["open_fds"].max()),
            "peak_threads": float(threads.max()) if len(threads) else np.nan, "rss_before": rss_before,
            "rss_peak": float(proc["rss_bytes"].max()),
            "per_connection_bytes": (rss_at_peak - rss_before) / peak_connections if peak_connections else np.nan}


def _nearest(samples: pd.DataFrame, ts_ms: float, column: str) -> float:
    return float(samples.loc[(samples["ts_ms"] - ts_ms).abs().idxmin(), column])


def _client(data: ChapterData, step: str, meta: dict) -> dict:
    """Every k6 process's peak resident memory, summed (k6, k6-2 …), and per user."""
    proc = data.process[(data.process.step == step) & data.process.process.str.match(r"^k6(-\d+)?$")]
    peak = float(proc.groupby("process")["rss_bytes"].max().sum())
    return {"k6_rss_peak": peak, "per_user_k6_bytes": peak / meta["config"]["load"]["vus"]}


def _queue(data: ChapterData, step: str) -> dict:
    ss = data.ss[data.ss.step == step]
    return {"accept_queue_max": float(ss["accept_queue"].max()), "listen_overflows": float(ss["listen_overflows"].sum())}


def emfile_logged(chapter: str, step: str, process: str) -> int:
    """How often the serving process logged "Too many open files" (Tomcat's acceptor says it once per failed accept)."""
    path = store.step_dir(chapter, step) / f"{process}.log.gz"
    if not path.exists():
        return 0
    with gzip.open(path, "rt", errors="replace") as log:
        return sum("Too many open files" in line for line in log)


@functools.cache
def _steps_on(spec: str, nofile: int, somaxconn: int) -> dict[str, Step]:
    """The spec a step ran from (step.json's `spec`) checked against the limits of the machine it ran on, for the
    model; empty when that file is gone."""
    path = ROOT / spec
    if not path.exists():
        return {}
    limits = {"nofile": nofile, "somaxconn": somaxconn, "can_raise_somaxconn": True, "cores": 1 << 10}
    return {s.id: s for s in load_spec(str(path), limits).steps}


def measured_arrivals_ms(data: ChapterData, step: str) -> list[int]:
    """Each user's first request in ms from the first, from the per-second count of requests started (spread evenly
    inside each second: the recording keeps seconds, not requests)."""
    series = data.series[(data.series.step == step) & (data.series.started > 0)]
    arrivals = [int(second * 1000 + i * 1000 / n) for second, n in zip(series.second, series.started, strict=True)
                for i in range(int(n))]
    first = min(arrivals, default=0)
    return [a - first for a in arrivals]


_ARRIVAL_MODEL: dict[tuple, list] = {}  # (chapter, step, started_ms) → outcomes: the table and the chart share a run


def arrivals_model(data: ChapterData, step: str) -> list | None:
    """The model fed the users' measured arrivals instead of all at once: one Outcome per user, its end in ms from
    the first user's start (None when the step's spec is gone)."""
    meta = data.steps[step]
    key = (data.chapter, step, meta["started_ms"])
    if key not in _ARRIVAL_MODEL:
        spec = _steps_on(meta["spec"], meta["machine"]["nofile_limit"], meta["machine"]["somaxconn"]).get(step)
        arrivals = measured_arrivals_ms(data, step)
        _ARRIVAL_MODEL[key] = None if spec is None or not arrivals else simulate(
            len(arrivals), server_of(spec), duration_ms(spec.load["request_timeout"]), arrivals)
    return _ARRIVAL_MODEL[key]


def arrivals_model_ok(data: ChapterData, step: str) -> float:
    outcomes = arrivals_model(data, step)
    return np.nan if outcomes is None else float(sum(o.ok for o in outcomes))


def arrivals_model_completions(data: ChapterData, step: str) -> pd.DataFrame:
    """The arrivals model's answers per second of the recording (second, answered), like `completions`."""
    outcomes = arrivals_model(data, step) or []
    first = data.series[(data.series.step == step) & (data.series.started > 0)]["second"].min()
    ends = pd.Series([first + o.end_ms // 1000 for o in outcomes if o.ok], dtype="int64")
    return ends.value_counts().sort_index().rename_axis("second").reset_index(name="answered")


def limit_of(row: dict) -> str:
    """What stopped a step from answering every user after one wait, from its data: the server at its open-files
    limit; users failing while the accept queue was full (the server took connections more slowly than they came);
    k6 not issuing what was asked; the pool (answers after several waits); none."""
    if row["peak_open_files"] >= row["nofile"] - OPEN_FILES_MARGIN:
        return OPEN_FILES
    if row["failed"] and row["accept_queue_max"] >= row["backlog"]:
        return ACCEPTOR
    if row["issued"] < row["asked"]:
        return LOAD
    if row["model"] == "platform threads" and row["users"] > row["peak_threads"]:
        return THREADS
    return NONE


def pick(table: pd.DataFrame, model: str, users: int) -> pd.Series | None:
    rows = table[(table.model == model) & (table.users == users)]
    return rows.iloc[0] if len(rows) else None

