"""The numbers chapter 7's sentences quote, as small dataclasses: the .qmd writes the prose and puts each number in
with an inline value (`{python} f"{w.loop_last_s:.0f}"`). Every value comes from the step table
(harness.book.chapters.ch7.runs), the steps' step.json or the claims' own statistics
(harness.book.chapters.ch7.claims) on the data being read, one pass; the verdict table pools the chapter's kept
passes, and `pooled` gives its numbers to the sentences that set the two side by side.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import pandas as pd

from harness.book.chapters.ch7 import claims, elsewhere
from harness.book.claims import Judgement
from harness.book.chapters.ch7.runs import LOOP, MODELS, NONE, OPEN_FILES, PLATFORM, SERVICE, VIRTUAL, pick
from harness.lab.load.k6 import summary_metrics
from harness.lab.spec import FD_RESERVE
from harness.lab.steps import server_knob
from harness.lab import store
from harness.lab.store import ChapterData
from harness.models.spike import K6_DIAL_TIMEOUT_MS

MIB, GIB = 2**20, 2**30


@dataclass(frozen=True)
class Setup:
    """The three servers and the machine as the steps recorded them."""

    threads: int  # the platform-thread pool (Tomcat's maxThreads)
    max_connections: int
    accept_count: int  # as Tomcat reported it: the article's 5000 capped at the kernel's somaxconn
    somaxconn: int
    keep_alive_s: float
    nofile: int
    usable_files: int  # what the models leave a process for sockets: nofile less its own files
    cores: int
    java_platform: str
    java_virtual: str
    java_loop: str
    webflux: str
    reactor_netty: str
    loop_threads: int  # Reactor Netty's event-loop threads
    users: tuple[int, ...]
    most_processes: int  # k6 processes at the most users
    sleep_s: float  # the wait every request asks for
    connect_timeout_s: float  # k6 gives up connecting after this (the model's, k6's own)


def setup(data: ChapterData, table: pd.DataFrame) -> Setup:
    metas = {row.model: data.steps[row.step] for row in table.itertuples()}
    tomcat = metas[PLATFORM]["server_info"]["tomcat"]
    flux = metas[LOOP]["services"][SERVICE]
    machine = metas[PLATFORM]["machine"]
    return Setup(tomcat["maxThreads"], tomcat["maxConnections"], tomcat["acceptCount"], machine["somaxconn"],
                 tomcat["keepAliveTimeout"] / 1000, machine["nofile_limit"], machine["nofile_limit"] - FD_RESERVE,
                 machine["cores"], metas[PLATFORM]["versions"]["java"], metas[VIRTUAL]["versions"]["java"],
                 flux["java"].split("+")[0], flux["version"], flux["reactor_netty"], flux["event_loop_threads"],
                 tuple(int(n) for n in sorted(table.users.unique())), int(table.loc[table.users.idxmax(), "processes"]),
                 float(table.sleep_s.iloc[0]), K6_DIAL_TIMEOUT_MS / 1000)


@dataclass(frozen=True)
class OneWait:
    """Each model at one user count (first runs): when k6 had started every user, and when the last answer came."""

    users: int
    start_spread_s: float  # from k6's first to its last user's start, the most of the three steps
    pool_waves: int  # users / threads, rounded up: the pool's waves of one wait each
    sleep_s: float
    pool_last_s: float
    virtual_last_s: float
    loop_last_s: float
    everyone: bool  # every model answered every user


def one_wait(table: pd.DataFrame, users: int, threads: int) -> OneWait:
    pool, virtual, loop = (pick(table, m, users) for m in MODELS)
    rows = (pool, virtual, loop)
    return OneWait(users, max(r.start_spread_s for r in rows), math.ceil(users / threads), pool.sleep_s,
                   pool.last_ok_s, virtual.last_ok_s, loop.last_ok_s, all(r.succeeded == r.asked for r in rows))


@dataclass(frozen=True)
class Concurrency:
    """The claims' in-service concurrency L (mean over rounds) and the JVM threads that carried it."""

    rounds: int
    pool: float  # the larger of platform-10k and platform-15k
    virtual: float  # the smaller of virtual-10k and virtual-15k
    loop: float
    virtual_threads: float  # the most live JVM threads over the runs judged
    loop_threads: float
    virtual_per_thread: float
    loop_per_thread: float


def _most_threads(model: str) -> float:
    return max((r.threads for step in claims.JUDGED[model] for r in claims.runs(step)), default=float("nan"))


# The claims on requests in service and per thread: L on platform threads, virtual threads and the event loop, then
# requests per thread on the last two (the order of Concurrency's and Pooled's fields).
CONCURRENCY_CLAIMS = ("F002-d.1a", "F002-d.3b", "F002-d.2b", "F002-d.3c", "F002-d.2c")


