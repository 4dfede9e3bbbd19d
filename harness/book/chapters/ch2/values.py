"""Chapter 2's numbers for its prose: small dataclasses the .qmd quotes inline, computed from the steps as they ran
(their step.json config) and what they measured. No sentence is written here (harness.book.chapters.ch2.words has
the few whose wording depends on the data).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

from harness.book.chapters.ch2.lab import (
    AGAIN,
    CV,
    HOLD,
    NOISE,
    QUEUE,
    SERIES,
    SPIKE_S,
    UNSAMPLED,
    batch_table,
    first_overflow,
    issued_runs,
    memory_bound_users,
    memory_costs,
    memory_table,
    noise_summary,
    noise_table,
    overflow_table,
    recorded_machine,
    redeploy_table,
    repeated_users,
    run_metas,
    runs_table,
    sampler_cost_table,
    series_knob,
    spike_limit,
    start_table,
    steps_with,
    users_of,
)
from harness.book.prose import listed
from harness.lab.steps import server_knob
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms

CHAPTER_STEPS = 40  # "a chapter of forty steps": what a redeploy's time costs a chapter


def _load(data: ChapterData, prefix: str, key: str):
    """A load setting as a series' steps ran it (the most common value)."""
    values = [data.steps[s]["config"]["load"].get(key) for s in steps_with(data, prefix)]
    return statistics.mode(values) if values else None


def _seconds(text: str | None) -> float:
    return duration_ms(text) / 1000 if text else float("nan")


@dataclass(frozen=True)
class Setup:
    cores: int
    levels: str  # "300, 1,000, 3,000, 6,000, 10,000 and 15,000"
    sleep_s: float
    max_connections: int
    queue_threads: int
    queue_timeout_s: float
    cv_duration_s: float
    batch_vus: str  # "3–100"
    starts: int  # per redeploy step
    noise_users: int
    noise_threads: int
    noise_max_connections: int
    same_as: str
    noise_runs: int
    unsampled_runs: int
    again_users: int
    again_runs: int  # runs of again-cv-N (cv-N is one more)
    slowest_start_s: float  # the longest any hold-N step took to start its users
    wave_s: float  # one wave of chapter 3's headline step (its sleep)


def setup(data: ChapterData) -> Setup:
    hold = steps_with(data, HOLD)
    noise = data.steps.get(NOISE) or data.steps.get(UNSAMPLED) or {}
    config = noise.get("config", {"server": {}, "load": {}})
    knob = {k: server_knob(noise, k) for k in ("TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS")}
    again = steps_with(data, AGAIN)
    vus = batch_table(data)["batch_k6_vus"]
    starts = start_table(data)
    redeploy = steps_with(data, "redeploy-")
    return Setup(
        cores=recorded_machine(data)["cores"], levels=listed(users_of(data, s) for s in hold),
        sleep_s=float(series_knob(data, HOLD, "SLEEP_MS")) / 1000,
        max_connections=int(series_knob(data, HOLD, "TOMCAT_MAX_CONNECTIONS")),
        queue_threads=int(series_knob(data, QUEUE, "TOMCAT_MAX_THREADS")),
        queue_timeout_s=_seconds(_load(data, QUEUE, "request_timeout")),
        cv_duration_s=_seconds(_load(data, CV, "duration")),
        batch_vus=f"{vus.min():,}–{vus.max():,}" if len(vus) else "–",
        starts=max((data.steps[s]["config"].get("starts", 0) for s in redeploy), default=0),
        noise_users=config["load"].get("vus", 0), noise_threads=knob["TOMCAT_MAX_THREADS"],
        noise_max_connections=knob["TOMCAT_MAX_CONNECTIONS"], same_as=config.get("same_as", "?"),
        noise_runs=len(run_metas(data, NOISE)), unsampled_runs=len(run_metas(data, UNSAMPLED)),
        again_users=repeated_users(data) or 0, again_runs=len(run_metas(data, again[0])) if again else 0,
        slowest_start_s=float(starts[starts.step.str.startswith(HOLD)]["spread_s"].max()),
        wave_s=noise.get("model", {}).get("service_ms", server_knob(noise, "SLEEP_MS")) / 1000)



@dataclass(frozen=True)
class Starts:
    limit: int  # the largest N whose users all started within SPIKE_S (0: not even the smallest)
    spike_s: float
    slow_low_s: float  # the last start of the slow steps, lowest and highest
    slow_high_s: float
    largest: int
    largest_s: float
    ramps: str  # the N whose last user starts later than one wave ("" when none)


