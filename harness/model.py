"""Queueing predictions made before any data: what a step should show if Tomcat works as documented.

The server is T worker threads, each busy S ms per request (the /hello sleep). N requests arrive
at once. Tomcat holds at most max-connections sockets; the kernel queues up to accept-count more,
plus one: Linux tests a full accept queue with `>` rather than `>=` (sk_acceptq_is_full), so a
listen backlog of B holds B + 1 connections. Connections beyond that ceiling have their SYN
dropped and the client retries later.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from harness.spec import Step, duration_ms

KERNEL_EXTRA = 1  # the accept queue holds backlog + 1 (see module docstring)
STARTUP_ALLOWANCE_MS = 4000  # redeploy-to-healthy plus teardown, for progress estimates only


@dataclass(frozen=True)
class Prediction:
    requests: int  # N, the requests asked for
    threads: int  # T
    service_ms: int  # S
    waves: int  # ceil(N / T) if every request is held
    wave_ms: list[int]  # completion time of each wave, from the spike's start
    wave_sizes: list[int]
    ceiling: int  # connections the server side can hold: max-connections + accept-count + 1
    over_ceiling: int  # requests whose SYN finds no room at first
    client_timeout_ms: int
    timeouts: int  # requests in waves that end after the client's timeout
    stop_ms: int  # when k6 stops waiting (duration + gracefulStop, or maxDuration + gracefulStop)
    interrupted: int  # requests still running when k6 stops (not counting timeouts)
    min_duration_ms: int  # the load phase can end no sooner than this

    def as_dict(self) -> dict:
        return asdict(self)


def waves(requests: int, threads: int, service_ms: int) -> tuple[list[int], list[int]]:
    """Completion time and size of each wave when all requests are queued at t = 0."""
    count = math.ceil(requests / threads)
    sizes = [min(threads, requests - k * threads) for k in range(count)]
    return [(k + 1) * service_ms for k in range(count)], sizes


def connection_ceiling(max_connections: int, accept_count: int) -> int:
    return max_connections + accept_count + KERNEL_EXTRA


def little_concurrency(throughput_per_s: float, mean_latency_ms: float) -> float:
    """Little's law: requests in the system = arrival rate × time in the system."""
    return throughput_per_s * mean_latency_ms / 1000


def predict(step: Step, requests: int | None = None) -> Prediction:
    """The prediction for a step; `requests` defaults to what the step asks for."""
    n = step.requests_asked if requests is None else requests
    threads, service = step.knob("TOMCAT_MAX_THREADS"), _service_ms(step)
    wave_ms, sizes = waves(n, threads, service)
    ceiling = connection_ceiling(step.knob("TOMCAT_MAX_CONNECTIONS"), step.knob("TOMCAT_ACCEPT_COUNT"))
    timeout = duration_ms(step.load["request_timeout"])
    stop = _stop_ms(step)
    timeouts = sum(size for end, size in zip(wave_ms, sizes) if end > timeout)
    interrupted = sum(size for end, size in zip(wave_ms, sizes) if stop < end <= timeout)
    return Prediction(
        requests=n, threads=threads, service_ms=service, waves=len(wave_ms), wave_ms=wave_ms,
        wave_sizes=sizes, ceiling=ceiling, over_ceiling=max(0, n - ceiling),
        client_timeout_ms=timeout, timeouts=timeouts, stop_ms=stop, interrupted=interrupted,
        min_duration_ms=min(wave_ms[-1] if wave_ms else 0, timeout, stop),
    )


def expected_step_ms(step: Step) -> int:
    """A wall-time estimate for progress messages: start-up plus the load phase."""
    return STARTUP_ALLOWANCE_MS + predict(step).min_duration_ms


def _service_ms(step: Step) -> int:
    """The sleep a request asks for: ?sleepMs= in the path wins over the server's SLEEP_MS."""
    path = step.load["path"]
    if "sleepMs=" in path:
        return int(path.split("sleepMs=")[1].split("&")[0])
    return step.knob("SLEEP_MS")


def _stop_ms(step: Step) -> int:
    load = step.load
    grace = duration_ms(load["graceful_stop"])
    if load["executor"] == "constant-vus":
        return duration_ms(load["duration"]) + grace
    return duration_ms(load["max_duration"]) + grace
