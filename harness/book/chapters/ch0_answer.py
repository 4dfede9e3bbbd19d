"""The book's answer up front (chapters/00-the-answer.qmd): three limits, each with what the data shows of it.

1. Requests in progress at once = threads.max; throughput = threads ÷ the time a request holds a thread
   (chapter 1's plateau, chapter 3's waves).
2. Connections held at once ≤ max-connections + accept-count + 1 (chapter 3's `ss` peaks; chapter 2's repeats).
3. Who fails, and when: connection attempts are dropped, not refused; the client's timeouts decide (chapter 3).

Every number comes from the committed steps (step.json's config, model, machine and server_info; the parquet
tables) or from the one place the harness keeps a default or a constant (spec.SERVER_DEFAULTS, model.SYN_RETRY_MS,
model.K6_DIAL_TIMEOUT_MS, the sample server's env-var map). Each fact says whether the data bears the limit out,
and the sentences change when it does not.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from harness import SERVER_DIR
from harness.book.analysis import throughput_table
from harness.book.prose import and_list
from harness.book.steps import PLUS_ONE, spec_steps, step_run, wave_counts
from harness.book.tables import markdown_table
from harness.book.verdict import COUNT_TOLERANCE, MODEL_NOISE, QUEUE_RACE, failure_kinds, within
from harness.lab.spec import LOAD_DEFAULTS, SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered
from harness.lab.units import duration_ms
from harness.models.spike import K6_DIAL_TIMEOUT_MS, KERNEL_EXTRA, SYN_RETRY_MS

HEADLINE = "f-10k-pv"  # chapter 3's 10,000 users on the default connection limits
WAVE_STEPS = ("a-300-pv", "b-1000-pv", "d-3000-t500-pv", "e-6000-t1000-pv")  # chapter 3's waves chart
FAILURE_STEPS = (HEADLINE, "d-3000-t200-pv")  # too many users for the connections; too many for the threads
REPEAT_PREFIX = "noise-"  # chapter 2 runs the headline step again (same_as = "chapter3:f-10k-pv")
TIMEOUT_SLACK_S = 1.0  # a failure "is" a timeout when its median time is no more than this before the timeout
KIND_WORDS = {"i/o timeout": "gave up connecting", "request timeout": "gave up waiting for an answer",
              "connection reset by peer": "had the connection reset", "EOF": "saw the connection closed"}
KNOBS_SOURCE = SERVER_DIR / "src/main/java/lab/TomcatEnvironmentPostProcessor.java"
# How the sample server's /actuator/info names each knob (recorded in step.json as server_info.tomcat).
REPORTED_AS = {"TOMCAT_MAX_THREADS": "maxThreads", "TOMCAT_MIN_SPARE_THREADS": "minSpareThreads",
               "TOMCAT_MAX_CONNECTIONS": "maxConnections", "TOMCAT_ACCEPT_COUNT": "acceptCount",
               "TOMCAT_CONNECTION_TIMEOUT": "connectionTimeout", "TOMCAT_KEEP_ALIVE_TIMEOUT": "keepAliveTimeout",
               "TOMCAT_MAX_KEEP_ALIVE_REQUESTS": "maxKeepAliveRequests"}
FALLS_BACK_TO = {"TOMCAT_KEEP_ALIVE_TIMEOUT": "TOMCAT_CONNECTION_TIMEOUT"}  # Tomcat: unset keep-alive = connection-timeout


def n(value: float) -> str:
    """8293 → "8,293"."""
    return f"{value:,.0f}"


# ---- 1. threads: requests in progress and throughput ----------------------------------------------------

@dataclass(frozen=True)
class PoolThroughput:
    """Chapter 1: the closed-loop steps with at least as many clients as threads (the pool is full)."""

    steps: tuple[str, ...]
    threads: int
    hold_s: float  # mean time a request holds a thread (the model's)
    model_rps: float  # threads ÷ hold_s
    low_rps: float  # measured range over the steps
    high_rps: float
    clients: tuple[int, ...]
    busy_peak: int | None  # Actuator's tomcat.threads.busy at most
    matched: bool

    @property
    def rps(self) -> str:
        """The measured requests per second: one number, or the range over the steps."""
        return n(self.low_rps) if round(self.low_rps) == round(self.high_rps) else f"{n(self.low_rps)}–{n(self.high_rps)}"

    def busy(self) -> str:
        if self.busy_peak is None:
            return ""
        return "all busy" if self.busy_peak == self.threads else f"at most {n(self.busy_peak)} busy"

    def short(self) -> str:
        """How far under the model the measured range lies, e.g. "9–12 %"."""
        low, high = (round(100 * (1 - rps / self.model_rps)) for rps in (self.high_rps, self.low_rps))
        return f"{low} %" if low == high else f"{low}–{high} %"

    def text(self) -> str:
        busy = f", {self.busy()}" if self.busy() else ""
        said = (f"{n(self.threads)} threads{busy}: {self.rps} requests/s with {and_list([n(c) for c in self.clients])} "
                f"clients (model {n(self.threads)} ÷ {self.hold_s:g} s = {n(self.model_rps)})")
        return said if self.matched else said + ": not what the threads predict"


def pool_throughput(data: ChapterData) -> PoolThroughput | None:
    table = throughput_table(data)
    full = table[table["concurrency"] >= table["threads"]]
    if full.empty:
        return None
    threads = int(full["threads"].max())
    hold_s = data.steps[full["step"].iloc[0]]["model"]["mean_service_ms"] / 1000
    inside = full["rps"].between(full["rps_low"] * (1 - MODEL_NOISE), full["rps_model"] * (1 + MODEL_NOISE))
    busy = data.actuator[(data.actuator["metric"] == "tomcat.threads.busy") & data.actuator["step"].isin(full["step"])]
    busy_peak = None if busy.empty else int(busy["value"].max())
    return PoolThroughput(tuple(full["step"]), threads, hold_s, threads / hold_s, float(full["rps"].min()),
                          float(full["rps"].max()), tuple(sorted(full["concurrency"].unique().tolist())), busy_peak,
                          bool(inside.all()) and busy_peak in (None, threads))


@dataclass(frozen=True)
class Waves:
    """Chapter 3: the largest number of answers per request time (one wave), per thread count."""

    hold_s: float
    largest: dict[int, int]  # threads → the largest wave over the steps with that many threads
    matched: bool

    def text(self) -> str:
        said = (f"requests of {self.hold_s:g} s: waves of {and_list([n(w) for w in self.largest.values()])} answers every "
                f"{self.hold_s:g} s on {and_list([n(t) for t in self.largest])} threads")
        return said if self.matched else said + ": not one wave of threads.max"


def waves(data: ChapterData, step_ids=WAVE_STEPS) -> Waves | None:
    largest: dict[int, int] = {}
    matched, hold_s = True, None
    for step_id in step_ids:
        run = step_run(data, step_id)
        if run is None or not run.ok:
            continue
        threads, hold_s = run.model["threads"], run.model["service_ms"] / 1000
        wave = max(wave_counts(run, hold_s).values())
        largest[threads] = max(largest.get(threads, 0), wave)
        matched &= within(wave, threads, COUNT_TOLERANCE)
    return Waves(hold_s, dict(sorted(largest.items())), matched) if largest else None


# ---- 2. connections held -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Held:
    """One step with more users than its ceiling: the connections `ss` saw established at most, against it."""

    step: str
    users: int
    max_connections: int
    accept_count: int
    ceiling: int  # the model's: max-connections + accept-count + 1
    peak: int

    @property
    def matched(self) -> bool:
        # passed by one at most: two handshakes can race past the kernel's unlocked full-queue check (chapter 3)
        return 0 <= self.peak - self.ceiling <= QUEUE_RACE


def held(data: ChapterData, step_id: str) -> Held | None:
    """None when the step is missing, had no `ss` samples, or never had more users than its ceiling."""
    run = step_run(data, step_id)
    if run is None or run.ss["estab"].dropna().empty or run.asked <= run.model["ceiling"]:
        return None
    return Held(step_id, run.asked, run.knob("TOMCAT_MAX_CONNECTIONS"), run.knob("TOMCAT_ACCEPT_COUNT"),
                run.model["ceiling"], int(run.peak("estab")))


@dataclass(frozen=True)
class Ceiling:
    headline: Held | None
    small: tuple[Held, ...]  # the plus1-* steps
    repeats: tuple[int, ...]  # the headline step's peaks when chapter 2 ran it again

    @property
    def matched(self) -> bool:
        return bool(self.all) and all(h.matched for h in self.small) and (self.headline is None or self.headline_fits)

    @property
    def headline_fits(self) -> bool:
        return self.headline is not None and self.headline.matched and all(
            0 <= p - self.headline.ceiling <= QUEUE_RACE for p in self.repeats)

    @property
    def all(self) -> list[Held]:
        return ([self.headline] if self.headline else []) + list(self.small)

    def peak_text(self) -> str:
        """The headline step's peak, with its repeats: "at most 8,294 connections (one over: …), and 8,293 in each of 5 …"."""
        h = self.headline
        over = h.peak - h.ceiling
        said = f"at most {n(h.peak)} connections"
        if 0 < over <= QUEUE_RACE:
            said += " (one over: two handshakes can slip past the kernel's full-queue check together)"
        elif over:
            said += f" ({n(abs(over))} {'over' if over > 0 else 'under'} the ceiling)"
        if self.repeats:
            said += (f", and {n(self.repeats[0])} in each of {len(self.repeats)}" if len(set(self.repeats)) == 1 else
                     f", and {n(min(self.repeats))}–{n(max(self.repeats))} in {len(self.repeats)}") + " repeats of the step"
        return said

    def text(self) -> str:
        parts = []
        if self.headline:
            h = self.headline
            parts.append(f"{n(h.users)} users against {n(h.max_connections)} + {n(h.accept_count)} + {KERNEL_EXTRA} = "
                         f"{n(h.ceiling)}: {self.peak_text()}")
        if self.small:
            parts.append(f"small servers of {and_list([f'{h.max_connections} + {h.accept_count} + {KERNEL_EXTRA} = {h.ceiling}' for h in self.small])}: "
                         f"at most {and_list([n(h.peak) for h in self.small])}")
        said = "; ".join(parts)
        return said if self.matched else said + ": not the ceiling"


