"""Chapter 1, one thread, one request (seed 002): the pool's throughput, Little's law, its tables and verdicts.

The pool and the endpoint's sleep come from the steps as they ran (step.json); which steps a chart or sentence
shows comes from the spec (experiments/chapter1.toml: findings, and a `role` where findings do not say).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from IPython.display import Markdown

from harness import LabError
from harness.book.analysis import latency_percentiles, throughput_table
from harness.book.charts import rps_chart
from harness.book.steps import spec_steps
from harness.lab.steps import step_from_config
from harness.book.tables import people_table
from harness.book.verdict import MODEL_NOISE, Verdict, verdict_of, within
from harness.lab.store import ChapterData
from harness.models.service import longest_service_ms

ARTICLE_002_RPS = {1: 4.98, 10: 49.84, 100: 484.10, 500: 488.11}  # F002-a, the article's ab results


ARTICLE_002_SETUP = {"threads": 100, "every": 10, "sleep_ms": 2000, "requests": 5000}  # the article's server and `ab -n`


RPS_TOLERANCE = 0.10  # against the article's numbers: run-to-run spread here is a few %, the tail up to 8 %


# What the chapter picks steps by (the spec's `role`, where findings alone do not say).
RATE_HOLDS, PART_OF_POOL, POOL_FULL = "rate holds", "part of the pool", "pool full"


QUEUEING = "F002-c"  # the steps with more clients than threads


@dataclass(frozen=True)
class Pool:
    """The server every step of the chapter ran: its pool, and the endpoint's sleep on one request in `every`."""

    threads: int
    every: int
    sleep_ms: int
    mean_service_ms: float  # a request's average thread time: sleep_ms / every
    path: str

    @property
    def rate_per_thread(self) -> float:
        """Requests one busy thread finishes per second."""
        return 1000 / self.mean_service_ms


def pool_of(data: ChapterData) -> Pool:
    """The pool and sleep pattern from the steps' recorded config and model; one for the whole chapter."""
    pools = {(m["model"]["threads"], m["config"]["load"]["path"], m["model"]["mean_service_ms"]): (step, m)
             for step, m in data.steps.items()}
    if len(pools) != 1:
        raise LabError(f"{data.chapter}: expected every step on one pool and endpoint, found {len(pools) or 'no'}: "
                       + "; ".join(f"{s}: {t} threads, {p}" for (t, p, _), (s, _m) in pools.items()))
    (threads, path, mean_ms), (step, meta) = next(iter(pools.items()))
    config = meta["config"]
    sleep_ms = longest_service_ms(step_from_config(data.chapter, step, config))
    return Pool(threads, round(sleep_ms / mean_ms), sleep_ms, mean_ms, path)


def chosen(data: ChapterData, roles: tuple[str, ...] = (), findings: tuple[str, ...] = ()) -> list[str]:
    """Ids of the chapter's steps with these roles, then those testing these findings (spec order within each),
    that have data."""
    ids = [*(s for r in roles for s in spec_steps(data.chapter, role=r)),
           *(s for f in findings for s in spec_steps(data.chapter, finding=f))]
    return [s for s in dict.fromkeys(ids) if s in data.steps]


def rate_steps(data: ChapterData) -> ChapterData:
    """The C = 1 runs, whose per-second rate shows whether the pace holds."""
    return data.only(chosen(data, (RATE_HOLDS,)))


def queue_steps(data: ChapterData) -> list[str]:
    """A pool just full, then clients queueing for it."""
    return chosen(data, (POOL_FULL,), (QUEUEING,))


def busy_steps(data: ChapterData) -> ChapterData:
    """Every step with more than one client: part of the pool, all of it, and beyond."""
    return data.only(chosen(data, (PART_OF_POOL, POOL_FULL), (QUEUEING,)))


def phase_steps(data: ChapterData) -> ChapterData:
    """The full-pool and queueing steps run with k6 (ab records start times to the second only)."""
    return data.only([s for s in queue_steps(data) if data.steps[s]["config"]["load"].get("tool", "k6") == "k6"])


def pool_rps_chart(data: ChapterData):
    """RPS per concurrency and tool on the model's line, drawn for the pool and sleep the steps ran with."""
    pool = pool_of(data)
    return rps_chart(throughput_table(data), rate_per_thread=pool.rate_per_thread, threads=pool.threads)


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
    """Every step's whole-run RPS inside the model's range for a run of its length (± noise)."""
    low, high = table["rps_low"] * (1 - MODEL_NOISE), table["rps_model"] * (1 + MODEL_NOISE)
    inside = table["rps"].between(low, high)
    agrees = bool(inside.all()) and len(table) > 0
    outside = ", ".join(f"{r.step} {r.rps:.1f} (range {r.rps_low:.0f}-{r.rps_model:.0f})" for r in table[~inside].itertuples())
    return Verdict("F002-b", "RPS = min(C, pool) × 5 (pool 100, 1 request in 10 sleeps 2 s)",
                   f"{inside.sum()} of {len(table)} steps inside the model's range" + (f"; outside: {outside}" if outside else ""),
                   verdict_of(agrees),
                   "the pool, not the clients, caps throughput" if agrees else "measured RPS departs from the model")


