"""Chapter 5's numbers as the text quotes them: small dataclasses the .qmd reads inline (`{python} f"{a.tps_high:,.0f}"`),
each computed once from the runs (ch5.runs) or the steps' recorded configuration, never typed.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.book.chapters.ch5.runs import API, DB, HOLD, SCENARIO, load_seconds, offered_per_s, window_column
from harness.book.chapters.ch5.claims import (ACCEPT_STEPS, ARTICLE_GOAL, CONNECTION_STEPS, DAILY_VIEWS, DEFAULTS,
                                                FINAL_STEP, POOL_STEPS, THREAD_STEPS, article_apis, article_runs)
from harness.lab.load.options import requests_per_iteration
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms
from harness.models import pool

SMALL_POOL, FREED = "pool-10", "no-osiv"  # open-in-view on (Spring Boot's default) and off, otherwise the same
SWEPT = (2, 5, 10, 20)  # the pool sizes the scenario ran with
FINAL_FREED = "final-no-osiv"


@dataclass(frozen=True)
class Goal:
    daily_views: int
    goal: float  # daily views / 86,400
    article: float  # what the article writes
    peak: float  # the 80/20 rule's busy-hours rate
    peak_share: float
    peak_time_share: float


def goal() -> Goal:
    return Goal(DAILY_VIEWS, pool.tps_goal(DAILY_VIEWS), ARTICLE_GOAL, pool.peak_tps(DAILY_VIEWS), pool.PEAK_SHARE,
                pool.PEAK_TIME_SHARE)


@dataclass(frozen=True)
class Article:
    """The article's own numbers the text compares with (data/chapter5/article-runs.csv)."""

    pool_tps: dict[int, float]  # TPS per pool size, where it gives one
    success: dict[int, float]  # share answered per threads.max
    gc_ms: dict[int, float]  # GC stop-the-world per max-connections
    final_tps: float

    @property
    def effect(self) -> float:
        """Its smallest effect: pool 10 against pool 20, as a share."""
        return self.pool_tps[10] / self.pool_tps[20] - 1


def article() -> Article:
    runs = article_runs()

    def of(experiment: str, column: str) -> dict[int, float]:
        rows = runs[(runs["experiment"] == experiment) & runs[column].notna()]
        return {int(v): float(x) for v, x in zip(rows["value"], rows[column], strict=True)}

    return Article(of("pool", "tps"), {k: x / 100 for k, x in of("threads", "success_pct").items()},
                   of("max_connections", "gc_stop_the_world_ms"),
                   float(runs.loc[runs["experiment"] == "final", "tps"].iloc[0]))


@dataclass(frozen=True)
class Setup:
    postgres: str  # its version
    rows: int  # per table
    template_s: float | None  # how long the template took to load (None: an earlier run's was reused)
    clone_s: float  # a step's copy of it, the median
    small_cpu: float  # the database's CPU quota for the article's small test database
    large_cpu: float  # and for its production-size one
    pool: int  # HikariCP's maximum-pool-size where a step does not set it


def setup(data: ChapterData, runs: pd.DataFrame) -> Setup:
    metas = [m for m in data.steps.values() if DB in m.get("services", {})]
    db = [m["services"][DB] for m in metas]
    loads = [d["template_load_ms"] / 1000 for d in db if not d.get("template_reused", True)]
    return Setup(db[0]["version"], metas[0]["config"]["services"][DB]["rows"], loads[0] if loads else None,
                 statistics.median(d["clone_ms"] for d in db) / 1000, float(runs["db_quota"].min()),
                 float(runs["db_quota"].max()), int(runs.loc[runs["step"] == SMALL_POOL, "pool"].iloc[0]))


