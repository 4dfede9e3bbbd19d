"""Chapter 6's tables: the configurations the steps ran, every sustained step's measurements and what limited it,
the model's bounds beside them, and what one new connection costs (measured, modelled and as the article counts it).
Numbers are the mean of a step's runs; columns are named in words and right-aligned by the shared table writer.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch6.article import article_numbers
from harness.book.chapters.ch6.charts import NETWORKS, label, sustained
from harness.book.chapters.ch6.model import model_frame
from harness.book.chapters.ch6.runs import pick
from harness.book.tables import people_table
from harness.models import proxy

MODEL_RTTS_MS = (1.0, 10.0)  # the round trips the handshake is modelled at: a data centre's and the article's example


def per_second(value: float) -> str:
    return "–" if value != value else f"{value:,.0f}"


def milliseconds(value: float) -> str:
    return "–" if value != value or value == 0 else f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def cpu_ms(value: float) -> str:
    return "–" if value != value or value == 0 else f"{value:.3f}"


def small_ms(value: float) -> str:
    """Fractions of a millisecond to the microsecond (0.059), whole round trips to a tenth (10.0)."""
    return f"{value:.3f}" if value < 1 else f"{value:,.1f}"


def steps_summary(table: pd.DataFrame) -> Markdown:
    """Every 200-connection step: throughput, latency, failures, new connections and CPU per request."""
    rows = sustained(table)
    shown = pd.DataFrame({
        "step": rows["step"], "configuration": [label(r) for _, r in rows.iterrows()],
        "network": rows["network"].map(NETWORKS), "answered/s": rows["tps"], "median (ms)": rows["p50_ms"],
        "99th pct (ms)": rows["p99_ms"], "failed": rows["errors"], "new connections/s": rows["new_connections_per_s"],
        "service CPU per request (ms)": rows["service_cpu_ms"], "nginx CPU per request (ms)": rows["nginx_cpu_ms"],
        "runs": rows["runs"]})
    return people_table(shown, {"answered/s": per_second, "median (ms)": milliseconds, "99th pct (ms)": milliseconds,
                                "failed": per_second, "new connections/s": per_second,
                                "service CPU per request (ms)": cpu_ms, "nginx CPU per request (ms)": cpu_ms})


def model_table(table: pd.DataFrame) -> Markdown:
    """Per sustained step: the model's CPU bound and the round trips' bound against what was answered, and which core
    was full."""
    frame = model_frame(table)
    shown = pd.DataFrame({"step": frame["step"], "network": frame["network"].map(NETWORKS),
                          "predicted CPU per request (ms)": frame["cpu_ms"], "CPU 1's bound (/s)": frame["cpu_bound"],
                          "round trips' bound (/s)": frame["loop_bound"], "answered/s": frame["tps"],
                          "what was full": frame["limit"]})
    return people_table(shown, {"predicted CPU per request (ms)": cpu_ms, "CPU 1's bound (/s)": per_second,
                                "round trips' bound (/s)": per_second, "answered/s": per_second})


def handshake_table(table: pd.DataFrame) -> Markdown:
    """One user's request with and without a new connection, measured on loopback and across the switch, the model's
    per-request time at MODEL_RTTS_MS (one round trip more for a new connection), and the article's count."""
    rows = []
    for network, prefix in (("loopback", ""), ("three hosts", "hosts-")):
        new, kept = pick(table, f"{prefix}connect"), pick(table, f"{prefix}reuse")
        if new is None or kept is None:
            continue
        rows.append({"where": f"measured, {network}", "connect (ms)": new.connect_ms,
                     "on a kept connection (ms)": kept.request_ms, "on a new connection (ms)": new.request_ms,
                     "a new connection adds (ms)": new.request_ms - kept.request_ms, "runs": new.runs})
    for rtt in MODEL_RTTS_MS:
        kept_ms = proxy.per_request_ms(0, rtt, 0, new_connection=False)  # one leg: client to service, no CPU
        new_ms = proxy.per_request_ms(0, rtt, 0)
        rows.append({"where": f"model, {rtt:g} ms round trip", "connect (ms)": proxy.handshake_ms(rtt),
                     "on a kept connection (ms)": kept_ms, "on a new connection (ms)": new_ms,
                     "a new connection adds (ms)": new_ms - kept_ms})
    latency = article_numbers()["example_latency"]
    rows.append({"where": f"the article, {latency:g} ms latency",
                 "a new connection adds (ms)": proxy.article_handshake_ms(latency)})
    return people_table(pd.DataFrame(rows), {"connect (ms)": small_ms, "on a kept connection (ms)": small_ms,
                                             "on a new connection (ms)": small_ms, "a new connection adds (ms)": small_ms,
                                             "runs": lambda n: f"{n:.0f}"})