def ceiling(data: ChapterData, repeats: ChapterData | None = None, headline: str = HEADLINE, small=None) -> Ceiling:
    peaks = []
    if repeats is not None:
        ss = repeats.ss[repeats.ss["step"].str.startswith(REPEAT_PREFIX)]
        peaks = [int(p) for _, p in sorted(ss.groupby("step")["estab"].max().dropna().items())]
    small = spec_steps("chapter3", role=PLUS_ONE) if small is None else small
    return Ceiling(held(data, headline), tuple(h for h in (held(data, s) for s in small) if h), tuple(peaks))


# ---- 3. who fails, and when ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Failures:
    """Per step, failures by kind: how many, and the median time each took on its own clock (its start to its end)."""

    steps: dict[str, tuple[int, int, list[tuple[str, int, float | None]]]]  # step → (users, threads, [(kind, count, s)])
    dial_timeout_s: float  # k6 stops connecting (model.K6_DIAL_TIMEOUT_MS)
    request_timeout_s: float  # k6 stops waiting for an answer (the steps' load.request_timeout)
    refused: int  # requests anywhere in the chapter that got "connection refused"

    @property
    def at_timeouts(self) -> bool:
        """Did the connect and request timeouts end no sooner than k6's timeouts say (each request on its own clock)?
        Not sooner is the claim: later is k6 on two busy cores (a clean re-run's dial timeouts took 31.3 s at the
        median, the reference's 30.0 s), and the text gives the measured time."""
        expected = {"i/o timeout": self.dial_timeout_s, "request timeout": self.request_timeout_s}
        return all(s is not None and s >= expected[kind] - TIMEOUT_SLACK_S
                   for _, _, kinds in self.steps.values() for kind, _, s in kinds if kind in expected)

    @property
    def matched(self) -> bool:
        return self.at_timeouts and self.refused == 0

    def refused_text(self) -> str:
        return "nobody got “connection refused”" if not self.refused else f"{n(self.refused)} got “connection refused”"

    def kinds_text(self, step: str) -> str:
        """e.g. "1,557 gave up connecting after 30.0 s, 37 gave up waiting for an answer after 60.0 s"."""
        return and_list([f"{n(count)} {KIND_WORDS.get(kind, kind)}" + (f" after {s:.1f} s" if s is not None else "")
                       for kind, count, s in self.steps[step][2]]) or "none failed"

    def text(self) -> str:
        parts = [f"{n(users)} users on {n(threads)} threads: {self.kinds_text(step)}"
                 for step, (users, threads, _) in self.steps.items()]
        parts.append(self.refused_text())
        said = "; ".join(parts)
        return said if self.at_timeouts else said + ": not at k6's timeouts"