def starts(data: ChapterData) -> Starts:
    table = start_table(data)
    hold = table[table.step.str.startswith(HOLD)].sort_values("users")
    slow = hold[hold.spread_s > SPIKE_S]
    wave = setup(data).wave_s
    ramps = hold[hold.spread_s > wave]
    return Starts(limit=spike_limit(table) or 0, spike_s=SPIKE_S,
                  slow_low_s=float(slow.spread_s.min()) if len(slow) else float("nan"),
                  slow_high_s=float(slow.spread_s.max()) if len(slow) else float("nan"),
                  largest=int(hold.users.iloc[-1]), largest_s=float(hold.spread_s.iloc[-1]),
                  ramps=listed(ramps.users) if len(ramps) else "")


@dataclass(frozen=True)
class Batch:
    users: int  # the largest N run in both modes
    batch_s: float
    vus_s: float
    k6_cores: float
    server_cores: float
    faster: str  # the N where batch started faster ("" when none)
    slower: str  # … and where it did not


def batch(data: ChapterData) -> Batch | None:
    table = batch_table(data).sort_values("users")
    if table.empty:
        return None
    largest = table.iloc[-1]
    faster, slower = table[table.batch_spread_s < table.vus_spread_s], table[table.batch_spread_s >= table.vus_spread_s]
    return Batch(int(largest.users), float(largest.batch_spread_s), float(largest.vus_spread_s), float(largest.k6_cores),
                 float(largest.server_cores), listed(faster.users) if len(faster) else "",
                 listed(slower.users) if len(slower) else "")


@dataclass(frozen=True)
class Overflows:
    room: int  # max-connections of the hold-N server
    accept_count: int
    queue: int  # accept-count + 1: what the kernel holds
    first: dict[str, int | None]  # per series prefix: the fewest users whose step overflowed
    overflowed: dict[str, str]  # per series prefix: the N whose step overflowed ("" when none)
    largest: int  # the most overflows of one step
    largest_step: str
    cut: str  # constant-vus requests k6 cut off, per N ("" when none)
    cut_users: str
    cut_steps: int
    graceful_stop_s: float


def overflows(data: ChapterData) -> Overflows:
    table = overflow_table(data)
    accept = int(series_knob(data, HOLD, "TOMCAT_ACCEPT_COUNT"))
    over = {p: table[table.step.str.startswith(p) & (table.listen_overflows > 0)] for p in SERIES}
    cut = table[table.step.str.startswith(CV) & (table.interrupted > 0)]
    worst = table.loc[table.listen_overflows.idxmax()] if len(table) else None
    return Overflows(
        room=int(series_knob(data, HOLD, "TOMCAT_MAX_CONNECTIONS")), accept_count=accept, queue=accept + 1,
        first={p: first_overflow(table, p) for p in SERIES},
        overflowed={p: listed(rows.users) if len(rows) else "" for p, rows in over.items()},
        largest=int(worst.listen_overflows) if worst is not None else 0,
        largest_step=str(worst.step) if worst is not None else "",
        cut=listed(cut.interrupted) if len(cut) else "", cut_users=listed(cut.users) if len(cut) else "",
        cut_steps=len(cut), graceful_stop_s=_seconds(_load(data, CV, "graceful_stop")))


@dataclass(frozen=True)
class ConstantVus:
    largest: int  # the largest N of the cv series
    largest_issued: int
    users: int  # the N that ran again
    runs: int
    issued_low: int
    issued_high: int
    started: int  # users one VU per user had started within 1 s at that N
    last_start_s: float  # the latest start of any constant-vus run at that N


def constant_vus(data: ChapterData) -> ConstantVus:
    table = start_table(data)
    cv = table[table.step.str.startswith(CV)].sort_values("users")
    runs = issued_runs(data)
    users = repeated_users(data) or 0
    hold = table.set_index("step")
    started = int(hold.loc[f"{HOLD}{users}", "started_1s"]) if f"{HOLD}{users}" in hold.index else 0
    return ConstantVus(int(cv.users.iloc[-1]), int(cv.issued.iloc[-1]), users, len(runs),
                       int(runs.issued.min()) if len(runs) else 0, int(runs.issued.max()) if len(runs) else 0, started,
                       float(runs.last_start_s.max()) if len(runs) else float("nan"))


@dataclass(frozen=True)
class Memory:
    k6: float  # KiB per user, one VU per user
    k6_error: float
    k6_batch: float  # KiB per user through http.batch (NaN: no batch steps)
    connection: float  # the server, KiB per held connection
    connection_error: float
    with_thread: float  # … per connection with its own thread
    thread: float  # a thread: the difference
    thread_error: float
    memory_gib: float
    users: float  # users the memory holds at that cost (k6 + server with a thread)
    nofile: int
    largest_k6_mib: float  # k6's peak at the largest N
    largest: int


