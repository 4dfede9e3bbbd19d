"""Queueing predictions made before any data: what a step should show if Tomcat works as documented.

The server is T worker threads, each busy S ms per request (the /hello sleep). N clients connect at
once. Tomcat holds at most max-connections sockets; the kernel queues up to accept-count more,
plus one: Linux tests a full accept queue with `>` rather than `>=` (sk_acceptq_is_full), so a
listen backlog of B holds B + 1 connections. A SYN that finds the queue full is dropped and the
client's kernel retransmits it 1, 3, 7, 15, 31 and 63 s after the first (initial RTO 1 s, doubling,
tcp_syn_retries = 6), until the client's connect timeout (k6: 30 s). After a response, a keep-alive connection keeps its Tomcat slot until the
server's keep-alive timeout closes it (k6 does not close a finished VU's connection); with
`Connection: close` the slot frees at once. Tomcat closes an expired keep-alive connection on a
worker thread (the poller dispatches the timeout to the executor), so the close waits in the same
queue as the requests: while the pool is saturated, a slot frees only when the queue ahead of its
close has drained. A client gives up at its request timeout; a request already delivered to the
server is still served (the thread sleeps for a client that has gone).

`simulate` plays this out request by request; `predict` summarises it for a step.

What it leaves out: the queue is checked when a SYN arrives and again when the handshake's last
ACK does. A burst of SYNs that finds room is answered in full, but only the room's worth of ACKs
fit; the other clients believe they are connected while the server keeps them in SYN-RECV and gets
them in on SYN-ACK and data retransmits, later than the retry schedule above. Past an overflow the
model is therefore a lower bound on completion times, exact only while every client is held. And
Tomcat's acceptor is taken to empty the queue at once: a burst of SYNs faster than its one thread
accepts overflows a small queue before the ceiling is reached, and those users get in on retries.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter, deque
from dataclasses import asdict, dataclass

from harness.lab.spec import FD_RESERVE, Step
from harness.lab.units import duration_ms
from harness.models.ceilings import open_files_ceiling
from harness.models.service import _service_ms

KERNEL_EXTRA = 1  # the accept queue holds backlog + 1 (see module docstring)
UNBOUNDED = 10**9  # "threads" of a server without a pool: virtual threads, an event loop
NEVER_MS = 10**9  # Reactor Netty closes no idle connection by itself
DEFAULT_SOMAXCONN = 4096  # Linux's default since 5.4: Netty's backlog when the machine's is not known


SYN_RETRY_MS = (1000, 3000, 7000, 15000, 31000, 63000)  # Linux SYN retransmits after the first SYN


# k6 stops connecting after 30 s ("dial: i/o timeout"), whatever the request timeout: k6 v1.8.1,
# internal/js/runner.go, BaseDialer net.Dialer{Timeout: 30 * time.Second}. A user still in SYN retries
# then gives up 1 s before its 31 s retransmit.
K6_DIAL_TIMEOUT_MS = 30000


@dataclass(frozen=True)
class Outcome:
    """One simulated request: when it ended (ms from the spike) and whether the client got a response."""

    end_ms: int
    ok: bool


@dataclass(frozen=True)
class Server:
    threads: int
    service_ms: int
    max_connections: int
    accept_count: int
    keep_alive: bool  # does a served connection stay open (client reuses, server allows keep-alive)?
    keep_alive_timeout_ms: int


def simulate(requests: int, server: Server, client_timeout_ms: int, arrivals_ms: list[int] | None = None,
             connect_timeout_ms: int = K6_DIAL_TIMEOUT_MS) -> list[Outcome]:
    """Play out N clients against the server described in the module docstring.

    They arrive at once unless `arrivals_ms` gives each one's first SYN (e.g. the measured start
    times: k6 needs seconds to start ten thousand users on two cores). Times are from the first arrival.
    """
    arrival = arrivals_ms if arrivals_ms is not None else [0] * requests
    give_up_ms = min(connect_timeout_ms, client_timeout_ms)  # for a client that never connects
    queue_room = server.accept_count + KERNEL_EXTRA
    kernel: deque[int] = deque()  # established, waiting for Tomcat's accept
    work: deque[tuple[str, int]] = deque()  # ("request" | "close", client): Tomcat's executor queue
    held, free_threads = 0, server.threads
    outcomes: dict[int, Outcome] = {}
    events: list[tuple[int, int, str, int]] = []  # (time, order, kind, client)
    order = 0

    def at(time: int, kind: str, client: int) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (time, order, kind, client))

    for client in range(requests):
        at(arrival[client], "syn", client)
    retries: Counter[int] = Counter()
    while events:
        now, _, kind, client = heapq.heappop(events)
        if kind == "syn":
            if len(kernel) < queue_room:
                kernel.append(client)
            elif retries[client] < len(SYN_RETRY_MS) and SYN_RETRY_MS[retries[client]] < give_up_ms:
                at(arrival[client] + SYN_RETRY_MS[retries[client]], "syn", client)
                retries[client] += 1
            else:  # never connected before the client gave up: no work reaches the server
                outcomes[client] = Outcome(arrival[client] + give_up_ms, False)
        elif kind == "done":
            free_threads += 1
            deadline = arrival[client] + client_timeout_ms
            ok = now < deadline  # due exactly at the timeout is late: a real response adds milliseconds
            outcomes[client] = Outcome(now if ok else deadline, ok)
            # A slot frees at once unless a live client keeps the connection open, idle, until it expires.
            at(now + server.keep_alive_timeout_ms if ok and server.keep_alive else now,
               "expire" if ok and server.keep_alive else "release", client)
        elif kind == "expire":  # the close is a task for a worker thread, queued behind the requests
            work.append(("close", client))
        elif kind == "release":
            held -= 1
        held, free_threads = _run_tomcat(now, kernel, work, held, free_threads, server, at)
    return [outcomes[c] for c in range(requests)]


def _run_tomcat(now, kernel, work, held, free_threads, server: Server, at) -> tuple[int, int]:
    """Tomcat at one instant: the acceptor takes queued connections while it has slots; free threads take
    executor tasks in order (a request holds its thread for the service time; a close frees a slot at once)."""
    while True:
        while kernel and held < server.max_connections:
            work.append(("request", kernel.popleft()))
            held += 1
        if not (work and free_threads):
            return held, free_threads
        task, client = work.popleft()
        if task == "close":
            held -= 1
        else:
            free_threads -= 1
            at(now + server.service_ms, "done", client)


@dataclass(frozen=True)
class Prediction:
    requests: int  # N, the requests asked for
    threads: int  # T
    service_ms: int  # S
    waves: int  # ceil(N / T): waves of completions if every request is held
    wave_ms: list[int]  # completion time of each wave, from the spike's start
    wave_sizes: list[int]
    ceiling: int  # connections the server side can hold: max-connections + accept-count + 1
    over_ceiling: int  # requests whose first SYN finds no room
    keep_alive: bool
    client_timeout_ms: int
    succeeded: int  # from the simulation
    failed: int
    completions: list[list[int]]  # [end_ms, count] of successful requests, from the simulation
    stop_ms: int  # when k6 stops waiting (duration + gracefulStop, or maxDuration + gracefulStop)
    interrupted: int  # successes the simulation places after k6 stops
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


def server_of(step: Step) -> Server | None:
    """The server a step's load meets, from what its kind says of it (Step.target_model: the sample server's pool or
    virtual threads, chapter 7's event loop with no pool, no connection limit of its own, the machine's somaxconn as
    its backlog and no idle close). Either way it holds no more connections than its open-files limit leaves room
    for (harness.models.ceilings; the limits are those the spec was checked against: step.limits). None when its kind
    gives no model (your own app: its service time is unknown)."""
    facts = step.target_model
    if not facts or facts.get("sleep_ms") is None:
        return None
    nofile = step.container.get("nofile", step.limits.get("nofile"))
    files = open_files_ceiling(nofile, FD_RESERVE) if nofile else UNBOUNDED
    keep_alive_timeout = facts["keep_alive_timeout_ms"]
    return Server(
        threads=UNBOUNDED if facts["threads"] is None else facts["threads"],
        service_ms=_service_ms(step),
        max_connections=files if facts["max_connections"] is None else min(facts["max_connections"], files),
        accept_count=facts["accept_count"] if facts["accept_count"] is not None else step.limits.get("somaxconn", DEFAULT_SOMAXCONN),
        keep_alive=step.load["connection_reuse"] and facts["keep_alive"],
        keep_alive_timeout_ms=NEVER_MS if keep_alive_timeout is None else keep_alive_timeout,
    )


def simulate_measured_arrivals(step: Step, start_ms: list[float]) -> list[Outcome]:
    """The simulation fed with the measured start of every request (ms since the first): the model
    without its assumption that every user arrives at once."""
    first = min(start_ms)
    arrivals = [round(t - first) for t in start_ms]
    return simulate(len(arrivals), server_of(step), duration_ms(step.load["request_timeout"]), arrivals)


def predict_spike(step: Step, requests: int | None = None) -> Prediction:
    n = step.requests_asked if requests is None else requests
    server = server_of(step)
    wave_ms, sizes = waves(n, server.threads, server.service_ms)
    timeout = duration_ms(step.load["request_timeout"])
    stop = step.stop_ms
    outcomes = simulate(n, server, timeout)
    ends = Counter(o.end_ms for o in outcomes if o.ok)
    ceiling = connection_ceiling(server.max_connections, server.accept_count)
    return Prediction(
        requests=n, threads=server.threads, service_ms=server.service_ms, waves=len(wave_ms), wave_ms=wave_ms,
        wave_sizes=sizes, ceiling=ceiling, over_ceiling=max(0, n - ceiling), keep_alive=server.keep_alive,
        client_timeout_ms=timeout, succeeded=sum(ends.values()), failed=n - sum(ends.values()),
        completions=[[t, c] for t, c in sorted(ends.items())], stop_ms=stop,
        interrupted=sum(c for t, c in ends.items() if t > stop),
        min_duration_ms=min(max((o.end_ms for o in outcomes), default=0), stop),
    )


