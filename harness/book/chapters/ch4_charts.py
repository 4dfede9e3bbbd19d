"""Chapter 4's charts: throughput and latency against users (one line per threads.max, the model dashed), the CPU of
server and k6 per step, the pool's live threads, the burst steps' first seconds, and the open model.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness.book.chapters.ch4_steps import OPEN, sustained
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.lab.store import ChapterData, percentiles

USERS_AXIS = alt.X("users:Q", scale=alt.Scale(type="log"), title="users (log)")


def throughput_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Plateau throughput against users, one line per threads.max at the full quota, the model's bound dashed."""
    rows = sustained(table, full_cpu=True).assign(pool=lambda t: "threads.max " + t["threads_max"].map("{:,}".format))
    pick = legend_highlight()
    measured = alt.Chart(rows).mark_line(point=True).encode(
        USERS_AXIS, alt.Y("tps:Q", title="answered requests per second (plateau)"),
        alt.Color("pool:N", title=None, sort=alt.SortField("threads_max")), opacity=faded_unless(pick),
        tooltip=["step:N", alt.Tooltip("users:Q", format=","), "threads_max:Q",
                 alt.Tooltip("tps:Q", title="measured /s", format=",.0f"),
                 alt.Tooltip("model_tps:Q", title="model /s", format=",.0f"),
                 alt.Tooltip("server_cpu_cores:Q", title="server cores", format=".2f")],
    ).add_params(pick)
    model = alt.Chart(rows.sort_values("users")).mark_line(strokeDash=[4, 3], color=PALETTE["model"]).encode(
        USERS_AXIS, alt.Y("model_tps:Q"), detail="pool:N",
        tooltip=["step:N", alt.Tooltip("model_tps:Q", title="model /s", format=",.0f")])
    return (model + measured).properties(width=WIDTH, height=280)