@dataclass(frozen=True)
class Loads:
    """What each kind of step asked of k6, from the steps' recorded load."""

    api_users: int
    api_ramp_s: int
    api_hold_s: int
    session_requests: int  # the scenario's requests per user (its event stream among them)
    stream_s: float  # how long the server keeps a room's event stream open
    stages: tuple[int, ...]  # the scenario's users, stage by stage
    stage_s: int
    tomcat_users: tuple[int, ...]  # the Tomcat runs' users, step by step
    tomcat_stage_s: int
    tomcat_ramp_s: int
    sessions: int  # the final steps: sessions started per time unit
    time_unit_s: int
    final_s: int
    offered_per_s: float  # requests a second, once the sessions overlap
    hold: tuple[int, int]  # the seconds of the load the final rule reads
    max_users: int  # the most sessions k6 may run at once

    @property
    def api_per_s(self) -> float:
        return self.api_users / self.api_ramp_s

    @property
    def stages_text(self) -> str:
        return ", ".join(f"{u:,}" for u in self.stages[:-1]) + f" and {self.stages[-1]:,}"

    @property
    def tomcat_text(self) -> str:
        return ", ".join(f"{u:,}" for u in self.tomcat_users[:-1]) + f", then {self.tomcat_users[-1]:,}"


def loads(data: ChapterData) -> Loads:
    def config(kind_test) -> dict:
        return next(m["config"] for m in data.steps.values() if kind_test(m.get("findings", [])))

    api = config(lambda f: "F001-b" in f)["load"]
    scenario = config(lambda f: "F001-c" in f)
    tomcat = config(lambda f: "F001-d" in f)["load"]
    final = config(lambda f: "F001-g" in f)["load"]
    held = [s for s in tomcat["stages"] if duration_ms(s["duration"]) > 1000]
    return Loads(api["stages"][0]["target"], duration_ms(api["stages"][0]["duration"]) // 1000,
                 duration_ms(api["stages"][1]["duration"]) // 1000, requests_per_iteration(scenario["load"]),
                 scenario["server"]["SSE_TIMEOUT_MS"] / 1000, tuple(s["target"] for s in scenario["load"]["stages"]),
                 duration_ms(scenario["load"]["stages"][0]["duration"]) // 1000, tuple(s["target"] for s in held),
                 duration_ms(held[0]["duration"]) // 1000, duration_ms(tomcat["stages"][0]["duration"]) // 1000,
                 final.get("rate", 0), duration_ms(final.get("time_unit", "1s")) // 1000, load_seconds(final),
                 offered_per_s(final), HOLD, final.get("max_vus", 0))


# The repeated steps as the setup names them: Tomcat's defaults; the other Tomcat settings; the pools 10 and 20.
KNOB_STEPS = tuple(dict.fromkeys(s for d in (THREAD_STEPS, ACCEPT_STEPS, CONNECTION_STEPS) for s in d.values()
                                 if s != DEFAULTS))
REPEATED_POOLS = (POOL_STEPS[10], POOL_STEPS[20])


@dataclass(frozen=True)
class Repeats:
    """How many times the steps the setup names ran (the steps table's runs column), each group as (fewest, most)."""

    defaults: tuple[int, int]  # tomcat-defaults
    knobs: tuple[int, int]  # KNOB_STEPS: threads-100, threads-150, accept-count-200 and each max-connections-*
    pools: tuple[int, int]  # pool-10 and pool-20


def repeats(steps: pd.DataFrame) -> Repeats:
    def runs(names) -> tuple[int, int]:
        found = steps.loc[steps["step"].isin(names), "runs"]
        return (int(found.min()), int(found.max())) if len(found) else (0, 0)

    return Repeats(runs((DEFAULTS,)), runs(KNOB_STEPS), runs(REPEATED_POOLS))


@dataclass(frozen=True)
class Prediction:
    """What the model says before any data, from the configuration alone."""

    stream_s: float
    session_requests: int
    bounds: dict[int, float]  # pool size → requests a second if every session's stream keeps a connection
    final_pool: int
    final_streams: float  # connections the final load's streams alone would keep busy
    hikari_small: float  # HikariCP's rule of thumb for each database
    hikari_large: float
    goal_db_ms: float  # the database CPU a request may cost for one CPU to serve the goal


