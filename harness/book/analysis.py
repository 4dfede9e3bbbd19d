"""Derived numbers from a chapter's data: throughput, latency percentiles, Little's law, time series.

Everything here is computed from the step data and the model; chapters and verdicts call these.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.lab import histogram
from harness.lab.load.options import peak_vus
from harness.lab.store import ChapterData, answered
from harness.models.closed_loop import little_concurrency

PERCENTILES = (0.5, 0.66, 0.9, 0.99)


def steps_frame(data: ChapterData) -> pd.DataFrame:
    """One row per step: tool, concurrency, requests asked/issued/ok and the step's load window."""
    rows = []
    for step_id, meta in data.steps.items():
        load = meta["config"]["load"]
        rows.append({
            "step": step_id, "tool": load.get("tool", "k6"), "executor": load["executor"],
            "concurrency": peak_vus(load), "asked": meta["requests"]["asked"], "issued": meta["requests"]["issued"],
            "succeeded": meta["requests"].get("succeeded", 0), "threads": meta["model"].get("threads"),
            "wall_s": meta.get("wall_s"), "findings": ", ".join(meta.get("findings", [])),
        })
    return pd.DataFrame(rows)


def throughput_table(data: ChapterData) -> pd.DataFrame:
    """Per step: measured RPS beside the model's.

    `rps` is over the whole run (answered requests / (last end − first start)), as ab and the article
    report it. It runs a little under the model's steady state: the run ends with the last slow
    requests still sleeping, so a run of N / RPS seconds carries up to one sleep of tail. (A window
    inside the run is no better: a saturated pool phase-locks, all threads waking together once per
    sleep, so completions come in bursts and a window's count depends on where it cuts them.)
    """
    table = steps_frame(data)
    measured, latency = [], []
    for step_id in table["step"]:
        requests = data.requests[(data.requests.step == step_id) & answered(data.requests)]
        span_s = (requests["end_ms"].max() - requests["start_ms"].min()) / 1000
        measured.append(len(requests) / span_s if span_s > 0 else float("nan"))
        latency.append(requests["duration_ms"].mean())
    table["rps"] = measured
    table["rps_model"] = [data.meta(s)["model"].get("rps") for s in table["step"]]
    table["rps_low"] = [data.meta(s)["model"].get("rps_low", float("nan")) for s in table["step"]]
    table["rps_error"] = table["rps"] / table["rps_model"] - 1
    table["mean_latency_ms"] = latency
    # Little's law: requests in flight = throughput × mean latency; the clients keep C in flight.
    table["littles_concurrency"] = little_concurrency(table["rps"], table["mean_latency_ms"])
    return table


def latency_percentiles(data: ChapterData, step_ids: list[str] | None = None) -> pd.DataFrame:
    """Per step: answered requests' latency percentiles and max, in ms."""
    ok = data.requests[answered(data.requests)]
    if step_ids:
        ok = ok[ok.step.isin(step_ids)]
    table = ok.groupby("step")["duration_ms"].quantile(list(PERCENTILES)).unstack()
    table.columns = [f"p{round(q * 100)}_ms" for q in PERCENTILES]
    table["max_ms"] = ok.groupby("step")["duration_ms"].max()
    return table.reset_index()


def spike_start_ms(data: ChapterData) -> dict[str, float]:
    """Per step, time zero of its charts: its first request (k6 needs seconds to start thousands of users
    after it launches, and the model counts from the spike); the load's launch when no request was sent."""
    first = data.requests.groupby("step")["start_ms"].min() if len(data.requests) else pd.Series(dtype=float)
    return {s: step_start_ms(m, first[s] if s in first else None) for s, m in data.steps.items()}


def step_start_ms(meta: dict, first_request_ms: float | None) -> float:
    """One step's time zero (spike_start_ms): its first request's start; the load's launch when it sent none."""
    if first_request_ms is None:
        return meta.get("load_started_ms", meta.get("started_ms", 0.0))
    return float(first_request_ms)


def per_second(data: ChapterData, step_id: str) -> pd.DataFrame:
    """Completed requests in each second since the step's first request (to see a rate hold)."""
    requests = data.requests[(data.requests.step == step_id) & answered(data.requests)]
    start = spike_start_ms(data)[step_id]
    second = ((requests["end_ms"] - start) // 1000).astype("int64")
    return second.value_counts().sort_index().rename_axis("second").reset_index(name="requests")


def metric_series(data: ChapterData, step_id: str, metric: str) -> pd.DataFrame:
    """One Actuator metric of a step against seconds since its first request."""
    frame = data.actuator[(data.actuator.step == step_id) & (data.actuator.metric == metric)]
    start = spike_start_ms(data)[step_id]
    return pd.DataFrame({"t_s": (frame["ts_ms"] - start) / 1000, "value": frame["value"]}).reset_index(drop=True)


# ---- a recorded-by-the-second step (record = "seconds") ----------------------------------------------------

def plateau_stats(data: ChapterData, step: str, first: int, last: int) -> dict:
    """Answered requests per second, latency and failures over the seconds [first, last) of a step."""
    seconds = max(last - first, 1)
    outcomes = data.outcomes[(data.outcomes.step == step) & data.outcomes.second.between(first, last - 1)]
    latency = data.latency[(data.latency.step == step) & data.latency.second.between(first, last - 1)]
    series = data.series[(data.series.step == step) & data.series.second.between(first, last - 1)]
    ok = outcomes[answered(outcomes)]["requests"].sum()
    counts = latency.groupby("bucket")["count"].sum()
    quantiles = histogram.quantiles(latency, by=None) if len(latency) else pd.DataFrame([{"p50": np.nan, "p90": np.nan, "p99": np.nan}])
    mean = float((histogram.value_of(counts.index) * counts.to_numpy()).sum() / counts.sum()) if counts.sum() else np.nan
    return {"tps": ok / seconds, "mean_ms": mean, "p50_ms": float(quantiles["p50"].iloc[0]),
            "p90_ms": float(quantiles["p90"].iloc[0]), "p99_ms": float(quantiles["p99"].iloc[0]), "errors": int(outcomes["requests"].sum() - ok),
            "dropped": int(series["dropped_iterations"].fillna(0).sum()) if len(series) else 0}


def gained_per_second(samples: pd.DataFrame, column: str, begin_ms: float, end_ms: float) -> float:
    """How fast a cumulative column (CPU seconds, seconds paused for GC) grew between two instants: its gain between
    the first and last samples inside them, per second. NaN with fewer than two samples there."""
    inside = samples[samples.ts_ms.between(begin_ms, end_ms)].sort_values("ts_ms")
    if len(inside) < 2:
        return np.nan
    first, last = inside.iloc[0], inside.iloc[-1]
    return float((last[column] - first[column]) / ((last["ts_ms"] - first["ts_ms"]) / 1000))
