"""Chapter 6, a proxy in between (seed 003): one row per step, from its recording (per second for the 200-connection
steps, per request for the one-user ones, a summary for wrk's), the Netty service's own counters, nginx's stub_status
and upstream sockets, and each process's CPU.

Throughput is answered requests per second after the first WARMUP_S seconds (the JVM compiles the service's code
while the load starts: the article's own series climbs for a minute); new upstream connections per second are the
ones the Netty service saw opened on its service port; CPU is each process's CPU time gained over the load, in cores
(nginx's master and workers together).
"""
from __future__ import annotations

import json
from functools import cache

import numpy as np
import pandas as pd

from harness.book.analysis import gained_per_second, plateau_stats
from harness.lab import store
from harness.lab.store import ChapterData, answered
from harness.lab.units import duration_ms
from harness.models import proxy

CHAPTER = "chapter6"
SERVICE, PROXY = "api", "edge"  # the spec's names of the Netty service and nginx
WARMUP_S = 5  # seconds left out at the start of a sustained step
PROCESSES = {"service": SERVICE, "nginx": PROXY, "k6": "k6", "wrk": "wrk"}  # column → process name prefix

COLUMNS = ["step", "network", "tool", "route", "keepalive", "connection_header", "workers", "users", "duration_s", "seconds", "tps",
           "mean_ms", "p50_ms", "p99_ms", "errors", "new_connections_per_s", "upstream_time_wait_max",
           "upstream_sockets_max", "eaddrnotavail", "service_cpu", "nginx_cpu", "k6_cpu", "wrk_cpu",
           "service_cpu_ms", "nginx_cpu_ms", "connect_ms", "request_ms", "ports"]


def route_of(config: dict) -> str:
    """What the load went through: "service alone", "nginx alone" (return) or "nginx → service"."""
    if config["load"].get("target") == SERVICE:
        return "service alone"
    return "nginx alone" if config["services"][PROXY]["mode"] == "return" else "nginx → service"


def load_window(meta: dict) -> tuple[float, float]:
    return meta["load_started_ms"], meta["load_ended_ms"]


def step_row(data: ChapterData, step: str) -> dict:
    meta = data.steps[step]
    config = meta["config"]
    edge, load = config["services"][PROXY], config["load"]
    proxied = route_of(config) == "nginx → service"
    row = {"step": step, "network": config["system"].get("network", "loopback"), "tool": load.get("tool", "k6"),
           "route": route_of(config), "keepalive": edge["keepalive"] if proxied else np.nan,
           "connection_header": edge["connection_header"] if proxied else "",
           "workers": edge["worker_processes"], "users": load["vus"],
           "duration_s": duration_ms(load["duration"]) / 1000}
    row |= _throughput(data, step, meta) | _connections(data, step, meta)
    row |= _cpu(data, step, meta, row["tps"])
    row["ports"] = port_range(meta)
    return row


def _throughput(data: ChapterData, step: str, meta: dict) -> dict:
    form = meta["recording"]["format"]
    seconds = duration_ms(meta["config"]["load"]["duration"]) // 1000
    if form == "seconds":
        stats = plateau_stats(data, step, WARMUP_S, seconds)
        return {"seconds": seconds - WARMUP_S, "tps": stats["tps"], "mean_ms": stats["mean_ms"],
                "p50_ms": stats["p50_ms"], "p99_ms": stats["p99_ms"], "errors": stats["errors"],
                "connect_ms": np.nan, "request_ms": np.nan}
    if form == "summary":  # wrk: its own count and percentiles over the whole run
        summary = wrk_summary(data.chapter, step)
        wall_s = summary["duration_us"] / 1e6
        latency = summary["latency_us"]
        errors = sum(summary["errors"].values())
        return {"seconds": wall_s, "tps": (summary["requests"] - summary["errors"]["status"]) / wall_s,
                "mean_ms": latency["mean"] / 1000, "p50_ms": latency["percentiles"]["50"] / 1000,
                "p99_ms": latency["percentiles"]["99"] / 1000,
                "errors": errors, "connect_ms": np.nan, "request_ms": np.nan}
    requests = data.requests[data.requests.step == step]
    ok = requests[answered(requests)]
    return {"seconds": seconds, "tps": len(ok) / seconds, "mean_ms": ok["duration_ms"].mean(),
            "p50_ms": ok["duration_ms"].median(), "p99_ms": ok["duration_ms"].quantile(0.99),
            "errors": len(requests) - len(ok), "connect_ms": ok["connecting_ms"].median(),
            "request_ms": ok["duration_ms"].median()}


def wrk_summary(chapter: str, step: str) -> dict:
    return json.loads((store.data_root() / chapter / step / "wrk-summary.json").read_text())


def _connections(data: ChapterData, step: str, meta: dict) -> dict:
    """The service's new connections per second over the load; nginx's upstream sockets at their most."""
    begin, end = load_window(meta)
    opened = data.service(SERVICE, step)
    opened = opened[opened.metric == "netty.connections_opened"].rename(columns={"value": "opened"})
    edge = data.service(PROXY, step)

    def most(metric: str) -> float:
        values = edge[(edge.metric == metric) & edge.ts_ms.between(begin, end + 2000)]["value"]
        return float(values.max()) if len(values) else np.nan

    return {"new_connections_per_s": gained_per_second(opened, "opened", begin, end),
            "upstream_time_wait_max": most("upstream.time_wait"), "upstream_sockets_max": most("upstream.sockets"),
            "eaddrnotavail": most("errors.eaddrnotavail")}


