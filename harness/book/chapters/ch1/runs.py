"""Chapter 1 as its data recorded it: the pool and the endpoint the steps ran with (each step.json's config), every run
of a step with its requests, and the few statistics the chapter reads of one run (whole-run rate, steady rate,
latency, busy threads).

A step is known by what it ran, never by today's spec: its tool and its C (`config.load`), the pool
(`config.server.TOMCAT_MAX_THREADS`) and the endpoint's sleep (`config.load.path`, through harness.models.service).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from harness import LabError
from harness.lab import store
from harness.lab.steps import server_knob, step_from_config
from harness.lab.store import ChapterData, answered
from harness.models.service import longest_service_ms, mean_service_ms

CHAPTER = "chapter1"
BUSY = "tomcat.threads.busy"  # Actuator: the threads serving a request
STEADY = (0.2, 0.8)  # the steady rate: completions between these shares of the run, by rank
NEARBY = ((0.1, 0.9), (0.3, 0.7))  # the same, over nearby windows
BATCH_S = 10.0  # a one-run step's spread is read over stretches this long (five sleep cycles at C = 1)


@dataclass(frozen=True)
class Pool:
    """The server every step ran: its pool, and the endpoint's sleep on one request in `every`."""

    threads: int
    every: int
    sleep_ms: int
    mean_service_ms: float  # a request's average thread time: sleep_ms / every
    path: str

    @property
    def rate_per_thread(self) -> float:
        """Requests one busy thread finishes per second."""
        return 1000 / self.mean_service_ms

    def model_rps(self, clients: int) -> float:
        """The article's model: min(C, threads) × the rate of one thread."""
        return min(clients, self.threads) * self.rate_per_thread


def pool_of_meta(step: str, meta: dict) -> Pool:
    config = meta["config"]
    rebuilt = step_from_config(CHAPTER, step, config)
    sleep_ms, mean_ms = longest_service_ms(rebuilt), mean_service_ms(rebuilt)
    threads = int(server_knob(meta, "TOMCAT_MAX_THREADS"))
    return Pool(threads, round(sleep_ms / mean_ms), sleep_ms, mean_ms, config["load"]["path"])


def pool_of(data: ChapterData) -> Pool:
    """The one pool and endpoint of the whole chapter, or a LabError naming the steps that differ."""
    pools = {pool_of_meta(s, m): s for s, m in data.steps.items()}
    if len(pools) != 1:
        raise LabError(f"{data.chapter}: expected every step on one pool and endpoint, found {len(pools) or 'no'}: "
                       + "; ".join(f"{s}: {p.threads} threads, {p.path}" for p, s in pools.items()))
    return next(iter(pools))


def tool_of(meta: dict) -> str:
    return meta["config"]["load"].get("tool", "k6")


def clients_of(meta: dict) -> int:
    return int(meta["config"]["load"]["vus"])


def by_clients(data: ChapterData) -> list[str]:
    """Step ids by C, then tool (k6 before ab, as the chapter names them)."""
    return sorted(data.steps, key=lambda s: (clients_of(data.steps[s]), tool_of(data.steps[s]) != "k6", s))


def steps_with(data: ChapterData, clients=None, tool: str | None = None, more_than_pool: bool = False) -> list[str]:
    """Step ids (by C, then tool) whose load ran with these clients (a number or a predicate) and tool."""
    pool = pool_of(data)
    wanted = clients if callable(clients) else (lambda c: clients is None or c == clients)
    return [s for s in by_clients(data) if wanted(clients_of(data.steps[s]))
            and (tool is None or tool_of(data.steps[s]) == tool)
            and (not more_than_pool or clients_of(data.steps[s]) > pool.threads)]


# ---- every run of a step ----------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Run:
    """One run of one step: its step.json, its requests and its busy-thread samples (ts_ms, value)."""

    name: str  # the run's directory: "k6-c500", "k6-c500.2" …
    meta: dict
    requests: pd.DataFrame
    busy: pd.DataFrame

    @property
    def ok(self) -> pd.DataFrame:
        return self.requests[answered(self.requests)]


def runs(step: str) -> list[Run]:
    """Every complete run of a step, first run first, read from the data directory in use (store.reading)."""
    return list(_runs(str(store.data_root()), step))


@cache
def _runs(root: str, step: str) -> tuple[Run, ...]:
    names = [name for name in store.complete_steps(CHAPTER) if store.run_of(name)[0] == step]
    found = []
    for name in sorted(names, key=lambda n: store.run_of(n)[1]):
        data = store.load_run(CHAPTER, name)
        busy = data.actuator.loc[data.actuator["metric"] == BUSY, ["ts_ms", "value"]]
        found.append(Run(name, data.steps[name], data.requests, busy))
    if not found:
        raise LabError(f"no complete run of {CHAPTER}'s step {step} in {root}: run `invoke run {CHAPTER}`")
    return tuple(found)


def paired(*steps: str) -> list[tuple[Run, ...]]:
    """Run k of each step, for k = 1 … the most runs any of them has; a step with fewer runs gives its last."""
    every = [runs(s) for s in steps]
    most = max(len(r) for r in every)
    return [tuple(r[min(k, len(r) - 1)] for r in every) for k in range(most)]


# ---- what one run measures ----------------------------------------------------------------------------------------

def span_s(run: Run) -> float:
    """How long the run took: its first request's start to its last answer, in seconds."""
    return float(run.ok["end_ms"].max() - run.ok["start_ms"].min()) / 1000


def whole_rate(run: Run) -> float:
    """Answered requests over the whole run (last answer − first start), per second: what ab and the article report."""
    took = span_s(run)
    return len(run.ok) / took if took > 0 else float("nan")


def steady_rate(run: Run, window: tuple[float, float] = STEADY) -> float:
    """Answers per second between two shares of the run's answers by rank (0.2, 0.8: the middle 60 %): the run's
    start and its tail of sleeps left out."""
    ends = np.sort(run.ok["end_ms"].to_numpy())
    first, last = int(window[0] * (len(ends) - 1)), int(round(window[1] * (len(ends) - 1)))
    span_s = (ends[last] - ends[first]) / 1000
    return (last - first) / span_s if span_s > 0 else float("nan")


def batch_sigma(run: Run, batch_s: float = BATCH_S) -> float:
    """The spread of a run's whole-run rate from the run alone (batch means): the rate over each full stretch of
    `batch_s` seconds, their standard deviation ÷ √(how many)."""
    ok = run.ok
    since_s = (ok["end_ms"] - ok["start_ms"].min()) / 1000
    stretches = int(since_s.max() // batch_s)
    if stretches < 2:
        return float("nan")
    counts = (since_s // batch_s).value_counts().reindex(range(stretches), fill_value=0) / batch_s
    return float(counts.std(ddof=1) / np.sqrt(stretches))


def median_ms(run: Run) -> float:
    return float(run.ok["duration_ms"].median())


def share_over(run: Run, ms: float) -> float:
    """The share of answered requests that took longer than `ms`."""
    return float((run.ok["duration_ms"] > ms).mean())


def longest_ms(run: Run) -> float:
    return float(run.ok["duration_ms"].max())


def busy_peak(run: Run) -> float:
    return float(run.busy["value"].max()) if len(run.busy) else float("nan")


def asked(run: Run) -> int:
    return int(run.meta["requests"]["asked"])
