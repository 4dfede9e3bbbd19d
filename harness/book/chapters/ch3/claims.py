"""Chapter 3's claims (seed 000), judged by the rules declared in experiments/claims/chapter3.toml: one function per
claim's statistic, computed once per run of the steps its rule names (Measured.values: one value per run).

σ comes from the runs where a step ran several times (d-3000-t500-pv, e-6000-t500-pv and i-10k-ac2000-pv three times
each; the headline f-10k-pv once here and eight times in chapter 2). A step run once borrows the run-to-run spread of
the same statistic on the repeated steps that measure a like thing (`borrowed`), and says which; a count the kernel or
Tomcat fixes is exact. A rule that reads several steps pairs run k of each (runs.paired).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from harness.book import claims
from harness.book.prose import plural
from harness.book.chapters.ch3 import runs as r
from harness.book.chapters.ch3.runs import HEADLINE, REQUEST_TIMEOUT, Run
from harness.book.claims import Judgement, Measured
from harness.book.noise import most_stray
from harness.book.verdict import INTERRUPTED_TEXT as INTERRUPTED

WINDOW, NEARBY = 0.9, (0.8, 0.95)  # the waves' sliding window, as shares of the sleep
ALL_ANSWERED = ("d-3000-t500-pv", "i-10k-ac2000-pv")  # repeated steps where the model answers every user
TOO_FEW_THREADS = ("e-6000-t500-pv",)  # a repeated step whose last waves meet k6's request timeout
WAVE_STEPS = (*ALL_ANSWERED, *TOO_FEW_THREADS, HEADLINE)  # every repeated step: all answer in waves
# The article's four kinds of error at 10,000 users (F000-f.1b): a request counts as one when its error text has it.
ARTICLE_KINDS = ("cannot allocate memory", "connection reset by peer", REQUEST_TIMEOUT, "i/o timeout")
ARTICLE_TIMEOUT_S = 20  # its request timeouts came "at 20 seconds"


def no_data(steps) -> Measured:
    return Measured((), note=f"no data for {', '.join(r.missing(*steps))} (`invoke run chapter3` runs it)")


def borrowed(statistic: Callable[[Run], float], sources=WAVE_STEPS) -> tuple[float | None, str]:
    """The largest run-to-run σ of `statistic` among the repeated steps `sources` (runs with a value only)."""
    spreads = []
    for step in sources:
        values = [v for v in map(statistic, r.runs_of(step)) if not math.isnan(v)]
        if len(values) >= 2:
            spreads.append((statistics.stdev(values), step, len(values)))
    if not spreads:
        return None, f"no repeated step to borrow it from ({', '.join(sources)})"
    sigma, step, n = max(spreads)
    return sigma, f"borrowed: the same statistic's spread over {n} runs of {step} (the largest of {', '.join(sources)})"


def per_run(statistic: Callable[[Run], float], step: str, sources=None, nearby=None, note: str = "") -> Measured:
    """The statistic on every run of one step; σ from its runs, borrowed from `sources` when given (a step run once),
    and the mean over runs of each nearby variant of the statistic."""
    every = r.runs_of(step)
    if not every:
        return no_data([step])
    sigma, source = borrowed(statistic, sources) if sources else (None, "the runs' spread")
    near = tuple(statistics.fmean(s(x) for x in every) for s in (nearby or ()))
    return Measured(tuple(statistic(x) for x in every), sigma_source=source, borrowed_sigma=sigma, nearby=near,
                    note=note or f"{step}, {plural(len(every), 'run')}")


def worst_of(statistic: Callable[[Run], float], steps, rule: claims.Rule, sources=None, note: str = "") -> Measured:
    """Per pair of runs of `steps`: the step's value least inside the rule's region."""
    pairs = r.paired(*steps)
    if not pairs:
        return no_data(steps)

    def pick(pair) -> float:
        return min((statistic(x) for x in pair), key=lambda v: claims.margin(rule, v))

    if sources:
        sigma, source = borrowed(statistic, sources)
        return Measured(tuple(map(pick, pairs)), sigma_source=source, borrowed_sigma=sigma,
                        note=note or ", ".join(steps))
    return Measured(tuple(map(pick, pairs)), note=note or ", ".join(steps))


# ---- waves: threads.max answers per sleep (F000-a.1a, F000-b.1, F000-l.1) ------------------------------------------

def window_statistic(share: float) -> Callable[[Run], float]:
    return lambda x: r.outside_pool(x, share * x.sleep_s)


def waves_of_threads(step: str) -> Measured:
    return per_run(window_statistic(WINDOW), step, sources=WAVE_STEPS,
                   nearby=[window_statistic(s) for s in NEARBY])


def waves_everywhere(steps) -> Measured:
    """F000-l.1: the largest distance outside the pool over every wave step, per pair of runs."""
    pairs = r.paired(*steps)
    if not pairs:
        return no_data(steps)

    def largest(share: float, pair) -> float:
        return max(window_statistic(share)(x) for x in pair)

    near = tuple(statistics.fmean(largest(s, p) for p in pairs) for s in NEARBY)
    return Measured(tuple(largest(WINDOW, p) for p in pairs), nearby=near,
                    note=f"{', '.join(steps)}: run k of each, the largest distance")


# ---- all answered (a.1c, b.3, c.2a, d.3, e.2, g.1a, i.1, j.2) ----------------------------------------------------------

def unanswered(x: Run) -> float:
    return float(x.beyond_stray(x.failed))


def all_answered(step: str) -> Measured:
    """Users without an answer beyond the stray failures; a step run once borrows σ from the repeated steps that
    answer every user."""
    return per_run(unanswered, step, sources=ALL_ANSWERED if len(r.runs_of(step)) < 2 else None)


# ---- times on the request's own clock -----------------------------------------------------------------------------

def longest(steps, rule: claims.Rule) -> Measured:
    """The longest own answer time, the step farther from the band; σ from the runs or the repeated steps that answer
    every user."""
    return worst_of(r.longest_s, steps, rule, sources=ALL_ANSWERED if max(len(r.runs_of(s)) for s in steps) < 2 else None)


def k6_stop() -> Measured:
    """F000-c.1b: when k6 stopped waiting, from the first request; σ of k6's end over the repeated steps."""
    return per_run(lambda x: x.stop_s, "c-2000-cv-grace30s", sources=ALL_ANSWERED)


