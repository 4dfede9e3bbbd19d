"""Closed loops (shared-iterations, ab -n/-c: each of C clients sends its next request as soon as the
last is answered) are a throughput question instead: min(C, T) threads are busy, each finishing
one request per mean service time, so RPS = min(C, T) / mean service time (seed 002's model), and
by Little's law the mean latency is C / RPS.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from harness.lab.spec import Step
from harness.models.service import longest_service_ms, mean_service_ms


def little_concurrency(throughput_per_s: float, mean_latency_ms: float) -> float:
    """Little's law: requests in the system = arrival rate × time in the system."""
    return throughput_per_s * mean_latency_ms / 1000


@dataclass(frozen=True)
class ThroughputPrediction:
    requests: int
    concurrency: int  # C, clients each with one request in flight
    threads: int
    mean_service_ms: float
    rps: float  # min(C, T) / mean service time, in the steady state
    rps_low: float  # a finite run's whole-run RPS can be this low: it may end with one longest service of tail
    mean_latency_ms: float  # Little's law: C / RPS
    duration_ms: int  # requests / RPS
    stop_ms: int
    min_duration_ms: int

    def as_dict(self) -> dict:
        return asdict(self)


def closed_loop_rps(concurrency: int, threads: int, mean_service_ms: float) -> float:
    return min(concurrency, threads) * 1000 / max(mean_service_ms, 0.1)


def is_closed_loop(step: Step) -> bool:
    load = step.load
    return load["executor"] == "shared-iterations" or (load["executor"] == "per-vu-iterations" and load["iterations"] > 1)


def predict_throughput(step: Step) -> ThroughputPrediction:
    n, concurrency, threads = step.requests_asked, step.load["vus"], step.knob("TOMCAT_MAX_THREADS")
    service = mean_service_ms(step)
    rps = closed_loop_rps(concurrency, threads, service)
    duration = round(n / rps * 1000)
    return ThroughputPrediction(
        requests=n, concurrency=concurrency, threads=threads, mean_service_ms=service, rps=rps,
        rps_low=n / (n / rps + longest_service_ms(step) / 1000),
        mean_latency_ms=concurrency / rps * 1000, duration_ms=duration, stop_ms=step.stop_ms,
        min_duration_ms=min(duration, step.stop_ms),
    )