def concurrency() -> Concurrency:
    pool, virtual, loop, per_virtual, per_loop = (claims.STATISTICS[c]() for c in CONCURRENCY_CLAIMS)
    return Concurrency(pool.runs, pool.value, virtual.value, loop.value, _most_threads(VIRTUAL), _most_threads(LOOP),
                       per_virtual.value, per_loop.value)


@dataclass(frozen=True)
class Pooled:
    """The same statistics as the verdict table states them: every kept pass pooled (the page's `claim`, from
    harness.book.verdict_tables.book_verdicts), beside `Concurrency`, which reads the data of one pass."""

    passes: int
    rounds: int  # the rounds of runs pooled
    pool: float
    virtual: float
    loop: float
    virtual_per_thread: float
    loop_per_thread: float


def pooled(claim: dict[str, Judgement]) -> Pooled:
    """The pooled concurrency claims of `claim` (claim id → the book's judgement)."""
    pool, virtual, loop, per_virtual, per_loop = (claim[c].measured for c in CONCURRENCY_CLAIMS)
    return Pooled(pool.passes, pool.runs, pool.value, virtual.value, loop.value, per_virtual.value, per_loop.value)


@dataclass(frozen=True)
class ThreadCost:
    """What a platform thread costs where only the thread count varies: chapter 2's memory, chapter 4's switches."""

    kib: float  # per thread
    stderr_kib: float
    hold_kib: float  # per user with a thread each
    queue_kib: float  # per user on a fixed pool
    queue_threads: int  # that pool
    smallest: int
    largest: int
    switches_fewer: float  # per answered request on the smaller pool (mean over runs); nan when not counted
    switches_more: float  # on the bigger pool
    switch_ratio: float
    switch_pairs: int
    fewer_threads: int  # chapter 4's pair: threads.max of each, and its users
    more_threads: int
    switch_users: int


def thread_cost() -> ThreadCost | None:
    memory = elsewhere.thread_memory()
    if memory is None:
        return None
    pair = elsewhere.switches()
    mean = statistics.fmean
    return ThreadCost(memory.kib, memory.stderr_kib, memory.hold.slope / elsewhere.KIB, memory.queue.slope / elsewhere.KIB,
                      memory.queue_threads, min(memory.hold.users), max(memory.hold.users),
                      mean(pair.fewer) if pair.fewer else math.nan, mean(pair.more) if pair.more else math.nan,
                      mean(pair.ratios) if pair.ratios else math.nan, len(pair.ratios), pair.fewer_threads,
                      pair.more_threads, pair.users)


@dataclass(frozen=True)
class Resident:
    """Each model's serving process at one user count (first runs): its peak resident memory, memory per held
    connection, and the JVM it ran on."""

    users: int
    pool_mib: float
    virtual_mib: float
    loop_mib: float
    pool_kib: float  # per connection: growth from before the load to the most connections, over them
    virtual_kib: float
    loop_kib: float
    pool_java: str
    virtual_java: str
    loop_java: str


def resident(table: pd.DataFrame, users: int) -> Resident:
    pool, virtual, loop = (pick(table, m, users) for m in MODELS)
    return Resident(users, *(r.rss_peak / MIB for r in (pool, virtual, loop)),
                    *(r.per_connection_bytes / 1024 for r in (pool, virtual, loop)), pool.java, virtual.java, loop.java)


@dataclass(frozen=True)
class FifteenK:
    """F000-k's 15,000 users on the article's settings: each run of platform-15k, and chapter 3's k-15k-pv."""

    users: int
    answered: tuple[int, ...]  # per run
    stray: int  # the most failures stray noise explains among the users
    chapter3_answered: int | None
    chapter3_somaxconn: int | None
    peak_connections: int  # the first run's, as the kernel counted them
    peak_open_files: int


def fifteen_k(table: pd.DataFrame) -> FifteenK:
    found = claims.runs(claims.FIFTEEN_K)
    users = found[0].asked if found else 0
    beside = elsewhere.article_15k() or {}
    first = table[table.step == claims.FIFTEEN_K]
    return FifteenK(users, tuple(r.succeeded for r in found), claims.most_stray(users) if users else 0,
                    beside.get("succeeded"), beside.get("somaxconn"),
                    int(first.peak_connections.iloc[0]) if len(first) else 0,
                    int(first.peak_open_files.iloc[0]) if len(first) else 0)