def failures(data: ChapterData, step_ids=FAILURE_STEPS) -> Failures:
    steps = {}
    for step_id in step_ids:
        run = step_run(data, step_id)
        if run is None:
            continue
        failed = run.requests[~run.requests["ok"]]
        kinds = [(kind, len(rows), None if rows["duration_ms"].dropna().empty else float(rows["duration_ms"].median()) / 1000)
                 for kind, rows in sorted(failed.groupby("kind"), key=lambda item: -len(item[1]))]
        steps[step_id] = (run.asked, run.model["threads"], kinds)
    request_timeout = most_common(duration_ms(m["config"]["load"].get("request_timeout", LOAD_DEFAULTS["request_timeout"]))
                                  for s, m in data.steps.items() if s in steps) or duration_ms(LOAD_DEFAULTS["request_timeout"])
    kinds = failure_kinds(data.requests[~answered(data.requests)]) if len(data.requests) else pd.Series(dtype=str)
    return Failures(steps, K6_DIAL_TIMEOUT_MS / 1000, request_timeout / 1000, int(kinds.str.contains("refused").sum()))


def syn_retries_s() -> list[float]:
    """When the client's kernel sends a dropped SYN again, seconds after the first (model.SYN_RETRY_MS)."""
    return [ms / 1000 for ms in SYN_RETRY_MS]


