"""Chapter 4's tables: the article's runs, the model's predictions per step, the steps measured, the article's numbers
against Little's law.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch4_verdicts import little_table
from harness.book.prose import words
from harness.book.tables import people_table


def article_summary(article: pd.DataFrame) -> Markdown:
    """The article's eleven runs as it reports them: users, pool, pod size, throughput, mean latency."""
    table = article[["run", "vus_claimed", "threads_max", "min_spare", "pod_cores", "tps", "mean_latency_ms"]].rename(
        columns={"vus_claimed": "users", "threads_max": "threads.max", "min_spare": "min-spare",
                 "pod_cores": "cores per pod", "tps": "requests/s", "mean_latency_ms": "mean latency (ms)"})
    return people_table(table)


def article_intro(article: pd.DataFrame) -> str:
    """The article's setup, from its table: pods, run length, users, how many runs."""
    return (f"The article runs an \"event download eligibility\" API on {words(int(article['pods'].iloc[0]))} Kubernetes "
            f"pods and drives it with nGrinder for {words(int(article['duration_min'].iloc[0]))} minutes at "
            f"{article['vus_claimed'].min():,} to {article['vus_claimed'].max():,} virtual users. "
            f"Its {words(len(article))} runs change `threads.max` (the most worker threads Tomcat starts), "
            "`threads.min-spare` (how many it keeps started while idle), the users and the pod size:")


def article_sentence(article: pd.DataFrame) -> str:
    """What the article's table shows, in its own numbers."""
    runs = article.set_index("run")
    best = runs["tps"].idxmax()
    after = runs.loc[best + 1:]
    return (f"Throughput climbs from {runs['tps'].iloc[0]:,} to {runs.loc[best, 'tps']:,} requests per second (run "
            f"{best}), then falls to {after['tps'].min():,} as threads.max goes to {after['threads_max'].max():,} and users "
            f"grow, while the mean time per request goes from {runs['mean_latency_ms'].iloc[0]:g} to "
            f"{runs['mean_latency_ms'].max():g} ms. Doubling the pods' cores (run {best - 1}) raised throughput; more "
            "threads did not.")


def predictions(table: pd.DataFrame) -> Markdown:
    """Per step: what it runs with and the model's plateau, latency and binding resource (from step.json)."""
    rows = table[["step", "kind", "users", "rate", "threads_max", "min_spare", "cpu_quota", "model_tps", "model_mean_ms"]]
    return people_table(rows.rename(columns={
        "rate": "arrivals/s", "threads_max": "threads.max", "min_spare": "min-spare", "cpu_quota": "server cores",
        "model_tps": "model: requests/s", "model_mean_ms": "model: mean latency (ms)"}),
        {"model: requests/s": "{:,.0f}", "model: mean latency (ms)": "{:,.0f}"})


def measured(table: pd.DataFrame) -> Markdown:
    """Per step: throughput and latency over the hold, failures, CPU of both processes, threads."""
    rows = table[["step", "users", "threads_max", "cpu_quota", "tps", "mean_ms", "p99_ms", "errors", "server_cpu_cores",
                  "k6_cpu_cores", "gc_share", "current_threads_peak"]]
    return people_table(rows.rename(columns={
        "threads_max": "threads.max", "cpu_quota": "quota", "tps": "requests/s", "mean_ms": "mean (ms)",
        "p99_ms": "p99 (ms)", "errors": "failed", "server_cpu_cores": "server cores", "k6_cpu_cores": "k6 cores",
        "gc_share": "GC", "current_threads_peak": "threads"}),
        {"requests/s": "{:,.0f}", "mean (ms)": "{:,.0f}", "p99 (ms)": "{:,.0f}", "server cores": "{:.2f}",
         "k6 cores": "{:.2f}", "GC": "{:.1%}", "threads": "{:,.0f}"})


def little(article: pd.DataFrame) -> Markdown:
    """The article's runs: reported mean latency against users / throughput (Little's law)."""
    table = little_table(article)[["run", "vus_claimed", "vus_setup", "tps", "reported_ms", "little_ms", "ratio",
                                    "little_setup_ms", "users_in_flight"]]
    return people_table(table.rename(columns={
        "vus_claimed": "users claimed", "vus_setup": "users in its setup", "tps": "requests/s",
        "reported_ms": "reported mean (ms)", "little_ms": "users / throughput (ms)", "ratio": "reported / Little",
        "little_setup_ms": "setup's users / throughput (ms)", "users_in_flight": "users in flight (throughput × latency)"}),
        {"reported / Little": "{:.0%}", "users / throughput (ms)": "{:,.0f}", "setup's users / throughput (ms)": "{:,.0f}",
         "users in flight (throughput × latency)": "{:,.0f}"})