# ---- timeouts and counts decided by a deadline ---------------------------------------------------------------------

def timed_out(x: Run) -> float:
    return float(x.beyond_stray(x.count(REQUEST_TIMEOUT)))


def interrupted(x: Run) -> float:
    return float(x.beyond_stray(x.count(INTERRUPTED)))


def failures(x: Run) -> float:
    return float(x.beyond_stray(x.failed))


def deadline_count(statistic, step: str) -> Measured:
    """A count of requests a client's deadline cut (k6's stop, its request timeout); σ borrowed from the timeouts on
    the step repeated at too few threads and the headline step's failures, the larger."""
    known = [s for s in (borrowed(timed_out, TOO_FEW_THREADS), borrowed(failures, (HEADLINE,))) if s[0] is not None]
    sigma, source = max(known) if known else (None, "no repeated step to borrow it from")
    every = r.runs_of(step)
    if not every:
        return no_data([step])
    return Measured(tuple(map(statistic, every)), borrowed_sigma=sigma, sigma_source=source,
                    note=f"{step}, {plural(len(every), 'run')}")


def timeout_duration(step: str) -> Measured:
    return per_run(lambda x: r.median_own_s(x, REQUEST_TIMEOUT), step, sources=(*TOO_FEW_THREADS, HEADLINE))


def answered_waves(step: str) -> Measured:
    """F000-d.2: answered users in waves of threads.max."""
    return per_run(lambda x: x.ok / x.threads, step, sources=(*TOO_FEW_THREADS, HEADLINE))


# ---- the ceiling (F000-f, g, h, l) ------------------------------------------------------------------------------------