# ---- the page -------------------------------------------------------------------------------------------

def _seconds(values: list[float]) -> str:
    return and_list([f"{v:g}" for v in values]) + " s"


def model_text(pool: PoolThroughput) -> str:
    """The measured rate against the model, in words that fit the numbers."""
    model = f"{n(pool.threads)} ÷ {pool.hold_s:g} s = {n(pool.model_rps)}"
    if not pool.matched:
        return f"not {model}; here the threads do not explain the rate."
    if pool.high_rps <= pool.model_rps:
        return f"{pool.short()} under {model}, because each run ends with its slowest requests still running."
    return f"close to {model}."


def answer_paragraph(ch1: ChapterData, ch3: ChapterData, ch2: ChapterData | None = None) -> str:
    """The book's answer in one paragraph, every number from the data; a limit the data does not bear out says so."""
    pool, ceil, fail = pool_throughput(ch1), ceiling(ch3, ch2), failures(ch3)
    defaults = knob_defaults(ch1, ch3)
    out = ["**A thread-per-request server like Tomcat works on as many requests at once as it has worker threads, and "
           "answers at most threads ÷ (the time a request holds a thread) per second** (Spring Boot's default pool: "
           f"{n(defaults['TOMCAT_MAX_THREADS'])} threads)."]
    if pool:
        busy = f"{pool.busy()}, " if pool.busy() else ""
        out.append(f"With {n(pool.threads)} threads ({busy}each request holding one for {pool.hold_s:g} s on average) "
                   f"the server answered {pool.rps} requests per second with {and_list([n(c) for c in pool.clients])} "
                   f"clients: "
                   + model_text(pool))
    mc, ac = defaults["TOMCAT_MAX_CONNECTIONS"], defaults["TOMCAT_ACCEPT_COUNT"]
    out.append(f"**It holds more connections than it works on: at most max-connections + accept-count + {KERNEL_EXTRA}**, "
               "the connections Tomcat has taken, plus the kernel's queue of connections waiting for Tomcat, plus one "
               f"the kernel lets in; with the defaults, {n(mc)} + {n(ac)} + {KERNEL_EXTRA} = {n(mc + ac + KERNEL_EXTRA)}.")
    if ceil.headline:
        out.append(f"With {n(ceil.headline.users)} users arriving at once the server held {ceil.peak_text()}"
                   + ("." if ceil.headline_fits else f": not the ceiling of {n(ceil.headline.ceiling)}."))
    shown = [r for r in syn_retries_s() if r <= fail.request_timeout_s]
    out.append(("**Beyond that, connection attempts are not refused but dropped, and the client's timeouts decide who "
                "fails.**" if not fail.refused else "**Beyond that, the client's timeouts decide who fails.**")
               + " The server's kernel drops the extra attempts without an answer, the client's kernel sends each again after "
               f"{_seconds(shown)}, and k6 (this book's load generator) gives up connecting after "
               f"{fail.dial_timeout_s:g} s and waiting for an answer after {fail.request_timeout_s:g} s.")
    if HEADLINE in fail.steps:
        users = fail.steps[HEADLINE][0]
        out.append(f"Of the {n(users)} users, {fail.kinds_text(HEADLINE)}"
                   + ("" if fail.at_timeouts else ", not at k6's timeouts") + f"; {fail.refused_text()}.")
    return " ".join(out)


