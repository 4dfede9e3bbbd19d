"""Chapter 1's numbers for its prose: small dataclasses the .qmd quotes inline, computed from every run of the steps
(their step.json config and model, their requests and busy threads). No sentence is written here.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.book.chapters.ch1 import runs
from harness.book.chapters.ch1.claims import ARTICLE_RPS, FULL
from harness.book.chapters.ch1.runs import Pool, pool_of
from harness.book.prose import and_list, listed, words
from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS
from harness.lab import store
from harness.lab.store import ChapterData
from harness.models.closed_loop import closed_loop_rps

ARTICLE_REQUESTS = 5000  # `ab -n 5000` in the article
ARTICLE_MEDIAN_MS, ARTICLE_P66_MS, ARTICLE_LONGEST_MS = 107, 1863, 4075  # its percentiles at C = 500
LESSON_HOLD_MS = 50  # "what this means": requests that hold a thread this long


def every_run(data: ChapterData, steps: list[str]) -> list[runs.Run]:
    return [r for s in steps for r in runs.runs(s)]


def span_of(values) -> tuple[float, float]:
    values = list(values)
    return min(values), max(values)


@dataclass(frozen=True)
class Setup:
    threads: int
    default_threads: int
    every: int
    sleep_s: float
    mean_service_s: float
    rate_per_thread: float
    path: str
    requests: int  # per step, at most C
    short_requests: int  # at the smallest C
    short_clients: int
    short_s: float  # how long the model says the short step takes
    article_short_s: float  # the article's 5000 requests at the smallest C
    levels: str  # "1, 10, 100 and 500"
    model_rates: str  # the model's rate at each of them: "5, 50, 500 and 500"
    repeats: str  # which C's steps ran several times, and how many: "C = 100 run three times each, and …"
    largest: int
    largest_rps: float
    largest_latency_s: float  # Little's law at the largest C
    latency_times: float  # … that many times a request's work
    cores: int  # the machine's, which the server shares with the load tool


def repeats_text(runs_by_clients: dict[int, int]) -> str:
    """The C whose steps ran more than once, by how many times: {100: 3, 500: 5} → "C = 100 run three times each, and
    those at C = 500 five times"; "C = 100 and 500 run three times each" when alike; "" when none repeated."""
    by_runs: dict[int, list[int]] = {}
    for clients, n in sorted(runs_by_clients.items()):
        if n > 1:
            by_runs.setdefault(n, []).append(clients)
    parts = [f"C = {listed(c)} run {words(n)} times each" if i == 0 else f"those at C = {listed(c)} {words(n)} times"
             for i, (n, c) in enumerate(sorted(by_runs.items(), key=lambda item: item[1][0]))]
    return ", and ".join(parts)


def setup(data: ChapterData) -> Setup:
    pool = pool_of(data)
    metas = {s: data.steps[s] for s in runs.by_clients(data)}
    asked = {s: m["requests"]["asked"] for s, m in metas.items()}
    short = min(metas, key=lambda s: asked[s])
    largest = max(metas, key=lambda s: runs.clients_of(metas[s]))
    model = metas[largest]["model"]
    levels = {runs.clients_of(m) for m in metas.values()}
    repeated: dict[int, int] = {}
    for step, meta in metas.items():  # k6's and ab's step at one C: the more runs of the two
        clients = runs.clients_of(meta)
        repeated[clients] = max(repeated.get(clients, 1), len(data.runs.get(step, [meta])))
    return Setup(
        threads=pool.threads, default_threads=SERVER_DEFAULTS["TOMCAT_MAX_THREADS"], every=pool.every,
        sleep_s=pool.sleep_ms / 1000, mean_service_s=pool.mean_service_ms / 1000, rate_per_thread=pool.rate_per_thread,
        path=pool.path, requests=max(asked.values()), short_requests=asked[short],
        short_clients=runs.clients_of(metas[short]), short_s=metas[short]["model"]["duration_ms"] / 1000,
        article_short_s=ARTICLE_REQUESTS / pool.model_rps(runs.clients_of(metas[short])),
        levels=listed(levels), model_rates=and_list(f"{pool.model_rps(c):,g}" for c in sorted(levels)),
        repeats=repeats_text(repeated), largest=model["concurrency"],
        largest_rps=model["rps"], largest_latency_s=model["mean_latency_ms"] / 1000,
        latency_times=model["mean_latency_ms"] / pool.mean_service_ms, cores=metas[largest]["machine"]["cores"])


