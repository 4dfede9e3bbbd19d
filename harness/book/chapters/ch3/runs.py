"""Chapter 3 as its data recorded it: every run of a step (`<id>`, `<id>.2` … for a step with runs = n), each with
its requests, `ss` samples and Actuator samples, and the settings it ran with (step.json's config and the server's own
report of itself, never today's spec). Chapter 2 runs chapter 3's headline step again (`same_as`); those runs count
as runs of it here, read from chapter 2's data directory.

Times of one request are on its own clock (k6's duration: its timers are exact); times within a run count from the
run's first request (the spike), as the model's do.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
import pandas as pd

from harness.book.noise import most_stray
from harness.book.verdict import failure_kinds
from harness.lab import store
from harness.lab.steps import server_knob
from harness.lab.store import answered, run_of
from harness.lab.units import duration_ms
from harness.models.spike import KERNEL_EXTRA

CHAPTER = "chapter3"
REPEATS = "chapter2"  # repeats chapter 3's headline step (config.same_as = "chapter3:f-10k-pv")
HEADLINE = "f-10k-pv"  # 10,000 users on the default connection limits: the article's run
REQUEST_TIMEOUT = "request timeout"  # k6's error text when its request_timeout ends a request
DIAL_TIMEOUT = "i/o timeout"  # k6's dialer gave up connecting (its fixed 30 s)
# Tomcat's name for each knob in the server's own report of itself (step.json server_info.tomcat).
REPORTED = {"TOMCAT_MAX_THREADS": "maxThreads", "TOMCAT_MAX_CONNECTIONS": "maxConnections",
            "TOMCAT_ACCEPT_COUNT": "acceptCount", "TOMCAT_CONNECTION_TIMEOUT": "connectionTimeout"}


@dataclass(frozen=True, eq=False)
class Run:
    """One run of one step: its step.json and tables, with each request's outcome (`ok`), failure kind (`kind`, ""
    when answered), own duration (`own_s`) and end since the spike (`end_s`)."""

    name: str  # the run's directory: "<id>" or "<id>.<k>"
    chapter: str
    meta: dict
    requests: pd.DataFrame
    ss: pd.DataFrame
    actuator: pd.DataFrame

    @property
    def step(self) -> str:
        return run_of(self.name)[0]

    @property
    def t0_ms(self) -> float:
        return float(self.requests["start_ms"].min()) if len(self.requests) else float("nan")

    def knob(self, name: str) -> int:
        """A Tomcat setting as the server reported it, else as the step configured it, else the default."""
        reported = self.meta.get("server_info", {}).get("tomcat", {}).get(REPORTED.get(name, ""))
        return int(reported if reported is not None else server_knob(self.meta, name))

    @property
    def threads(self) -> int:
        return self.knob("TOMCAT_MAX_THREADS")

    @property
    def ceiling(self) -> int:
        """Connections the server holds at once: max-connections + accept-count + the kernel's one."""
        return self.knob("TOMCAT_MAX_CONNECTIONS") + self.knob("TOMCAT_ACCEPT_COUNT") + KERNEL_EXTRA

    @property
    def sleep_s(self) -> float:
        return self.knob("SLEEP_MS") / 1000

    @property
    def keep_alive_s(self) -> float:
        """Tomcat's keep-alive timeout as the server reported it (it falls back to the connection-timeout)."""
        reported = self.meta.get("server_info", {}).get("tomcat", {}).get("keepAliveTimeout")
        return (reported if reported is not None else self.knob("TOMCAT_CONNECTION_TIMEOUT")) / 1000

    @property
    def request_timeout_s(self) -> float:
        return duration_ms(self.meta["config"]["load"].get("request_timeout", "60s")) / 1000

    @property
    def users(self) -> int:
        return int(self.meta["requests"]["asked"])

    @property
    def issued(self) -> int:
        return int(self.meta["requests"]["issued"])

    @property
    def executor(self) -> str:
        return self.meta["config"]["load"]["executor"]

    @property
    def ok(self) -> int:
        return int(self.requests["ok"].sum())

    @property
    def failed(self) -> int:
        """Users without an answer: every request that failed, and every user k6 never started."""
        return max(self.users, len(self.requests)) - self.ok

    def count(self, kind: str) -> int:
        return int((self.requests["kind"] == kind).sum())

    @cached_property
    def kinds(self) -> dict[str, int]:
        return self.requests.loc[~self.requests["ok"], "kind"].value_counts().to_dict()

    @property
    def sampled(self) -> bool:
        """Did the `ss` sampler run (chapter 2 repeats the headline step with the samplers off)?"""
        return "estab" in self.ss and bool(self.ss["estab"].notna().any())

    def peak(self, column: str) -> float:
        """The highest `ss` sample of a column (nan without samples)."""
        return float(self.ss[column].max()) if self.sampled and column in self.ss else float("nan")

    def actuator_peak(self, metric: str) -> float:
        values = self.actuator.loc[self.actuator["metric"] == metric, "value"]
        return float(values.max()) if len(values) else float("nan")

    @property
    def stop_s(self) -> float:
        """When k6 ended, from the spike."""
        return (self.meta.get("load_ended_ms", self.meta.get("ended_ms", float("nan"))) - self.t0_ms) / 1000

    @property
    def start_spread_s(self) -> float:
        """How long k6 took to start every request."""
        return float(self.requests["start_ms"].max() - self.t0_ms) / 1000 if len(self.requests) else 0.0

    def answered_own_s(self) -> pd.Series:
        """Answered requests' own durations (s), in the order they were answered."""
        ok = self.requests[self.requests["ok"]].sort_values("end_ms")
        return ok["own_s"]

    def beyond_stray(self, count: int) -> int:
        """A count of failures less the most that stray failures explain among this run's users."""
        return max(0, count - most_stray(self.users))


