"""The numbers chapter 3's prose quotes about threads and time (the setup, the waves, k6's gracefulStop, the timeouts),
as small dataclasses the .qmd formats inline. Each is computed from the runs' data (step.json's config and model, the
requests), never typed.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from harness import LabError
from harness.book.chapters.ch3 import runs as r
from harness.book.chapters.ch3.claims import INTERRUPTED, WINDOW
from harness.book.chapters.ch3.runs import REQUEST_TIMEOUT, Run
from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS
from harness.lab.steps import server_knob
from harness.lab.units import duration_ms
from harness.models.spike import K6_DIAL_TIMEOUT_MS, SYN_RETRY_MS


def need(step: str) -> Run:
    """The first run of a step the prose needs, or a clear error."""
    found = r.first(step)
    if found is None:
        raise LabError(f"no data for {r.CHAPTER}'s step {step}: `invoke run {r.CHAPTER}` measures it")
    return found


def every(step: str) -> list[Run]:
    need(step)
    return r.runs_of(step)


# ---- the setup ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Setup:
    threads: int  # Spring Boot's defaults
    max_connections: int
    accept_count: int
    tomcat_timeout_s: float  # Tomcat's own connection-timeout (Spring Boot sets none)
    article_timeout_s: float  # the article's connection-timeout, which this chapter's steps set
    sleep_s: float
    request_timeout_s: float  # k6's
    dial_timeout_s: float  # k6's dialer
    syn_retries_s: tuple[int, ...]  # Linux's SYN retransmits before k6 gives up dialling
    next_retry_s: int  # the first retransmit after k6 gave up
    ceiling: int  # max-connections + accept-count + 1
    other_timeouts: tuple[str, ...]  # the steps whose connection-timeout is not the article's
    cores: tuple[int, ...]  # the cores of the machines the steps ran on, as each step's machine record says

    @property
    def retries(self) -> str:
        return ", ".join(map(str, self.syn_retries_s[:-1])) + f" and {self.syn_retries_s[-1]}"

    @property
    def pace(self) -> float:
        """Requests per second the default pool answers: threads ÷ the time a request holds one."""
        return self.threads / self.sleep_s


def setup() -> Setup:
    base = need("a-300-pv")
    tried = tuple(t // 1000 for t in SYN_RETRY_MS if t < K6_DIAL_TIMEOUT_MS)
    return Setup(SERVER_DEFAULTS["TOMCAT_MAX_THREADS"], SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"],
                 SERVER_DEFAULTS["TOMCAT_ACCEPT_COUNT"], SERVER_DEFAULTS["TOMCAT_CONNECTION_TIMEOUT"] / 1000,
                 base.knob("TOMCAT_CONNECTION_TIMEOUT") / 1000, base.sleep_s, base.request_timeout_s,
                 K6_DIAL_TIMEOUT_MS / 1000, tried, next(t // 1000 for t in SYN_RETRY_MS if t >= K6_DIAL_TIMEOUT_MS),
                 base.ceiling, other_timeouts(server_knob(base.meta, "TOMCAT_CONNECTION_TIMEOUT")),
                 tuple(sorted({int(m["machine"]["cores"]) for m in r.names().values() if "cores" in m.get("machine", {})})))


def other_timeouts(article_ms: int) -> tuple[str, ...]:
    """The steps (each once) that set a connection-timeout other than the article's (as configured: read from step.json
    alone, without loading each run's data)."""
    return tuple(sorted({r.run_of(name)[0] for name, meta in r.names().items()
                         if server_knob(meta, "TOMCAT_CONNECTION_TIMEOUT") != article_ms}))


def repeated_steps() -> dict[str, int]:
    """The steps this chapter's data ran more than once, with their runs; not the headline step, whose runs are mostly
    chapter 2's (ceiling.repeats counts them)."""
    found = Counter(r.run_of(name)[0] for name in r.names())
    return {step: n for step, n in sorted(found.items()) if n > 1 and step != r.HEADLINE}


@dataclass(frozen=True)
class Executors:
    full_up_to: int  # the most users constant-vus sent every request for
    short_from: int  # the fewest users it fell short at
    short: int  # steps where it fell short
    of: int  # constant-vus steps from short_from users on
    worst_step: str
    worst_issued: int
    worst_users: int


def executors() -> Executors | None:
    """How far constant-vus (the article's executor) got in sending every user's request within its 1 s."""
    cv = sorted((m["requests"]["asked"], m["requests"]["issued"], name) for name, m in r.names().items()
                if m["config"]["load"]["executor"] == "constant-vus")
    short = [c for c in cv if c[1] < c[0]]
    if not short:
        return None
    first = short[0][0]
    worst = min(short, key=lambda c: c[1] / c[0])
    return Executors(max((u for u, _, _ in cv if u < first), default=0), first, len(short),
                     sum(u >= first for u, _, _ in cv), worst[2], worst[1], worst[0])


# ---- waves (F000-a, F000-b) ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Waves:
    step: str
    users: int
    threads: int
    widest: int  # the most answers in any window of 0.9 × the sleep
    window_s: float
    medians_s: tuple[float, ...]  # each wave's median own answer time
    longest_s: float
    failed: int
    connection_timeout_s: float

    @property
    def waves(self) -> int:
        return len(self.medians_s)

    @property
    def rest(self) -> int:
        return self.users - self.threads


