"""Chapter 5's tables: the article's own numbers, the pool model beside each measured step (Little's law), and every
step's measurements.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch5_verdicts import article_apis, article_runs
from harness.book.tables import markdown_table
from harness.models import pool


def article_tables() -> Markdown:
    """The article's single-API results and its runs, as its data files hold them (empty: a number it does not give)."""
    apis = article_apis()[["api", "method", "path", "tps", "hikari_pending_max"]].rename(columns={
        "api": "API", "method": "method", "path": "path", "tps": "TPS", "hikari_pending_max": "HikariCP pending, most"})
    runs = article_runs()[["experiment", "value", "tps", "success_pct", "gc_stop_the_world_ms"]].rename(columns={
        "experiment": "run", "value": "setting", "tps": "TPS", "success_pct": "success %",
        "gc_stop_the_world_ms": "GC stop-the-world ms"})
    return Markdown(markdown_table(apis.fillna("")) + "\n\n" + markdown_table(runs.fillna("")))


def model_table(table: pd.DataFrame) -> Markdown:
    """Per step: the pool's bound from its measured hold time (pool / hold), the database's (its CPU quota / the CPU
    each answered request cost it), the best ten seconds measured, and Little's law's busy connections (throughput ×
    hold) against the most the pool had active."""
    rows = table.assign(
        bound=lambda t: [pool.pool_bound_tps(p, h) if h == h and h > 0 else float("nan")
                         for p, h in zip(t["pool"], t["hold_ms"], strict=True)],
        busy=lambda t: [pool.busy_connections(x, h) for x, h in zip(t["tps"], t["hold_ms"], strict=True)])
    shown = pd.DataFrame({
        "step": rows["step"], "pool": rows["pool"], "database CPU": rows["db_quota"].map("{:g}".format),
        "held ms / use": rows["hold_ms"].map("{:,.0f}".format),
        "pool's bound /s": rows["bound"].map("{:,.0f}".format),
        "database's bound /s": (rows["db_quota"] * 1000 / rows["db_cpu_ms"]).map("{:,.0f}".format),
        "best 10 s /s": rows["peak_tps"].map("{:,.0f}".format),
        "busy (X × hold)": rows["busy"].map("{:.1f}".format),
        "active at most": rows["active_max"].map("{:.0f}".format)})
    return Markdown(markdown_table(shown))


def measured_table(table: pd.DataFrame) -> Markdown:
    """Every step in two tables: what the users got (throughput, share answered, latency), then what happened inside
    (the pool's queue and hold time, the database's and the server's CPU, the longest GC pause)."""
    names = table["step"]
    outcome = pd.DataFrame({
        "step": names, "pool": table["pool"], "open-in-view": table["open_in_view"].map({True: "on", False: "off"}),
        "database CPU": table["db_quota"].map("{:g}".format), "answered /s": table["tps"].map("{:.1f}".format),
        "best 10 s /s": table["peak_tps"].map("{:.0f}".format), "answered": table["success"].map("{:.1%}".format),
        "p50 ms": table["p50_ms"].map("{:,.0f}".format), "p90 ms": table["p90_ms"].map("{:,.0f}".format)})
    inside = pd.DataFrame({
        "step": names, "waiting at most": table["pending_max"].map("{:.0f}".format),
        "held ms": table["hold_ms"].map("{:,.0f}".format), "waited ms": table["wait_ms"].map("{:,.0f}".format),
        "database cores": table["db_cpu_cores"].map("{:.3f}".format),
        "database ms / answer": table["db_cpu_ms"].map("{:.2f}".format),
        "server cores": table["server_cpu_cores"].map("{:.2f}".format),
        "longest GC ms": table["gc_pause_max_ms"].map(lambda v: "–" if v != v else f"{v:.0f}")})
    return Markdown(markdown_table(outcome) + "\n\n" + markdown_table(inside))