@dataclass(frozen=True)
class Rates:
    steady_off: float  # the largest |steady rate / model − 1| over every run of every step
    steady_worst: str  # … of which run
    below_off: float  # the largest |whole-run rate / model − 1| below the pool
    short_low: float  # how far the whole-run rate falls short of the model once the pool is full, least …
    short_high: float  # … and most
    tail_allows: float  # the most a run's tail of sleeps can cost the whole-run rate (1 − rps_low / rps)
    full_run_s: float  # how long a run with the pool full lasts (the model)
    article_low: float  # the article's own shortfall from its model at C ≥ 100, least …
    article_high: float  # … and most
    article_full: float  # the article's rate with the pool just full (its "still quite similar" case) …
    model_full: float  # … and the model's there
    tail_s: float  # the longest a request holds a thread: the most tail a run can end with
    full_runs: int  # runs with the pool full
    beyond_tail: int  # … that fell short by more than the tail explains
    span_low_s: float  # how long those runs took, first request to last answer: shortest …
    span_high_s: float  # … and longest


def rates(data: ChapterData) -> Rates:
    pool = pool_of(data)
    everything = every_run(data, runs.by_clients(data))
    steady = {r.name: runs.steady_rate(r) / pool.model_rps(runs.clients_of(r.meta)) - 1 for r in everything}
    worst = max(steady, key=lambda name: abs(steady[name]))
    below = [r for r in everything if runs.clients_of(r.meta) < pool.threads]
    full = [r for r in everything if runs.clients_of(r.meta) >= pool.threads]
    short = [1 - runs.whole_rate(r) / pool.model_rps(runs.clients_of(r.meta)) for r in full]
    article = [1 - rps / pool.model_rps(c) for c, rps in ARTICLE_RPS.items() if c >= pool.threads]
    tail = max(1 - r.meta["model"]["rps_low"] / r.meta["model"]["rps"] for r in full)
    step, run = store.run_of(worst)
    return Rates(abs(steady[worst]), f"{step}, run {run}",
                 max((abs(runs.whole_rate(r) / pool.model_rps(runs.clients_of(r.meta)) - 1) for r in below), default=0),
                 *span_of(short), tail, max(r.meta["model"]["duration_ms"] for r in full) / 1000, *span_of(article),
                 ARTICLE_RPS[FULL], pool.model_rps(FULL), pool.sleep_ms / 1000, len(full),
                 sum(x > tail for x in short), *span_of(runs.span_s(r) for r in full))


@dataclass(frozen=True)
class Pace:
    clients: int
    window_s: float  # a window's length at the model's pace (five sleep cycles at C = 1)
    low: float  # answers per second in the slowest window (of every k6 run) …
    high: float  # … and the fastest
    model: float
    run_s: float  # the longest of the runs

    @property
    def answers(self) -> int:
        return window_answers(self.model, self.window_s)


def pace(data: ChapterData) -> Pace:
    """The smallest C's k6 runs, window by window of five sleep cycles: does the rate hold over the whole run? A window
    is a count of answers, not of seconds: answers come in bursts, one sleep cycle apart, and a window of fixed seconds
    holds four bursts or five as the cycle's length drifts from the model's, a 20% swing no slower stretch caused. ab
    stamps start times to the second only, too coarse for a window."""
    pool = pool_of(data)
    smallest = min(runs.clients_of(m) for m in data.steps.values())
    chosen = [r for r in every_run(data, runs.steps_with(data, smallest)) if runs.tool_of(r.meta) == "k6"]
    model = pool.model_rps(smallest)
    rates_ = pd.concat([window_rates(r, window_answers(model, runs.BATCH_S)) for r in chosen])
    run_s = max(runs.span_s(r) for r in chosen)
    return Pace(smallest, runs.BATCH_S, rates_.min(), rates_.max(), model, run_s)


def window_answers(model_rps: float, window_s: float) -> int:
    """A window's answers: its length at the model's pace."""
    return round(model_rps * window_s)


def window_rates(run: runs.Run, answers: int) -> pd.Series:
    """Answers per second in each run of `answers` consecutive answers: from the answer that opens it to the one that
    opens the next (so every window spans the same phase of the sleep cycle)."""
    ends = np.sort(run.ok["end_ms"].to_numpy())[::answers]
    return pd.Series(answers * 1000 / np.diff(ends))


@dataclass(frozen=True)
class Little:
    off_to_pool: float  # the largest |rate × mean latency / C − 1| up to the pool
    beyond: int  # the C beyond the pool
    beyond_low: float  # rate × mean latency there, lowest run …
    beyond_high: float  # … and highest
    beyond_short: float  # the most it falls short of C there


def little_rows(data: ChapterData) -> pd.DataFrame:
    """Per run: C, tool, whole-run rate, mean latency and their product (Little's law: the requests in flight)."""
    rows = [{"step": r.name, "C": runs.clients_of(r.meta), "tool": runs.tool_of(r.meta), "rate": runs.whole_rate(r),
             "mean_ms": float(r.ok["duration_ms"].mean())} for r in every_run(data, runs.by_clients(data))]
    frame = pd.DataFrame(rows)
    return frame.assign(in_flight=frame["rate"] * frame["mean_ms"] / 1000)


