"""Chapter 4, more threads, more throughput? (seed 004): one row per run of a step, read from what the step recorded.

A sustained step ramps its users up and holds them; its numbers are the plateau's: the seconds after the ramp and a
settling time, until the load stops (and, for the rules, the nearby windows experiments/claims/chapter4.toml names).
Throughput counts answered requests (the book's one classification) per second of the window; latency comes from the
full per-second histograms of those seconds (within 1 %). CPU is each process's CPU time gained over the window, in
cores. A burst step (an idle server hit by all its users at once) records one row per request: its numbers are the
whole step's, and each user's first request (the burst itself) is read on its own.

Everything comes from each run's step.json (its recorded config, model and counters), never from today's spec.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.book.analysis import gained_per_second, plateau_stats
from harness.lab import store
from harness.lab.load.options import peak_vus
from harness.lab.steps import server_knob
from harness.lab.store import ChapterData, answered
from harness.lab.units import duration_ms

CHAPTER = "chapter4"
SETTLE_S = 5  # seconds after the ramp before the plateau counts: the pool has grown, the JIT has compiled
TOMCAT_MIN_SPARE = 10  # Tomcat's default threads.min-spare (Spring Boot sets none)
PLATEAU = "plateau"
SUSTAINED, BURST, OPEN = "sustained", "burst", "open"


def kind_of(load: dict) -> str:
    """sustained (users ramp up and hold), burst (all users at once), or open (an arrival rate)."""
    executor = load["executor"]
    return OPEN if "arrival-rate" in executor else BURST if executor == "constant-vus" else SUSTAINED


def windows(load: dict) -> dict[str, tuple[int, int]]:
    """[first, last) seconds, counted from the step's first request: the plateau, and for a ramp the nearby windows
    the rules also read (two later starts, and the plateau's halves)."""
    if load["executor"] != "ramping-vus":
        return {PLATEAU: (SETTLE_S, duration_ms(load["duration"]) // 1000 - 1)}
    ramp, end = duration_ms(load["stages"][0]["duration"]) // 1000, sum(duration_ms(s["duration"]) for s in load["stages"]) // 1000
    first, last = ramp + SETTLE_S, end - 1
    middle = (first + last) // 2
    return {PLATEAU: (first, last), "later start": (ramp + 2, last), "latest start": (ramp + 10, last),
            "first half": (first, middle), "second half": (middle, last)}


def plateau(load: dict) -> tuple[int, int]:
    return windows(load)[PLATEAU]


def cpu_quota(config: dict, machine: dict) -> float:
    """The server's CPU: its quota where the step set one, else the CPUs it was pinned to, else the machine's."""
    server = (config.get("placement") or {}).get("server", {})
    return float(server.get("quota") or len(server.get("cpus") or []) or machine["cores"])


def setting(meta: dict) -> dict:
    """What a step ran with, from its step.json: users, pool, CPU, the model's prediction, the load's counters."""
    config, model = meta["config"], meta.get("model") or {}
    load, server = config["load"], config.get("server", {})
    switches, counts = (meta.get("during_load") or {}).get("server", {}), meta.get("requests") or {}
    return {"kind": kind_of(load), "users": peak_vus(load), "rate": load.get("rate", np.nan),
            "threads_max": server_knob(meta, "TOMCAT_MAX_THREADS"),
            "min_spare": server.get("TOMCAT_MIN_SPARE_THREADS", TOMCAT_MIN_SPARE),
            "cpu_quota": cpu_quota(config, meta["machine"]), "model_tps": model.get("tps", np.nan),
            "model_mean_ms": model.get("mean_latency_ms", np.nan), "knee": model.get("knee_threads", np.nan),
            "requests": counts.get("issued", 0),
            "failed": counts.get("failed", 0),
            "voluntary": switches.get("voluntary", np.nan), "involuntary": switches.get("involuntary", np.nan)}


def first_of_each_user(requests: pd.DataFrame) -> pd.DataFrame:
    """Each user's (k6 VU's) first request: in a burst, the burst itself."""
    return requests.loc[requests.groupby("vu")["start_ms"].idxmin()] if len(requests) else requests


def request_stats(data: ChapterData, step: str, t0: int, first: int, last: int) -> dict:
    """The same numbers as plateau_stats from a step recorded one row per request: the requests that ended in
    [first, last) seconds, and every user's first request (its mean answer time and how many there were)."""
    requests = data.requests[data.requests.step == step]
    ended = requests[(requests.end_ms >= t0 + first * 1000) & (requests.end_ms < t0 + last * 1000)]
    ok = ended[answered(ended)]["duration_ms"]
    firsts = first_of_each_user(requests)
    quantile = (lambda q: float(ok.quantile(q))) if len(ok) else (lambda q: np.nan)
    return {"tps": len(ok) / max(last - first, 1), "mean_ms": float(ok.mean()) if len(ok) else np.nan,
            "p50_ms": quantile(0.5), "p90_ms": quantile(0.9), "p99_ms": quantile(0.99),
            "errors": int((~answered(ended)).sum()), "dropped": 0,
            "first_request_ms": float(firsts["duration_ms"].mean()) if len(firsts) else np.nan}


def window_row(data: ChapterData, step: str, first: int, last: int) -> dict:
    """A step's numbers over the seconds [first, last): throughput, latency, failures, CPU, GC."""
    meta = data.steps[step]
    t0 = meta["recording"]["t0_ms"]
    if meta["recording"].get("format") == "requests":
        row = request_stats(data, step, t0, first, last)
    else:
        row = {**plateau_stats(data, step, first, last), "first_request_ms": np.nan}
    begin, end = t0 + first * 1000, t0 + last * 1000
    for process in ("server", "k6"):
        rows = data.process[(data.process.step == step) & (data.process.process == process)]
        row[f"{process}_cpu_cores"] = gained_per_second(rows, "cpu_seconds", begin, end)  # CPU s per s: cores
    row["cpu_ms_per_request"] = (row["server_cpu_cores"] * 1000 / row["tps"]) if row["tps"] else np.nan
    pauses = data.actuator[(data.actuator.step == step) & (data.actuator.metric == "jvm.gc.pause.total")]
    row["gc_share"] = gained_per_second(pauses, "value", begin, end)  # seconds paused per second
    return row


PEAKS = {"jvm.threads.live": "live_threads_peak", "tomcat.threads.busy": "busy_threads_peak",
         "tomcat.threads.current": "current_threads_peak"}


def peaks(data: ChapterData, step: str) -> dict:
    """The most threads the JVM had, and Tomcat's pool (created, busy), over the whole step (Actuator)."""
    mine = data.actuator[data.actuator.step == step]
    return {column: float(values.max()) if len(values := mine[mine.metric == metric]["value"]) else np.nan
            for metric, column in PEAKS.items()}


def run_rows(data: ChapterData, step: str, name: str, run: int, every_window: bool) -> list[dict]:
    """One row per window of one run (`step` is the run's directory in `data`, `name` the step's id)."""
    meta = data.steps[step]
    spans = windows(meta["config"]["load"])
    chosen = spans if every_window and kind_of(meta["config"]["load"]) == SUSTAINED else {PLATEAU: spans[PLATEAU]}
    fixed = {"step": name, "run": run, **setting(meta), **peaks(data, step)}
    return [{**fixed, "window": window, **window_row(data, step, first, last)} for window, (first, last) in chosen.items()]


def steps_table(data: ChapterData) -> pd.DataFrame:
    """One row per step, its first run over the plateau, in the order the steps ran."""
    ran = sorted(data.steps, key=lambda step: data.steps[step].get("started_ms", 0))
    rows = [row for step in ran for row in run_rows(data, step, step, 1, every_window=False)]
    return pd.DataFrame(rows).drop(columns=["run", "window"])


def runs_of(data: ChapterData, step: str) -> list[tuple[int, str, ChapterData]]:
    """Each complete run of a step: its number, its directory (<id>, <id>.2 … <id>.n, as its step.json names it) and
    the data holding its tables. A run that failed is missing, and the numbers keep their gap."""
    found = []
    for position, meta in enumerate(data.runs.get(step, [data.steps[step]]), start=1):
        named = meta.get("id", "")
        directory = named if store.run_of(named)[0] == step else step if position == 1 else f"{step}.{position}"
        number = store.run_of(directory)[1]
        found.append((number, directory, data if directory == step else store.load_run(CHAPTER, directory)))
    return found


def run_table(data: ChapterData) -> pd.DataFrame:
    """One row per (step, run, window): every run of every step, a sustained step over each window the rules read."""
    return pd.DataFrame([row for step in data.steps for run, directory, source in runs_of(data, step)
                         for row in run_rows(source, directory, step, run, every_window=True)])


def first_requests(data: ChapterData, steps: list[str]) -> pd.DataFrame:
    """Each user's first request in every run of the given steps recorded one row per request: step, run,
    min-spare, its answer time and whether it was answered."""
    frames = []
    for step in steps:
        for run, directory, source in runs_of(data, step):
            requests = source.requests[source.requests.step == directory]
            if len(requests):
                first = first_of_each_user(requests)
                frames.append(pd.DataFrame({"step": step, "run": run, "min_spare": setting(source.steps[directory])["min_spare"],
                                            "duration_ms": first["duration_ms"].to_numpy(), "answered": answered(first).to_numpy()}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["step", "run", "min_spare", "duration_ms", "answered"])


def plateau_runs(runs: pd.DataFrame, window: str = PLATEAU) -> pd.DataFrame:
    """The run table over one window (the plateau by default)."""
    return runs[runs["window"] == window]


def sustained(table: pd.DataFrame) -> pd.DataFrame:
    """The steps that ramp their users up and hold them."""
    return table[table["kind"] == SUSTAINED]
