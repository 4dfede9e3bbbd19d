"""What chapter 7's claims read from other chapters' data (through harness.lab.store, never their modules): where a
thread count varies at equal users, the cost of a thread shows.

- Memory per thread (chapter 2): the server's peak resident memory against users, hold-N (N threads for N users) and
  queue-N (200 threads for N users), each a least-squares line over its sizes; a thread is the slopes' difference.
- Context switches per answered request (chapter 4, 800 users on one core): threads.max 800 (threads-800-800) over
  threads.max 200 (sweep-800), run k of one beside run k of the other (the spec runs them in rounds).
- Chapter 3's k-15k-pv: the article's 15,000 users with somaxconn raised, shown beside F000-k.
- The spread of failures past a connection ceiling (chapter 2's noise runs of chapter 3's 10,000-user step): the σ
  borrowed by F000-k.2, whose steps run once.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

import numpy as np

from harness.lab import store
from harness.lab.store import run_of

KIB = 1024
HOLD, QUEUE = "hold", "queue"  # chapter 2's series: a thread per user; connections on 200 threads
SIZED = re.compile(r"^(hold|queue)-(\d+)$")
MORE_THREADS, FEWER_THREADS = "threads-800-800", "sweep-800"  # chapter 4: threads.max 800 vs 200 at 800 users
NOISE = "noise"  # chapter 2: chapter 3's 10,000-user step, run several times
ARTICLE_15K = "k-15k-pv"  # chapter 3: 15,000 users, the article's settings, somaxconn raised


@dataclass(frozen=True)
class Line:
    """A least-squares line through (users, peak resident bytes): bytes per user, its standard error, the points."""

    slope: float
    stderr: float
    users: tuple[int, ...]
    rss_bytes: tuple[float, ...]


@dataclass(frozen=True)
class ThreadMemory:
    hold: Line  # a thread and a connection per user
    queue: Line  # a connection per user, a fixed pool
    queue_threads: int  # that pool's size (Tomcat's maxThreads in queue-N's step.json)

    @property
    def kib(self) -> float:
        return (self.hold.slope - self.queue.slope) / KIB

    @property
    def stderr_kib(self) -> float:
        return float(np.hypot(self.hold.stderr, self.queue.stderr)) / KIB


def _complete(chapter: str) -> dict[str, dict]:
    return store.complete_steps(chapter) if (store.data_root() / chapter).is_dir() else {}


def fit(users: list[int], rss: list[float]) -> Line:
    """The line and its slope's standard error (numpy's covariance of the fit, scaled by the residuals)."""
    if len(users) < 3:
        return Line(float("nan"), float("nan"), tuple(users), tuple(rss))
    (slope, _), cov = np.polyfit(np.asarray(users, float), np.asarray(rss, float), 1, cov=True)
    return Line(float(slope), float(np.sqrt(cov[0, 0])), tuple(users), tuple(rss))


def thread_memory() -> ThreadMemory | None:
    """Chapter 2's hold-N and queue-N lines (None when chapter 2 has neither series)."""
    points: dict[str, list[tuple[int, float]]] = {HOLD: [], QUEUE: []}
    pools = set()
    for step, meta in _complete("chapter2").items():
        if not (sized := SIZED.match(step)):
            continue
        if sized.group(1) == QUEUE:
            pools.add(meta["server_info"]["tomcat"]["maxThreads"])
        process = store.read_table("chapter2", step, "process")
        server = process.loc[process.process == "server", "rss_bytes"]
        if len(server):
            points[sized.group(1)].append((int(meta["config"]["load"]["vus"]), float(server.max())))
    if not points[HOLD] or not points[QUEUE]:
        return None
    lines = {series: fit(*map(list, zip(*sorted(found), strict=True))) for series, found in points.items()}
    return ThreadMemory(lines[HOLD], lines[QUEUE], max(pools))


@dataclass(frozen=True)
class Switches:
    """Context switches of the server per answered request, one value per run (run 1 first), and the pair's setup."""

    more: tuple[float, ...]  # the bigger pool (threads.max 800)
    fewer: tuple[float, ...]  # the smaller (200)
    more_threads: int = 0
    fewer_threads: int = 0
    users: int = 0

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(m / f for m, f in zip(self.more, self.fewer, strict=False) if f)


def per_request(meta: dict) -> float | None:
    """The server's voluntary and involuntary context switches during the load over the requests it answered."""
    server = (meta.get("during_load") or {}).get("server")
    answered = meta.get("requests", {}).get("succeeded", 0)
    if not server or not answered:
        return None
    return (server.get("voluntary", 0) + server.get("involuntary", 0)) / answered


def runs_of(metas: dict[str, dict], step: str) -> list[dict]:
    """Every run of a step, run 1 first."""
    return [meta for _, meta in sorted((run_of(s)[1], m) for s, m in metas.items() if run_of(s)[0] == step)]


def switches() -> Switches:
    """Chapter 4's pair, run k beside run k while both have counts (empty when its data has none)."""
    metas = _complete("chapter4")
    more_runs, fewer_runs = runs_of(metas, MORE_THREADS), runs_of(metas, FEWER_THREADS)
    more = [per_request(m) for m in more_runs]
    fewer = [per_request(m) for m in fewer_runs]
    pairs = [(m, f) for m, f in zip(more, fewer, strict=False) if m is not None and f is not None]
    if not pairs:
        return Switches((), ())
    return Switches(tuple(m for m, _ in pairs), tuple(f for _, f in pairs), _threads(more_runs[0]),
                    _threads(fewer_runs[0]), max(s["target"] for s in fewer_runs[0]["config"]["load"]["stages"]))


def _threads(meta: dict) -> int:
    return int(meta["server_info"]["tomcat"]["maxThreads"])


def noise_failures() -> tuple[int, ...]:
    """Failed requests in each run of chapter 2's noise step (chapter 3's 10,000 users past the 8,293 ceiling)."""
    return tuple(int(m["requests"]["asked"] - m["requests"]["succeeded"]) for m in runs_of(_complete("chapter2"), NOISE))


def noise_sigma() -> float | None:
    failures = noise_failures()
    return statistics.stdev(failures) if len(failures) >= 2 else None


def article_15k() -> dict | None:
    """Chapter 3's k-15k-pv as it ran: {asked, succeeded, somaxconn}; None when chapter 3 has not run it."""
    meta = _complete("chapter3").get(ARTICLE_15K)
    if meta is None:
        return None
    return {"asked": meta["requests"]["asked"], "succeeded": meta["requests"]["succeeded"],
            "somaxconn": meta["machine"]["somaxconn"], "accept_count": meta["config"]["server"].get("TOMCAT_ACCEPT_COUNT")}