def _cpu(data: ChapterData, step: str, meta: dict, tps: float) -> dict:
    """Cores each process used over the load (nginx: master and workers), and the service's and nginx's CPU per
    answered request (ms)."""
    begin, end = load_window(meta)
    process = data.process[data.process.step == step]
    cores = {}
    for column, prefix in PROCESSES.items():
        rows = process[(process.process == prefix) | process.process.str.startswith(prefix + ".")]
        cores[f"{column}_cpu"] = sum(gained_per_second(r, "cpu_seconds", begin, end)
                                     for _, r in rows.groupby("process")) if len(rows) else np.nan
    throughput = _tps_over(data, step, meta) if meta["recording"]["format"] == "seconds" else tps
    return cores | {"service_cpu_ms": cores["service_cpu"] * 1000 / throughput,
                    "nginx_cpu_ms": cores["nginx_cpu"] * 1000 / throughput}


def _tps_over(data: ChapterData, step: str, meta: dict) -> float:
    """Answered requests per second over the whole load (the window CPU is measured over)."""
    seconds = duration_ms(meta["config"]["load"]["duration"]) // 1000
    return plateau_stats(data, step, 0, seconds)["tps"]


def port_range(meta: dict) -> str:
    hosts = (meta.get("hosts") or {}).get("hosts", {})
    return hosts.get(PROXY, {}).get("ip_local_port_range", " ".join(meta["machine"].get("local_port_range", [])))


def steps_table(data: ChapterData) -> pd.DataFrame:
    """One row per step (COLUMNS), in the order they ran."""
    ran = sorted(data.steps, key=lambda step: data.steps[step].get("started_ms", 0))
    return pd.DataFrame([step_row(data, step) for step in ran], columns=COLUMNS)


def runs_of(step: str) -> list[ChapterData]:
    """Every complete run of a step with its tables (its id in `steps` is the run's directory: "wrk-alone.2"), first
    run first, from the data directory in use (store.reading)."""
    return list(_runs_of(str(store.data_root()), step))


@cache
def _runs_of(root: str, step: str) -> tuple[ChapterData, ...]:
    names = sorted((n for n in store.complete_steps(CHAPTER) if store.run_of(n)[0] == step),
                   key=lambda n: store.run_of(n)[1])
    return tuple(store.load_run(CHAPTER, name) for name in names)


def run_rows(step: str) -> list[pd.Series]:
    """Every run of a step as a row of COLUMNS (`step`: the run's directory), first run first."""
    return list(_run_rows(str(store.data_root()), step))


@cache
def _run_rows(root: str, step: str) -> tuple[pd.Series, ...]:
    return tuple(pd.Series(step_row(data, name), index=COLUMNS) for data in runs_of(step) for name in data.steps)


def mean_table(data: ChapterData) -> pd.DataFrame:
    """One row per step (COLUMNS and `runs`), in the order they ran: each measured number the mean over the step's
    runs, its id the step's (not a run's)."""
    ran = sorted(data.steps, key=lambda step: data.steps[step].get("started_ms", 0))
    rows = []
    for step in ran:
        every = pd.DataFrame(run_rows(step))
        row = every.iloc[0].copy()
        numeric = [c for c in COLUMNS if pd.api.types.is_numeric_dtype(every[c])]
        row[numeric] = every[numeric].mean()
        rows.append(row.to_dict() | {"step": step, "runs": len(every)})
    return pd.DataFrame(rows, columns=[*COLUMNS, "runs"])


def pick(table: pd.DataFrame, step: str) -> pd.Series | None:
    rows = table[table.step == step]
    return rows.iloc[0] if len(rows) else None


def port_bounds(ports: str) -> tuple[int, int]:
    """An ip_local_port_range as step.json keeps it ("32768 60999") → (low, high)."""
    low, high = map(int, ports.split())
    return low, high


def ports_of(ports: str) -> int:
    return proxy.ephemeral_ports(port_bounds(ports))


def ports_frame(data, step: str) -> pd.DataFrame:
    """Per second of a step: answered and failed requests, nginx's TIME_WAIT sockets to the service (the last
    sample), and error-99 lines logged in that second; long format (second, what, value)."""
    t0 = data.steps[step]["recording"]["t0_ms"]
    outcomes = data.outcomes[data.outcomes.step == step]
    ok = answered(outcomes)
    rows = [outcomes[ok].groupby("second")["requests"].sum().rename("answered"),
            outcomes[~ok].groupby("second")["requests"].sum().rename("failed (502)")]
    edge = data.service(PROXY, step).assign(second=lambda f: ((f.ts_ms - t0) // 1000).astype(int))
    edge = edge[edge.second >= 0]
    last = edge.pivot_table(index="second", columns="metric", values="value", aggfunc="last")
    # A second without a sample (nginx too busy to answer its status page in time) keeps the last one seen.
    seconds = range(int(max(outcomes["second"].max(), last.index.max())) + 1)
    last = last.reindex(seconds).ffill().fillna(0)
    rows.append(last["upstream.time_wait"].rename("nginx's TIME_WAIT sockets"))
    rows.append(last["errors.eaddrnotavail"].diff().fillna(last["errors.eaddrnotavail"]).rename(
        "connect() failed (99) lines"))
    wide = pd.concat(rows, axis=1).fillna(0)
    return wide.rename_axis("second").reset_index().melt(id_vars="second", var_name="what", value_name="value")