# ---- reading -------------------------------------------------------------------------------------------------------

@cache
def _names(root: str, chapter: str) -> dict[str, dict]:
    return store.complete_steps(chapter) if (store.data_root() / chapter).is_dir() else {}


def names(chapter: str = CHAPTER) -> dict[str, dict]:
    """Every complete run of a chapter in the data directory in use, by directory name (read once per directory)."""
    return _names(str(store.data_root()), chapter)


@cache
def _run(root: str, chapter: str, name: str) -> Run:
    data = store.load_run(chapter, name)
    rows = data.requests
    ok = answered(rows)
    t0 = float(rows["start_ms"].min()) if len(rows) else 0.0
    rows = rows.assign(ok=ok, kind=failure_kinds(rows), own_s=rows["duration_ms"] / 1000,
                       end_s=(rows["end_ms"] - t0) / 1000)
    return Run(name, chapter, data.steps[name], rows, data.ss, data.actuator)


def run(name: str, chapter: str = CHAPTER) -> Run:
    return _run(str(store.data_root()), chapter, name)


def runs(step: str, chapter: str = CHAPTER) -> list[Run]:
    """Every run of a step, first run first ([] when the step has no data)."""
    found = sorted((run_of(n)[1], n) for n in names(chapter) if run_of(n)[0] == step)
    return [run(n, chapter) for _, n in found]


def first(step: str) -> Run | None:
    every = runs(step)
    return every[0] if every else None


def headline_runs() -> list[Run]:
    """The headline step's runs: chapter 3's, then chapter 2's runs of the same step (config.same_as)."""
    same = f"{CHAPTER}:{HEADLINE}"
    repeats = sorted((n for n, m in names(REPEATS).items() if m.get("config", {}).get("same_as") == same), key=run_of)
    return runs(HEADLINE) + [run(n, REPEATS) for n in repeats]


def runs_of(step: str) -> list[Run]:
    """A step's runs, with chapter 2's repeats for the headline step."""
    return headline_runs() if step == HEADLINE else runs(step)


def paired(*steps: str) -> list[tuple[Run, ...]]:
    """Run k of each step side by side; a step with fewer runs lends its last run to the later pairs ([] when a step
    has no data)."""
    every = [runs_of(s) for s in steps]
    if not all(every):
        return []
    return [tuple(rs[min(k, len(rs) - 1)] for rs in every) for k in range(max(len(rs) for rs in every))]


def missing(*steps: str) -> list[str]:
    return [s for s in steps if not runs_of(s)]


# ---- one run's statistics --------------------------------------------------------------------------------------------

def widest(r: Run, window_s: float) -> int:
    """The most answers that ended in any window of `window_s` (a window shorter than the sleep holds at most one
    wave)."""
    ends = np.sort(r.requests.loc[r.requests["ok"], "end_ms"].to_numpy(dtype=float))
    if not len(ends):
        return 0
    return int((np.searchsorted(ends, ends + window_s * 1000, side="left") - np.arange(len(ends))).max())


def outside_pool(r: Run, window_s: float) -> float:
    """How far the widest window's answers lie outside [threads.max − most_stray(N), threads.max] (0 inside)."""
    n, t = widest(r, window_s), r.threads
    return float(max(0, t - most_stray(r.users) - n, n - t))


def wave_medians(r: Run) -> list[float]:
    """Each wave's median own answer time (s): wave k is the k-th threads.max answers, in the order answered."""
    own = r.answered_own_s().to_numpy()
    return [float(np.median(own[i:i + r.threads])) for i in range(0, len(own), r.threads)]


def wave_distance(r: Run) -> float:
    """The largest distance (s) of a wave's median answer time from k sleeps."""
    return max((abs(m - (k + 1) * r.sleep_s) for k, m in enumerate(wave_medians(r))), default=float("nan"))


def longest_s(r: Run) -> float:
    own = r.answered_own_s()
    return float(own.max()) if len(own) else float("nan")


def median_own_s(r: Run, kind: str | None = None) -> float:
    """The median own duration (s) of the failed requests (of one kind when given); nan when there are none."""
    failed = r.requests[~r.requests["ok"]]
    if kind is not None:
        failed = failed[failed["kind"] == kind]
    return float(failed["own_s"].median()) if failed["own_s"].notna().any() else float("nan")


def ceiling_distance(r: Run) -> float:
    """How far the most ESTABLISHED connections lie outside [C − most_stray(N), C + 1], C = min(users, ceiling)."""
    held, peak = min(r.users, r.ceiling), r.peak("estab")
    return float(max(0.0, held - most_stray(r.users) - peak, peak - (held + 1)))


def beyond_share(r: Run) -> float:
    """The share of the users beyond the ceiling who were answered."""
    beyond = r.users - r.ceiling
    return (r.ok - r.ceiling) / beyond if beyond > 0 else float("nan")
