"""Chapter 4's charts, one message each: throughput against users (the default pool, the model's bound dashed); every
run of the pairs that differ in one setting; latency against users; the CPU each process used; Tomcat's pool against
users; each user's first request in a burst; the pool as Actuator saw it in the burst; the open model.

Widths are design widths (charts.WIDTH): the book's renderer fits each chart to the text column. Every field a tooltip
or legend shows has a title in words.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from harness.book.chapters.ch4.claims import COLD, DEFAULT_800, HALF_400, HALF_800, MORE_800, ONE_400, WARM, column
from harness.book.chapters.ch4.runs import OPEN, sustained
from harness.book.chapters.ch4.values import sweep
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.lab.store import ChapterData

MEASURED, MODEL = "measured", "model"
COLOURS = {MEASURED: "#4c78a8", MODEL: PALETTE["model"]}
DASH = [4, 3]
PER_USER = "one per user (model)"


def log_axis(values, title: str, field: str) -> alt.X:
    """A log x axis over the data's range (not the decades around it)."""
    low, high = float(np.min(values)), float(np.max(values))
    return alt.X(field, title=title, scale=alt.Scale(type="log", domain=[low / 1.25, high * 1.25], nice=False))


def log_y(values, title: str, field: str) -> alt.Y:
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    return alt.Y(field, title=title, scale=alt.Scale(type="log", domain=[low / 1.25, high * 1.25], nice=False))


def coloured(names: list[str], colours: list[str], title: str | None = None) -> alt.Color:
    return alt.Color("series:N", title=title, scale=alt.Scale(domain=names, range=colours))


def dashed_where(series: str) -> dict:
    return alt.condition(alt.datum.series == series, alt.value(DASH), alt.value([1, 0]))


def throughput_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Plateau throughput against users on the default pool (threads.max 200), the model's bound dashed."""
    rows = sweep(table)
    long = pd.concat([rows.assign(series=MEASURED, value=rows["tps"]), rows.assign(series=MODEL, value=rows["model_tps"])])
    pick = legend_highlight()
    return alt.Chart(long).mark_line(point=True).encode(
        log_axis(long["users"], "users (log scale)", "users:Q"),
        alt.Y("value:Q", title="answered requests per second"), coloured([MEASURED, MODEL], [COLOURS[MEASURED], COLOURS[MODEL]]),
        strokeDash=dashed_where(MODEL), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("series:N", title="what"), alt.Tooltip("value:Q", title="requests/s", format=",.0f"),
                 alt.Tooltip("server_cpu_cores:Q", title="server's cores used", format=".2f")],
    ).add_params(pick).properties(width=WIDTH, height=260)


# (panel, the knob that differs, ((step, its value), …)): 800 users on one core; 300 users on half a core; 300 users
# on threads.max 400. The figure's caption says which is which.
PAIRS = (("threads.max, 1 core", "threads.max", ((DEFAULT_800, "200"), (MORE_800, "800"))),
         ("threads.max, ½ core", "threads.max", ((HALF_400, "400"), (HALF_800, "800"))),
         ("cores, 400 threads", "cores", ((HALF_400, "0.5"), (ONE_400, "1"))))


def pairs_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's plateau throughput in the three pairs that differ in one setting."""
    rows = [{"pair": pair, "setting": value, "knob": knob, "step": step, "run": run, "tps": tps}
            for pair, knob, settings in PAIRS for step, value in settings for run, tps in column(runs, step, "tps").items()]
    return pd.DataFrame(rows)


