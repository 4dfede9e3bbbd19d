"""The numbers chapter 3's prose quotes about connections (the ceiling at 10,000 users, its repeats, the steps that
isolate its cause, the article's three fixes, the "+1", one connection, 15,000 users) and the limits its data shows
for the answer page. Small dataclasses of numbers, computed from the runs' data.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from harness.book.chapters.ch3 import runs as r
from harness.book.chapters.ch3.claims import PLUS_ONE
from harness.book.chapters.ch3.runs import DIAL_TIMEOUT, HEADLINE, REQUEST_TIMEOUT, Run
from harness.book.chapters.ch3.values import need
from harness.book.faces import Limit

BUSY, HELD = "tomcat.threads.busy", "tomcat.connections.current"  # Actuator's busy threads, Tomcat's connections


@dataclass(frozen=True)
class Ceiling:
    """The headline step's first run, as the server and k6 saw it."""

    users: int
    threads: int
    max_connections: int
    accept_count: int
    ceiling: int
    peak: int  # the most ESTABLISHED at once (ss)
    queue_peak: int  # the accept queue's most (ss Recv-Q)
    full_from_s: float  # ESTABLISHED at the ceiling, from … to (since the spike)
    full_to_s: float
    tomcat_peak: int  # Tomcat's own count of its connections (Actuator)
    busy_peak: int
    answered: int
    dial_timeouts: int
    dial_median_s: float  # own clock
    request_timeouts: int
    keep_alive_s: float

    @property
    def beyond(self) -> int:
        return self.users - self.ceiling

    @property
    def got_in(self) -> int:
        """Users beyond the ceiling who were answered after all."""
        return self.answered - self.ceiling


def ceiling() -> Ceiling:
    x = need(HEADLINE)
    at = x.ss.loc[x.ss["estab"] >= x.ceiling, "ts_ms"]
    since = (lambda ts: (ts - x.t0_ms) / 1000) if len(at) else (lambda ts: float("nan"))
    return Ceiling(x.users, x.threads, x.knob("TOMCAT_MAX_CONNECTIONS"), x.knob("TOMCAT_ACCEPT_COUNT"), x.ceiling,
                   int(x.peak("estab")), int(x.peak("accept_queue")), since(at.min()), since(at.max()),
                   int(x.actuator_peak(HELD)), int(x.actuator_peak(BUSY)), x.ok, x.count(DIAL_TIMEOUT),
                   r.median_own_s(x, DIAL_TIMEOUT), x.count(REQUEST_TIMEOUT), x.keep_alive_s)


@dataclass(frozen=True)
class Repeats:
    """Every run of the headline step: this chapter's and chapter 2's."""

    runs: int
    here: int  # of them, this chapter's
    sampled: int  # with `ss` running
    answered: tuple[int, ...]
    got_in: tuple[int, ...]  # beyond the ceiling
    beyond: int
    peaks: tuple[int, ...]  # ESTABLISHED at most, sampled runs only
    request_timeouts: tuple[int, ...]
    dial_timeouts: tuple[int, ...]

    @property
    def mean_answered(self) -> float:
        return statistics.fmean(self.answered)


def repeats() -> Repeats:
    every = r.headline_runs()
    need(HEADLINE)
    x = every[0]
    return Repeats(len(every), sum(y.chapter == r.CHAPTER for y in every), sum(y.sampled for y in every),
                   tuple(y.ok for y in every), tuple(y.ok - y.ceiling for y in every), x.users - x.ceiling,
                   tuple(int(y.peak("estab")) for y in every if y.sampled),
                   tuple(y.count(REQUEST_TIMEOUT) for y in every), tuple(y.count(DIAL_TIMEOUT) for y in every))


@dataclass(frozen=True)
class Fix:
    """One of the article's three fixes at 10,000 users: what it changed and what each run answered."""

    step: str
    setting: str  # "max-connections 20,000"
    users: int
    ceiling: int
    answered: tuple[int, ...]
    peak: int  # ESTABLISHED at most, first run
    queue_peak: int
    dial_timeouts: int  # first run
    request_timeouts: int
    request_median_s: float  # own clock


def fix(step: str, knob: str, name: str, unit_ms: bool = False) -> Fix:
    runs = r.runs(step)
    x = need(step)
    value = f"{x.knob(knob) / 1000:g} s" if unit_ms else f"{x.knob(knob):,}"
    return Fix(step, f"{name} {value}", x.users, x.ceiling, tuple(y.ok for y in runs), int(x.peak("estab")),
               int(x.peak("accept_queue")), x.count(DIAL_TIMEOUT), x.count(REQUEST_TIMEOUT),
               r.median_own_s(x, REQUEST_TIMEOUT))


def fixes() -> dict[str, Fix]:
    return {"g": fix("g-10k-mc20000-pv", "TOMCAT_MAX_CONNECTIONS", "max-connections"),
            "h": fix("h-10k-ct30000-pv", "TOMCAT_CONNECTION_TIMEOUT", "connection-timeout", unit_ms=True),
            "i": fix("i-10k-ac2000-pv", "TOMCAT_ACCEPT_COUNT", "accept-count")}


