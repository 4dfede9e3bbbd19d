"""What one server does when N users arrive at once, with every knob the book measures: the prediction behind the
capacity explorer (the answer page's "What will my server do?", chapter 3's explorer).

The spike simulation (harness.models.spike) plays the users against Tomcat's threads, max-connections and the kernel's
accept queue, with the client's SYN retries and timeouts. The other chapters' limits enter it as what they change:

- the database pool (chapter 5, harness.models.pool): with open-in-view, Spring Boot's default, a request holds a pool
  connection for its whole time on a thread, so the pool is a second, smaller thread pool: min(threads, pool)
  requests are served at once;
- the CPU (chapter 4, harness.models.bounds): K requests served at once, each needing D ms of one core, keep C cores
  busy for K·D/C ms; when that is longer than the service time each request holds its thread that long instead
  (throughput X = min(K / S, C / D), and by Little's law each of the K takes K / X);
- open files (chapter 7, harness.models.ceilings): Tomcat holds no more connections than the open-files limit leaves
  room for after the files the process keeps for itself.

What it leaves out: HikariCP's connection timeout (a request that waits longer for a connection fails), a CPU that
slows requests before it is full (queueing near the knee), and everything spike.py's docstring lists.

harness/book/explorer.js is this function in JavaScript, so a reader's browser answers at once for any setting;
tests/test_explorer.py holds the two to the same outputs.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, fields

from harness.lab.spec import FD_RESERVE
from harness.models.ceilings import open_files_ceiling
from harness.models.spike import K6_DIAL_TIMEOUT_MS, KERNEL_EXTRA, SYN_RETRY_MS, Server, connection_ceiling, simulate

BIN_MIN_MS = 1000  # answers are counted per request time (a wave each), in bins no shorter than a second
USERS, THREADS, POOL, CONNECTIONS, OPEN_FILES, CPU = (
    "users", "threads", "the database pool", "max-connections", "open files", "the CPU")

# Each knob's allowed range (inclusive): what the explorer's inputs accept. Users stop at 100,000 so a browser
# answers in well under a second.
FRACTIONAL = ("cores",)  # every other knob is a whole number
RANGES = {
    "users": (1, 100_000), "service_ms": (1, 600_000), "cpu_ms": (0, 600_000), "cores": (0.25, 256),
    "threads": (1, 100_000), "pool": (0, 10_000), "max_connections": (1, 1_000_000), "accept_count": (0, 100_000),
    "open_files": (FD_RESERVE + 1, 10_000_000), "keep_alive_s": (0, 3600), "timeout_s": (1, 3600),
}


@dataclass(frozen=True)
class Knobs:
    """The settings a reader chooses: users arriving at once and the server they meet."""

    users: int
    service_ms: int  # how long a request holds its thread when nothing else is short (the /hello sleep)
    cpu_ms: int = 0  # of which it computes, in ms of one core
    cores: float = 2
    threads: int = 200  # server.tomcat.threads.max
    pool: int = 0  # HikariCP's maximum-pool-size; 0: the request uses no database
    max_connections: int = 8192  # server.tomcat.max-connections
    accept_count: int = 100  # server.tomcat.accept-count
    open_files: int = 20_000  # the server process's open-files limit (ulimit -n)
    keep_alive_s: int = 20  # how long an answered connection stays open, idle (0: closed after the response)
    timeout_s: int = 60  # the client's request timeout (k6's 60 s)


@dataclass(frozen=True)
class CapacityPrediction:
    knobs: Knobs
    connections: int  # connections Tomcat takes: max-connections, or fewer when open files are short
    ceiling: int  # connections held at once: connections + accept-count + 1
    in_service: int  # requests served at once (K)
    binding: str  # what sets K, or the CPU when it stretches the time a request holds its thread
    hold_ms: int  # the time a request holds its thread: the service time, or K·D/C when the CPU is short
    throughput: float  # requests per second while K are served: K × 1000 / hold_ms
    held: int  # users the server holds the moment they arrive
    waiting: int  # of those, waiting for a thread (in Tomcat's queue or the accept queue)
    outside: int  # users left retrying to connect
    answered: int
    failed: int
    mean_ms: float  # mean time to an answer, of the answered (NaN when none)
    slowest_ms: int  # the last answer (0 when none)
    bin_ms: int
    bins: tuple[tuple[int, int, int, int], ...]  # (from ms, to ms, answered, failed) for each bin with any

    def as_dict(self) -> dict:
        return asdict(self)


def check(knobs: Knobs) -> None:
    """Every knob inside its range, or one ValueError naming each that is not."""
    problems = [f"{f.name} must be between {low:,} and {high:,}, got {getattr(knobs, f.name)}" for f in fields(knobs)
                for low, high in [RANGES[f.name]] if not low <= getattr(knobs, f.name) <= high]
    problems += [f"{name} must be a whole number, got {getattr(knobs, name)}" for name in RANGES
                 if name not in FRACTIONAL and getattr(knobs, name) != int(getattr(knobs, name))]
    if knobs.cpu_ms > knobs.service_ms:
        problems.append(f"cpu_ms ({knobs.cpu_ms}) is part of service_ms ({knobs.service_ms}): it cannot be more")
    if problems:
        raise ValueError("; ".join(problems))


def served_at_once(knobs: Knobs, connections: int) -> tuple[int, str]:
    """K, the requests served at once, and what sets it (the first of the smallest, in the order listed)."""
    candidates = [(knobs.users, USERS), (knobs.threads, THREADS), (knobs.pool or math.inf, POOL),
                  (connections, OPEN_FILES if connections < knobs.max_connections else CONNECTIONS)]
    smallest = min(value for value, _ in candidates)
    return int(smallest), next(name for value, name in candidates if value == smallest)


def bin_of(hold_ms: int) -> int:
    """Bins one request time wide (a wave each), at least BIN_MIN_MS."""
    return max(BIN_MIN_MS, hold_ms)


def predict_capacity(knobs: Knobs) -> CapacityPrediction:
    check(knobs)
    connections = min(knobs.max_connections, open_files_ceiling(knobs.open_files, FD_RESERVE))
    k, binding = served_at_once(knobs, connections)
    stretched = math.ceil(k * knobs.cpu_ms / knobs.cores)
    if stretched > knobs.service_ms:
        binding = CPU
    hold_ms = max(knobs.service_ms, stretched)
    ceiling = connection_ceiling(connections, knobs.accept_count)
    server = Server(threads=min(knobs.threads, knobs.pool or knobs.threads), service_ms=hold_ms,
                    max_connections=connections, accept_count=knobs.accept_count, keep_alive=knobs.keep_alive_s > 0,
                    keep_alive_timeout_ms=knobs.keep_alive_s * 1000)
    outcomes = simulate(knobs.users, server, knobs.timeout_s * 1000)
    ends = [o.end_ms for o in outcomes if o.ok]
    width = bin_of(hold_ms)
    counted = Counter((o.end_ms // width, o.ok) for o in outcomes)
    bins = tuple((b * width, (b + 1) * width, counted[(b, True)], counted[(b, False)])
                 for b in sorted({b for b, _ in counted}))
    held = min(knobs.users, ceiling)
    return CapacityPrediction(
        knobs=knobs, connections=connections, ceiling=ceiling, in_service=k, binding=binding, hold_ms=hold_ms,
        throughput=k * 1000 / hold_ms, held=held, waiting=held - k, outside=knobs.users - held,
        answered=len(ends), failed=knobs.users - len(ends), mean_ms=sum(ends) / len(ends) if ends else math.nan,
        slowest_ms=max(ends, default=0), bin_ms=width, bins=bins)


def constants() -> dict:
    """What the JavaScript port takes from here, so both share one source of each number."""
    return {"syn_retry_ms": list(SYN_RETRY_MS), "dial_timeout_ms": K6_DIAL_TIMEOUT_MS, "kernel_extra": KERNEL_EXTRA,
            "fd_reserve": FD_RESERVE, "bin_min_ms": BIN_MIN_MS, "ranges": RANGES, "fractional": list(FRACTIONAL),
            "names": {"users": USERS, "threads": THREADS, "pool": POOL, "connections": CONNECTIONS,
                      "open_files": OPEN_FILES, "cpu": CPU}}