def prediction(loads: Loads, setup: Setup) -> Prediction:
    sessions_per_s = loads.sessions / loads.time_unit_s if loads.time_unit_s else 0.0
    return Prediction(loads.stream_s, loads.session_requests,
                      {p: stream_bound(p, loads.stream_s, loads.session_requests) for p in SWEPT},
                      10, pool.busy_connections(sessions_per_s, loads.stream_s * 1000),
                      pool.hikari_pool_size(setup.small_cpu), pool.hikari_pool_size(setup.large_cpu),
                      1000 * setup.large_cpu / pool.tps_goal(DAILY_VIEWS))


def stream_bound(pool_size: int, stream_s: float, session_requests: int) -> float:
    """Requests a second a pool carries when each session's event stream keeps one connection for stream_s: pool /
    stream_s sessions a second (Little's law), each with its session_requests. An estimate, not a bound: a stream
    that gives up waiting for a connection keeps none, and leaves it to the others."""
    return pool.pool_bound_tps(pool_size, stream_s * 1000) * session_requests


@dataclass(frozen=True)
class Apis:
    tps_low: float
    tps_high: float
    article_low: float
    article_high: float
    pending_low: float  # the most waiting at once, the least over the APIs where requests waited (0: none did)
    pending_high: float
    article_pending: float  # the article's most pending
    waited_from: tuple[float, float]  # how many users were on when requests first waited: the range over APIs
    waited: int  # in how many APIs requests waited for a connection
    throttled_low: float  # share of the database's CPU periods that ran out of quota
    throttled_high: float
    busy_low: float  # Little's law: throughput × hold time
    busy_high: float
    pool: int
    db_ms_low: float  # database CPU per answered request
    db_ms_high: float
    hold_low: float  # ms a connection was held per use
    hold_high: float
    apis: int


def apis(runs: pd.DataFrame) -> Apis:
    a = runs[runs["kind"] == API]
    article = article_apis()
    throttled = a["db_throttled"] / a["db_periods"]
    busy = pool.busy_connections(a["tps"], a["hold_ms"])
    waiting = a.loc[a["pending_max"] > 0, "pending_max"]  # an API where none waited has no "most waiting" to range
    return Apis(a["tps"].min(), a["tps"].max(), article["tps"].min(), article["tps"].max(),
                waiting.min() if len(waiting) else 0.0, a["pending_max"].max(), article["hikari_pending_max"].max(),
                (a["pending_from_users"].min(), a["pending_from_users"].max()), int((a["pending_max"] > 0).sum()),
                throttled.min(), throttled.max(),
                busy.min(), busy.max(), int(a["pool"].iloc[0]), a["db_cpu_ms"].min(), a["db_cpu_ms"].max(),
                a["hold_ms"].min(), a["hold_ms"].max(), len(a))


@dataclass(frozen=True)
class Pools:
    """The scenario's answered requests a second per pool size (the mean of each step's runs)."""

    small_on: dict[int, float]  # the small database, open-in-view on (F001-c's sweep)
    small_off: dict[int, float]  # the same with open-in-view off
    large_on: dict[int, float]  # the production-size database, open-in-view on
    runs: dict[int, int]  # how many runs each of small_on's pools had
    pending: dict[int, float]  # small_on's mean waiting over the last stage

    @property
    def best_off(self) -> int:
        return max(self.small_off, key=self.small_off.get)


def pools(steps: pd.DataFrame) -> Pools:
    sweep = steps[(steps["kind"] == SCENARIO) & steps["indexes"]]

    def by_pool(rows: pd.DataFrame, column: str = "tps") -> dict[int, float]:
        return {int(p): float(v) for p, v in sorted(zip(rows["pool"], rows[column], strict=True))}

    small, large = sweep[sweep["db_quota"] == sweep["db_quota"].min()], sweep[sweep["db_quota"] > sweep["db_quota"].min()]
    on = small[small["open_in_view"]]
    return Pools(by_pool(on), by_pool(small[~small["open_in_view"]]), by_pool(large[large["open_in_view"]]),
                 {int(p): int(n) for p, n in zip(on["pool"], on["runs"], strict=True)},
                 by_pool(on, window_column("pending_mean", (45, 60))))


