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
from harness.book.chapters.ch3.words import per_run
from harness.book.faces import Limit
from harness.book.prose import words
from harness.book.provenance import machines_compared
from harness.lab.store import run_of

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
    syn_cookies: tuple[int, ...]  # SYNs the kernel answered with a cookie, sampled runs only

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
                   tuple(y.count(REQUEST_TIMEOUT) for y in every), tuple(y.count(DIAL_TIMEOUT) for y in every),
                   tuple(syn_cookies(y) for y in every if y.sampled))


def repeats_machines(our_name: str = "this chapter", their_name: str = "chapter 2") -> str:
    """Whether chapter 2's runs of the headline step (config.same_as), whose spread judges this chapter's claims
    about it, ran on the CPUs of this chapter's own runs of it."""
    same = f"{r.CHAPTER}:{HEADLINE}"
    ours = {n: m for n, m in r.names().items() if run_of(n)[0] == HEADLINE}
    theirs = {n: m for n, m in r.names(r.REPEATS).items() if m.get("config", {}).get("same_as") == same}
    return machines_compared(ours, theirs, our_name, their_name)


@dataclass(frozen=True)
class Fix:
    """One of the article's three fixes at 10,000 users: what it changed and what each run answered."""

    step: str
    setting: str  # "max-connections 20,000"
    value: str  # "20,000", "30 s"
    users: int
    ceiling: int
    answered: tuple[int, ...]
    peak: int  # ESTABLISHED at most, first run
    queue_peak: int
    dial_timeouts: int  # first run
    request_timeouts: int
    request_median_s: float  # own clock
    syn_cookies: int


def syn_cookies(x: Run) -> int:
    """SYNs the kernel answered with a SYN cookie during the run (nstat), its queue of half-open connections full."""
    return int(x.ss["syncookies_sent"].sum()) if x.sampled else 0


def fix(step: str, knob: str, name: str, unit_ms: bool = False) -> Fix:
    runs = r.runs(step)
    x = need(step)
    value = f"{x.knob(knob) / 1000:g} s" if unit_ms else f"{x.knob(knob):,}"
    return Fix(step, f"{name} {value}", value, x.users, x.ceiling, tuple(y.ok for y in runs), int(x.peak("estab")),
               int(x.peak("accept_queue")), x.count(DIAL_TIMEOUT), x.count(REQUEST_TIMEOUT),
               r.median_own_s(x, REQUEST_TIMEOUT), syn_cookies(x))


def fixes() -> dict[str, Fix]:
    return {"g": fix("g-10k-mc20000-pv", "TOMCAT_MAX_CONNECTIONS", "max-connections"),
            "h": fix("h-10k-ct30000-pv", "TOMCAT_CONNECTION_TIMEOUT", "connection-timeout", unit_ms=True),
            "i": fix("i-10k-ac2000-pv", "TOMCAT_ACCEPT_COUNT", "accept-count")}


def timeout_effect(h: Fix, base: Repeats) -> str:
    """What a 30 s connection-timeout changed beside the 20 s runs, in words that follow the data: who got in, and how
    the others failed, each count beside its own range over the 20 s runs (one number when every run gave the same)."""
    ok, low, high = h.answered[0], min(base.answered), max(base.answered)
    lead = "It let no more users in" if low <= ok <= high else "More users got in" if ok > high else "Fewer got in"
    runs = f"{base.runs} runs at 20 s"
    who = f"{lead}: {ok:,} answered, against {per_run(base.answered, f'in each of the {runs}', f'in the {runs}')}."
    low, high = min(base.request_timeouts), max(base.request_timeouts)
    if h.request_timeouts > high:
        how = (f" What changed is how the others failed: {h.request_timeouts:,} of them waited for an answer until k6's "
               f"request timeout (their median {h.request_median_s:.0f} s) instead of giving up connecting at 30 s, and "
               f"only {h.dial_timeouts:,} gave up connecting. At 20 s that happened to "
               f"{per_run(base.request_timeouts, 'users in every run', 'users a run')}, "
               "so one run cannot say whether the longer timeout is the cause.")
        if base.syn_cookies and h.syn_cookies > max(base.syn_cookies):
            how += (f" The kernel's counters suggest where they came from: in that run it answered {h.syn_cookies:,} connection "
                    "attempts with a SYN cookie (it does when its queue of half-open connections is full), against "
                    f"{per_run(base.syn_cookies, 'in each sampled 20 s run', 'in the sampled 20 s runs')}; a client "
                    "answered so believes it is connected and sends its request on a connection Tomcat never accepted.")
    else:
        within = (min(base.dial_timeouts) <= h.dial_timeouts <= max(base.dial_timeouts)
                  and low <= h.request_timeouts <= high)
        how = (f" {'Nor did it change how the others failed' if within else 'How the others failed'}: "
               f"{h.dial_timeouts:,} gave up connecting "
               f"({per_run(base.dial_timeouts, 'in every run at 20 s', 'a run at 20 s')}) and {h.request_timeouts:,} "
               f"waited until k6's request timeout ({per_run(base.request_timeouts, 'in every run', 'a run')}).")
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
    changes: tuple[str, ...]  # the settings it changes of the headline step ("threads.max", "keep-alive", …)


