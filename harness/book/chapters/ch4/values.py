"""The numbers chapter 4's sentences quote, as small dataclasses computed from the data (the first runs' step table,
the run table of every run, the step's recorded configuration and model). The prose lives in the .qmd; nothing here
writes a paragraph.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

from harness.book.chapters.ch4.claims import (
    ALONE,
    COLD,
    CPU_STEPS,
    DEFAULT_800,
    HALF_400,
    HALF_800,
    MORE_800,
    ONE_400,
    PLATEAU_STEPS,
    WARM,
    column,
    paired,
    plateau_tps,
    pool_distances,
)
from harness import LabError
from harness.book.claims import INCONCLUSIVE, REPRODUCED
from harness.book.chapters.ch4.runs import OPEN, PLATEAU, SETTLE_S, SUSTAINED, sustained, windows
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms
from harness.models.usl import fit_usl

SATURATED = 0.9  # "busy": a server using at least this share of its CPU quota


@dataclass(frozen=True)
class Setup:
    cpu_ms: float  # D: the endpoint's CPU work per request
    wait_ms: float  # W: its wait
    cores: float  # the full quota
    knee: float  # cores × (1 + W / D)
    max_tps: float  # cores / D
    user_tps: float  # 1 / (D + W): one user alone
    k6_cpus: str
    server_cpus: str
    ramp_s: int
    hold_s: int
    settle_s: int
    first_s: int  # the plateau: seconds [first_s, last_s)
    last_s: int
    fewest_requests: int  # the sustained step with the fewest answered requests over its plateau
    half_quota: float

    @property
    def cycle_ms(self) -> float:
        return self.cpu_ms + self.wait_ms


def reference_step(data: ChapterData) -> dict:
    """The first ramp on the full CPU (the users sweep's first step): the setup the text describes."""
    ramps = [m for m in data.steps.values() if m["config"]["load"]["executor"] == "ramping-vus"]
    cores = max(m["model"]["cores"] for m in ramps)
    return min((m for m in ramps if m["model"]["cores"] == cores), key=lambda m: m.get("started_ms", 0))


def setup(data: ChapterData, table: pd.DataFrame) -> Setup:
    meta = reference_step(data)
    model, load = meta["model"], meta["config"]["load"]
    placed = meta["config"].get("placement") or {}
    first, last = windows(load)[PLATEAU]
    ramp, hold = (duration_ms(stage["duration"]) // 1000 for stage in load["stages"])
    rows = sustained(table)
    return Setup(model["cpu_ms"], model["wait_ms"], model["cores"], model["knee_threads"],
                 model["cores"] * 1000 / model["cpu_ms"], 1000 / (model["cpu_ms"] + model["wait_ms"]),
                 _cpus(placed.get("k6", {}).get("cpus")), _cpus(placed.get("server", {}).get("cpus")), ramp, hold,
                 SETTLE_S, first, last, int((rows["tps"] * (last - first)).min()), float(table["cpu_quota"].min()))


def _cpus(cpus) -> str:
    return ", ".join(map(str, cpus)) if cpus else "any"


def mean_of(runs: pd.DataFrame, step: str, name: str = "tps") -> float:
    return float(column(runs, step, name).mean())


@dataclass(frozen=True)
class Plateau:
    alone_tps: float  # 2 users
    tps: float  # the plateau: the mean of 20 … 200 users on threads.max 200
    model_tps: float
    cpu_ms: float  # the server's CPU per request on the plateau
    server_cores: float
    held_tps: float  # 800 users on threads.max 200, mean of its runs
    held_runs: int
    more_tps: float  # 800 users on threads.max 800, mean of its runs
    more_runs: int
    gain: float  # the mean of the paired gains (threads.max 800 over 200)
    gain_low: float
    gain_high: float
    mean_20_ms: float
    mean_800_ms: float  # mean of runs
    model_800_ms: float
    p99_800_ms: float

    @property
    def held_share(self) -> float:
        return self.held_tps / self.tps

    @property
    def model_share(self) -> float:
        return self.tps / self.model_tps


def plateau(runs: pd.DataFrame) -> Plateau:
    first = {s: runs[(runs.step == s) & (runs.window == PLATEAU) & (runs.run == 1)].iloc[0] for s in PLATEAU_STEPS}
    gains = paired(runs, DEFAULT_800, MORE_800)
    return Plateau(mean_of(runs, ALONE), plateau_tps(runs), statistics.fmean(r["model_tps"] for r in first.values()),
                   statistics.fmean(r["cpu_ms_per_request"] for r in first.values()),
                   statistics.fmean(r["server_cpu_cores"] for r in first.values()), mean_of(runs, DEFAULT_800),
                   len(column(runs, DEFAULT_800, "tps")), mean_of(runs, MORE_800), len(column(runs, MORE_800, "tps")),
                   statistics.fmean(gains), min(gains), max(gains), first["sweep-20"]["mean_ms"],
                   mean_of(runs, DEFAULT_800, "mean_ms"), mean_of(runs, DEFAULT_800, "model_mean_ms"),
                   mean_of(runs, DEFAULT_800, "p99_ms"))


def busy_at_once(setup: Setup, plateau: Plateau) -> float:
    """The measured knee: by Little's law, the requests in service at once at the plateau's rate, each for its wait and
    the CPU it measured (not the endpoint's asked CPU), when none queues: what keeps the cores busy."""
    return plateau.tps * (setup.wait_ms + plateau.cpu_ms) / 1000


@dataclass(frozen=True)
class ThreadPair:
    """Two of the article's runs with the same users on the same pods, the second with a larger threads.max."""

    users: int
    before: int  # its run numbers
    after: int
    threads_from: int
    threads_to: int
    spare_from: int  # min-spare
    spare_to: int
    tps_from: int
    tps_to: int

    @property
    def gain(self) -> float:
        return self.tps_to / self.tps_from - 1


def thread_pairs(article: pd.DataFrame) -> list[ThreadPair]:
    """Where the article raised threads.max and nothing but the pool's settings: per users and pod size, its first run
    on the smallest threads.max against the first on a larger one (runs in its order)."""
    found = []
    for (users, _), runs in article.sort_values("run").groupby(["vus_claimed", "pod_cores"], sort=False):
        low = runs[runs.threads_max == runs.threads_max.min()].iloc[0]
        higher = runs[runs.threads_max > low.threads_max]
        if len(higher):
            high = higher.iloc[0]
            found.append(ThreadPair(int(users), int(low.run), int(high.run), int(low.threads_max), int(high.threads_max),
                                    int(low.min_spare), int(high.min_spare), int(low.tps), int(high.tps)))
    return sorted(found, key=lambda pair: pair.before)


@dataclass(frozen=True)
class FewThreads:
    threads: int
    tps: float
    model_tps: float
    server_cores: float


def few_threads(table: pd.DataFrame) -> list[FewThreads]:
    """The pools below the knee: throughput capped by threads, against threads / (D + W)."""
    rows = table[table.step.str.startswith("few-threads-")].sort_values("threads_max")
    return [FewThreads(int(r.threads_max), r.tps, r.model_tps, r.server_cpu_cores) for r in rows.itertuples()]


def sweep(table: pd.DataFrame) -> pd.DataFrame:
    """The users sweep: the sustained steps at the full quota on the most common pool (threads.max 200), by users."""
    rows = sustained(table)
    rows = rows[rows.cpu_quota == rows.cpu_quota.max()]
    pool = rows.groupby("threads_max")["users"].nunique().idxmax()
    return rows[rows.threads_max == pool].sort_values("users")


def usl(table: pd.DataFrame):
    """The Universal Scalability Law fitted to the sweep (harness.models.usl.USLFit)."""
    rows = sweep(table)
    return fit_usl(rows["users"], rows["tps"])


@dataclass(frozen=True)
class Cpu:
    busy: int  # sustained steps whose server used at least SATURATED of its quota
    steps: int  # sustained steps
    least_share: float  # the least share of its quota over the defaults past the knee, any run's plateau
    k6_most: float  # the most of its core k6 used, any step
    saturated: float = SATURATED


def cpu(table: pd.DataFrame, runs: pd.DataFrame) -> Cpu:
    """`table`: the steps' first runs; `runs`: every run's plateau, for the least share ("no run used less")."""
    rows = sustained(table)
    defaults = runs[runs.step.isin(CPU_STEPS) & (runs.window == PLATEAU)]
    return Cpu(int((rows.server_cpu_cores >= SATURATED * rows.cpu_quota).sum()), len(rows),
               float((defaults.server_cpu_cores / defaults.cpu_quota).min()), float(table.k6_cpu_cores.max()))


@dataclass(frozen=True)
class Scale:
    half_tps: float  # threads.max 400 on half a core, mean of runs
    half_runs: int
    one_tps: float  # on one core
    half_800_tps: float  # threads.max 800 on half a core, mean of runs
    half_800_runs: int
    gains: tuple[float, ...]  # each pair's gain (800 over 400 on half a core)

    @property
    def gain(self) -> float:
        """The mean of the paired gains."""
        return statistics.fmean(self.gains)

    @property
    def ratio(self) -> float:
        return self.one_tps / self.half_tps


def scale(runs: pd.DataFrame) -> Scale:
    return Scale(mean_of(runs, HALF_400), len(column(runs, HALF_400, "tps")), mean_of(runs, ONE_400),
                 mean_of(runs, HALF_800), len(column(runs, HALF_800, "tps")), tuple(paired(runs, HALF_400, HALF_800)))


@dataclass(frozen=True)
class Pool:
    runs: int  # runs of steps with fewer users than threads.max
    steps: int
    within: int  # of them, pools inside their band
    most_allowed: int  # the largest stray allowance among them
    full_peaks: tuple[float, ...]  # the pool's peak in each run of 800 users on threads.max 800
    threads_max: int
    live_most: float  # the JVM's live threads at their most there

    @property
    def full_mean(self) -> float:
        return statistics.fmean(self.full_peaks)


def pool(runs: pd.DataFrame) -> Pool:
    rows = pool_distances(runs)
    full = runs[(runs.step == MORE_800) & (runs.window == PLATEAU)]
    return Pool(len(rows), rows["step"].nunique(), int((rows["distance"] == 0).sum()), int(rows["allowed"].max()),
                tuple(full["current_threads_peak"]), int(full["threads_max"].iloc[0]), float(full["live_threads_peak"].max()))


@dataclass(frozen=True)
class Switches:
    """The server's context switches per request during the load (step.json's during_load), mean over runs."""

    threads_max: int
    runs: int
    voluntary: float
    involuntary: float

    @property
    def total(self) -> float:
        return self.voluntary + self.involuntary


def switches(runs: pd.DataFrame) -> dict[int, Switches]:
    """At 800 users on one core, by threads.max: 200 (sweep-800) and 800 (threads-800-800); empty when the runs
    recorded no context switches (data from before the counter)."""
    found = {}
    for step in (DEFAULT_800, MORE_800):
        rows = runs[(runs.step == step) & (runs.window == PLATEAU)].dropna(subset=["voluntary", "involuntary"])
        if len(rows):
            found[int(rows.threads_max.iloc[0])] = Switches(int(rows.threads_max.iloc[0]), len(rows), float(
                (rows.voluntary / rows.requests).mean()), float((rows.involuntary / rows.requests).mean()))
    return found


@dataclass(frozen=True)
class Burst:
    users: int
    threads_max: int
    cold_spare: int
    warm_spare: int
    runs: int  # pairs of runs
    cold_ms: float  # mean first-request answer time, mean of runs
    warm_ms: float
    difference_low: float  # per pair of runs: cold − warm
    difference_high: float
    failed: int  # failed requests over every run of both
    requests: int

    @property
    def difference(self) -> float:
        return self.cold_ms - self.warm_ms


def burst(runs: pd.DataFrame) -> Burst:
    """The burst steps' first requests, cold pool against warm."""
    cold, warm = column(runs, COLD, "first_request_ms").dropna(), column(runs, WARM, "first_request_ms").dropna()
    both = cold.index.intersection(warm.index)
    if both.empty:
        raise LabError(f"{COLD} and {WARM} were recorded per second, not one row per request (data from before "
                       f"experiments/chapter4.toml asked for it): re-run them with `invoke run chapter4`")
    rows = runs[runs.step.isin([COLD, WARM]) & (runs.window == PLATEAU)]
    spare = rows.groupby("step")["min_spare"].first()
    differences = cold[both] - warm[both]
    return Burst(int(rows.users.max()), int(rows.threads_max.max()), int(spare[COLD]), int(spare[WARM]), len(both),
                 float(cold[both].mean()), float(warm[both].mean()), float(differences.min()), float(differences.max()),
                 int(rows.failed.sum()), int(rows.requests.sum()))


@dataclass(frozen=True)
class PoolSamples:
    """What Actuator saw of the cold pool during the burst (first run): its samples are sparse on a busy core."""

    before: float  # threads just before the burst
    first_after_s: float  # seconds from the burst's start to the first sample after it
    first_after: float  # threads at that sample


def pool_samples(data: ChapterData) -> PoolSamples:
    t0 = data.steps[COLD]["recording"]["t0_ms"]
    rows = data.actuator[(data.actuator.step == COLD) & (data.actuator.metric == "tomcat.threads.current")]
    before, after = rows[rows.ts_ms <= t0], rows[rows.ts_ms > t0].sort_values("ts_ms")
    if before.empty or after.empty:
        raise LabError(f"{COLD} has no Actuator sample of Tomcat's pool before and after the burst")
    return PoolSamples(float(before.sort_values("ts_ms")["value"].iloc[-1]), float((after["ts_ms"].iloc[0] - t0) / 1000),
                       float(after["value"].iloc[0]))


@dataclass(frozen=True)
class Open:
    rate: int
    tps: float
    p99_ms: float
    dropped: int


def open_steps(table: pd.DataFrame) -> list[Open]:
    rows = table[table.kind == OPEN].sort_values("rate")
    return [Open(int(r.rate), r.tps, r.p99_ms, int(r.dropped)) for r in rows.itertuples()]


def steps_count(table: pd.DataFrame) -> int:
    return int((table.kind == SUSTAINED).sum())


def burst_lesson(outcome: str) -> str:
    """The burst's lesson for a reader's server, as F004-d.1 came out."""
    if outcome == REPRODUCED:
        return ("**Raise min-spare where bursts hit an idle server**: threads started before the burst answered its "
                "first requests measurably sooner.")
    if outcome == INCONCLUSIVE:
        return ("**Do not count on min-spare to answer a burst sooner** while the core is the limit: the runs here "
                "cannot tell a warm pool from a cold one (F004-d.1 is inconclusive), and the burst queues for the core "
                "whether its threads were started before it or during it.")
    return ("**min-spare decides how many threads are ready, not how soon a burst is answered**, while the core is "
            "the limit: the burst queues for the core whether its threads were started before it or during it.")
