"""Chapter 5's charts: one step's timeline (throughput, latency, the pool, the database, users on one time axis), the
single APIs against the article's, throughput against pool size per database quota with HikariCP's rule marked, and
the longest GC pause per max-connections, every run a point.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from harness.book.chapters.ch5_steps import API, DB, SCENARIO, TOMCAT, pool_steps
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.lab import histogram
from harness.lab.store import ChapterData, answered
from harness.models import pool

PANEL_HEIGHT = 110


def timeline_frame(data: ChapterData, step: str) -> pd.DataFrame:
    """Per second of one step: answered/s, p50 and p90 latency, users, HikariCP's active and pending connections and
    the database's active sessions (the latest sample in each second), long format (second, panel, what, value)."""
    t0 = data.steps[step]["recording"]["t0_ms"]
    outcomes = data.outcomes[data.outcomes.step == step]
    seconds = range(int(outcomes["second"].max()) + 1) if len(outcomes) else range(0)
    per_second = outcomes[answered(outcomes)].groupby("second")["requests"].sum().reindex(seconds, fill_value=0)
    rows = [per_second.rename("answered/s").to_frame().assign(panel="requests per second")]  # a second without: 0
    latency = data.latency[data.latency.step == step]
    if len(latency):
        q = histogram.quantiles(latency).set_index("second")
        rows.append(q[["p50", "p90"]].assign(panel="latency (ms)"))
    series = data.series[data.series.step == step].set_index("second")
    rows.append(series[["vus"]].rename(columns={"vus": "users"}).assign(panel="users"))
    rows.append(_per_second(data.actuator[data.actuator.step == step], t0, {
        "hikaricp.connections.active": "pool: active", "hikaricp.connections.pending": "pool: waiting"})
        .assign(panel="connections"))
    rows.append(_per_second(data.service(DB, step), t0, {"pg.activity.active": "database: active sessions"})
                .assign(panel="connections"))
    long = pd.concat([r.reset_index().rename(columns={"index": "second"}).melt(
        id_vars=["second", "panel"], var_name="what", value_name="value") for r in rows], ignore_index=True)
    return long.dropna(subset=["value"])


def _per_second(samples: pd.DataFrame, t0: float, names: dict[str, str]) -> pd.DataFrame:
    picked = samples[samples.metric.isin(names)].assign(second=lambda f: ((f.ts_ms - t0) // 1000).astype(int))
    wide = picked.pivot_table(index="second", columns="metric", values="value", aggfunc="last").rename(columns=names)
    return wide[wide.index >= 0]


def timeline_chart(data: ChapterData, step: str) -> alt.VConcatChart:
    """One step on one time axis: users, what was answered, how long it took, and who waited for a connection."""
    long = timeline_frame(data, step)
    pick = legend_highlight()
    x = alt.X("second:Q", title="seconds since the load started")
    panels = []
    for panel in ("users", "requests per second", "latency (ms)", "connections"):
        rows = long[long.panel == panel]
        y = alt.Y("value:Q", title=panel + (", log" if panel == "latency (ms)" else ""),
                  scale=alt.Scale(type="log") if panel == "latency (ms)" else alt.Scale())
        panels.append(alt.Chart(rows).mark_line(interpolate="step-after").encode(
            x, y, alt.Color("what:N", title=None), opacity=faded_unless(pick),
            tooltip=["what:N", "second:Q", alt.Tooltip("value:Q", format=",.0f")],
        ).add_params(pick).properties(width=WIDTH, height=PANEL_HEIGHT))
    return alt.vconcat(*panels).resolve_scale(x="shared", color="independent")


def apis_chart(table: pd.DataFrame, article: pd.DataFrame) -> alt.Chart:
    """Each single API's throughput here against the article's TPS."""
    apis = table[table["kind"] == API].assign(api=lambda t: t["step"].str.removeprefix("api-"))
    rows = pd.concat([apis[["api", "tps"]].assign(source="measured here"),
                      article[["api", "tps"]].assign(source="the article")], ignore_index=True)
    return alt.Chart(rows).mark_bar().encode(
        alt.Y("api:N", title=None, sort=list(apis["api"])), alt.X("tps:Q", title="requests per second (whole run)"),
        alt.YOffset("source:N"), alt.Color("source:N", title=None),
        tooltip=["api:N", "source:N", alt.Tooltip("tps:Q", format=",.1f")],
    ).properties(width=WIDTH - 160, height=26 * max(len(apis), 1))


def pool_chart(table: pd.DataFrame) -> alt.LayerChart:
    """The scenario's throughput against pool size, one line per database CPU quota; HikariCP's rule as a rule."""
    rows = pool_steps(table).copy()
    rows["database"] = [f"database {q:g} CPU, OSIV {'on' if o else 'off'}"
                        for q, o in zip(rows["db_quota"], rows["open_in_view"], strict=True)]
    rows = rows[rows.groupby("database")["pool"].transform("nunique") > 1]  # a line needs two pool sizes
    pick = legend_highlight()
    x = alt.X("pool:Q", scale=alt.Scale(type="log"), title="HikariCP maximum-pool-size (log)")
    lines = alt.Chart(rows).mark_line(point=True).encode(
        x, alt.Y("tps:Q", title="answered requests per second"),
        alt.Color("database:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=320, columns=1)),
        opacity=faded_unless(pick),
        tooltip=["step:N", "pool:Q", alt.Tooltip("tps:Q", format=",.1f"), alt.Tooltip("peak_tps:Q", format=",.1f"),
                 alt.Tooltip("success:Q", format=".1%"), alt.Tooltip("pending_max:Q", title="waiting at most")],
    ).add_params(pick)
    quotas = sorted(rows["db_quota"].unique())
    rules = pd.DataFrame({"rule": [f"HikariCP's rule, database {q:g} CPU" for q in quotas],
                          "pool": [pool.hikari_pool_size(q) for q in quotas]})
    marks = alt.Chart(rules).mark_rule(strokeDash=[4, 3], color=PALETTE["model"]).encode(
        x, tooltip=["rule:N", alt.Tooltip("pool:Q", title="connections")])
    return (lines + marks).properties(width=WIDTH, height=260)


def gc_chart(table: pd.DataFrame) -> alt.LayerChart:
    """The longest GC pause of each run per max-connections: the repeats show the run-to-run spread."""
    rows = table[(table["kind"] == TOMCAT) & table["findings"].str.contains("F001-e")]
    points = alt.Chart(rows).mark_point(filled=True, size=70, color=PALETTE["measured: ok"]).encode(
        alt.X("max_connections:O", title="Tomcat max-connections"),
        alt.Y("gc_pause_max_ms:Q", title="longest GC pause (ms)"),
        tooltip=["step:N", alt.Tooltip("gc_pause_max_ms:Q", format=".1f"), alt.Tooltip("tps:Q", format=",.1f")])
    medians = rows.groupby("max_connections", as_index=False)["gc_pause_max_ms"].median()
    ticks = alt.Chart(medians).mark_tick(thickness=2, size=30, color=PALETTE["model"]).encode(
        alt.X("max_connections:O"), alt.Y("gc_pause_max_ms:Q"))
    return (points + ticks).properties(width=WIDTH / 2, height=220)


def hold_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Per scenario step: how long a connection was held and waited for (ms per use), for the open-in-view chart."""
    rows = table[table["kind"] == SCENARIO]
    return rows[["step", "pool", "open_in_view", "indexes", "hold_ms", "wait_ms", "pending_max", "success"]].replace(
        {np.inf: np.nan})