def f002_c(data) -> Verdict:
    """Queueing where clients outnumber threads: waits several times the service time, some longer than a sleep."""
    throughput = throughput_table(data).set_index("step")
    table = latency_percentiles(data).set_index("step")
    queued = chosen(data, findings=(QUEUEING,))
    article = "C = 500: median ~107 ms, p66 ~1.86 s, max ~4.1 s: requests queue"
    if not queued:
        return Verdict("F002-c", article, "no step with more clients than threads", verdict_of(False),
                       "nothing measured to judge on")
    pool = pool_of(data)
    # Queueing, by Little's law: the mean wait is several service times, and some wait longer than a sleep.
    checks = {s: (throughput.loc[s, "mean_latency_ms"] >= 3 * pool.mean_service_ms and table.loc[s, "max_ms"] > pool.sleep_ms)
              for s in queued}
    agrees = all(checks.values())
    measured = "; ".join(
        f"{s}: mean {throughput.loc[s, 'mean_latency_ms']:.0f} ms, median {table.loc[s, 'p50_ms']:.0f} ms, "
        f"p66 {table.loc[s, 'p66_ms']:.0f} ms, max {table.loc[s, 'max_ms']:.0f} ms" for s in queued)
    little = max(data.steps[s]["model"]["mean_latency_ms"] for s in queued) / pool.mean_service_ms
    return Verdict("F002-c", article, measured, verdict_of(agrees),
                   f"mean latency ≥ 3× the {pool.mean_service_ms:.0f} ms service time (Little's law predicts {little:.0f}×) "
                   f"and some waits longer than a whole {pool.sleep_ms / 1000:g} s sleep" + ("" if agrees else ": not met"))


def rps_change_beyond_pool(table: pd.DataFrame) -> pd.Series:
    """Per tool, how much RPS changes from the smallest C that fills the pool to the largest (+0.01 = 1 % more)."""
    full = table[table.concurrency >= table["threads"]].sort_values("concurrency")
    return full.groupby("tool")["rps"].agg(lambda r: r.iloc[-1] / r.iloc[0] - 1)


def f002_d(data, table) -> Verdict:
    """The premise of the ways out: the pool, not the CPU or the clients, is what limits."""
    busy = data.actuator[(data.actuator.metric == "tomcat.threads.busy")]
    queued = chosen(data, findings=(QUEUEING,))
    peak = busy[busy.step.isin(queued)]["value"].max() if queued else float("nan")
    pool, most = table["threads"].max(), table["concurrency"].max()
    change = rps_change_beyond_pool(table)
    agrees = bool(peak == pool) and bool((change.abs() <= RPS_TOLERANCE).all())
    return Verdict("F002-d", "the way out is more threads, async I/O or green threads: the pool is the limit",
                   f"at C = {most} busy threads peak at {peak:.0f} of {pool}; RPS from C = {pool} to {most} changes by "
                   + ", ".join(f"{t} {v:+.1%}" for t, v in change.items()), verdict_of(agrees),
                   "all threads busy while RPS stays flat: only a bigger or cheaper pool moves it (virtual threads: chapter 7)"
                   if agrees else "the pool is not shown to be the limit")


def latency_table(data: ChapterData, step_ids: list[str]) -> Markdown:
    """Answered requests' latency percentiles per step, in ms."""
    table = latency_percentiles(data, step_ids)
    return people_table(table.rename(columns={c: c.replace("_ms", " (ms)") for c in table.columns}).round(0))


def predictions_table(data: ChapterData) -> Markdown:
    """What the closed-loop model predicted for each step, before any measurement."""
    rows = [{"step": s, "C": m["config"]["load"]["vus"], "requests": m["model"]["requests"],
             "RPS (model)": round(m["model"]["rps"]), "mean latency (model, ms)": round(m["model"]["mean_latency_ms"]),
             "run time (model, s)": round(m["model"]["duration_ms"] / 1000, 1)}
            for s, m in sorted(data.steps.items(), key=lambda item: (item[1]["config"]["load"]["vus"], item[0]))]
    return people_table(pd.DataFrame(rows))


def rps_table(data: ChapterData) -> Markdown:
    """Measured RPS per step beside the article's (ab) and the model's."""
    table = throughput_table(data).sort_values(["concurrency", "tool"])
    table["RPS (article, ab)"] = table["concurrency"].map(ARTICLE_002_RPS)
    table = table.rename(columns={"concurrency": "C", "rps": "RPS (measured)", "rps_model": "RPS (model)",
                                  "rps_error": "measured vs model"})
    shown = table[["step", "tool", "C", "issued", "RPS (measured)", "RPS (article, ab)", "RPS (model)", "measured vs model"]]
    return people_table(shown, {"RPS (measured)": "{:,.1f}", "RPS (article, ab)": "{:,.2f}", "RPS (model)": "{:,.0f}",
                                "measured vs model": "{:+.1%}"})


def littles_law_table(data: ChapterData) -> Markdown:
    """Little's law on our data: throughput × mean latency should equal the clients in flight, C."""
    table = throughput_table(data).sort_values(["concurrency", "tool"])
    shown = table[["step", "tool", "concurrency", "rps", "mean_latency_ms", "littles_concurrency"]].rename(columns={
        "concurrency": "C (clients in flight)", "rps": "RPS", "mean_latency_ms": "mean latency (ms)",
        "littles_concurrency": "RPS × mean latency"})
    return people_table(shown, {"RPS": "{:,.1f}", "mean latency (ms)": "{:,.0f}", "RPS × mean latency": "{:,.1f}"})
