"""Chapter 7's steps as they ran: one row per step (server model × users, its first run) from its per-second
recording, the serving process's own samples (Tomcat's Actuator or the WebFlux service's metrics), /proc of every
process and k6's outcomes; and the per-second answers the charts draw.

Each step is read from its step.json (`config`, `machine`, `model`), never from today's spec. The serving process is
the sample server (`server`) for Tomcat on platform or virtual threads and the WebFlux service (`flux`) for the event
loop. What limited a step is named from its data (`limit_of`).
"""
from __future__ import annotations

import functools
import gzip

import numpy as np
import pandas as pd

from harness.lab import store
from harness.lab.spec import FD_RESERVE
from harness.lab.steps import step_from_config
from harness.lab.store import ChapterData, answered
from harness.models.spike import simulate_measured_arrivals

CHAPTER = "chapter7"
PLATFORM, VIRTUAL, LOOP = "platform threads", "virtual threads", "event loop"
MODELS = (PLATFORM, VIRTUAL, LOOP)  # the chapter's order
SERVICE = "flux"  # the step's name of the WebFlux service
THREADS, OPEN_FILES, ACCEPTOR, LOAD, NONE = "threads", "open files", "acceptor", "load generator", "none"

COLUMNS = ["step", "model", "users", "processes", "asked", "issued", "succeeded", "failed", "dial_timeouts",
           "request_timeouts", "other_errors", "predicted_ok", "predicted_last_s", "arrivals_ok", "start_spread_s",
           "last_start_s", "first_ok_s", "last_ok_s", "peak_connections", "peak_open_files", "nofile", "backlog",
           "peak_threads", "rss_before", "rss_peak", "per_connection_bytes", "k6_rss_peak", "per_user_k6_bytes",
           "accept_queue_max", "peak_established", "listen_overflows", "emfile_logged", "sleep_s", "java", "limit"]


def serving_process(meta: dict) -> str:
    return SERVICE if meta["config"]["load"].get("target") == SERVICE else "server"


def model_of(meta: dict) -> str:
    if serving_process(meta) == SERVICE:
        return LOOP
    return VIRTUAL if meta["config"]["server"].get("VIRTUAL_THREADS") else PLATFORM


def java_of(meta: dict) -> str:
    """The serving JVM's version: the sample server's (step.json `versions`) or the WebFlux service's."""
    if serving_process(meta) == SERVICE:
        return str(meta.get("services", {}).get(SERVICE, {}).get("java", "?")).split("+")[0]
    return str(meta.get("versions", {}).get("java", "?"))


def steps_table(data: ChapterData) -> pd.DataFrame:
    rows = [step_row(data, step) for step in data.steps]
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["model"] = pd.Categorical(table["model"], MODELS, ordered=True)
    return table.sort_values(["users", "model"]).reset_index(drop=True)


def step_row(data: ChapterData, step: str) -> dict:
    meta = data.steps[step]
    load, requests, model = meta["config"]["load"], meta["requests"], meta["model"]
    row = {"step": step, "model": model_of(meta), "users": load["vus"], "processes": load.get("processes", 1),
           "asked": requests["asked"], "issued": requests["issued"], "succeeded": requests["succeeded"],
           "failed": requests["failed"], "predicted_ok": model["succeeded"],
           "predicted_last_s": max((t for t, _ in model.get("completions") or []), default=np.nan) / 1000,
           "nofile": meta["machine"]["nofile_limit"], "backlog": backlog_of(meta),
           "sleep_s": model["service_ms"] / 1000, "java": java_of(meta)}
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
    outcomes = data.outcomes[data.outcomes.step == step]
    failed = outcomes[~answered(outcomes)]
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
    seconds = ok.loc[ok.answered > 0, "second"]
    return {"start_spread_s": float(started.max() - started.min()) if len(started) else np.nan,
            "last_start_s": float(started.max()) if len(started) else np.nan,
            "first_ok_s": float(seconds.min()) if len(seconds) else np.nan,
            "last_ok_s": float(seconds.max()) if len(seconds) else np.nan}


def completions(data: ChapterData, step: str) -> pd.DataFrame:
    """Answered requests per second of the recording (second, answered), by the book's one classification."""
    outcomes = data.outcomes[data.outcomes.step == step]
    return (outcomes[answered(outcomes)].groupby("second", as_index=False)["requests"].sum()
            .rename(columns={"requests": "answered"}))


def held_connections(data: ChapterData, step: str) -> pd.DataFrame:
    """Connections the serving process held (ts_ms, value), as the kernel counts them: established sockets on the
    port less those still in the accept queue. Not from Actuator: at the open-files limit its own port cannot accept
    the sampler either."""
    ss = data.ss[data.ss.step == step]
    return pd.DataFrame({"ts_ms": ss.ts_ms, "value": ss.estab - ss.accept_queue}).sort_values("ts_ms")


