"""Chapter 5's tables: the article's own numbers; the pool model fed with each step's measured hold time (Little's
law, after the fact: which bound the step met); and every step's measurements, the mean of its runs.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch5.claims import article_apis, article_runs
from harness.book.prose import in_book_style
from harness.book.tables import markdown_table
from harness.models import pool


def article_apis_table() -> Markdown:
    """The article's single-API results, as its data file holds them (–: a number it does not give)."""
    apis = article_apis()[["api", "method", "path", "tps", "hikari_pending_max"]].rename(columns={
        "api": "API", "tps": "TPS", "hikari_pending_max": "HikariCP pending, most"})
    return Markdown(markdown_table(apis))


def article_runs_table() -> Markdown:
    """The article's scenario, Tomcat and final runs, as its data file holds them (–: a number it does not give)."""
    runs = article_runs()[["experiment", "value", "tps", "success_pct", "gc_stop_the_world_ms"]].rename(columns={
        "experiment": "run", "value": "setting", "tps": "TPS", "success_pct": "success (%)",
        "gc_stop_the_world_ms": "GC stop-the-world (ms)"})
    runs["run"] = runs["run"].str.replace("_", "-")
    return Markdown(markdown_table(runs, {"setting": in_book_style}))  # 4000 → 4,000 beside db.m6gd.large


def model_frame(steps: pd.DataFrame) -> pd.DataFrame:
    """Per step (the mean of its runs): the pool's bound from its measured hold time (pool / hold), the database's
    (its CPU quota / the CPU each answered request cost it), what was answered, and Little's law's busy connections
    (throughput × hold) against the most the pool had in use."""
    hold = steps["hold_ms"].where(steps["hold_ms"] > 0)
    return pd.DataFrame({
        "step": steps["step"], "pool": steps["pool"], "database CPU": steps["db_quota"],
        "held (ms per use)": hold.round(0),
        "pool's bound (/s)": [pool.pool_bound_tps(p, h) for p, h in zip(steps["pool"], hold, strict=True)],
        "database's bound (/s)": [pool.db_bound_tps(q, d) for q, d in zip(steps["db_quota"], steps["db_cpu_ms"],
                                                                            strict=True)],
        "answered (/s)": steps["tps"], "busy (answered × held)": pool.busy_connections(steps["tps"], hold),
        "in use at most": steps["active_max"]})


def model_table(steps: pd.DataFrame) -> Markdown:
    return Markdown(markdown_table(model_frame(steps), {
        "database CPU": "{:g}", "held (ms per use)": "{:,.0f}", "pool's bound (/s)": "{:,.0f}",
        "database's bound (/s)": "{:,.0f}", "answered (/s)": "{:,.1f}", "busy (answered × held)": "{:,.1f}",
        "in use at most": "{:,.0f}"}))


def outcome_table(steps: pd.DataFrame) -> Markdown:
    """What the users got, per step (the mean of its runs): throughput, the best ten seconds, share answered, latency."""
    frame = pd.DataFrame({
        "step": steps["step"], "runs": steps["runs"], "pool": steps["pool"],
        "open-in-view": steps["open_in_view"].map({True: "on", False: "off"}), "database CPU": steps["db_quota"],
        "answered (/s)": steps["tps"], "best 10 s (/s)": steps["peak_tps"], "answered (share)": steps["success"],
        "p50 (ms)": steps["p50_ms"], "p90 (ms)": steps["p90_ms"]})
    return Markdown(markdown_table(frame, {"database CPU": "{:g}", "answered (/s)": "{:,.1f}",
                                           "best 10 s (/s)": "{:,.0f}", "answered (share)": "{:.1%}",
                                           "p50 (ms)": "{:,.0f}", "p90 (ms)": "{:,.0f}"}))


def inside_table(steps: pd.DataFrame) -> Markdown:
    """What happened inside, per step: the pool's queue and hold time, the database's and the server's CPU, GC."""
    frame = pd.DataFrame({
        "step": steps["step"], "waiting at most": steps["pending_max"], "held (ms)": steps["hold_ms"],
        "waited (ms)": steps["wait_ms"], "database cores": steps["db_cpu_cores"],
        "database CPU per answer (ms)": steps["db_cpu_ms"],
        "database throttled (share of periods)": steps["db_throttled"] / steps["db_periods"],
        "server cores": steps["server_cpu_cores"], "longest GC pause (ms)": steps["gc_pause_max_ms"]})
    return Markdown(markdown_table(frame, {
        "waiting at most": "{:,.0f}", "held (ms)": "{:,.0f}", "waited (ms)": "{:,.0f}", "database cores": "{:.3f}",
        "database CPU per answer (ms)": "{:.2f}", "database throttled (share of periods)": "{:.0%}",
        "server cores": "{:.2f}", "longest GC pause (ms)": "{:,.0f}"}))
