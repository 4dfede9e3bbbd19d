"""The /work endpoint (CPU work, then a blocking wait) under sustained load: a step → the operational bounds.

A closed loop (ramping-vus, constant-vus) is predicted by harness.models.bounds at its peak users; an open model
(an arrival rate) answers what arrives up to the server's capacity, at the request's own time while below it, and
beyond it builds a queue, so its latency has no steady value (NaN) and the prediction says so.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from urllib.parse import parse_qs, urlsplit

from harness.lab.spec import Step, peak_vus
from harness.lab.units import duration_ms
from harness.models.bounds import capacity_per_s, predict_bounds
from harness.models.service import request_path

WORK_PATH = "/work"


@dataclass(frozen=True)
class WorkPrediction:
    requests: int  # asked in advance (0: a closed loop's count is not fixed)
    users: int  # peak users (an open model: the VUs k6 may use)
    rate: float  # an open model's arrival rate per second, NaN for a closed loop
    threads: int
    cores: float
    cpu_ms: float
    wait_ms: float
    tps: float  # the plateau's requests per second
    mean_latency_ms: float  # NaN where a queue grows without end
    binding: str  # users, threads, cpu, or arrivals (an open model below capacity)
    knee_threads: float
    stop_ms: int
    min_duration_ms: int

    def as_dict(self) -> dict:
        return asdict(self)


def is_work(step: Step) -> bool:
    """One request per iteration, to /work."""
    return len(step.load.get("requests") or [None]) == 1 and urlsplit(request_path(step)).path == WORK_PATH


def demand(step: Step) -> tuple[float, float]:
    """CPU ms and wait ms a /work request asks for: ?cpuMs= and ?waitMs= in the path win over the server's knobs."""
    query = parse_qs(urlsplit(request_path(step)).query)
    cpu = float(query["cpuMs"][0]) if "cpuMs" in query else float(step.knob("WORK_CPU_MS") or 0)
    wait = float(query["waitMs"][0]) if "waitMs" in query else float(step.knob("WORK_WAIT_MS") or 0)
    return cpu, wait


def server_cores(step: Step) -> float:
    """The server's CPU: its quota, else the CPUs it is pinned to, else the machine's."""
    placed = step.placement.get("server", {})
    return float(placed.get("quota") or len(placed.get("cpus") or []) or os.cpu_count() or 1)


def predict_work(step: Step) -> WorkPrediction:
    cpu_ms, wait_ms = demand(step)
    load, threads, cores = step.load, int(step.knob("TOMCAT_MAX_THREADS")), server_cores(step)
    scheduled = step.stop_ms - duration_ms(load["graceful_stop"])
    common = {"requests": step.requests_asked, "threads": threads, "cores": cores, "cpu_ms": cpu_ms,
              "wait_ms": wait_ms, "stop_ms": step.stop_ms, "min_duration_ms": scheduled}
    if "arrival-rate" in load["executor"]:
        rate = load["rate"] * 1000 / duration_ms(load.get("time_unit") or "1s")
        capacity = capacity_per_s(threads, cpu_ms, wait_ms, cores)
        below = rate < capacity
        return WorkPrediction(users=peak_vus(load), rate=rate,
                              tps=min(rate, capacity), mean_latency_ms=cpu_ms + wait_ms if below else math.nan,
                              binding="arrivals" if below else "cpu" if capacity * cpu_ms / 1000 >= cores - 1e-9 else "threads",
                              knee_threads=predict_bounds(1, threads, cpu_ms, wait_ms, cores).knee_threads, **common)
    users = peak_vus(load)
    bound = predict_bounds(users, threads, cpu_ms, wait_ms, cores)
    return WorkPrediction(users=users, rate=math.nan, tps=bound.tps, mean_latency_ms=bound.mean_latency_ms,
                          binding=bound.binding, knee_threads=bound.knee_threads, **common)