def settings(x: Run) -> dict[str, object]:
    """What a 10,000-user step runs with, by the name the chapter gives each (keep-alive None: k6 closes each
    connection)."""
    reuse = x.meta["config"]["load"].get("connection_reuse", True)
    return {"users": x.users, "threads.max": x.threads, "max-connections": x.knob("TOMCAT_MAX_CONNECTIONS"),
            "accept-count": x.knob("TOMCAT_ACCEPT_COUNT"), "keep-alive": x.keep_alive_s if reuse else None}


def isolating() -> list[Isolating]:
    """The steps that change the headline run to find why so few users beyond the ceiling get in, each with the
    settings it changes of it."""
    steps = [s for s in ("f-10k-keepalive10s-pv", "f-10k-t8192-keepalive10s-pv", "f-10k-t8192-pv", "f-10k-no-reuse-pv")
             if r.first(s)]
    base = settings(need(HEADLINE))
    return [Isolating(s, x.meta.get("why", ""), x.threads, own["keep-alive"], x.ok, x.meta["model"]["succeeded"],
                      x.ceiling, x.kinds, tuple(name for name, value in own.items() if value != base[name]))
            for s in steps for x in [need(s)] for own in [settings(x)]]


def isolation_text(steps: list[Isolating]) -> str:
    """Each isolating step's answered users against the model, in words."""
    def relation(i: Isolating) -> str:
        diff = i.answered - i.model
        return "as the model predicts" if diff == 0 else f"{abs(diff):,} {'more' if diff > 0 else 'fewer'} than the model"
    return "; ".join(f"`{i.step}` answered {i.answered:,} ({relation(i)})" for i in steps) + "."


def other_errors(every: list[Run] | None = None) -> dict[str, int]:
    """The article's other kinds of error at 10,000 users, over every run of the headline step: resets, a client out of
    memory, and request timeouts at ~20 s on the request's own clock."""
    found = {"connection reset by peer": 0, "cannot allocate memory": 0, "request timeout at about 20 s": 0}
    for x in every if every is not None else r.headline_runs():
        text = x.requests["error"].fillna("").astype(str)
        found["connection reset by peer"] += int(text.str.contains("connection reset by peer", regex=False).sum())
        found["cannot allocate memory"] += int(text.str.contains("cannot allocate memory", regex=False).sum())
        early = (x.requests["kind"] == REQUEST_TIMEOUT) & ((x.requests["own_s"] - 20).abs() <= x.sleep_s / 2)
        found["request timeout at about 20 s"] += int(early.sum())
    return found


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


def keep_alive_decides(one: dict[str, OneConnection]) -> str:
    """What the one-connection steps show about keep-alive, in words that follow the data."""
    kept = [one[s] for s in ("j-1-1-1-pv", "j-1-1-10-pv")]
    closed = one["j-1-1-10-no-reuse"]
    same = kept[0].answered == kept[1].answered
    text = ("With keep-alive the accept-count made no difference" if same else
            f"With keep-alive the larger accept-count answered {kept[1].answered - kept[0].answered:+,}")
    if closed.answered >= closed.users:
        return text + (f"; without it, accept-count {closed.accept_count} let all {closed.users} in. The article's "
                       "result needs connections that are not kept alive.")
    return text + f"; without it, accept-count {closed.accept_count} let {closed.answered} of {closed.users} in."


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
    queue = ("Beyond Tomcat's max-connections the kernel queues accept-count + 1 connections: in "
             f"{words(len(queues))} small steps (max-connections and accept-count "
             + ", ".join(f"{q.max_connections:,} and {q.accept_count:,}" for q in queues)
             + ") the accept queue held at most " + ", ".join(f"{q.queue_peak:,}" for q in queues)
             + f", and {c.queue_peak:,} with the default accept-count {c.accept_count:,} at {c.users:,} users.")
    held = (f"A server holds at most max-connections + accept-count + 1 connections: with the defaults "
            f"{c.max_connections:,} + {c.accept_count:,} + 1 = {c.ceiling:,}, and {c.users:,} users arriving at once "
            f"found the server holding at most {c.peak:,}; {c.answered:,} were answered.")
    return [Limit(3, "the accept queue", c.queue_peak, "connections", queue, r.CHAPTER, QUEUE_ANCHOR),
            Limit(4, "the connection ceiling", c.peak, "connections", held, r.CHAPTER, CEILING_ANCHOR)]