def pairs_chart(runs: pd.DataFrame) -> alt.FacetChart:
    """Every run of each pair (dots) and their mean (a bar); a panel per pair, named by the setting that differs
    (its values on the x axis)."""
    frame = pairs_frame(runs)
    base = alt.Chart().encode(alt.X("setting:N", title=None, sort=None, axis=alt.Axis(labelAngle=0)))
    tooltip = [alt.Tooltip("step:N", title="step"), alt.Tooltip("run:Q", title="run"),
               alt.Tooltip("tps:Q", title="requests/s", format=",.0f")]
    dots = base.mark_circle(size=60, opacity=0.8, color=COLOURS[MEASURED]).encode(
        alt.Y("tps:Q", title="answered requests per second (plateau)"), tooltip=tooltip)
    means = base.mark_tick(thickness=2, size=30, color=COLOURS[MODEL]).encode(
        alt.Y("mean(tps):Q"), tooltip=[alt.Tooltip("knob:N", title="setting"), alt.Tooltip("setting:N", title="value"),
                                       alt.Tooltip("mean(tps):Q", title="mean of the runs, requests/s", format=",.0f")])
    return alt.layer(means, dots, data=frame).properties(width=WIDTH // 3 - 40, height=220).facet(
        column=alt.Column("pair:N", title=None, sort=[p for p, _, _ in PAIRS], header=alt.Header(
            labelFontWeight="normal", labelAlign="center", labelAnchor="middle"))
    ).resolve_scale(x="independent")