def little(data: ChapterData) -> Little:
    pool, rows = pool_of(data), little_rows(data)
    off = rows["in_flight"] / rows["C"] - 1
    beyond = rows[rows["C"] > pool.threads]
    return Little(float(off[rows["C"] <= pool.threads].abs().max()), int(beyond["C"].max()),
                  *span_of(beyond["in_flight"]), float(-off[beyond.index].min()))


@dataclass(frozen=True)
class Queue:
    clients: int
    waiting: int  # clients beyond the pool: waiting for a thread at any moment
    runs: int  # runs of each tool
    median_low_ms: float
    median_high_ms: float
    share_low: float  # answered after half a sleep
    share_high: float
    half_sleep_s: float
    longest_low_s: float
    longest_high_s: float
    mean_low_s: float
    mean_high_s: float
    little_s: float  # the model's mean latency (Little's law)
    article_median_ms: int = ARTICLE_MEDIAN_MS
    article_p66_ms: int = ARTICLE_P66_MS
    article_longest_s: float = ARTICLE_LONGEST_MS / 1000


def queue(data: ChapterData) -> Queue:
    """The largest C beyond the pool, every run of both tools."""
    pool = pool_of(data)
    steps = runs.steps_with(data, more_than_pool=True)
    clients = max(runs.clients_of(data.steps[s]) for s in steps)
    chosen = every_run(data, runs.steps_with(data, clients))
    return Queue(clients, clients - pool.threads, max(len(runs.runs(s)) for s in runs.steps_with(data, clients)),
                 *span_of(runs.median_ms(r) for r in chosen),
                 *span_of(runs.share_over(r, pool.sleep_ms / 2) for r in chosen), pool.sleep_ms / 2000,
                 *(v / 1000 for v in span_of(runs.longest_ms(r) for r in chosen)),
                 *(v / 1000 for v in span_of(r.ok["duration_ms"].mean() for r in chosen)),
                 data.steps[steps[-1]]["model"]["mean_latency_ms"] / 1000)


@dataclass(frozen=True)
class Busy:
    threads: int
    part: int  # a C below the pool with more than one client
    part_peak: float  # the most busy threads there
    part_over: tuple[str, ...]  # the runs there whose samples counted more busy threads than clients …
    part_over_samples: int  # … in how many of …
    part_samples: int  # … their samples
    full_from: int  # the smallest C that fills the pool
    full_low: float  # the most busy threads in each run once full: lowest …
    full_high: float  # … and highest
    interval_ms: int  # how often the samplers read Actuator: the runs' most common setting


def busy(data: ChapterData) -> Busy:
    pool = pool_of(data)
    part = max(runs.clients_of(m) for m in data.steps.values() if runs.clients_of(m) < pool.threads)
    full = every_run(data, runs.steps_with(data, lambda c: c >= pool.threads))
    below = every_run(data, runs.steps_with(data, part))
    over = [(r.name, int((r.busy["value"] > part).sum())) for r in below]
    return Busy(pool.threads, part, max(runs.busy_peak(r) for r in below),
                tuple(name for name, n in over if n), sum(n for _, n in over), sum(len(r.busy) for r in below),
                min(runs.clients_of(r.meta) for r in full), *span_of(runs.busy_peak(r) for r in full),
                statistics.mode(r.meta["config"]["system"]["sample_interval_ms"] for r in full))


@dataclass(frozen=True)
class Premise:
    low: int  # the pool just full (C)
    high: int  # the most clients
    changes: dict[str, float]  # per tool: the steady rate at `high` over that at `low`, less 1 (mean of the runs)


def premise(data: ChapterData) -> Premise:
    pool = pool_of(data)
    low = min(runs.clients_of(m) for m in data.steps.values() if runs.clients_of(m) >= pool.threads)
    high = max(runs.clients_of(m) for m in data.steps.values())
    changes = {}
    for tool in ("k6", "ab"):
        pairs = runs.paired(*runs.steps_with(data, low, tool), *runs.steps_with(data, high, tool))
        changes[tool] = statistics.fmean(runs.steady_rate(b) / runs.steady_rate(a) - 1 for a, b in pairs)
    return Premise(low, high, changes)


@dataclass(frozen=True)
class Lesson:
    threads: int
    hold_ms: float
    most_rps: float


def lesson(hold_ms: float = LESSON_HOLD_MS) -> Lesson:
    """Spring Boot's default pool on requests that hold a thread `hold_ms` each."""
    threads = SERVER_DEFAULTS["TOMCAT_MAX_THREADS"]
    return Lesson(threads, hold_ms, closed_loop_rps(threads, threads, hold_ms))


def steady_plateau(data: ChapterData) -> tuple[Pool, float]:
    """The pool and its measured plateau: the mean steady rate over every run with the pool full."""
    pool = pool_of(data)
    full = every_run(data, runs.steps_with(data, lambda c: c >= pool.threads))
    return pool, statistics.fmean(runs.steady_rate(r) for r in full)
