"""Chapter 6's claims (seed 003), judged by the rules declared in experiments/claims/chapter6.toml: one function per
claim's statistic, computed once per run of the steps its rule names (Measured.values: one value per run).

Run k pairs run k of each step a rule reads; a step run once gives its one run to every pair. wrk records a summary
of each run only (its count and its latency percentiles), so every wrk statistic is a whole-run rate.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import pandas as pd

from harness.book import claims
from harness.book.prose import plural
from harness.book.chapters.ch6.runs import CHAPTER, run_rows, runs_of
from harness.book.claims import Judgement, Measured
from harness.book.noise import most_stray
from harness.lab.store import answered

WARMUP_S = 5.0  # F003-c.1's window: after the step's first 5 s
NETEM_NOTE = ("not measurable on this machine: it takes a link with a known delay, the pair of steps hosts-connect and "
              "hosts-reuse with system.link_delay_ms = 10 on a kernel with netem (CONFIG_NET_SCH_NETEM), which this "
              "kernel lacks; the lab refuses link_delay_ms here")


def paired(*steps: str) -> list[tuple[pd.Series, ...]]:
    """Run k of each step's rows, for k = 1 … the most runs any has; a step with fewer runs gives its last. None when a
    step has no run."""
    every = [run_rows(s) for s in steps]
    if not all(every):
        return []
    return [tuple(r[min(k, len(r) - 1)] for r in every) for k in range(max(len(r) for r in every))]


def missing(*steps: str) -> str:
    return "not measured: no complete run of " + ", ".join(s for s in steps if not run_rows(s))


def ratio(top: str, *bottom: str) -> Measured:
    """Per run: the rate of `top` over the lowest rate of `bottom`."""
    pairs = paired(top, *bottom)
    if not pairs:
        return Measured((), note=missing(top, *bottom))
    return Measured(tuple(pair[0].tps / min(r.tps for r in pair[1:]) for pair in pairs),
                    note=f"{top} over {' and '.join(bottom) if len(bottom) == 1 else 'the lower of ' + ' and '.join(bottom)}, "
                         f"{plural(len(pairs), 'run')}")


def wrk_spread() -> tuple[float, str]:
    """The run-to-run spread of a wrk rate, as a share of it: pooled over every wrk step that ran more than once."""
    repeated = {name: [r.tps for r in rows] for name in WRK_STEPS if len(rows := run_rows(name)) > 1}
    if not repeated:
        return math.nan, ""
    shares = [statistics.stdev(v) / statistics.fmean(v) for v in repeated.values()]
    pooled = math.sqrt(statistics.fmean(s * s for s in shares))
    return pooled, (f"the run-to-run spread of the repeated wrk steps ({', '.join(repeated)}): {pooled:.1%} of the rate, "
                    "pooled")


WRK_STEPS = ("wrk-alone", "wrk-nginx-alone", "wrk-proxied", "wrk-keepalive-8", "wrk-keepalive-32", "wrk-keepalive-256")


def rate(step: str) -> Measured:
    """F003-a.2a … a.2c: a wrk step's whole-run rate, per run; a step run once borrows the repeated wrk steps' spread."""
    rows = run_rows(step)
    if not rows:
        return Measured((), note=missing(step))
    values = tuple(r.tps for r in rows)
    if len(values) > 1:
        return Measured(values, note=f"{step}, {len(values)} runs")
    share, source = wrk_spread()
    if math.isnan(share):
        return Measured(values, note=f"{step}, one run")
    return Measured(values, borrowed_sigma=share * values[0], sigma_source=source, note=f"{step}, one run")


# ---- F003-c: one user, a new connection per request or one kept ---------------------------------------------------

def answered_requests(step: str) -> list[pd.DataFrame]:
    return [data.requests[answered(data.requests)] for data in runs_of(step)]


def median_ms(requests: pd.DataFrame, window: str) -> float:
    """The median request time over a window of the run: after its first WARMUP_S ("after warm-up"), all of it
    ("whole"), or its last WARMUP_S ("last")."""
    since_s = (requests["start_ms"] - requests["start_ms"].min()) / 1000
    chosen = {"after warm-up": since_s >= WARMUP_S, "whole": since_s >= 0,
              "last": since_s >= since_s.max() - WARMUP_S}[window]
    return float(requests.loc[chosen, "duration_ms"].median())


def connection_cost(window: str) -> list[float]:
    pairs = list(zip(answered_requests("connect"), answered_requests("reuse"), strict=False))
    return [median_ms(new, window) - median_ms(kept, window) for new, kept in pairs]


def new_connection_costs() -> Measured:
    """F003-c.1: median(connect) − median(reuse) after the first 5 s, per run; nearby: the whole step, its last 5 s."""
    values = connection_cost("after warm-up")
    if not values:
        return Measured((), note=missing("connect", "reuse"))
    return Measured(tuple(values), nearby=tuple(statistics.fmean(connection_cost(w)) for w in ("whole", "last")),
                    note=f"connect and reuse, {plural(len(values), 'run')} each, one user straight to the service")


def handshake_in_delays() -> Measured:
    """F003-c.2: a delay this lab cannot set (no netem in its kernel): nothing measured, and what it would take."""
    return Measured((), note=NETEM_NOTE)


def reconnections(requests: pd.DataFrame, users: int) -> float:
    """Requests that opened a connection (k6's connect time above 0) beyond each user's first and the stray ones."""
    opened = int((requests["connecting_ms"] > 0).sum())
    return max(0.0, opened - users - most_stray(len(requests)))


def keep_alive_removes_it() -> Measured:
    """F003-c.3: on `reuse`, the requests that opened a connection beyond the user's first, per run."""
    runs = runs_of("reuse")
    if not runs:
        return Measured((), note=missing("reuse"))
    values = tuple(reconnections(data.requests, int(meta["config"]["load"]["vus"]))
                   for data in runs for meta in data.steps.values())
    return Measured(values, note=f"reuse, {plural(len(values), 'run')}")


STATISTICS: dict[str, Callable[[], Measured]] = {
    "F003-a.1": lambda: ratio("wrk-proxied", "wrk-alone", "wrk-nginx-alone"),
    "F003-a.2a": lambda: rate("wrk-proxied"),
    "F003-a.2b": lambda: rate("wrk-nginx-alone"),
    "F003-a.2c": lambda: rate("wrk-alone"),
    "F003-b.1": lambda: ratio("wrk-keepalive-8", "wrk-proxied"),
    "F003-b.2": lambda: ratio("wrk-keepalive-32", "wrk-keepalive-256"),
    "F003-c.1": new_connection_costs,
    "F003-c.2": handshake_in_delays,
    "F003-c.3": keep_alive_removes_it,
}


def judge() -> list[Judgement]:
    """Every claim of chapter 6, in the claims file's order, judged on the data directory in use."""
    measures = {claim: lambda rule, measure=measure: measure() for claim, measure in STATISTICS.items()}
    return claims.judge_chapter(CHAPTER, measures)