def answer_table(ch1: ChapterData, ch3: ChapterData, ch2: ChapterData | None = None) -> str:
    """One row per limit: the limit, what sets it, what the data shows, the chapter that shows it (a pipe table)."""
    pool, wave, ceil, fail = pool_throughput(ch1), waves(ch3), ceiling(ch3, ch2), failures(ch3)
    defaults = knob_defaults(ch1, ch3)
    dial = fail.dial_timeout_s
    after = next((s for s in syn_retries_s() if s > dial), None)  # the resend k6 no longer waits for
    keep_alive = defaults["TOMCAT_KEEP_ALIVE_TIMEOUT"]
    rows = [
        ("Requests in progress at once, and throughput",
         f"`threads.max` worker threads (default {n(defaults['TOMCAT_MAX_THREADS'])}); throughput = threads ÷ the time "
         "a request holds a thread",
         "; ".join(x.text() for x in (pool, wave) if x) or "no data",
         "@sec-one-thread-one-request, @sec-from-300-to-15000"),
        ("Connections held at once",
         f"`max-connections` (default {n(defaults['TOMCAT_MAX_CONNECTIONS'])}) + `accept-count` (default "
         f"{n(defaults['TOMCAT_ACCEPT_COUNT'])}) + {KERNEL_EXTRA}; an answered connection kept open (keep-alive) keeps its "
         "place until `keep-alive-timeout`" + (f" (default {keep_alive / 1000:g} s)" if keep_alive else ""),
         ceil.text() or "no data",
         "@sec-from-300-to-15000" + (", @sec-the-lab-and-its-limits" if ceil.repeats else "")),
        ("Who fails, and when",
         f"the client's side: its kernel resends a dropped connection attempt after {_seconds(syn_retries_s())}; "
         f"k6 stops connecting after {dial:g} s" + (f" ({after - dial:g} s before the {after:g} s resend)" if after else "")
         + f" and stops waiting for an answer after {fail.request_timeout_s:g} s",
         fail.text(),
         "@sec-from-300-to-15000"),
    ]
    return markdown_table(pd.DataFrame(rows, columns=["Limit", "What sets it", "Measured here", "Chapter"]))


# ---- the knobs' glossary ---------------------------------------------------------------------------------

def server_env_vars(source=KNOBS_SOURCE) -> dict[str, str]:
    """Tomcat's Spring Boot property → the env var the sample server takes for it (its TomcatEnvironmentPostProcessor
    .KNOBS; the pair-room API's HikariCP and JPA knobs there are chapter 5's, not Tomcat's)."""
    pairs = re.findall(r'KNOBS\.put\("(\w+)",\s*"([\w.-]+)"\)', source.read_text())
    return {prop: env for env, prop in pairs if prop.startswith("server.tomcat.")}


def most_common(values):
    """The value most steps agree on, ignoring None; None when there is none."""
    counted = Counter(v for v in values if v is not None).most_common(1)
    return counted[0][0] if counted else None


def reported_default(env: str, *datas: ChapterData) -> int | None:
    """What the running server reported for a knob (step.json server_info) in the steps that left it unset."""
    unset = {env, FALLS_BACK_TO.get(env, env)}
    return most_common(m.get("server_info", {}).get("tomcat", {}).get(REPORTED_AS[env]) for data in datas
                       for m in data.steps.values() if not unset & set(m.get("config", {}).get("server", {})))