def latency_chart(table: pd.DataFrame) -> alt.LayerChart:
    """p50 and p99 (full distribution) against users at threads.max 200 (or the sweep's pool), with the model's mean."""
    rows = sustained(table, full_cpu=True)
    sweep = rows[rows.threads_max == rows.threads_max.mode().iloc[0]] if len(rows) else rows
    long = sweep.melt(id_vars=["step", "users"], value_vars=["p50_ms", "p99_ms", "mean_ms", "model_mean_ms"],
                      var_name="what", value_name="ms")
    long["what"] = long["what"].map({"p50_ms": "p50", "p99_ms": "p99", "mean_ms": "mean", "model_mean_ms": "model: mean"})
    pick = legend_highlight()
    return alt.Chart(long).mark_line(point=True).encode(
        USERS_AXIS, alt.Y("ms:Q", scale=alt.Scale(type="log"), title="latency (ms, log)"),
        alt.Color("what:N", title=None), opacity=faded_unless(pick),
        strokeDash=alt.condition(alt.datum.what == "model: mean", alt.value([4, 3]), alt.value([1, 0])),
        tooltip=["step:N", "what:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("ms:Q", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=260)


def cpu_chart(table: pd.DataFrame) -> alt.Chart:
    """Cores the server and k6 used over each step's plateau, against the server's quota."""
    long = table.melt(id_vars=["step", "cpu_quota"], value_vars=["server_cpu_cores", "k6_cpu_cores"],
                      var_name="process", value_name="cores")
    long["process"] = long["process"].map({"server_cpu_cores": "server", "k6_cpu_cores": "k6"})
    order = list(table["step"])
    bars = alt.Chart(long).mark_bar().encode(
        alt.Y("step:N", sort=order, title=None), alt.X("cores:Q", title="cores used (plateau)"),
        alt.YOffset("process:N"), alt.Color("process:N", title=None),
        tooltip=["step:N", "process:N", alt.Tooltip("cores:Q", format=".2f"), alt.Tooltip("cpu_quota:Q", title="server quota")])
    quota = alt.Chart(table).mark_tick(color=PALETTE["ceiling (model)"], thickness=2).encode(
        alt.Y("step:N", sort=order), alt.X("cpu_quota:Q"), tooltip=["step:N", alt.Tooltip("cpu_quota:Q", title="server quota")])
    return (bars + quota).properties(width=WIDTH - 120, height=18 * len(order))  # a fixed height: yOffset bands inside


def threads_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Tomcat's threads (created, busy at most) and the JVM's live threads against users, per threads.max."""
    rows = sustained(table, full_cpu=True)
    long = rows.melt(id_vars=["step", "users", "threads_max"],
                     value_vars=["current_threads_peak", "busy_threads_peak", "live_threads_peak"],
                     var_name="what", value_name="threads")
    long["what"] = long["what"].map({"current_threads_peak": "Tomcat: threads created", "busy_threads_peak": "Tomcat: busy",
                                     "live_threads_peak": "JVM: live"})
    long["pool"] = "threads.max " + long["threads_max"].map("{:,}".format)
    pick = legend_highlight()
    return alt.Chart(long).mark_line(point=True).encode(
        USERS_AXIS, alt.Y("threads:Q", title="threads (peak)"), alt.Color("what:N", title=None),
        alt.StrokeDash("pool:N", title=None), opacity=faded_unless(pick),
        tooltip=["step:N", "what:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("threads:Q", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=260)


def burst_chart(data: ChapterData, steps: list[str]) -> alt.VConcatChart:
    """The burst steps second by second: p99 latency, and the threads Tomcat had created (Actuator) on the same clock."""
    frames, threads = [], []
    for step in steps:
        latency, series = data.latency[data.latency.step == step], data.series[data.series.step == step]
        frames.append(percentiles(latency.drop(columns="step"), series.drop(columns="step")).assign(step=step))
        t0 = data.steps[step]["recording"]["t0_ms"]
        pool = data.actuator[(data.actuator.step == step) & (data.actuator.metric == "tomcat.threads.current")]
        threads.append(pool.assign(second=(pool["ts_ms"] - t0) / 1000)[["step", "second", "value"]])
    per_second = pd.concat(frames, ignore_index=True)
    pool = pd.concat(threads, ignore_index=True)
    pool = pool[pool.second.between(-1, per_second["second"].max() + 1)]
    pick = legend_highlight()
    x = alt.X("second:Q", title="seconds since the burst", scale=alt.Scale(domain=[-1, float(per_second["second"].max()) + 1]))
    p99 = alt.Chart(per_second).mark_line(point=True).encode(
        x, alt.Y("p99:Q", title="p99 latency (ms)"), alt.Color("step:N", title=None), opacity=faded_unless(pick),
        tooltip=["step:N", "second:Q", alt.Tooltip("p99:Q", format=",.0f"), alt.Tooltip("requests:Q", format=",")],
    ).add_params(pick).properties(width=WIDTH, height=200)
    created = alt.Chart(pool).mark_line(interpolate="step-after").encode(
        x, alt.Y("value:Q", title="threads Tomcat had"), alt.Color("step:N", title=None), opacity=faded_unless(pick),
        tooltip=["step:N", alt.Tooltip("second:Q", format=".1f"), alt.Tooltip("value:Q", title="threads", format=",.0f")],
    ).properties(width=WIDTH, height=140)
    return alt.vconcat(p99, created)


def open_chart(table: pd.DataFrame) -> alt.LayerChart:
    """The open model: latency against the arrival rate, with the plateau throughput the closed loop reached."""
    rows = table[table.kind == OPEN].melt(id_vars=["step", "rate", "tps", "dropped"], value_vars=["p50_ms", "p99_ms"],
                                            var_name="what", value_name="ms")
    rows["what"] = rows["what"].map({"p50_ms": "p50", "p99_ms": "p99"})
    pick = legend_highlight()
    return alt.Chart(rows).mark_line(point=True).encode(
        alt.X("rate:Q", title="arrival rate (requests per second)"), alt.Y("ms:Q", scale=alt.Scale(type="log"), title="latency (ms, log)"),
        alt.Color("what:N", title=None), opacity=faded_unless(pick),
        tooltip=["step:N", "what:N", alt.Tooltip("rate:Q"), alt.Tooltip("tps:Q", title="answered /s", format=",.0f"),
                 alt.Tooltip("dropped:Q", title="dropped"), alt.Tooltip("ms:Q", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=240)