def article_kinds(x: Run) -> float:
    """How many of the article's four kinds of error occur beyond the stray failures (its request timeout only when it
    came at ~20 s on the request's own clock)."""
    failed = x.requests[~x.requests["ok"]]
    text = failed["error"].fillna("").astype(str)
    found = 0
    for kind in ARTICLE_KINDS:
        these = failed[text.str.contains(kind, regex=False)]
        if kind == REQUEST_TIMEOUT:
            these = these[(these["own_s"] - ARTICLE_TIMEOUT_S).abs() <= x.sleep_s / 2]
        found += len(these) > most_stray(x.users)
    return float(found)


def held_unanswered(x: Run) -> float:
    """F000-f.2b: users within the ceiling left unanswered, beyond the stray failures."""
    return float(x.beyond_stray(min(x.users, x.ceiling) - x.ok))


def sampled_headline() -> Measured:
    every = [x for x in r.headline_runs() if x.sampled]
    if not every:
        return no_data([HEADLINE])
    return Measured(tuple(map(r.ceiling_distance, every)), note=f"{HEADLINE}, its {plural(len(every), 'sampled run')}")


def accept_queue_extra(x: Run) -> float:
    return x.peak("accept_queue") - x.knob("TOMCAT_ACCEPT_COUNT")


PLUS_ONE = ("plus1-mc2-ac1", "plus1-mc2-ac4", "plus1-mc5-ac1")


def plus_one(rule: claims.Rule) -> Measured:
    """F000-f.3b: the accept queue's peak less accept-count, the step farthest from the band: a count the kernel fixes
    (the listen queue holds backlog + 1), so exact."""
    measured = worst_of(accept_queue_extra, PLUS_ONE, rule)
    return Measured(measured.values, exact=True, sigma_source="exact: a count the kernel fixes", note=measured.note)


def more_than_default(step: str) -> Measured:
    """F000-g.1b: the most ESTABLISHED at once; σ borrowed from the peaks of the repeated 10,000-user steps."""
    return per_run(lambda x: x.peak("estab"), step, sources=("i-10k-ac2000-pv", HEADLINE))


CEILING_STEPS = (HEADLINE, *PLUS_ONE, "g-10k-mc20000-pv", "i-10k-ac2000-pv")


def ceilings_held() -> Measured:
    """F000-l.2: the largest distance of the ESTABLISHED peak outside each step's ceiling, per pair of runs (the
    headline's sampled runs only)."""
    sampled = [x for x in r.headline_runs() if x.sampled]
    others = [r.runs(s) for s in CEILING_STEPS[1:]]
    if not sampled or not all(others):
        return no_data(CEILING_STEPS)
    every = [sampled, *others]
    n = max(map(len, every))
    pairs = [[rs[min(k, len(rs) - 1)] for rs in every] for k in range(n)]
    return Measured(tuple(max(map(r.ceiling_distance, p)) for p in pairs),
                    note=f"{', '.join(CEILING_STEPS)}: run k of each ({len(sampled)} sampled runs of {HEADLINE})")


def connection_timeout_difference() -> Measured:
    """F000-h.2, F000-l.3a: answered with connection-timeout 30 s less the mean answered with 20 s. One run's
    difference from a mean of n: σ of one run of the headline step × √(1 + 1/n), the same mechanism either side."""
    longer, base = r.runs("h-10k-ct30000-pv"), r.headline_runs()
    if not longer or not base:
        return no_data(("h-10k-ct30000-pv", HEADLINE))
    mean = statistics.fmean(x.ok for x in base)
    values = tuple(x.ok - mean for x in longer)
    if len(base) < 2:
        return Measured(values, note="one run of each")
    sigma = statistics.stdev(x.ok for x in base) * math.sqrt(1 + 1 / len(base))
    return Measured(values, borrowed_sigma=sigma,
                    sigma_source=f"borrowed: the answered users' spread over {len(base)} runs of {HEADLINE}, "
                                 f"× √(1 + 1/{len(base)}) for a difference from their mean",
                    note=f"h-10k-ct30000-pv ({plural(len(longer), 'run')}) against the mean of {len(base)} runs of {HEADLINE}")


def headline(statistic: Callable[[Run], float]) -> Measured:
    every = r.headline_runs()
    if not every:
        return no_data([HEADLINE])
    return Measured(tuple(map(statistic, every)), note=f"{HEADLINE}: {plural(len(every), 'run')}, chapter 3's and chapter 2's")


