"""Chapter 3's charts, one message each: answers climbing in waves against the model's staircase, failures by kind
against k6's deadlines, the connections the server held against its ceiling, and one connection's answers.

Every chart aggregates in pandas first (a page stays light) and counts time from each run's first request (the
spike), as the model does. Series, legends and tooltips are named in words; widths are design widths that the book's
renderer fits to the column.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness.book.chapters.ch3 import runs as r
from harness.book.chapters.ch3.runs import DIAL_TIMEOUT, REQUEST_TIMEOUT, Run
from harness.book.charts import ROW_HEIGHT, T_TITLE, WIDTH, faded_unless, legend_highlight, step_header
from harness.book.verdict import INTERRUPTED_TEXT

# A series' name in the legend, and its colour (the book's palette for answered, failed and the model).
SERIES = {
    "answered": "#4c78a8",
    "answered (model)": "#222222",
    "gave up connecting (k6's i/o timeout)": "#b279a2",
    "request timed out (k6's request timeout)": "#e45756",
    "cut off when k6 stopped": "#bab0ac",
    "other failure": "#9d755d",
    "established": "#4c78a8",
    "accept queue": "#f58518",
    "half-open (SYN-RECV)": "#72b7b2",
    "ceiling (max-connections + accept-count + 1)": "#e45756",
    "k6 gives up connecting (30 s)": "#b279a2",
    "k6's request timeout": "#e45756",
    "k6 stops (duration + gracefulStop)": "#888888",
}
KINDS = {DIAL_TIMEOUT: "gave up connecting (k6's i/o timeout)", REQUEST_TIMEOUT: "request timed out (k6's request timeout)",
         INTERRUPTED_TEXT: "cut off when k6 stopped"}


def color(names) -> alt.Color:
    present = [n for n in SERIES if n in set(names)]
    return alt.Color("series:N", title=None, scale=alt.Scale(domain=present, range=[SERIES[n] for n in present]),
                     legend=alt.Legend(orient="top", columns=2, labelLimit=0))


def rows_by(frame: pd.DataFrame, layers, order: list[str], height: int = ROW_HEIGHT, shared_y: bool = True):
    """Small multiples: one row per step, one time axis."""
    whys = {step: r.first(step).meta.get("why", "") for step in order}
    chart = layers.properties(width=WIDTH, height=height).facet(
        row=alt.Row("step:N", sort=order, title=None, header=step_header(whys)), data=frame)
    return chart if shared_y else chart.resolve_scale(y="independent")


def outcome(x: Run) -> pd.Series:
    """Per request: "answered" or its failure in words."""
    return x.requests["kind"].map(lambda k: "answered" if k == "" else KINDS.get(k, "other failure"))


def ends_s(x: Run) -> pd.Series:
    """When each request ended, since the spike; a request k6 cut off ends when k6 stopped."""
    return x.requests["end_s"].fillna(x.stop_s)


def climb(steps, deadlines: bool = False) -> alt.FacetChart:
    """Per step: users answered so far (and failed so far, by kind) over time, against the model's staircase of
    threads.max answers per sleep; with `deadlines`, k6's request timeout and, where it comes first, its stop."""
    curves, limits = [], []
    for step in steps:
        x = r.first(step)
        frame = pd.DataFrame({"series": outcome(x), "t_s": ends_s(x)}).sort_values("t_s")
        frame["requests"] = frame.groupby("series").cumcount() + 1
        model = pd.DataFrame(x.meta["model"]["completions"], columns=["t_ms", "n"])
        staircase = pd.DataFrame({"series": "answered (model)", "t_s": [0.0, *(model["t_ms"] / 1000)],
                                  "requests": [0, *model["n"].cumsum()]})
        curves.append(pd.concat([thin(frame), staircase]).assign(step=step))
        if deadlines:
            limits.append({"step": step, "series": "k6's request timeout", "t_s": x.request_timeout_s})
            stop = x.meta["model"].get("stop_ms", float("inf")) / 1000
            if stop < x.request_timeout_s:
                limits.append({"step": step, "series": "k6 stops (duration + gracefulStop)", "t_s": stop})
    data = pd.concat([pd.concat(curves).assign(kind="curve"), pd.DataFrame(limits).assign(kind="limit")],
                     ignore_index=True)
    pick = legend_highlight()
    lines = alt.Chart().transform_filter(alt.datum.kind == "curve").mark_line(interpolate="step-after").encode(
        x=alt.X("t_s:Q", title=T_TITLE, scale=alt.Scale(domainMin=0)),
        y=alt.Y("requests:Q", title="users so far"),
        color=color(data["series"]), opacity=faded_unless(pick),
        strokeDash=alt.condition(alt.datum.series == "answered (model)", alt.value([5, 3]), alt.value([1, 0])),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("series:N", title="users"),
                 alt.Tooltip("t_s:Q", title="seconds since the first request", format=",.1f"),
                 alt.Tooltip("requests:Q", title="so far", format=",")]).add_params(pick)
    layers = [lines, deadline_rules(data, pick)] if limits else [lines]  # an empty layer warns in Vega
    return rows_by(data, alt.layer(*layers), list(steps), shared_y=False)


