"""Chapter 1, one thread, one request (seed 002): the pool's throughput, Little's law, its tables and verdicts.
"""
from __future__ import annotations

import pandas as pd
from harness.book.analysis import latency_percentiles, throughput_table
from IPython.display import Markdown
from harness.lab.store import ChapterData
from harness.book.tables import people_table
from harness.book.verdict import MODEL_NOISE, Verdict, verdict_of, within


ARTICLE_002_RPS = {1: 4.98, 10: 49.84, 100: 484.10, 500: 488.11}  # F002-a, the article's ab results


RPS_TOLERANCE = 0.10  # against the article's numbers: run-to-run spread here is a few %, the tail up to 8 %


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
    """Queueing at C = 500: waits several times the service time, yet most requests stay fast."""
    throughput = throughput_table(data).set_index("step")
    table = latency_percentiles(data).set_index("step")
    c500 = [s for s, m in data.steps.items() if m["config"]["load"]["vus"] == 500]
    service_ms, sleep_ms = 200, 2000  # /every-nth?n=10&sleepMs=2000: 0.2 s of thread time on average
    # Queueing, by Little's law: the mean wait is several service times, and some wait longer than a sleep.
    checks = {s: (throughput.loc[s, "mean_latency_ms"] >= 3 * service_ms and table.loc[s, "max_ms"] > sleep_ms)
              for s in c500}
    agrees = bool(checks) and all(checks.values())
    measured = "; ".join(
        f"{s}: mean {throughput.loc[s, 'mean_latency_ms']:.0f} ms, median {table.loc[s, 'p50_ms']:.0f} ms, "
        f"p66 {table.loc[s, 'p66_ms']:.0f} ms, max {table.loc[s, 'max_ms']:.0f} ms" for s in c500)
    return Verdict("F002-c", "C = 500: median ~107 ms, p66 ~1.86 s, max ~4.1 s: requests queue",
                   measured or "no C = 500 step", verdict_of(agrees),
                   "mean latency ≥ 3× the 200 ms service time (Little's law predicts 5×) and "
                   "some waits longer than a whole 2 s sleep" + ("" if agrees else ": not met"))


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
