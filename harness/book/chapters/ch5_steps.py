"""Chapter 5, the pool behind the pool (seed 001): one row per step, from its per-second recording, HikariCP's Actuator
metrics and the database's own table (pg_stat_activity, pg_stat_database, its CPU).

Like the article's TPS, throughput is answered requests per second over the whole load (its users ramp up, so this is
an average over the ramp), and the peak is the best ten seconds; a pool's hold and wait times are HikariCP's own
sums over counts (the seconds a connection was held, or waited for, per use); CPU is each side's CPU time gained over
the load, in cores.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.book.analysis import gained_per_second, plateau_stats
from harness.lab.load.options import peak_vus
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered
from harness.lab.units import duration_ms

DB = "db"  # the spec's name of the database service
HIKARI_POOL = 10  # HikariCP's default maximum-pool-size
PEAK_S = 10  # the peak: the best run of this many seconds
API, SCENARIO, TOMCAT = "single API", "scenario", "tomcat"  # the step kinds, by the findings they test

COLUMNS = ["step", "kind", "findings", "users", "pool", "threads_max", "max_connections", "accept_count", "db_quota",
           "open_in_view", "indexes", "seconds", "tps", "peak_tps", "success", "errors", "mean_ms", "p50_ms", "p90_ms", "p99_ms",
           "pending_max", "active_max", "hold_ms", "wait_ms", "pool_timeouts", "pending_from_users", "db_cpu_cores",
           "db_cpu_ms", "server_cpu_cores", "gc_pause_max_ms", "gc_pause_ms", "db_active_max", "db_commits"]


def kind_of(findings: list[str]) -> str:
    return API if "F001-b" in findings else TOMCAT if {"F001-d", "F001-e", "F001-f"} & set(findings) else SCENARIO


def pool_steps(table: pd.DataFrame) -> pd.DataFrame:
    """The pool sweep (F001-c's scenario steps with the indexes), on both databases, open-in-view on and off."""
    return table[(table["kind"] == SCENARIO) & table["indexes"] & table["findings"].str.contains("F001-c")]


def load_seconds(load: dict) -> int:
    """The stages' length: the users' whole ramp and hold (what the article's TPS averages over)."""
    return sum(duration_ms(s["duration"]) for s in load["stages"]) // 1000


def db_quota(meta: dict) -> float:
    """The database's CPU: its quota where the step set one, else the CPUs it was pinned to."""
    asked = (meta.get("placement") or {}).get("asked", {}).get(DB, {})
    return float(asked.get("quota") or len(asked.get("cpus") or []) or meta["machine"]["cores"])


def step_row(data: ChapterData, step: str) -> dict:
    meta = data.steps[step]
    load, server = meta["config"]["load"], meta["config"]["server"]
    db = meta["config"].get("services", {}).get(DB, {})
    seconds = load_seconds(load)
    t0 = meta["recording"]["t0_ms"]
    begin, end = t0, t0 + seconds * 1000
    stats = plateau_stats(data, step, 0, seconds)
    row = {"step": step, "kind": kind_of(meta.get("findings", [])), "findings": ", ".join(meta.get("findings", [])),
           "users": peak_vus(load), "pool": server.get("HIKARI_MAX_POOL_SIZE", HIKARI_POOL),
           "threads_max": server.get("TOMCAT_MAX_THREADS", SERVER_DEFAULTS["TOMCAT_MAX_THREADS"]),
           "max_connections": server.get("TOMCAT_MAX_CONNECTIONS", SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"]),
           "accept_count": server.get("TOMCAT_ACCEPT_COUNT", SERVER_DEFAULTS["TOMCAT_ACCEPT_COUNT"]),
           "db_quota": db_quota(meta), "open_in_view": server.get("JPA_OPEN_IN_VIEW", True),
           "indexes": db.get("indexes", True), "seconds": seconds, "tps": stats["tps"],
           "peak_tps": peak_tps(data, step, seconds), "success": success(data, step), "errors": stats["errors"], "mean_ms": stats["mean_ms"], "p50_ms": stats["p50_ms"],
           "p90_ms": stats["p90_ms"], "p99_ms": stats["p99_ms"]}
    return row | pool_numbers(data, step, begin, end) | database_numbers(data, step, begin, end, row["tps"]) | {
        "pending_from_users": pending_from_users(data, step),
        "server_cpu_cores": gained_per_second(_process(data, step, "server"), "cpu_seconds", begin, end)}


def success(data: ChapterData, step: str) -> float:
    """The share of the step's requests that were answered (the article's success rate): all of them, also those that
    ended after the load's last second (a wait for a connection that timed out, a stream cut at the end)."""
    outcomes = data.outcomes[data.outcomes.step == step]
    finished = outcomes["requests"].sum()
    return float(outcomes[answered(outcomes)]["requests"].sum() / finished) if finished else np.nan


def peak_tps(data: ChapterData, step: str, seconds: int) -> float:
    """Answered requests per second over the best PEAK_S consecutive seconds of the load."""
    outcomes = data.outcomes[(data.outcomes.step == step) & (data.outcomes.second < seconds)]
    per_second = outcomes[answered(outcomes)].groupby("second")["requests"].sum().reindex(range(seconds), fill_value=0)
    return float(per_second.rolling(PEAK_S).mean().max()) if seconds >= PEAK_S else float(per_second.mean())


def pool_numbers(data: ChapterData, step: str, begin: float, end: float) -> dict:
    """HikariCP over the load: the most requests waiting for and holding a connection, the mean time a connection was
    held and waited for (ms per use), and the waits that timed out."""
    metric = _actuator(data, step)
    inside = metric[metric.ts_ms.between(begin, end)]

    def peak(name: str) -> float:
        values = inside[inside.metric == name]["value"]
        return float(values.max()) if len(values) else np.nan

    def per_use(total: str, count: str) -> float:
        gained = _gained(inside, total), _gained(inside, count)
        return gained[0] * 1000 / gained[1] if gained[1] else np.nan

    return {"pending_max": peak("hikaricp.connections.pending"), "active_max": peak("hikaricp.connections.active"),
            "hold_ms": per_use("hikaricp.connections.usage.total", "hikaricp.connections.usage.count"),
            "wait_ms": per_use("hikaricp.connections.acquire.total", "hikaricp.connections.acquire.count"),
            "pool_timeouts": _gained(metric, "hikaricp.connections.timeout"),
            "gc_pause_max_ms": peak("jvm.gc.pause.max") * 1000, "gc_pause_ms": _gained(inside, "jvm.gc.pause.total") * 1000}


def database_numbers(data: ChapterData, step: str, begin: float, end: float, tps: float) -> dict:
    """The database over the load: its CPU in cores and per answered request, its busiest moment, its commits."""
    rows = data.service(DB, step)
    cpu = rows[rows.metric == "pg.cpu_seconds"].rename(columns={"value": "cpu_seconds"})
    cores = gained_per_second(cpu, "cpu_seconds", begin, end)
    active = rows[(rows.metric == "pg.activity.active") & rows.ts_ms.between(begin, end)]["value"]
    return {"db_cpu_cores": cores, "db_cpu_ms": cores * 1000 / tps if tps else np.nan,
            "db_active_max": float(active.max()) if len(active) else np.nan,
            "db_commits": _gained(rows[rows.ts_ms.between(begin, end)], "pg.database.xact_commit")}


def pending_from_users(data: ChapterData, step: str) -> float:
    """How many users were active when requests first waited for a connection (NaN: none ever waited)."""
    meta = data.steps[step]
    pending = _actuator(data, step)
    pending = pending[(pending.metric == "hikaricp.connections.pending") & (pending.value > 0)]
    if pending.empty:
        return np.nan
    second = int((pending.ts_ms.min() - meta["recording"]["t0_ms"]) // 1000)
    series = data.series[(data.series.step == step) & (data.series.second <= second)]
    return float(series["vus"].iloc[-1]) if len(series) else np.nan


def _actuator(data: ChapterData, step: str) -> pd.DataFrame:
    return data.actuator[data.actuator.step == step]


def _process(data: ChapterData, step: str, process: str) -> pd.DataFrame:
    return data.process[(data.process.step == step) & (data.process.process == process)]


def _gained(rows: pd.DataFrame, metric: str) -> float:
    """How much a cumulative metric grew between its first and last samples in `rows` (0 with fewer than two)."""
    values = rows[rows.metric == metric].sort_values("ts_ms")["value"]
    return float(values.iloc[-1] - values.iloc[0]) if len(values) >= 2 else 0.0


def steps_table(data: ChapterData) -> pd.DataFrame:
    """One row per step (COLUMNS), in the order they ran."""
    ran = sorted(data.steps, key=lambda step: data.steps[step].get("started_ms", 0))
    return pd.DataFrame([step_row(data, step) for step in ran], columns=COLUMNS)