def deadline_rules(data: pd.DataFrame, pick: alt.Parameter) -> alt.Chart:
    """k6's deadlines (the rows of kind "limit") as dotted vertical lines."""
    return alt.Chart().transform_filter(alt.datum.kind == "limit").mark_rule(strokeDash=[2, 2]).encode(
        x="t_s:Q", color=color(data["series"]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("series:N", title="deadline"), alt.Tooltip("t_s:Q", title="at second", format=",.0f")])


def thin(frame: pd.DataFrame, step_s: float = 0.1) -> pd.DataFrame:
    """A cumulative count kept at its last value per series and 0.1 s: the curve looks the same, the page is light."""
    frame = frame.assign(bucket=(frame["t_s"] / step_s).round())
    return frame.groupby(["series", "bucket"], as_index=False).agg(t_s=("t_s", "max"), requests=("requests", "max"))\
        .drop(columns="bucket")


def failures(steps, bucket_s: float = 1.0) -> alt.FacetChart:
    """Per step: failed requests per second by how they failed, against k6's dial and request timeouts (own clock)."""
    bars, limits = [], []
    for step in steps:
        x = r.first(step)
        kinds = outcome(x)
        failed = pd.DataFrame({"series": kinds, "t_s": ends_s(x)})[kinds != "answered"]
        failed = failed.assign(t_s=(failed["t_s"] // bucket_s) * bucket_s)
        bars.append(failed.groupby(["series", "t_s"], as_index=False).size().rename(columns={"size": "requests"})
                    .assign(step=step, t_end_s=lambda f: f["t_s"] + bucket_s))
        limits += [{"step": step, "series": "k6 gives up connecting (30 s)", "t_s": 30.0},
                   {"step": step, "series": "k6's request timeout", "t_s": x.request_timeout_s}]
    data = pd.concat([pd.concat(bars).assign(kind="bars"), pd.DataFrame(limits).assign(kind="limit")], ignore_index=True)
    pick = legend_highlight()
    columns = alt.Chart().transform_filter(alt.datum.kind == "bars").mark_bar().encode(
        x=alt.X("t_s:Q", bin="binned", title=T_TITLE, scale=alt.Scale(domain=[0, data["t_s"].max() + 5])),
        x2="t_end_s:Q", y=alt.Y("requests:Q", stack="zero", title="failed per second"),
        color=color(data["series"]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("series:N", title="how it failed"),
                 alt.Tooltip("t_s:Q", title="from second", format=",.0f"),
                 alt.Tooltip("requests:Q", title="requests", format=",")]).add_params(pick)
    return rows_by(data, alt.layer(columns, deadline_rules(data, pick)), list(steps))


SS = {"estab": "established", "accept_queue": "accept queue", "syn_recv": "half-open (SYN-RECV)"}


def connections(steps) -> alt.FacetChart:
    """Per step: the connections the kernel shows on the server's port (ss, every sample) against the ceiling."""
    samples, limits = [], []
    for step in steps:
        x = r.first(step)
        ss = x.ss.assign(t_s=(x.ss["ts_ms"] - x.t0_ms) / 1000)
        samples.append(ss.melt(id_vars=["t_s"], value_vars=list(SS), var_name="column").assign(
            series=lambda f: f["column"].map(SS), step=step).drop(columns="column"))
        limits.append({"step": step, "series": "ceiling (max-connections + accept-count + 1)", "value": x.ceiling})
    data = pd.concat([pd.concat(samples).assign(kind="sample"), pd.DataFrame(limits).assign(kind="limit")],
                     ignore_index=True)
    data = data[(data["kind"] == "limit") | (data["t_s"] >= -1)]
    pick = legend_highlight()
    lines = alt.Chart().transform_filter(alt.datum.kind == "sample").mark_line(interpolate="step-after").encode(
        x=alt.X("t_s:Q", title=T_TITLE, scale=alt.Scale(domainMin=0)), y=alt.Y("value:Q", title="connections"),
        color=color(data["series"]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("series:N", title="connections"),
                 alt.Tooltip("t_s:Q", title="second", format=",.1f"),
                 alt.Tooltip("value:Q", title="how many", format=",")]).add_params(pick)
    rules = alt.Chart().transform_filter(alt.datum.kind == "limit").mark_rule(strokeDash=[6, 4]).encode(
        y="value:Q", color=color(data["series"]), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("series:N", title="limit"),
                 alt.Tooltip("value:Q", title="connections", format=",")])
    return rows_by(data, alt.layer(lines, rules), list(steps))


def answers(steps) -> alt.Chart:
    """One dot per answer of a small step: when it came, one row per step."""
    frames = []
    for step in steps:
        x = r.first(step)
        ok = x.requests[x.requests["ok"]]
        frames.append(pd.DataFrame({"step": step, "t_s": ok["end_s"], "series": "answered"}))
    data = pd.concat(frames, ignore_index=True)
    return alt.Chart(data).mark_point(filled=True, size=70).encode(
        x=alt.X("t_s:Q", title=T_TITLE, scale=alt.Scale(domain=[0, 60])),
        y=alt.Y("step:N", sort=list(steps), title=None, axis=alt.Axis(labelLimit=0)),
        color=color(data["series"]),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("t_s:Q", title="answered at second", format=",.1f")],
    ).properties(width=WIDTH, height=28 * len(steps))
