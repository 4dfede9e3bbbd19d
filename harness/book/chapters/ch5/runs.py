"""Chapter 5's runs, one row each (`runs_table`), and its steps, one row each with the mean of their runs
(`steps_table`): from each run's per-second recording, HikariCP's Actuator metrics, the database's own table
(pg_stat_activity, pg_stat_database, its CPU) and the counters step.json keeps of the load (its quota cgroup's
throttling).

Every run is read as it ran, from its step.json's `config` (never today's spec). Like the article's TPS, throughput is
answered requests per second over the whole load (its users ramp up, so this averages over the ramp); the final steps
offer a constant rate, read over its hold. A pool's hold and wait times are HikariCP's own sums over counts (the time
a connection was held, or waited for, per use); CPU is each side's CPU time gained over the load, in cores.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd

from harness.book.analysis import gained_per_second, plateau_stats
from harness.lab import store
from harness.lab.load.options import peak_vus, requests_per_iteration, scheduled_ms
from harness.lab.steps import server_knob
from harness.lab.store import ChapterData, answered
from harness.lab.units import duration_ms

CHAPTER = "chapter5"
DB = "db"  # the spec's name of the database service
HIKARI_POOL = 10  # HikariCP's default maximum-pool-size
PEAK_S = 10  # the best run of this many seconds, beside a ramp's average
API, SCENARIO, TOMCAT, FINAL = "single API", "scenario", "Tomcat", "final"  # the step kinds, by the findings they test
LAST_STAGE, STAGE_WINDOWS = (45, 60), ((30, 60), (0, 60))  # F001-c.2's window and its nearby ones (seconds of the load)
HOLD, HOLD_WINDOWS = (25, 85), ((45, 85), (35, 75))  # F001-g.1's: the constant rate's hold, and nearby


def kind_of(findings: list[str]) -> str:
    if "F001-b" in findings:
        return API
    if "F001-g" in findings:
        return FINAL
    return TOMCAT if {"F001-d", "F001-e", "F001-f"} & set(findings) else SCENARIO


def load_seconds(load: dict) -> int:
    """How long the load starts users or sessions: a ramp's stages, or an arrival rate's duration."""
    return scheduled_ms(load) // 1000


def offered_per_s(load: dict) -> float:
    """The requests a second an arrival-rate load offers (sessions per time unit × requests per session); NaN for a
    closed loop, whose users wait for each answer."""
    if "rate" not in load:
        return np.nan
    return load["rate"] * requests_per_iteration(load) * 1000 / duration_ms(load["time_unit"])


def db_quota(meta: dict) -> float:
    """The database's CPU: its quota where the step set one, else the CPUs it was pinned to."""
    asked = (meta.get("placement") or {}).get("asked", {}).get(DB, {})
    return float(asked.get("quota") or len(asked.get("cpus") or []) or meta["machine"]["cores"])


def window_column(name: str, window: tuple[int, int]) -> str:
    return f"{name}_{window[0]}_{window[1]}"


def runs_table(chapter: str = CHAPTER) -> pd.DataFrame:
    """One row per run of every step, in the order they ran (read from the data directory being read)."""
    metas = store.complete_steps(chapter)
    ran = tuple(sorted(((run, m.get("started_ms", 0), m.get("ended_ms", 0)) for run, m in metas.items()),
                       key=lambda r: r[1]))
    return _runs_table(str(store.data_root()), chapter, ran).copy()


@cache
def _runs_table(root: str, chapter: str, ran: tuple) -> pd.DataFrame:
    """Cached by what was run (each run's id, start and end), so a run measured again is read again."""
    return pd.DataFrame([run_row(store.load_run(chapter, run), run) for run, _, _ in ran])


