"""Chapter 4, more threads, more throughput? (seed 004): one row per step from its per-second recording.

Each sustained step ramps its users up and holds them; its numbers are the plateau's: the seconds after the ramp and
a settling time, until the load stops. Throughput counts answered requests (the book's one classification) per second
of the plateau; latency comes from the full per-second histograms of those seconds (within 1 %), the mean from the
histogram's bucket values. CPU is each process's CPU time gained over the plateau, in cores. A burst step (an idle
server hit by all its users at once) is also read over its first seconds, where a cold pool would show.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.load.options import peak_vus
from harness.book.analysis import gained_per_second, plateau_stats
from harness.book.steps import spec_steps
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms

SETTLE_S = 5  # seconds after the ramp before the plateau counts: the pool has grown, the JIT has compiled
BURST_S = 5  # a burst step's first seconds: where a cold pool would show
TOMCAT_MIN_SPARE = 10  # Tomcat's default threads.min-spare (Spring Boot sets none)

COLUMNS = ["step", "kind", "users", "rate", "threads_max", "min_spare", "cpu_quota", "tps", "mean_ms", "p50_ms",
           "p99_ms", "errors", "dropped", "server_cpu_cores", "k6_cpu_cores", "live_threads_peak", "busy_threads_peak",
           "current_threads_peak", "gc_share", "cpu_ms_per_request", "model_tps", "model_mean_ms", "first_seconds_p99_ms",
           "first_seconds_errors"]


SUSTAINED, BURST, OPEN = "sustained", "burst", "open"


def kind_of(load: dict) -> str:
    """sustained (users ramp up and hold), burst (all users at once), or open (an arrival rate)."""
    executor = load["executor"]
    return OPEN if "arrival-rate" in executor else BURST if executor == "constant-vus" else SUSTAINED


REPEAT = "repeat"  # the spec's role of a step run again only to tell an effect from noise


def sustained(table: pd.DataFrame, full_cpu: bool = False) -> pd.DataFrame:
    """The sustained steps of a step table; with `full_cpu`, only those on the largest CPU quota, each setting's
    first run (its repeats count in the verdicts, through each setting's median)."""
    rows = table[table["kind"] == SUSTAINED]
    if not full_cpu:
        return rows
    rows = rows[~rows["step"].isin(spec_steps("chapter4", role=REPEAT))]
    return rows[rows["cpu_quota"] == rows["cpu_quota"].max()]


def plateau(load: dict) -> tuple[int, int]:
    """[first, last) second of a step's plateau, counted from its first request."""
    if load["executor"] == "ramping-vus":
        stages = [duration_ms(s["duration"]) // 1000 for s in load["stages"]]
        return stages[0] + SETTLE_S, sum(stages) - 1
    return SETTLE_S, duration_ms(load["duration"]) // 1000 - 1


def cpu_quota(meta: dict) -> float:
    """The server's CPU: its quota where the step set one, else the CPUs it was pinned to, else the machine's."""
    asked = (meta.get("placement") or {}).get("asked", {}).get("server", {})
    return float(asked.get("quota") or len(asked.get("cpus") or []) or meta["machine"]["cores"])


def step_row(data: ChapterData, step: str) -> dict:
    meta = data.steps[step]
    load, server = meta["config"]["load"], meta["config"]["server"]
    t0 = meta["recording"]["t0_ms"]
    kind = kind_of(load)
    first, last = plateau(load)
    window = plateau_stats(data, step, first, last)
    model = meta.get("model") or {}
    row = {"step": step, "kind": kind, "users": peak_vus(load), "rate": load.get("rate", np.nan),
           "threads_max": server.get("TOMCAT_MAX_THREADS", SERVER_DEFAULTS["TOMCAT_MAX_THREADS"]),
           "min_spare": server.get("TOMCAT_MIN_SPARE_THREADS", TOMCAT_MIN_SPARE), "cpu_quota": cpu_quota(meta),
           **window, "model_tps": model.get("tps", np.nan), "model_mean_ms": model.get("mean_latency_ms", np.nan)}
    begin, end = t0 + first * 1000, t0 + last * 1000
    for process in ("server", "k6"):
        rows = data.process[(data.process.step == step) & (data.process.process == process)]
        row[f"{process}_cpu_cores"] = gained_per_second(rows, "cpu_seconds", begin, end)  # CPU s per s: cores
    row["cpu_ms_per_request"] = (row["server_cpu_cores"] * 1000 / row["tps"]) if row["tps"] else np.nan
    pauses = data.actuator[(data.actuator.step == step) & (data.actuator.metric == "jvm.gc.pause.total")]
    row["gc_share"] = gained_per_second(pauses, "value", begin, end)  # seconds paused per second
    for metric, column in (("jvm.threads.live", "live_threads_peak"), ("tomcat.threads.busy", "busy_threads_peak"),
                           ("tomcat.threads.current", "current_threads_peak")):
        values = data.actuator[(data.actuator.step == step) & (data.actuator.metric == metric)]["value"]
        row[column] = float(values.max()) if len(values) else np.nan
    burst = plateau_stats(data, step, 0, BURST_S) if kind == BURST else {"p99_ms": np.nan, "errors": np.nan}
    row["first_seconds_p99_ms"], row["first_seconds_errors"] = burst["p99_ms"], burst["errors"]
    return row


def steps_table(data: ChapterData) -> pd.DataFrame:
    """One row per step (COLUMNS), in the order they ran (a full run: the spec's)."""
    ran = sorted(data.steps, key=lambda step: data.steps[step].get("started_ms", 0))
    rows = [step_row(data, step) for step in ran if data.steps[step].get("recording", {}).get("format") == "seconds"]
    return pd.DataFrame(rows, columns=COLUMNS)
