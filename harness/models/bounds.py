"""Operational laws (asymptotic bounds) for a closed loop without think time: N users, each sending its next request as
soon as the last is answered, to a server whose request costs D ms of CPU on C cores (C may be a fraction: a CPU
quota) and then waits W ms (a database call), on a pool of T threads.

Each bound is a resource that cannot do more: the users cannot send faster than one request per D + W each, the pool
cannot hold more than T requests at once, the cores cannot give more than C ms of CPU per ms. So

    X ≤ min(N / (D + W), T / (D + W), C / D)        (requests per ms; ×1000 per second)

and, by Little's law, the mean latency is R = N / X. The CPU saturates once the threads in flight cover the wait as
well as the work: T* ≈ C × (1 + W / D) threads (Goetz's rule of thumb); the same number of users saturates it when
every user has a thread. Queueing for the CPU, lock contention and context switches lower the real curve below these
bounds near the knee; the Universal Scalability Law (harness.models.usl) measures that part.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

USERS, THREADS, CPU = "users", "threads", "cpu"  # the bound that is binding: who is the limit


@dataclass(frozen=True)
class BoundsPrediction:
    users: int  # N, each with one request in flight
    threads: int  # T, the pool's maximum (threads.max)
    cores: float  # C, the server's CPU (a quota may be fractional)
    cpu_ms: float  # D, CPU per request, in ms of one core
    wait_ms: float  # W, blocking wait per request (holds a thread, not a core)
    tps: float  # the bound on throughput, requests per second
    mean_latency_ms: float  # Little's law: N / X
    binding: str  # USERS, THREADS or CPU: the smallest bound (CPU wins a tie: it is the one that costs to add)
    knee_threads: float  # C × (1 + W / D): the pool size (and users) at which the CPU saturates
    cpu_utilisation: float  # X × D / C, 1.0 when the CPU is the limit
    busy_threads: int  # min(N, T): with no think time every user's request holds a thread while one is free

    def as_dict(self) -> dict:
        return asdict(self)


def knee_threads(cpu_ms: float, wait_ms: float, cores: float) -> float:
    """Goetz's pool size for a CPU-bound service with waits: C × (1 + W / D); infinite when a request uses no CPU."""
    return cores * (1 + wait_ms / cpu_ms) if cpu_ms > 0 else math.inf


def bounds_per_s(users: int, threads: int, cpu_ms: float, wait_ms: float, cores: float) -> dict[str, float]:
    """Each resource's bound on throughput, requests per second."""
    cycle_ms = cpu_ms + wait_ms  # a request's time on its thread with no queueing
    return {USERS: users * 1000 / cycle_ms, THREADS: threads * 1000 / cycle_ms,
            CPU: cores * 1000 / cpu_ms if cpu_ms > 0 else math.inf}


def capacity_per_s(threads: int, cpu_ms: float, wait_ms: float, cores: float) -> float:
    """The most the server can answer per second, whatever the load: the smaller of the pool's and the CPU's bounds.
    An open model (an arrival rate) above it builds a queue that grows by the difference every second."""
    bounds = bounds_per_s(0, threads, cpu_ms, wait_ms, cores)
    return min(bounds[THREADS], bounds[CPU])


def predict_bounds(users: int, threads: int, cpu_ms: float, wait_ms: float, cores: float) -> BoundsPrediction:
    """The plateau a closed loop of `users` reaches on this server, and which resource sets it."""
    _check(users, threads, cpu_ms, wait_ms, cores)
    bounds = bounds_per_s(users, threads, cpu_ms, wait_ms, cores)
    tps = min(bounds.values())
    binding = next(name for name in (CPU, THREADS, USERS) if bounds[name] == tps)
    return BoundsPrediction(
        users=users, threads=threads, cores=cores, cpu_ms=cpu_ms, wait_ms=wait_ms, tps=tps,
        mean_latency_ms=users * 1000 / tps, binding=binding, knee_threads=knee_threads(cpu_ms, wait_ms, cores),
        cpu_utilisation=tps * cpu_ms / 1000 / cores, busy_threads=min(users, threads))


def _check(users: int, threads: int, cpu_ms: float, wait_ms: float, cores: float) -> None:
    problems = [f"{name} must be > 0, got {value}" for name, value in
                (("users", users), ("threads", threads), ("cores", cores), ("cpu_ms + wait_ms", cpu_ms + wait_ms))
                if not value > 0]
    problems += [f"{name} must be ≥ 0, got {value}" for name, value in (("cpu_ms", cpu_ms), ("wait_ms", wait_ms))
                 if not value >= 0]
    if problems:
        raise ValueError("; ".join(problems))
