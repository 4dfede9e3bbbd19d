"""A finding's verdict, computed from data: what the article says, what we measured, and whether they agree.

Chapters build `Verdict`s from their step data with the helpers here and show them with
`harness.book.verdict_table`. A verdict is one of three words, so the book's tables stay comparable.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.analysis import latency_percentiles, throughput_table
from harness.spec import FINDING_ID

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
DIFFERS = "differs on this hardware"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, DIFFERS)


@dataclass(frozen=True)
class Verdict:
    finding: str  # an ID from the seeds, e.g. F001-a
    article: str  # what the article claims, in a phrase
    measured: str  # what the data shows, with the numbers
    verdict: str  # one of VERDICTS
    why: str = ""  # one sentence: the mechanism, or what differs

    def __post_init__(self):
        if not FINDING_ID.match(self.finding):
            raise ValueError(f"finding must be an ID like 'F001-a', got {self.finding!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(map(repr, VERDICTS))}, got {self.verdict!r}")


def within(measured: float, expected: float, rel_tol: float) -> bool:
    """Is `measured` within `rel_tol` (0.1 = 10 %) of `expected`? An expected 0 needs exactly 0."""
    return abs(measured - expected) <= rel_tol * abs(expected)


def within_abs(measured: float, expected: float, tol: float) -> bool:
    """Is `measured` within `tol` (same unit) of `expected`? For times, where a fixed slack is natural."""
    return abs(measured - expected) <= tol


def verdict_of(agrees: bool, machine_bound: bool = False) -> str:
    """`reproduced` when the data agrees with the article. When it does not: `differs on this hardware` if the
    claim depends on the machine (cores, memory, kernel limits), else `not reproduced`."""
    if agrees:
        return REPRODUCED
    return DIFFERS if machine_bound else NOT_REPRODUCED


# ---- seed 002: thread pool size and Little's law (chapter 1) ----------------------------------------

ARTICLE_002_RPS = {1: 4.98, 10: 49.84, 100: 484.10, 500: 488.11}  # F002-a, the article's ab results
RPS_TOLERANCE = 0.10  # run-to-run spread of RPS here is a few %; 10 % separates agreement from a miss


def f002_verdicts(data) -> list[Verdict]:
    """F002-a … F002-d from chapter 1's data."""
    table = throughput_table(data)
    return [f002_a(table), f002_b(table), f002_c(data), f002_d(data, table)]


def _rps_by_tool(table) -> str:
    parts = []
    for c in sorted(table["concurrency"].unique()):
        rows = table[table.concurrency == c]
        parts.append(f"C={c}: " + ", ".join(f"{r.tool} {r.rps:.1f}" for r in rows.itertuples()))
    return "; ".join(parts)


def f002_a(table) -> Verdict:
    rows = table[table.concurrency.isin(ARTICLE_002_RPS)]
    article = rows["concurrency"].map(ARTICLE_002_RPS)
    agrees = set(rows["concurrency"]) == set(ARTICLE_002_RPS) and all(
        within(m, a, RPS_TOLERANCE) for m, a in zip(rows["rps"], article, strict=True))
    return Verdict("F002-a", "RPS 4.98 / 49.84 / 484.10 / 488.11 at C = 1 / 10 / 100 / 500 (ab)",
                   _rps_by_tool(rows), verdict_of(agrees, machine_bound=True),
                   "within 10 % of the article's value at every C, for both tools" if agrees else
                   "RPS here differs from the article's by more than 10 % at some C")


def f002_b(table) -> Verdict:
    worst = table["rps_error"].abs().max()
    agrees = bool(worst <= RPS_TOLERANCE)
    return Verdict("F002-b", "RPS = min(C, pool) × 5 (pool 100, 1 request in 10 sleeps 2 s)",
                   f"largest deviation from the model over {len(table)} steps: {worst:.1%}", verdict_of(agrees),
                   "the pool, not the clients, caps throughput" if agrees else "measured RPS departs from the model")


def f002_c(data) -> Verdict:
    """Queueing at C = 500: waits several times the service time, yet most requests stay fast."""
    throughput = throughput_table(data).set_index("step")
    table = latency_percentiles(data).set_index("step")
    c500 = [s for s, m in data.steps.items() if m["config"]["load"]["vus"] == 500]
    service_ms, sleep_ms = 200, 2000  # /every-nth?n=10&sleepMs=2000: 0.2 s of thread time on average
    checks = {s: (throughput.loc[s, "mean_latency_ms"] >= 3 * service_ms
                  and table.loc[s, "p50_ms"] < 2.5 * service_ms and table.loc[s, "max_ms"] > sleep_ms) for s in c500}
    agrees = bool(checks) and all(checks.values())
    measured = "; ".join(
        f"{s}: mean {throughput.loc[s, 'mean_latency_ms']:.0f} ms, median {table.loc[s, 'p50_ms']:.0f} ms, "
        f"p66 {table.loc[s, 'p66_ms']:.0f} ms, max {table.loc[s, 'max_ms']:.0f} ms" for s in c500)
    return Verdict("F002-c", "C = 500: median ~107 ms, p66 ~1.86 s, max ~4.1 s: requests queue",
                   measured or "no C = 500 step", verdict_of(agrees),
                   "mean latency ≥ 3× the 200 ms service time (Little's law predicts 5×), median under 500 ms, "
                   "some waits over a whole 2 s sleep" + ("" if agrees else ": not met"))


def f002_d(data, table) -> Verdict:
    """The premise of the ways out: the pool, not the CPU or the clients, is what limits."""
    busy = data.actuator[(data.actuator.metric == "tomcat.threads.busy")]
    c500 = [s for s, m in data.steps.items() if m["config"]["load"]["vus"] == 500]
    peak = busy[busy.step.isin(c500)]["value"].max() if c500 else float("nan")
    pool = table["threads"].max()
    flat = table[table.concurrency.isin([100, 500])].groupby("tool")["rps"].agg(lambda r: r.max() / r.min() - 1)
    agrees = bool(peak == pool) and bool((flat <= RPS_TOLERANCE).all())
    return Verdict("F002-d", "the way out is more threads, async I/O or green threads: the pool is the limit",
                   f"at C = 500 busy threads peak at {peak:.0f} of {pool}; RPS from C = 100 to 500 changes by "
                   + ", ".join(f"{t} {v:+.1%}" for t, v in flat.items()), verdict_of(agrees),
                   "all threads busy while RPS stays flat: only a bigger or cheaper pool moves it (virtual threads: a later chapter)"
                   if agrees else "the pool is not shown to be the limit")