# ---- one connection (F000-j): counts Tomcat fixes --------------------------------------------------------------------

def one_connection(statistic: Callable[[Run], float], steps, rule: claims.Rule) -> Measured:
    measured = worst_of(statistic, steps, rule)
    return Measured(measured.values, exact=True, note=measured.note,
                    sigma_source="exact: a count Tomcat fixes (one thread, one connection, each answer holding the "
                                 "connection for the keep-alive timeout)")


# ---- the table of statistics --------------------------------------------------------------------------------------

WAVES = ("a-300-pv", "b-1000-pv", "c-2000-pv", "d-3000-t500-pv", "e-6000-t1000-pv", HEADLINE)

STATISTICS: dict[str, Callable[[claims.Rule], Measured]] = {
    "F000-a.1a": lambda rule: waves_of_threads("a-300-pv"),
    "F000-a.1b": lambda rule: per_run(r.wave_distance, "a-300-pv", sources=WAVE_STEPS),
    "F000-a.1c": lambda rule: all_answered("a-300-pv"),
    "F000-b.1": lambda rule: waves_of_threads("b-1000-pv"),
    "F000-b.2": lambda rule: longest(("b-1000-pv",), rule),
    "F000-b.3": lambda rule: all_answered("b-1000-pv"),
    "F000-c.1a": lambda rule: deadline_count(interrupted, "c-2000-cv-grace30s"),
    "F000-c.1b": lambda rule: k6_stop(),
    "F000-c.2a": lambda rule: worst_of(unanswered, ("c-2000-cv-grace5m", "c-2000-pv"), rule, sources=ALL_ANSWERED),
    "F000-c.2b": lambda rule: longest(("c-2000-cv-grace5m", "c-2000-pv"), rule),
    "F000-d.1a": lambda rule: deadline_count(timed_out, "d-3000-t200-pv"),
    "F000-d.1b": lambda rule: timeout_duration("d-3000-t200-pv"),
    "F000-d.2": lambda rule: answered_waves("d-3000-t200-pv"),
    "F000-d.3": lambda rule: all_answered("d-3000-t500-pv"),
    "F000-d.4": lambda rule: longest(("d-3000-t500-pv",), rule),
    "F000-e.1": lambda rule: per_run(timed_out, "e-6000-t500-pv"),
    "F000-e.2": lambda rule: all_answered("e-6000-t1000-pv"),
    "F000-f.1a": lambda rule: headline(failures),
    "F000-f.1b": lambda rule: headline(article_kinds),
    "F000-f.2a": lambda rule: headline(r.beyond_share),
    "F000-f.2b": lambda rule: headline(held_unanswered),
    "F000-f.3a": lambda rule: sampled_headline(),
    "F000-f.3b": plus_one,
    "F000-g.1a": lambda rule: all_answered("g-10k-mc20000-pv"),
    "F000-g.1b": lambda rule: more_than_default("g-10k-mc20000-pv"),
    "F000-h.1": lambda rule: per_run(failures, "h-10k-ct30000-pv", sources=(HEADLINE,)),
    "F000-h.2": lambda rule: connection_timeout_difference(),
    "F000-i.1": lambda rule: all_answered("i-10k-ac2000-pv"),
    "F000-j.1": lambda rule: one_connection(lambda x: float(x.ok), ("j-1-1-1-cv", "j-1-1-1-pv"), rule),
    "F000-j.2": lambda rule: one_connection(unanswered, ("j-1-1-10-cv", "j-1-1-10-pv"), rule),
    "F000-l.1": lambda rule: waves_everywhere(WAVES),
    "F000-l.2": lambda rule: ceilings_held(),
    "F000-l.3a": lambda rule: connection_timeout_difference(),
    "F000-l.3b": lambda rule: headline(r.median_own_s),
}


def judge() -> list[Judgement]:
    """Every claim of chapter 3, in the claims file's order, judged on the data directory in use."""
    return claims.judge_chapter(r.CHAPTER, STATISTICS)