def latency_chart(table: pd.DataFrame) -> alt.LayerChart:
    """The default pool's latency against users: median, mean and p99 of every request, and the model's mean."""
    rows = sweep(table)
    names = {"p50_ms": "median", "mean_ms": "mean", "p99_ms": "p99", "model_mean_ms": "mean (model)"}
    long = rows.melt(id_vars=["step", "users"], value_vars=list(names), var_name="series", value_name="ms")
    long["series"] = long["series"].map(names)
    pick = legend_highlight()
    return alt.Chart(long).mark_line(point=True).encode(
        log_axis(long["users"], "users (log scale)", "users:Q"), log_y(long["ms"], "latency, ms (log scale)", "ms:Q"),
        coloured(list(names.values()), ["#72b7b2", COLOURS[MEASURED], "#f58518", COLOURS[MODEL]]),
        strokeDash=dashed_where("mean (model)"), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("series:N", title="what"), alt.Tooltip("ms:Q", title="ms", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=260)


def cpu_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Cores the server and k6 used over each step's plateau, against the server's quota (a tick)."""
    names = {"server_cpu_cores": "server", "k6_cpu_cores": "k6"}
    long = table.melt(id_vars=["step", "cpu_quota"], value_vars=list(names), var_name="series", value_name="cores")
    long["series"] = long["series"].map(names)
    order = list(table["step"])
    tooltip = [alt.Tooltip("step:N", title="step"), alt.Tooltip("series:N", title="process"),
               alt.Tooltip("cores:Q", title="cores used", format=".2f"), alt.Tooltip("cpu_quota:Q", title="server's quota, cores")]
    bars = alt.Chart(long).mark_bar().encode(
        alt.Y("step:N", sort=order, title=None), alt.X("cores:Q", title="cores used over the plateau"),
        alt.YOffset("series:N"), coloured(["server", "k6"], [COLOURS[MEASURED], "#f58518"]), tooltip=tooltip)
    quota = alt.Chart(table).mark_tick(color=PALETTE["ceiling (model)"], thickness=2).encode(
        alt.Y("step:N", sort=order), alt.X("cpu_quota:Q"),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("cpu_quota:Q", title="server's quota, cores")])
    return (bars + quota).properties(width=WIDTH - 120, height=18 * len(order))  # a fixed height: yOffset bands inside


def threads_chart(table: pd.DataFrame) -> alt.LayerChart:
    """The most threads Tomcat's pool had against users, one line per threads.max (pools past the knee, one core),
    beside one thread per user (dashed)."""
    rows = sustained(table)
    rows = rows[(rows.cpu_quota == rows.cpu_quota.max()) & (rows.threads_max > rows.knee)].sort_values("users")
    pools = [f"{t:,}" for t in sorted(rows.threads_max.unique())]
    long = rows.assign(series=rows.threads_max.map("{:,}".format), threads=rows.current_threads_peak)
    diagonal = pd.DataFrame({"users": sorted(rows.users.unique())}).assign(series=PER_USER, step="",
                                                                           threads=lambda t: t.users)
    frame = pd.concat([long, diagonal], ignore_index=True)
    palette = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d"][:len(pools)] + [COLOURS[MODEL]]
    pick = legend_highlight()
    return alt.Chart(frame).mark_line(point=True).encode(
        log_axis(frame["users"], "users (log scale)", "users:Q"),
        log_y(frame["threads"], "threads Tomcat started, at most (log scale)", "threads:Q"),
        coloured(pools + [PER_USER], palette, "threads.max"), strokeDash=dashed_where(PER_USER),
        opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("series:N", title="threads.max"),
                 alt.Tooltip("users:Q", title="users", format=","), alt.Tooltip("threads:Q", title="threads", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=280)


def burst_frame(firsts: pd.DataFrame) -> pd.DataFrame:
    """Per run, the share of users whose first request was answered within each time (its quantiles, 2 % apart)."""
    shares = np.linspace(0, 1, 51)
    rows = [pd.DataFrame({"series": f"min-spare {spare:,}", "run": run, "share": shares,
                          "ms": np.quantile(group["duration_ms"], shares)})
            for (spare, run), group in firsts.groupby(["min_spare", "run"])]
    return pd.concat(rows, ignore_index=True)


def burst_chart(firsts: pd.DataFrame) -> alt.Chart:
    """Each user's first request in a burst: how many were answered within each time, one line per run."""
    frame = burst_frame(firsts)
    names = sorted(frame["series"].unique(), key=lambda s: int(s.split()[-1].replace(",", "")))
    pick = legend_highlight()
    return alt.Chart(frame).mark_line().encode(
        alt.X("ms:Q", title="answer time of the user's first request, ms"),
        alt.Y("share:Q", title="users answered", axis=alt.Axis(format="%")), alt.Detail("run:N"),
        coloured(names, ["#e45756", COLOURS[MEASURED]]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("series:N", title="pool"), alt.Tooltip("run:Q", title="run"),
                 alt.Tooltip("share:Q", title="users answered", format=".0%"),
                 alt.Tooltip("ms:Q", title="within, ms", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=240)


def burst_pool_chart(data: ChapterData) -> alt.Chart:
    """Tomcat's pool during the burst as Actuator sampled it (each sample a dot: no line across the gaps)."""
    frames = []
    for step in (COLD, WARM):
        meta = data.steps[step]
        t0 = meta["recording"]["t0_ms"]
        spare = meta["config"].get("server", {}).get("TOMCAT_MIN_SPARE_THREADS")
        rows = data.actuator[(data.actuator.step == step) & (data.actuator.metric == "tomcat.threads.current")]
        frames.append(pd.DataFrame({"series": f"min-spare {spare:,}", "second": (rows["ts_ms"] - t0) / 1000,
                                    "threads": rows["value"]}))
    frame = pd.concat(frames, ignore_index=True)
    pick = legend_highlight()
    return alt.Chart(frame).mark_circle(size=50).encode(
        alt.X("second:Q", title="seconds since the burst"), alt.Y("threads:Q", title="threads in Tomcat's pool"),
        coloured([f["series"].iloc[0] for f in frames], ["#e45756", COLOURS[MEASURED]]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("series:N", title="pool"), alt.Tooltip("second:Q", title="second", format=".1f"),
                 alt.Tooltip("threads:Q", title="threads", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=180)


def open_chart(table: pd.DataFrame) -> alt.Chart:
    """The open model: median and p99 latency against the arrival rate."""
    names = {"p50_ms": "median", "p99_ms": "p99"}
    rows = table[table.kind == OPEN].melt(id_vars=["step", "rate", "tps", "dropped"], value_vars=list(names),
                                          var_name="series", value_name="ms")
    rows["series"] = rows["series"].map(names)
    pick = legend_highlight()
    return alt.Chart(rows).mark_line(point=True).encode(
        alt.X("rate:Q", title="requests arriving per second"), log_y(rows["ms"], "latency, ms (log scale)", "ms:Q"),
        coloured(list(names.values()), [COLOURS[MEASURED], "#f58518"]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("rate:Q", title="arriving per second", format=","),
                 alt.Tooltip("tps:Q", title="answered per second", format=",.0f"),
                 alt.Tooltip("dropped:Q", title="not sent (no free user)", format=","),
                 alt.Tooltip("series:N", title="what"), alt.Tooltip("ms:Q", title="ms", format=",.0f")],
    ).add_params(pick).properties(width=WIDTH, height=240)
