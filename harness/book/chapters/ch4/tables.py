"""Chapter 4's tables: the article's runs, the model's predictions per step, the steps measured, every run of the
repeated steps, the server's context switches per request, the article's numbers against Little's law. One format
per kind of number: requests per second and milliseconds whole with thousands separators, cores with two decimals,
shares as percentages (harness.book.prose)."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch4.article import little_table
from harness.book.chapters.ch4.claims import REPEATED, column
from harness.book.chapters.ch4.runs import BURST, OPEN, SUSTAINED
from harness.book.chapters.ch4.values import switches
from harness.book.prose import percent
from harness.book.tables import people_table

WHOLE, CORES = "{:,.0f}", "{:.2f}"
LOAD = {SUSTAINED: "ramp, hold", BURST: "all at once", OPEN: "arrival rate"}


def article_summary(article: pd.DataFrame) -> Markdown:
    """The article's eleven runs as it reports them: users, pool, pod size, throughput, mean latency."""
    table = article[["run", "vus_claimed", "threads_max", "min_spare", "pod_cores", "tps", "mean_latency_ms"]].rename(
        columns={"vus_claimed": "users", "threads_max": "threads.max", "min_spare": "min-spare",
                 "pod_cores": "cores per pod", "tps": "requests/s", "mean_latency_ms": "mean latency (ms)"})
    return people_table(table, {"mean latency (ms)": "{:,.2f}"})


def _load(table: pd.DataFrame) -> pd.DataFrame:
    """How each step's load runs, its users and (an open step) its arrival rate, as three columns."""
    return pd.DataFrame({"step": table["step"], "load": table["kind"].map(LOAD), "users": table["users"].where(
        table["kind"] != OPEN), "arriving/s": table["rate"]})


def predictions(table: pd.DataFrame) -> Markdown:
    """Per step: what it runs with and the model's throughput and mean latency (from each step's step.json)."""
    rows = _load(table).assign(**{"threads.max": table["threads_max"], "min-spare": table["min_spare"],
                                  "server cores": table["cpu_quota"], "model: requests/s": table["model_tps"],
                                  "model: mean latency (ms)": table["model_mean_ms"]})
    return people_table(rows, {"users": WHOLE, "arriving/s": WHOLE, "server cores": "{:g}", "model: requests/s": WHOLE,
                               "model: mean latency (ms)": WHOLE})


def measured(table: pd.DataFrame) -> Markdown:
    """Per step (its first run), over its plateau: throughput, latency, failures, CPU of both processes, GC, threads."""
    rows = _load(table).assign(**{
        "threads.max": table["threads_max"], "server cores": table["cpu_quota"], "requests/s": table["tps"],
        "mean (ms)": table["mean_ms"], "p99 (ms)": table["p99_ms"], "failed": table["errors"],
        "server's CPU": table["server_cpu_cores"], "k6's CPU": table["k6_cpu_cores"], "GC": table["gc_share"],
        "threads": table["current_threads_peak"]})
    return people_table(rows, {"users": WHOLE, "arriving/s": WHOLE, "server cores": "{:g}", "requests/s": WHOLE,
                               "mean (ms)": WHOLE, "p99 (ms)": WHOLE, "failed": WHOLE, "server's CPU": CORES,
                               "k6's CPU": CORES, "GC": percent, "threads": WHOLE})


def runs_summary(runs: pd.DataFrame) -> Markdown:
    """The steps that ran several times: each run's plateau throughput, their mean and spread."""
    rows = []
    for step in REPEATED:
        tps = column(runs, step, "tps")
        rows.append({"step": step, **{f"run {k}": v for k, v in tps.items()}, "mean": tps.mean(),
                     "spread (σ)": percent(tps.std() / tps.mean()) if len(tps) > 1 else "–"})
    frame = pd.DataFrame(rows)
    return people_table(frame, {c: WHOLE for c in frame.columns if c.startswith("run ") or c == "mean"})


def switches_table(runs: pd.DataFrame) -> Markdown:
    """The server's context switches per request answered during the load, at 800 users on one core."""
    found = switches(runs)
    if not found:
        return Markdown("*These runs recorded no context switches (data from before the counter).*")
    frame = pd.DataFrame([{"threads.max": s.threads_max, "runs": s.runs, "voluntary": s.voluntary,
                           "involuntary": s.involuntary, "in all": s.total} for s in found.values()])
    return people_table(frame, {"voluntary": "{:,.1f}", "involuntary": "{:,.1f}", "in all": "{:,.1f}"})


def little_fit(article: pd.DataFrame) -> Markdown:
    """The article's runs: reported mean latency against users / throughput (Little's law)."""
    table = little_table(article)
    frame = pd.DataFrame({"run": table["run"], "users claimed": table["vus_claimed"], "users in its setup": table["vus_setup"],
                          "requests/s": table["tps"], "reported mean (ms)": table["reported_ms"],
                          "users / throughput (ms)": table["little_ms"], "reported / Little": table["ratio"],
                          "setup's users / throughput (ms)": table["little_setup_ms"],
                          "users in flight": table["users_in_flight"]})
    return people_table(frame, {"reported mean (ms)": "{:,.2f}", "users / throughput (ms)": WHOLE,
                                "reported / Little": percent, "setup's users / throughput (ms)": WHOLE,
                                "users in flight": WHOLE})

