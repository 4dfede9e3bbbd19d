"""How long a step takes on the wall clock, and how many requests it should send, from its spec alone: the run's ETA
and its progress lines.

A step's wall time is three phases, as the runner runs them:

- start: the step's hosts (network = "hosts"), its services (postgres: the first load of its template or a reused
  cluster, then a clone; the sample server only when the step needs it; nginx, netty, webflux), the samplers;
- load: the load tool's start (k6 initialises every VU first, so it grows with the VUs, whatever the processes),
  the executor's own time (a spike: the spike model's last response with the users arriving as fast as k6 starts
  them; a closed loop: the closed-loop model; constant-vus, ramping-* and arrival rates: their duration or stages plus
  the iterations still in flight, at most gracefulStop), the tool's exit;
- stop: the tail samples, each service's stop (a JVM's exit grows with the square of its threads), writing the step
  directory (per-request rows, or k6's output aggregated per second).

A redeploy step is `starts` fresh sample servers. The constants are physical costs measured in the committed
reference data (data/<chapter>/<step>/step.json, 2 cores), each with the steps it comes from: the generic ones from
FIT_CHAPTERS only, so the other chapters check them; the kinds that one chapter alone runs (postgres and the pair-room
jar: chapter 5; webflux: chapter 7) from that chapter. `python -m harness.models.duration_check [data dir]`
compares the estimates with the measured wall times.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, replace

from harness.lab.spec import SERVER, Step, peak_vus
from harness.lab.units import duration_ms
from harness.models.bounds import bounds_per_s
from harness.models.closed_loop import closed_loop_rps, is_closed_loop, predict_throughput
from harness.models.service import mean_service_ms
from harness.models.spike import connection_ceiling, server_of, simulate
from harness.models.work import demand, is_work, predict_work, server_cores

FIT_CHAPTERS = ("chapter1", "chapter2", "chapter4", "chapter6")  # where the generic constants were measured
TAIL_SAMPLES = 2  # sampler ticks after the load (harness.lab.runner.TAIL_SAMPLES; a test keeps the two equal)
ROWS_LIMIT = 20000  # record = "auto" keeps rows up to this many requests asked (recording.AUTO_MAX_REQUESTS)
STARTUP_ALLOWANCE_MS = 4000  # the estimate this module replaces: 4 s a step plus the model's minimum (the "before")

# ---- start: a JVM's start-up is CPU work, its time that work over the CPUs it may use --------------------------
SERVER_CDS_CPU_MS = 4000  # the sample server with its CDS archive: 2.12 s to healthy on 2 CPUs (chapters 1 and 2's
# load steps, median of 43), 3.92 s on one CPU (chapter 4's quota 1.0, median of 28), 8.93 s on half (quota 0.5, of 6)
SERVER_JAR_CPU_MS = 6300  # the plain fat jar: 3.16 s on 2 CPUs (chapter2/redeploy-jar, median of 10 starts)
PAIR_ROOM_CPU_MS = 16400  # the pair-room jar (JPA, Hibernate, HikariCP): 8.2 s on 2 CPUs (chapter 5, median of 31)
NETTY_CPU_MS = 730  # netty-server ready: 0.70-0.78 s, median 0.73, on the one CPU chapter 6 pins it to
WEBFLUX_CPU_MS = 6400  # webflux-server ready: 2.9-3.7 s, median 3.2, on 2 CPUs (chapter 7's loop-*)
NGINX_START_MS = 60  # nginx ready: 58-62 ms (chapter 6)
PG_READY_CPU_MS = 37  # postgres ready: 0.37 s on a tenth of a CPU (chapter 5's quota 0.1, median), 80 ms on one
PG_CLONE_US_PER_ROW = 0.9  # CREATE DATABASE … TEMPLATE: 0.6-1.3 s for a template of 1,000,000 rows (chapter 5)
PG_INITDB_MS = 1250  # a new cluster's initdb: 1244 ms (chapter5/api-room-create)
PG_LOAD_US_PER_ROW = 90  # the template's load: 90.15 s for 1,000,000 rows a table (chapter5/api-room-create)
HOSTS_MS = 300  # making network-namespace hosts: chapter 6's hosts-* steps start 0.3 s later than their loopback
# twins (median of 7 pairs)
SAMPLERS_START_MS = 70  # server healthy → load started: 32-101 ms, median 64 (chapters 1 and 2)

# ---- load -------------------------------------------------------------------------------------------------------
PROCESS_MS = 50  # a load tool's process to its first request with one VU: 30-40 ms (chapter1/k6-c1, k6-c10)
K6_INIT_MS_PER_VU = 0.24  # k6 initialises every VU first: 2.33 s at 10,000 VUs, 3.65 s at 15,000 (chapter2/hold-*)
# Then it starts the VUs' first iterations, the slower the more are running (its Go heap, so its GC, grows with them):
# spread = a·N + b·N², fitted to the first-request spreads of chapter2/hold-* and queue-* (6000: 2.3 s, 15,000: 7 s).
K6_SPREAD_MS_PER_VU = 0.328
K6_SPREAD_MS_PER_VU2 = 9.26e-6
K6_BATCH_MS_PER_USER = 0.17  # batch mode's spread: 0.66 s for 6000 users, 2.62 s for 15,000 (chapter2/batch-*)
# constant-vus with thousands of VUs: k6 starts ~3,500 first iterations a second, so a 1 s duration issues fewer
# requests than VUs (chapter2/cv-6000, cv-10000, cv-15000, again-cv-10000-*: 2913-4821 in 1 s, mean 3735)
K6_ITERATIONS_PER_S = 3500
K6_EXIT_MS = 100  # k6's last response → its exit: 0.06-0.2 s with few VUs, 0.5 s at 15,000 (chapter2/hold-*)
K6_EXIT_MS_PER_VU = 0.025
THREAD_START_MS = 0.8  # Tomcat starting a worker thread in a spike: chapter2/hold-N's last response comes 0.9 s
# (1000 threads) … 11.5 s (15,000) after the last arrival plus the sleep
REQUEST_MS = 1.5  # a closed loop's own round trip per request: chapter1/k6-c1 took 100.75 s for 500 × 200 ms

# ---- stop -------------------------------------------------------------------------------------------------------
STOP_MS = 200  # stopping the server, writing the small tables and logs: the stop phase, 1.15-1.35 s with its 1 s of
# tail samples (chapter 1's steps, median 1.2 s; chapter2/hold-300, queue-300: 1.19, 1.24 s)
REDEPLOY_STOP_MS = 100  # a redeploy's stop per start: 10 starts took 0.7-1.1 s beyond their start-ups
# (chapter2/redeploy-jar, redeploy-cds)
JVM_EXIT_MS_PER_KTHREAD2 = 43  # a JVM's exit with T threads: 43 ms × (T/1000)² (chapter2/hold-*: +1.5 s at 6000
# threads, +4.6 s at 10,000, +10 s at 15,000; queue-15000's 15,000 connections on 200 threads: nothing)
SERVICE_STOP_MS = {"postgres": 1300, "webflux": 1500}  # stop phases beyond the sample server's: chapter5/api-* take
# 2.3-2.9 s (postgres stopped, its clone dropped), chapter7/loop-* 1.5 s more than platform-* of as many users
WRITE_US_PER_ROW = 30  # requests.parquet: 0.45-0.7 s for 14,000-24,000 rows (chapter6/connect, reuse)
AGGREGATE_US_PER_REQUEST = 6.5  # per-second tables from k6's CSV: ~0.65 s per 100,000 requests (chapter 6's k6 steps)


@dataclass(frozen=True)
class StepEstimate:
    duration_ms: int  # the whole step on the wall clock
    requests: int | None  # the requests it should send; None where no model says (a loop of unknown speed)
    parts: dict = field(default_factory=dict)  # ms of each phase: start, load, stop

    def as_dict(self) -> dict:
        return asdict(self)


def estimate(step: Step, template_cold: bool = False) -> StepEstimate:
    """The step's wall time and requests. `template_cold`: its postgres template is not cached yet, so this step
    makes the cluster and loads it (estimate_run decides that for a run's steps)."""
    if step.kind == "redeploy":
        starts = (server_start_ms(step) + REDEPLOY_STOP_MS) * step.starts
        return StepEstimate(starts, None, {"start": starts, "load": 0, "stop": 0})
    load, requests = load_phase(step)
    parts = {"start": start_phase(step, template_cold), "load": load, "stop": stop_phase(step, requests)}
    return StepEstimate(sum(parts.values()), requests, parts)


def estimate_run(steps: list[Step], template_ready=lambda knobs: True) -> list[StepEstimate]:
    """Each step's estimate in run order. `template_ready(knobs)`: a postgres service's cluster is cached already;
    the first step that needs an uncached one pays its load, the later ones reuse it."""
    loaded: set = set()
    out = []
    for step in steps:
        keys = {template_key(k) for k in step.services.values() if k["kind"] == "postgres" and not template_ready(k)}
        out.append(estimate(step, template_cold=bool(keys - loaded)))
        loaded |= keys
    return out


def template_key(knobs: dict) -> tuple:
    """What makes two postgres services share a cluster (harness.lab.services.pgcluster.cluster_key's inputs)."""
    return knobs.get("template"), knobs.get("rows"), knobs.get("sql_dir")


# ---- start ------------------------------------------------------------------------------------------------------

def needs_server(step: Step) -> bool:
    """The sample server runs when the step's graph has it (the load goes to it, or a service proxies to it)."""
    return SERVER in step.services


def cpus(step: Step, name: str) -> float:
    """The CPUs a process may use: its placement's CPU list (else the machine's), at most its quota."""
    placed = step.placement.get(name, {})
    count = len(placed.get("cpus") or []) or step.limits.get("cores") or os.cpu_count() or 1
    return min(count, placed.get("quota") or count)


def server_start_ms(step: Step) -> int:
    if step.server.get("PAIR_ROOM"):
        work = PAIR_ROOM_CPU_MS
    elif step.server.get("VIRTUAL_THREADS") or step.system.get("launch") == "jar":  # Java 21 runs the fat jar
        work = SERVER_JAR_CPU_MS
    else:
        work = SERVER_CDS_CPU_MS
    return round(work / cpus(step, SERVER))


def service_start_ms(step: Step, name: str, template_cold: bool = False) -> int:
    knobs = step.services[name]
    kind = knobs["kind"]
    if kind == "postgres":
        rows = knobs.get("rows", 0)
        cold = PG_INITDB_MS + rows * PG_LOAD_US_PER_ROW / 1000 if template_cold else 0
        return round(cold + PG_READY_CPU_MS / cpus(step, name) + rows * PG_CLONE_US_PER_ROW / 1000)
    work = {"netty": NETTY_CPU_MS, "webflux": WEBFLUX_CPU_MS}.get(kind)
    return round(work / cpus(step, name)) if work else NGINX_START_MS


def start_phase(step: Step, template_cold: bool = False) -> int:
    total = SAMPLERS_START_MS + (HOSTS_MS if step.system.get("network") == "hosts" else 0)
    total += sum(service_start_ms(step, name, template_cold) for name in step.services if name != SERVER)
    return total + (server_start_ms(step) if needs_server(step) else 0)


# ---- load -------------------------------------------------------------------------------------------------------

def load_phase(step: Step) -> tuple[int, int | None]:
    """The load tool's whole run, and the requests it should send."""
    run, requests = executor_ms(step)
    if step.load["tool"] != "k6":  # ab and wrk start in milliseconds and stop with their last response
        return run + PROCESS_MS, requests
    load = step.load
    initialised = batch_vus(load) if is_batch(load) else load.get("pre_allocated_vus") or peak_vus(load)
    init = PROCESS_MS * load.get("processes", 1) + initialised * K6_INIT_MS_PER_VU
    return round(init + run + K6_EXIT_MS + peak_vus(load) * K6_EXIT_MS_PER_VU), requests


def is_batch(load: dict) -> bool:
    return load.get("spike_mode") == "batch"


def batch_vus(load: dict) -> int:
    """The k6 VUs carrying a batch spike's users (harness.lab.load.options.batch_vus: one per 100, at most 100)."""
    return load.get("batch_vus") or min(100, math.ceil(load["vus"] / 100))


def executor_ms(step: Step) -> tuple[int, int | None]:
    """The executor's own time, from its first iteration to its last response, and the requests it should send."""
    executor = step.load["executor"]
    if executor in ("per-vu-iterations", "shared-iterations"):
        run, requests = iterations_ms(step)
    elif executor == "constant-vus":
        run, requests = constant_vus_ms(step)
    else:  # ramping-vus, the arrival rates: their stages or duration, then what is in flight
        scheduled = step.stop_ms - duration_ms(step.load["graceful_stop"])
        run = scheduled + in_flight_ms(step)
        requests = step.requests_asked if "arrival-rate" in executor else ramp_requests(step)
    return min(run, step.stop_ms), requests


def one_request(step: Step) -> bool:
    return len(step.load.get("requests") or [None]) == 1


def modelled_target(step: Step) -> bool:
    """The spike and closed-loop models know the sample server (platform or virtual threads) and a webflux service."""
    return bool(step.target_model) and step.target_model.get("sleep_ms") is not None


def iterations_ms(step: Step) -> tuple[int, int]:
    """A fixed number of iterations: a closed loop on the sample server (the closed-loop model's two bounds, midway,
    plus each request's round trip), a spike of one request per user (the spike model), or else round by round."""
    load = step.load
    if one_request(step) and load.get("target", SERVER) == SERVER and is_closed_loop(step):
        model = predict_throughput(step)
        midway = (model.duration_ms + model.requests / model.rps_low * 1000) / 2
        return round(midway + model.requests / model.concurrency * REQUEST_MS), model.requests
    if one_request(step) and modelled_target(step) and not is_closed_loop(step):
        return spike_ms(step, load["vus"]), step.requests_asked
    rounds = load["iterations"] if load["executor"] == "per-vu-iterations" else math.ceil(load["iterations"] / load["vus"])
    return round(rounds * iteration_ms(step)) + spread_ms(step, load["vus"]), step.requests_asked


def constant_vus_ms(step: Step) -> tuple[int, int | None]:
    """VUs looping for `duration`: one long request each when the service outlasts the duration (chapters 2 and 3's
    1-second steps: as many as k6 starts in time), else iterations until the end, then those in flight; as many
    requests as the users' loop makes where a model gives its latency."""
    load = step.load
    duration = duration_ms(load["duration"])
    if not is_work(step) and one_request(step) and modelled_target(step) and server_of(step).service_ms >= duration:
        issued = min(load["vus"], math.ceil(K6_ITERATIONS_PER_S * duration / 1000))
        return max(duration, spike_ms(step, issued, min(duration, spread_ms(step, issued)))), issued
    iteration = iteration_ms(step)
    known = latency_ms(step) is not None and 0 < iteration < math.inf
    requests = round(load["vus"] * duration / iteration * len(load.get("requests") or [None])) if known else None
    return duration + in_flight_ms(step), requests


def latency_ms(step: Step) -> float | None:
    """A request's time in a closed loop of the step's peak users, where a model gives it: on /work the operational
    bounds' (inf where a queue grows without end), on the sample server Little's law on the closed loop's throughput,
    on a webflux service its wait (no pool); None for a scenario (its API's times are no model's) and other services."""
    if is_work(step):
        latency = predict_work(step).mean_latency_ms
        return math.inf if math.isnan(latency) else latency
    if step.load.get("requests") or not modelled_target(step):
        return None
    if step.load.get("target", SERVER) != SERVER:
        return server_of(step).service_ms
    threads = math.inf if step.server.get("VIRTUAL_THREADS") else step.knob("TOMCAT_MAX_THREADS")
    return peak_vus(step.load) / closed_loop_rps(peak_vus(step.load), threads, mean_service_ms(step)) * 1000


def spread_ms(step: Step, users: int) -> int:
    """From the first user's request to the last user's first, as k6 starts them."""
    if is_batch(step.load):
        return round(users * K6_BATCH_MS_PER_USER)
    return round(users * K6_SPREAD_MS_PER_VU + users * users * K6_SPREAD_MS_PER_VU2)


def spike_ms(step: Step, users: int, window_ms: int | None = None) -> int:
    """The spike model's last response (harness.models.spike.simulate, which predict_spike plays with every user at
    once) for `users` arriving evenly over k6's start-up spread (or `window_ms`), plus the time Tomcat takes to start
    their threads; at most k6's stop time. Past the connection ceiling the model, which drops the SYNs that find the
    accept queue full, is a lower bound (its docstring): the kernel admits many of those users late instead (SYN-RECV,
    retransmits), so the later of its two plays counts, as it is and with a queue that holds every user."""
    spread = spread_ms(step, users) if window_ms is None else window_ms
    arrivals = [i * spread // users for i in range(users)]
    server, timeout = server_of(step), duration_ms(step.load["request_timeout"])
    plays = [server] + ([replace(server, accept_count=users)]
                        if users > connection_ceiling(server.max_connections, server.accept_count) else [])
    last = max(o.end_ms for play in plays for o in simulate(users, play, timeout, arrivals))
    return round(min(last + threads_started(step, users) * THREAD_START_MS, step.stop_ms))


def threads_started(step: Step, users: int) -> int:
    """Worker threads Tomcat starts for `users` in flight (none on virtual threads or for another service's load)."""
    if step.load.get("target", SERVER) != SERVER or step.server.get("VIRTUAL_THREADS"):
        return 0
    return min(users, step.knob("TOMCAT_MAX_THREADS"))


def iteration_ms(step: Step) -> float:
    """One iteration of a looping VU: its think times and its requests' latency where a model gives one (a scenario's
    latencies are unknown: its think times dominate, chapter 5's 1 s each)."""
    think = sum(duration_ms(r["think_time"]) for r in step.load.get("requests") or [])
    return think + (latency_ms(step) or 0)


def in_flight_ms(step: Step) -> int:
    """How long the iterations running when the schedule ends still take: k6 waits for them at most gracefulStop."""
    return round(min(iteration_ms(step), duration_ms(step.load["graceful_stop"])))


def ramp_requests(step: Step) -> int | None:
    """ramping-vus on /work: the operational bounds' throughput at each second's users, summed over the stages."""
    if not is_work(step) or step.load["executor"] != "ramping-vus":
        return None
    cpu_ms, wait_ms = demand(step)
    threads, cores = step.knob("TOMCAT_MAX_THREADS"), server_cores(step)
    users, total = step.load["start_vus"], 0.0
    for stage in step.load["stages"]:
        seconds = duration_ms(stage["duration"]) / 1000
        for k in range(math.ceil(seconds)):
            now = users + (stage["target"] - users) * min(k + 0.5, seconds) / seconds
            total += min(bounds_per_s(round(now), threads, cpu_ms, wait_ms, cores).values()) * min(1, seconds - k)
        users = stage["target"]
    return round(total)


# ---- stop -------------------------------------------------------------------------------------------------------

def stop_phase(step: Step, requests: int | None) -> int:
    """Tail samples, the services' stops (the sample server's exit with the threads its load made it start), and
    writing k6's results: rows per request, or per-second tables aggregated from its output."""
    total = TAIL_SAMPLES * step.system["sample_interval_ms"] + STOP_MS
    total += sum(SERVICE_STOP_MS.get(knobs["kind"], 0) for knobs in step.services.values())
    in_flight = min(peak_vus(step.load), requests or peak_vus(step.load))
    total += JVM_EXIT_MS_PER_KTHREAD2 * (threads_started(step, in_flight) / 1000) ** 2
    if requests and step.load["tool"] == "k6":
        record, asked = step.system["record"], step.requests_asked  # harness.lab.load.recording.record_mode's rule
        rows = record == "requests" or (record == "auto" and 0 < asked <= ROWS_LIMIT)
        total += requests * (WRITE_US_PER_ROW if rows else AGGREGATE_US_PER_REQUEST) / 1000
    return round(total)