def timeout_effect(h: Fix, base: Repeats) -> str:
    """What a 30 s connection-timeout changed beside the 20 s runs, in words that follow the data: who got in, and how
    the others failed."""
    ok, low, high = h.answered[0], min(base.answered), max(base.answered)
    lead = "It let no more users in" if low <= ok <= high else "More users got in" if ok > high else "Fewer got in"
    who = f"{lead}: {ok:,} answered, against {low:,} to {high:,} in the {base.runs} runs at 20 s."
    low, high = min(base.request_timeouts), max(base.request_timeouts)
    if h.request_timeouts > high:
        how = (f" What changed is how the others failed: {h.request_timeouts:,} of them waited for an answer until k6's "
               f"request timeout (their median {h.request_median_s:.0f} s) instead of giving up connecting at 30 s, and "
               f"only {h.dial_timeouts:,} gave up connecting. At 20 s that happened to {low:,} to {high:,} users a run, "
               "so one run cannot say whether the longer timeout is the cause.")
    else:
        how = (f" Nor did it change how the others failed: {h.dial_timeouts:,} gave up connecting and "
               f"{h.request_timeouts:,} waited until k6's request timeout, within the {low:,} to {high:,} of the 20 s runs.")
    return who + how


@dataclass(frozen=True)
class Isolating:
    step: str
    why: str
    threads: int
    keep_alive_s: float | None  # None: k6 closes each connection
    answered: int
    model: int
    ceiling: int
    kinds: dict[str, int]


def isolating() -> list[Isolating]:
    """The steps that change one thing about the headline run to find why so few users beyond the ceiling get in."""
    steps = [s for s in ("f-10k-keepalive10s-pv", "f-10k-t8192-keepalive10s-pv", "f-10k-t8192-pv", "f-10k-no-reuse-pv")
             if r.first(s)]
    return [Isolating(s, x.meta.get("why", ""), x.threads,
                      x.keep_alive_s if x.meta["config"]["load"].get("connection_reuse", True) else None,
                      x.ok, x.meta["model"]["succeeded"], x.ceiling, x.kinds) for s in steps for x in [need(s)]]


@dataclass(frozen=True)
class PlusOne:
    step: str
    max_connections: int
    accept_count: int
    tomcat_peak: int
    queue_peak: int
    estab_peak: int
    ceiling: int
    sleep_s: float


def plus_one() -> list[PlusOne]:
    return [PlusOne(s, x.knob("TOMCAT_MAX_CONNECTIONS"), x.knob("TOMCAT_ACCEPT_COUNT"), int(x.actuator_peak(HELD)),
                    int(x.peak("accept_queue")), int(x.peak("estab")), x.ceiling, x.sleep_s)
            for s in PLUS_ONE for x in [need(s)]]


@dataclass(frozen=True)
class OneConnection:
    step: str
    accept_count: int
    keep_alive_s: float | None  # None: k6 closes each connection
    users: int
    answered: int
    model: int
    answer_times_s: tuple[float, ...]  # since the spike


ONE_CONNECTION = ("j-1-1-1-cv", "j-1-1-1-pv", "j-1-1-10-cv", "j-1-1-10-pv", "j-1-1-1-boot-timeout", "j-1-1-1-no-reuse",
                  "j-1-1-10-no-reuse")


def one_connection() -> dict[str, OneConnection]:
    found = {}
    for s in ONE_CONNECTION:
        x = need(s)
        times = tuple(sorted(x.requests.loc[x.requests["ok"], "end_s"].round(1)))
        found[s] = OneConnection(s, x.knob("TOMCAT_ACCEPT_COUNT"),
                                 x.keep_alive_s if x.meta["config"]["load"].get("connection_reuse", True) else None,
                                 x.users, x.ok, x.meta["model"]["succeeded"], times)
    return found


@dataclass(frozen=True)
class Fifteen:
    users: int
    threads: int
    max_connections: int
    accept_count: int
    answered: int
    longest_s: float
    somaxconn_raised: bool
    somaxconn: int  # as the step's machine recorded it
    nofile: int
    cv_issued: int  # the article's executor: requests k6 started within its 1 s


def fifteen() -> Fifteen:
    x, cv = need("k-15k-pv"), need("k-15k-cv")
    return Fifteen(x.users, x.threads, x.knob("TOMCAT_MAX_CONNECTIONS"), x.knob("TOMCAT_ACCEPT_COUNT"), x.ok,
                   r.longest_s(x), bool(x.meta["config"]["system"].get("raise_somaxconn")),
                   int(x.meta["machine"].get("somaxconn", 0)), int(x.meta["machine"].get("nofile_limit", 0)), cv.issued)


# ---- the limits this chapter shows, for the answer page ------------------------------------------------------------

CEILING_ANCHOR, QUEUE_ANCHOR = "sec-the-ceiling", "sec-the-plus-one"


def limits() -> list[Limit]:
    """The accept queue (it holds the users beyond max-connections: it binds from max-connections on) and the
    connection ceiling (past it connection attempts are dropped), with numbers from the data."""
    if not (r.first(HEADLINE) and all(map(r.first, PLUS_ONE))):
        return []
    c, queues = ceiling(), plus_one()
    queue = (f"Beyond Tomcat's max-connections the kernel queues accept-count + 1 connections: with accept-count "
             + ", ".join(f"{q.accept_count:,}" for q in queues) + " the accept queue held at most "
             + ", ".join(f"{q.queue_peak:,}" for q in queues) + f", and {c.queue_peak:,} with the default "
             f"{c.accept_count:,} at {c.users:,} users.")
    held = (f"A server holds at most max-connections + accept-count + 1 connections: with the defaults "
            f"{c.max_connections:,} + {c.accept_count:,} + 1 = {c.ceiling:,}, and {c.users:,} users arriving at once "
            f"found the server holding at most {c.peak:,}; {c.answered:,} were answered.")
    return [Limit(3, "the accept queue", c.queue_peak, "connections", queue, r.CHAPTER, QUEUE_ANCHOR),
            Limit(4, "the connection ceiling", c.peak, "connections", held, r.CHAPTER, CEILING_ANCHOR)]