def steps_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per step: its first run's settings and the mean of its runs' measurements, with how many runs."""
    numbers = runs.select_dtypes("number").columns.difference(["run"])
    means = runs.groupby("step", sort=False)[list(numbers)].mean()
    first = runs.drop_duplicates("step").set_index("step").drop(columns=list(numbers))
    return first.join(means).assign(runs=runs.groupby("step", sort=False).size()).reset_index()[runs.columns.insert(
        len(runs.columns), "runs").drop(["id", "run"])]


def run_row(data: ChapterData, run: str) -> dict:
    meta = data.steps[run]
    load, server = meta["config"]["load"], meta["config"]["server"]
    db = meta["config"].get("services", {}).get(DB, {})
    findings = meta.get("findings", [])
    seconds = load_seconds(load)
    t0 = meta["recording"]["t0_ms"]
    begin, end = t0, t0 + seconds * 1000
    stats = plateau_stats(data, run, 0, seconds)
    series = data.series[data.series.step == run]
    base, k = store.run_of(run)
    row = {"id": run, "step": base, "run": k, "kind": kind_of(findings), "findings": ", ".join(findings),
           "users": peak_vus(load) if "stages" in load else float(series["vus"].max()),
           "offered_per_s": offered_per_s(load), "pool": server.get("HIKARI_MAX_POOL_SIZE", HIKARI_POOL),
           "threads_max": server_knob(meta, "TOMCAT_MAX_THREADS"),
           "max_connections": server_knob(meta, "TOMCAT_MAX_CONNECTIONS"),
           "accept_count": server_knob(meta, "TOMCAT_ACCEPT_COUNT"),
           "db_quota": db_quota(meta), "open_in_view": server.get("JPA_OPEN_IN_VIEW", True),
           "indexes": db.get("indexes", True), "seconds": seconds, "tps": stats["tps"],
           "peak_tps": peak_tps(data, run, seconds), "success": success(data, run), "errors": stats["errors"],
           "mean_ms": stats["mean_ms"], "p50_ms": stats["p50_ms"], "p90_ms": stats["p90_ms"], "p99_ms": stats["p99_ms"]}
    row |= pool_numbers(data, run, begin, end) | database_numbers(data, run, begin, end, row["tps"])
    row |= throttling(meta) | {
        "pending_from_users": pending_from_users(data, run),
        "server_cpu_cores": gained_per_second(_process(data, run, "server"), "cpu_seconds", begin, end)}
    row |= {window_column("pending_mean", w): pending_mean(data, run, w) for w in (LAST_STAGE, *STAGE_WINDOWS)}
    final = row["kind"] == FINAL
    row |= {window_column("tps", w): plateau_stats(data, run, *w)["tps"] if final else np.nan for w in (HOLD, *HOLD_WINDOWS)}
    return row


def throttling(meta: dict) -> dict:
    """The database's quota cgroup during the load (step.json's during_load): its CPU periods and how many ran out of
    quota (NaN where the run did not record them)."""
    cgroup = (meta.get("during_load") or {}).get(f"{DB}.cgroup") or {}
    return {"db_periods": cgroup.get("periods", np.nan), "db_throttled": cgroup.get("throttled", np.nan)}


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


def pending_mean(data: ChapterData, step: str, window: tuple[int, int]) -> float:
    """HikariCP's requests waiting for a connection, the mean of its samples over seconds [a, b) of the load."""
    t0 = data.steps[step]["recording"]["t0_ms"]
    rows = _actuator(data, step)
    inside = rows[(rows.metric == "hikaricp.connections.pending")
                  & (rows.ts_ms >= t0 + window[0] * 1000) & (rows.ts_ms < t0 + window[1] * 1000)]["value"]
    return float(inside.mean()) if len(inside) else np.nan


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
    pending = _actuator(data, step)
    pending = pending[(pending.metric == "hikaricp.connections.pending") & (pending.value > 0)]
    if pending.empty:
        return np.nan
    second = int((pending.ts_ms.min() - data.steps[step]["recording"]["t0_ms"]) // 1000)
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