def knob_defaults(*datas: ChapterData) -> dict[str, int | None]:
    """Each Tomcat knob's default: spec.SERVER_DEFAULTS (what the model uses), else what the server reported when unset."""
    return {env: SERVER_DEFAULTS.get(env, reported_default(env, *datas)) for env in REPORTED_AS}


def recorded_somaxconn(*datas: ChapterData) -> int | None:
    """net.core.somaxconn as found on the machine (before any step raised it)."""
    return most_common(m["machine"].get("somaxconn_before", m["machine"].get("somaxconn"))
                       for data in datas for m in data.steps.values() if "machine" in m)


def article_connection_timeout(data: ChapterData) -> int | None:
    """The connection-timeout most chapter-3 steps set (the article's application.yml)."""
    return most_common(m["config"]["server"].get("TOMCAT_CONNECTION_TIMEOUT") for m in data.steps.values())


def knobs_glossary(ch1: ChapterData, ch3: ChapterData) -> str:
    """A definition list: each knob in plain words, its default and the env var the sample server takes."""
    defaults, env = knob_defaults(ch1, ch3), server_env_vars()
    article, somaxconn = article_connection_timeout(ch3), recorded_somaxconn(ch1, ch3)

    def default(prop: str) -> int | None:
        return defaults.get(env.get(prop, ""))

    def ms(value) -> str:
        return f"{n(value)} ms" if value is not None else "not recorded"

    def count(value) -> str:
        return n(value) if value is not None else "not recorded"

    timeout = "server.tomcat.connection-timeout"
    entries = [
        ("server.tomcat.threads.max",
         "Tomcat's worker threads. Each request keeps one thread from start to response, so this is how many requests "
         "run at once; the others wait, connected, for a free thread.", count(default("server.tomcat.threads.max"))),
        ("server.tomcat.threads.min-spare",
         "How many worker threads Tomcat keeps started even when idle; it starts more on demand, up to threads.max.",
         count(default("server.tomcat.threads.min-spare"))),
        ("server.tomcat.max-connections",
         "How many connections Tomcat takes and keeps open at once, busy or idle. At this number it stops taking "
         "new ones, and they wait in the kernel's accept queue.", count(default("server.tomcat.max-connections"))),
        ("server.tomcat.accept-count",
         "The length of the kernel's accept queue: connections whose handshake is done but that Tomcat has not taken "
         f"yet; Linux holds accept-count + {KERNEL_EXTRA} of them. When it is full, new connection attempts are dropped without "
         "an answer.", count(default("server.tomcat.accept-count"))),
        (timeout,
         "How long Tomcat waits for a request's bytes on a connection it has taken. Not a connect timeout, and not a "
         "limit on waiting for a thread.",
         f"{ms(default(timeout))} (Spring Boot sets none, so Tomcat's own applies"
         + (f"; chapter 3 uses the article's {ms(article)}" if article else "") + ")"),
        ("server.tomcat.keep-alive-timeout",
         "How long Tomcat keeps an idle connection open after a response (keep-alive), waiting for the client's next "
         "request. While open, it counts against max-connections.",
         f"the connection-timeout ({ms(default('server.tomcat.keep-alive-timeout'))} when neither is set)"),
        ("net.core.somaxconn",
         "A Linux setting: the longest accept queue any program may ask for. A larger accept-count is silently cut "
         "to it (the lab raises it for a step that sets `raise_somaxconn`).",
         f"{n(somaxconn)} on the machine behind this book's data" if somaxconn else "not recorded"),
        ("net.ipv4.tcp_syn_retries",
         "A Linux setting: how many times the client's kernel sends a connection attempt (SYN) again when no answer "
         f"comes, each wait twice the last: after {_seconds(syn_retries_s())}.", f"{len(SYN_RETRY_MS)}, Linux's, as the book's model assumes"),
    ]
    lines = []
    for prop, what, value in entries:
        how = f"env `{env[prop]}`" if prop in env else "a kernel setting (`sysctl`), not an env var here"
        lines += [f"`{prop}`", f":   {what} Default: {value}; {how}.", ""]
    return "\n".join(lines)