@dataclass(frozen=True)
class PastLimit:
    """The steps past the open-files limit (first runs): what each model answered at the most users, and the
    platform-thread steps the article's "errors above 20k" is judged on."""

    users: int
    processes: int
    k6_gib: float
    pool_answered: int
    virtual_answered: int
    loop_answered: int
    most_open_files: int
    at_files: int  # steps whose serving process reached its open-files limit
    above: int  # steps above the limit's users
    emfile_most: int  # the most "Too many open files" lines one server logged
    platform_failed: tuple[tuple[int, int], ...]  # (users, failed) of F000-k.2's steps, "over 20k"
    established: int  # the most connections established on a server's port in one sample, held or queued
    files_plus_queue: int  # open files + accept-count + 1: chapter 3's ceiling with open files for max-connections


def past_limit(table: pd.DataFrame) -> PastLimit:
    most = int(table.users.max())
    pool, virtual, loop = (pick(table, m, most) for m in MODELS)
    over = table[table.users > max(claims.JUDGED_USERS)]
    top = over.loc[over.peak_established.idxmax()] if len(over) else None
    return PastLimit(most, int(pool.processes), float(table.loc[table.users.idxmax(), "k6_rss_peak"]) / GIB,
                     int(pool.succeeded), int(virtual.succeeded), int(loop.succeeded),
                     int(table.peak_open_files.max()), int((table.limit == OPEN_FILES).sum()), len(over),
                     int(table.emfile_logged.max()),
                     tuple((int(r.users), int(r.failed)) for r in table[table.step.isin(claims.ABOVE_20K)].itertuples()),
                     int(top.peak_established) if top is not None else 0,
                     int(top.nofile + top.backlog + 1) if top is not None else 0)


@dataclass(frozen=True)
class LostUnnamed:
    """A step that lost users where its data names no limit (first runs), with what k6's own summaries say of how
    long its requests took to send, against the server's connection-timeout (Tomcat closes a connection that sends
    nothing for that long)."""

    step: str
    users: int
    failed: int
    errors: tuple[tuple[str, int], ...]  # (k6's error, count), most first
    peak_open_files: int
    nofile: int
    send_max_s: float  # the longest http_req_sending of any of the step's k6 processes
    connection_timeout_s: float


def lost_unnamed(data: ChapterData, table: pd.DataFrame) -> tuple[LostUnnamed, ...]:
    rows = table[(table.limit == NONE) & (table.failed > 0)]
    return tuple(_lost_unnamed(data, row) for row in rows.itertuples())


def _lost_unnamed(data: ChapterData, row) -> LostUnnamed:
    meta = data.steps[row.step]
    errors = sorted(meta["requests"].get("errors", {}).items(), key=lambda e: -e[1])
    summaries, _ = summary_metrics(store.step_dir(data.chapter, row.step), int(row.processes))
    sending = [m["http_req_sending"]["max"] for m in summaries if "http_req_sending" in m]
    return LostUnnamed(row.step, int(row.users), int(row.failed), tuple(errors), int(row.peak_open_files),
                       int(row.nofile), max(sending, default=float("nan")) / 1000,
                       server_knob(meta, "TOMCAT_CONNECTION_TIMEOUT") / 1000)


@dataclass(frozen=True)
class ModelFit:
    """How far the model's count of answered users fell from the measured one, before and after it was fed the
    measured arrivals: the furthest step of each."""

    steps: int
    exact_at_once: int  # steps where the model's count, all arriving at once, was the measured one
    worst_at_once: str
    worst_at_once_gap: int  # users
    worst_arrivals: str
    worst_arrivals_gap: int


def model_fit(table: pd.DataFrame) -> ModelFit:
    at_once = (table.succeeded - table.predicted_ok).abs()
    fed = (table.succeeded - table.arrivals_ok).abs()
    return ModelFit(len(table), int((at_once == 0).sum()), table.loc[at_once.idxmax(), "step"], int(at_once.max()),
                    table.loc[fed.idxmax(), "step"], int(fed.max()))


@dataclass(frozen=True)
class HeldCount:
    """Where the kernel's count of held connections (established on the port less the accept queue, one sample) passed
    the open-files limit, which no process passes: steps, the most it passed it by, and that step."""

    steps: int
    nofile: int
    most_over: int
    step: str
    held: int


def held_count(table: pd.DataFrame) -> HeldCount:
    over = table[table.peak_connections > table.nofile]
    nofile = int(table.nofile.max())
    if over.empty:
        return HeldCount(0, nofile, 0, "", int(table.peak_connections.max()))
    top = over.loc[(over.peak_connections - over.nofile).idxmax()]
    return HeldCount(len(over), int(top.nofile), int(top.peak_connections - top.nofile), str(top.step),
                     int(top.peak_connections))