def memory(data: ChapterData) -> Memory:
    table = memory_table(data)
    costs = memory_costs(table)
    machine = recorded_machine(data)
    biggest = table.sort_values(["users", "k6_mib"]).iloc[-1]
    return Memory(*costs["k6_per_user"], costs["k6_per_batch_user"][0], *costs["server_per_connection"],
                  costs["server_per_connection_and_thread"][0], *costs["server_per_thread"],
                  machine["memory_bytes"] / 2**30, memory_bound_users(data)[0], machine["nofile_limit"],
                  float(biggest.k6_mib), int(biggest.users))


@dataclass(frozen=True)
class Redeploys:
    starts: int
    cds_s: float  # mean start to healthy with the archive
    jar_s: float  # … from the plain jar
    cds_low_s: float
    cds_high_s: float
    chapter_min: float  # what CHAPTER_STEPS fresh servers cost at the faster way
    chapter_steps: int


def redeploys(data: ChapterData) -> Redeploys:
    table = redeploy_table(data).set_index("launch")
    cds, jar = table.loc["cds"], table.loc["jar"] if "jar" in table.index else None
    return Redeploys(int(cds.starts), cds.mean_ms / 1000, jar.mean_ms / 1000 if jar is not None else float("nan"),
                     cds.min_ms / 1000, cds.max_ms / 1000, CHAPTER_STEPS * min(table.mean_ms) / 60_000, CHAPTER_STEPS)


@dataclass(frozen=True)
class Samplers:
    interval_ms: int
    share: float  # the largest share of one core the samplers took (first runs)
    connections: int  # … at that many connections
    ss_s: float  # of which socket counts and nstat, CPU seconds
    total_s: float
    budgeted: bool  # the socket sampler ran within a CPU budget (the lab as it runs now)


def samplers(data: ChapterData) -> Samplers:
    table = sampler_cost_table(data)
    worst = table.loc[table.core_share.idxmax()]
    interval = statistics.mode(m["config"]["system"].get("sample_interval_ms") for m in data.steps.values())
    return Samplers(interval, float(worst.core_share), int(worst.connections), float(worst.ss_cpu_s),
                    float(worst.ss_cpu_s + worst.actuator_cpu_s + worst.process_cpu_s),
                    worst.socket_counts != "every tick")


@dataclass(frozen=True)
class Noise:
    users: int
    sampled: int  # runs with samplers
    unsampled: int
    ok_low: int  # answered, over the sampled runs
    ok_high: int
    ok_sigma: float  # one run's σ of the answered count, over the sampled runs
    failed_low: int
    failed_high: int
    model_failed: int
    off_failed_low: int  # … over the runs without samplers
    off_failed_high: int
    off_outside: int  # runs without samplers whose failures lie outside the sampled runs' range
    wave_range_s: float  # the most a wave's time varies between sampled runs
    lag_low_s: float  # how late the waves come behind the model, over every run
    lag_high_s: float
    lag_median_s: float
    start_low_s: float  # how long k6 took to start the users, over every run
    start_high_s: float
    wave_s: float


def noise(data: ChapterData) -> Noise:
    table = noise_table(data)
    runs = runs_table(table)
    sampled = runs.sampled.astype(bool)
    on, off = runs[sampled], runs[~sampled]
    lag = (table.t_s - table.model_s).dropna()
    outside = off[(off.failed < on.failed.min()) | (off.failed > on.failed.max())]
    return Noise(users_of(data, NOISE) if NOISE in data.steps else 0, len(on), len(off), _int(on.ok.min()),
                 _int(on.ok.max()), statistics.stdev(on.ok) if len(on) > 1 else float("nan"), _int(on.failed.min()),
                 _int(on.failed.max()), _int(on.model_failed.max()), _int(off.failed.min()), _int(off.failed.max()),
                 len(outside), float(noise_summary(table).range_s.max()), float(lag.min()), float(lag.max()),
                 float(lag.median()), float(runs.last_start_s.min()), float(runs.last_start_s.max()), setup(data).wave_s)


def _int(value) -> int:
    """A count from a column that may be empty (no runs yet): 0 then."""
    return int(value) if value == value else 0


def spreads(data: ChapterData) -> pd.DataFrame:
    """What one run of the repeated step varies by, per measure, over the sampled runs: for chapter 3's claims and
    a reader (mean, σ of one run, lowest, highest)."""
    runs = runs_table(noise_table(data))
    on = runs[runs.sampled.astype(bool)]
    rows = [{"measure": name, "mean": on[column].mean(), "sigma": on[column].std(), "lowest": on[column].min(),
             "highest": on[column].max()}
            for name, column in (("answered", "ok"), ("failed", "failed"), ("waves' lag behind the model (s)", "lag_s"),
                                 ("last user's start (s)", "last_start_s"))]
    return pd.DataFrame(rows)