@dataclass(frozen=True)
class OpenInView:
    """The scenario with pool 10 on the small database, open-in-view on (held) and off (freed): means of runs."""

    held_ms: float  # a connection held per use
    held_timeouts: float  # requests that gave up waiting for a connection
    held_success: float
    held_tps: float
    held_bound: float  # pool / hold time
    freed_ms: float
    freed_timeouts: float
    freed_success: float
    freed_tps: float
    freed_peak: float
    pool: int


def open_in_view(steps: pd.DataFrame) -> OpenInView:
    held, freed = _row(steps, SMALL_POOL), _row(steps, FREED)
    return OpenInView(held["hold_ms"], held["pool_timeouts"], held["success"], held["tps"],
                      pool.pool_bound_tps(held["pool"], held["hold_ms"]), freed["hold_ms"], freed["pool_timeouts"],
                      freed["success"], freed["tps"], freed["peak_tps"], int(held["pool"]))


@dataclass(frozen=True)
class Index:
    cpu_with: float  # database CPU ms per answered request
    cpu_without: float
    tps_with: float
    tps_without: float


def index(steps: pd.DataFrame) -> Index:
    with_, without = _row(steps, FREED), _row(steps, "no-index")
    return Index(with_["db_cpu_ms"], without["db_cpu_ms"], with_["tps"], without["tps"])


@dataclass(frozen=True)
class Mean:
    mean: float
    sd: float  # of one run (NaN with one run)
    runs: int


@dataclass(frozen=True)
class Tomcat:
    """The Tomcat runs per setting: TPS, share answered and the longest GC pause, each as mean, spread and runs."""

    threads: dict[int, Mean]
    connections: dict[int, Mean]
    accept: dict[int, Mean]
    success: dict[int, Mean]  # per threads.max
    gc: dict[int, Mean]  # per max-connections
    users: int  # the most users of a run

    @property
    def spread(self) -> float:
        """The largest relative spread of one run's TPS about its setting's mean, over every setting."""
        return max(m.sd / m.mean for d in (self.threads, self.connections, self.accept) for m in d.values() if m.runs > 1)


def tomcat(runs: pd.DataFrame) -> Tomcat:
    def means(steps: dict, column: str) -> dict[int, Mean]:
        values = {k: runs.loc[runs["step"] == s, column] for k, s in steps.items()}
        return {k: Mean(float(v.mean()), float(v.std()), len(v)) for k, v in values.items() if len(v)}

    return Tomcat(means(THREAD_STEPS, "tps"), means(CONNECTION_STEPS, "tps"), means(ACCEPT_STEPS, "tps"),
                  means(THREAD_STEPS, "success"), means(CONNECTION_STEPS, "gc_pause_max_ms"),
                  int(runs.loc[runs["kind"] == "Tomcat", "users"].max()))


@dataclass(frozen=True)
class Final:
    """The final settings offered the goal's rate: answered per second over the hold, and the share answered."""

    held_tps: float  # open-in-view on, as the article ran it
    held_success: float
    freed_tps: float  # open-in-view off
    freed_success: float
    offered: float
    goal: float
    hold: tuple[int, int]
    users: float  # the most sessions k6 ran at once (open-in-view on)


def final(steps: pd.DataFrame) -> Final:
    held, freed = _row(steps, FINAL_STEP), _row(steps, FINAL_FREED)
    column = window_column("tps", HOLD)
    return Final(held[column], held["success"], freed[column], freed["success"], held["offered_per_s"],
                 pool.tps_goal(DAILY_VIEWS), HOLD, held["users"])


@dataclass(frozen=True)
class Meaning:
    """The numbers the closing advice rests on."""

    tps: float  # the single APIs' median throughput
    hold_ms: float  # and hold time
    busy: float  # Little's law: their product


def meaning(runs: pd.DataFrame) -> Meaning:
    a = runs[runs["kind"] == API]
    tps, hold = float(a["tps"].median()), float(a["hold_ms"].median())
    return Meaning(tps, hold, pool.busy_connections(tps, hold))


def _row(steps: pd.DataFrame, step: str) -> pd.Series:
    found = steps[steps["step"] == step]
    if found.empty:
        return pd.Series(np.nan, index=steps.columns)
    return found.iloc[0]