def serving_metrics(data: ChapterData, step: str) -> pd.DataFrame:
    """The serving JVM's own metrics (ts_ms, metric, value): Tomcat's Actuator or the WebFlux service's."""
    name = serving_process(data.steps[step])
    return data.service(SERVICE, step) if name == SERVICE else data.actuator[data.actuator.step == step]


def peak_threads(data: ChapterData, step: str) -> float:
    """The most live threads the serving JVM reported (Micrometer's jvm.threads.live)."""
    metrics = serving_metrics(data, step)
    threads = metrics.loc[metrics.metric == "jvm.threads.live", "value"]
    return float(threads.max()) if len(threads) else np.nan


def _server(data: ChapterData, step: str, meta: dict) -> dict:
    name = serving_process(meta)
    proc = data.process[(data.process.step == step) & (data.process.process == name)].sort_values("ts_ms")
    connections = held_connections(data, step)
    before = proc[proc.ts_ms < meta["load_started_ms"]]
    rss_before = float(before["rss_bytes"].iloc[-1]) if len(before) else float(proc["rss_bytes"].iloc[0])
    peak = connections.loc[connections["value"].idxmax()] if len(connections) else None
    rss_at_peak = _nearest(proc, peak["ts_ms"], "rss_bytes") if peak is not None else np.nan
    peak_connections = float(peak["value"]) if peak is not None else np.nan
    return {"peak_connections": peak_connections, "peak_open_files": float(proc["open_fds"].max()),
            "peak_threads": peak_threads(data, step), "rss_before": rss_before,
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
    return {"accept_queue_max": float(ss["accept_queue"].max()), "peak_established": float(ss["estab"].max()),
            "listen_overflows": float(ss["listen_overflows"].sum())}


def emfile_logged(chapter: str, step: str, process: str) -> int:
    """How often the serving process logged "Too many open files" (Tomcat's acceptor says it once per failed accept)."""
    path = store.step_dir(chapter, step) / f"{process}.log.gz"
    if not path.exists():
        return 0
    with gzip.open(path, "rt", errors="replace") as log:
        return sum("Too many open files" in line for line in log)


def measured_arrivals_ms(data: ChapterData, step: str) -> list[int]:
    """Each user's first request in ms from the first, from the per-second count of requests started (spread evenly
    inside each second: the recording keeps seconds, not requests)."""
    series = data.series[(data.series.step == step) & (data.series.started > 0)]
    arrivals = [int(second * 1000 + i * 1000 / n) for second, n in zip(series.second, series.started, strict=True)
                for i in range(int(n))]
    first = min(arrivals, default=0)
    return [a - first for a in arrivals]


@functools.cache
def _arrivals_model(root: str, chapter: str, step: str, started_ms: int, arrivals: tuple[int, ...]) -> tuple:
    """The model of the step as it ran (its step.json's config and machine) fed the users' measured arrivals."""
    meta = store.read_meta(chapter, step)
    machine = meta["machine"]
    ran = step_from_config(chapter, step, meta["config"],
                           limits={"nofile": machine["nofile_limit"], "somaxconn": machine["somaxconn"]})
    return tuple(simulate_measured_arrivals(ran, list(arrivals)))


def arrivals_model(data: ChapterData, step: str) -> tuple:
    """The model fed the users' measured arrivals instead of all at once: one Outcome per user, its end in ms from
    the first user's start (empty when the recording shows no start)."""
    arrivals = measured_arrivals_ms(data, step)
    if not arrivals:
        return ()
    return _arrivals_model(str(store.data_root()), data.chapter, step, data.steps[step]["started_ms"], tuple(arrivals))


def arrivals_model_ok(data: ChapterData, step: str) -> float:
    outcomes = arrivals_model(data, step)
    return float(sum(o.ok for o in outcomes)) if outcomes else np.nan


def arrivals_model_completions(data: ChapterData, step: str) -> pd.DataFrame:
    """The arrivals model's answers per second of the recording (second, answered), like `completions`."""
    outcomes = arrivals_model(data, step)
    first = data.series[(data.series.step == step) & (data.series.started > 0)]["second"].min()
    ends = pd.Series([first + o.end_ms // 1000 for o in outcomes if o.ok], dtype="int64")
    return ends.value_counts().sort_index().rename_axis("second").reset_index(name="answered")


def limit_of(row: dict) -> str:
    """What stopped a step from answering every user after one wait, from its data: the server at its open-files
    limit (within the files the model leaves a JVM for itself); users failing while the accept queue was full (the
    server took connections more slowly than they came); k6 not issuing what was asked; the pool (answers after
    several waits); none."""
    if row["peak_open_files"] >= row["nofile"] - FD_RESERVE:
        return OPEN_FILES
    if row["failed"] and row["accept_queue_max"] >= row["backlog"]:
        return ACCEPTOR
    if row["issued"] < row["asked"]:
        return LOAD
    if row["model"] == PLATFORM and row["users"] > row["peak_threads"]:
        return THREADS
    return NONE


def pick(table: pd.DataFrame, model: str, users: int) -> pd.Series | None:
    rows = table[(table.model == model) & (table.users == users)]
    return rows.iloc[0] if len(rows) else None