def waves(step: str) -> Waves:
    x = need(step)
    return Waves(step, x.users, x.threads, r.widest(x, WINDOW * x.sleep_s), WINDOW * x.sleep_s,
                 tuple(r.wave_medians(x)), r.longest_s(x), x.failed, x.knob("TOMCAT_CONNECTION_TIMEOUT") / 1000)


# ---- k6's gracefulStop (F000-c) -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Grace:
    users: int
    threads: int
    waves: int
    due_s: float  # the model's last wave
    duration_s: float  # constant-vus' duration
    grace_s: float  # k6's default gracefulStop
    stop_s: float  # when k6 stopped, from the first request
    answered: int
    interrupted: int
    long_grace: str  # the longer gracefulStop, as configured ("5m")
    long_answered: dict[str, tuple[int, ...]]  # each run's answered with it, by step: the article's executor, then one
    # request per user
    long_longest_s: tuple[float, ...]  # every one of those runs' last answer

    @property
    def long_counts(self) -> tuple[int, ...]:
        """Every run's answered with the longer gracefulStop, whatever its step."""
        return tuple(n for counts in self.long_answered.values() for n in counts)


def grace() -> Grace:
    short = need("c-2000-cv-grace30s")
    longer = {step: every(step) for step in ("c-2000-cv-grace5m", "c-2000-pv")}
    load, model = short.meta["config"]["load"], short.meta["model"]
    return Grace(short.users, short.threads, model["waves"], model["wave_ms"][-1] / 1000,
                 duration_ms(load["duration"]) / 1000, duration_ms(load["graceful_stop"]) / 1000, short.stop_s,
                 short.ok, short.count(INTERRUPTED), longer["c-2000-cv-grace5m"][0].meta["config"]["load"]["graceful_stop"],
                 {step: tuple(x.ok for x in runs) for step, runs in longer.items()},
                 tuple(r.longest_s(x) for runs in longer.values() for x in runs))


# ---- waves against k6's request timeout (F000-d, F000-e) ------------------------------------------------------------

@dataclass(frozen=True)
class Timeouts:
    """Every run of one step: users on threads, the model's waves, and what each run answered."""

    step: str
    users: int
    threads: int
    waves: int
    due_s: float  # the last wave's due time
    request_timeout_s: float
    answered: tuple[int, ...]
    timed_out: tuple[int, ...]
    timeout_median_s: tuple[float, ...]  # own clock; nan in a run without timeouts
    longest_s: tuple[float, ...]
    longest_unsent_s: tuple[float, ...]  # the longest answer's time in the script before k6 began it (own clock ⊃ k6's)

    @property
    def runs(self) -> int:
        return len(self.answered)

    @property
    def fit(self) -> int:
        """Waves that end before the timeout."""
        return sum((k + 1) * self.due_s / self.waves < self.request_timeout_s for k in range(self.waves))

    @property
    def all_answered(self) -> bool:
        return all(a >= self.users for a in self.answered)


def timeouts(step: str) -> Timeouts:
    runs = every(step)
    x = runs[0]
    waves = math.ceil(x.users / x.threads)
    return Timeouts(step, x.users, x.threads, waves, waves * x.sleep_s, x.request_timeout_s,
                    tuple(y.ok for y in runs), tuple(y.count(REQUEST_TIMEOUT) for y in runs),
                    tuple(r.median_own_s(y, REQUEST_TIMEOUT) for y in runs), tuple(r.longest_s(y) for y in runs),
                    tuple(unsent_s(y) for y in runs))


def unsent_s(x) -> float:
    """Of a run's longest answered request: the seconds between the script marking its start (its own clock) and k6
    beginning it (blocked, then the request, which k6's timeout counts), nan when nothing was answered."""
    ok = x.requests[x.requests["ok"]]
    if not len(ok):
        return float("nan")
    row = ok.loc[ok["duration_ms"].idxmax()]
    return float(row["duration_ms"] - row["http_req_duration_ms"] - row["blocked_ms"]) / 1000


def timeout_clock_words(steps: list[Timeouts]) -> str:
    """Whether a last answer came later than k6's request timeout on the request's own clock, and why one can: the
    script marks a request's start before k6 begins it, and k6's timeout counts from there."""
    late = [(t, k) for t in steps for k in range(t.runs) if t.longest_s[k] > t.request_timeout_s]
    if not late:
        return f"Every answer came within k6's {steps[0].request_timeout_s:g} s on its request's own clock."
    timeout = late[0][0].request_timeout_s
    where = "; ".join(f"{t.longest_s[k]:.1f} s in {t.step if t.runs == 1 else f'{t.step}, run {k + 1}'}" for t, k in late)
    unsent = counts([f"{t.longest_unsent_s[k]:.2f}" for t, k in late])
    one = len(late) == 1
    return (f"{'A last answer' if one else 'Last answers'} past k6's {timeout:g} s timeout ({where}) "
            f"{'is' if one else 'are'} past it only on the request's own clock, which starts when the script marks the "
            f"request: k6 began {'that request' if one else 'those requests'} {unsent} s later, and its timeout counts "
            f"from there.")


def counts(values) -> str:
    """"670" or "0, 124 and 157": one run's count, or each run's (text as it is)."""
    shown = [v if isinstance(v, str) else f"{v:,}" for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def runs_word(n: int) -> str:
    return "its one run" if n == 1 else f"each of its {n} runs" if n <= 10 else f"all {n} runs"
