"""Chapter 7's charts, one message each: small multiples, one panel per server model, and a selector for the user
count where every level would crowd a panel.

- `answers_chart`: answered requests per second, measured beside the model fed the measured arrivals (waves vs one);
- `concurrency_chart`: the requests in service at once (L) of every run judged, against the pool's threads;
- `thread_memory_chart`: chapter 2's server memory against users, with a thread per user and without;
- `limit_chart`: the serving process's connections and open files against its open-files limit.
Sizes are the shared design width (harness.book.charts.WIDTH): the renderer fits them to the column.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness.book.chapters.ch7 import claims, elsewhere
from harness.book.chapters.ch7.runs import (MODELS, arrivals_model_completions, completions, held_connections,
                                            serving_process)
from harness.book.chart_style import THOUSANDS_AXIS
from harness.book.charts import WIDTH
from harness.lab.store import ChapterData, run_of

MEASURED, MODEL = "measured", "model, fed the measured arrivals"
CONNECTIONS, FILES = "connections held", "open files"
SERIES_COLORS = {MEASURED: "#4c78a8", MODEL: "#222222", CONNECTIONS: "#4c78a8", FILES: "#f58518"}
USERS_COLORS = ("#9ecae9", "#4c78a8")  # 10,000 and 15,000 users
HOLD = "a thread per user (hold-N)"
PANEL_HEIGHT = 110


def _users_label(n: int) -> str:
    return f"{n:,} users"


def _users_selector(levels: list[int], default: int) -> alt.Parameter:
    """A drop-down of the user counts the chart can show, starting at `default`."""
    return alt.param(name="users", value=default, bind=alt.binding_select(
        options=levels, labels=[_users_label(n) for n in levels], name="Users: "))


def _series_color(names: list[str]) -> alt.Color:
    return alt.Color("series:N", title=None, scale=alt.Scale(domain=names, range=[SERIES_COLORS[n] for n in names]),
                     legend=alt.Legend(orient="bottom"))


def _by_model(chart: alt.Chart) -> alt.FacetChart:
    return chart.properties(width=WIDTH, height=PANEL_HEIGHT).facet(
        row=alt.Row("model:N", title=None, sort=list(MODELS), header=alt.Header(labelAngle=0, labelAlign="left",
                                                                                 labelAnchor="start", labelOrient="top")))


def answers_frame(data: ChapterData, table: pd.DataFrame) -> pd.DataFrame:
    """Answered per second of each step (first runs), measured and the model's fed the users' measured arrivals."""
    rows = []
    for row in table.itertuples():
        for series, frame in ((MEASURED, completions(data, row.step)), (MODEL, arrivals_model_completions(data, row.step))):
            rows.append(frame.assign(model=str(row.model), users=row.users, series=series))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["second", "answered", "model", "users", "series"])


def answers_chart(data: ChapterData, table: pd.DataFrame, default: int) -> alt.FacetChart:
    frame = answers_frame(data, table)
    pick = _users_selector([int(n) for n in sorted(table.users.unique())], int(default))
    chart = alt.Chart(frame).mark_line(interpolate="step-after").encode(
        alt.X("second:Q", title="second since k6 started"), alt.Y("answered:Q", title="answered"),
        _series_color([MEASURED, MODEL]),
        # the same legend as the colour's, so Vega-Lite merges them into one (a dashed "model" entry)
        alt.StrokeDash("series:N", title=None, scale=alt.Scale(domain=[MEASURED, MODEL], range=[[1, 0], [4, 2]]),
                       legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("model:N", title="server"), alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("series:N", title="line"), alt.Tooltip("second:Q", title="second since k6 started"),
                 alt.Tooltip("answered:Q", title="answered in that second", format=",")],
    ).transform_filter(alt.datum.users == pick)
    return _by_model(chart).add_params(pick)


def concurrency_frame() -> pd.DataFrame:
    """L of every run of the judged steps (the claims' own statistic), by model and users."""
    rows = [{"model": model, "users": run.asked, "run": run_of(run.run_id)[1], "in_service": run.in_service()}
            for model, steps in claims.JUDGED.items() for step in steps for run in claims.runs(step)]
    return pd.DataFrame(rows, columns=["model", "users", "run", "in_service"])


def concurrency_chart(threads: int) -> alt.LayerChart:
    frame = concurrency_frame().assign(label=lambda f: f.users.map(_users_label))
    levels = [_users_label(n) for n in claims.JUDGED_USERS]
    points = alt.Chart(frame).mark_point(filled=True, size=70, opacity=0.8).encode(
        alt.X("in_service:Q", title="requests in service at once (L)", scale=alt.Scale(zero=True)),
        alt.Y("model:N", title=None, sort=list(MODELS)),
        alt.Color("label:N", title=None, scale=alt.Scale(domain=levels, range=list(USERS_COLORS)),
                  legend=alt.Legend(orient="bottom")),
        alt.Shape("label:N", title=None, scale=alt.Scale(domain=levels)),
        tooltip=[alt.Tooltip("model:N", title="server"), alt.Tooltip("run:Q", title="run"),
                 alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("in_service:Q", title="in service at once", format=",.0f")])
    pool = pd.DataFrame({"x": [threads], "label": [f"the pool's {threads:,} threads"]})
    rule = alt.Chart(pool).mark_rule(color="#e45756", strokeDash=[4, 3]).encode(x="x:Q")
    text = alt.Chart(pool).mark_text(align="left", dx=4, dy=-4, color="#e45756", baseline="bottom").encode(
        x="x:Q", y=alt.value(0), text="label:N")
    return (rule + text + points).properties(width=WIDTH, height=150)


def _queue_label(threads: int) -> str:
    return f"{threads:,} threads (queue-N)"


def thread_memory_frame() -> pd.DataFrame:
    memory = elsewhere.thread_memory()
    if memory is None:
        return pd.DataFrame(columns=["series", "users", "mib", "fit_mib"])
    rows = []
    for series, line in ((HOLD, memory.hold), (_queue_label(memory.queue_threads), memory.queue)):
        intercept = pd.Series(line.rss_bytes).mean() - line.slope * pd.Series(line.users).mean()
        rows += [{"series": series, "users": u, "mib": r / 2**20, "fit_mib": (intercept + line.slope * u) / 2**20}
                 for u, r in zip(line.users, line.rss_bytes, strict=True)]
    return pd.DataFrame(rows)


def thread_memory_chart() -> alt.LayerChart:
    frame = thread_memory_frame()
    names = [HOLD, *sorted(set(frame.series) - {HOLD})]
    color = alt.Color("series:N", title=None, scale=alt.Scale(domain=names, range=["#e45756", "#4c78a8"]),
                      legend=alt.Legend(orient="bottom"))
    x = alt.X("users:Q", title="users, each holding one connection", axis=alt.Axis(format=THOUSANDS_AXIS))
    points = alt.Chart(frame).mark_point(filled=True, size=60).encode(
        x, alt.Y("mib:Q", title="server's peak resident memory (MiB)"), color,
        tooltip=[alt.Tooltip("series:N", title="server"), alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("mib:Q", title="peak resident memory (MiB)", format=",.0f")])
    lines = alt.Chart(frame).mark_line(strokeDash=[4, 2]).encode(x, alt.Y("fit_mib:Q"), color)
    return (lines + points).properties(width=WIDTH, height=240)


def limit_frame(data: ChapterData, table: pd.DataFrame) -> pd.DataFrame:
    """The serving process's connections (the kernel's count) and open files over the load, every step."""
    rows = []
    for row in table.itertuples():
        meta = data.steps[row.step]
        t0 = meta["load_started_ms"]
        proc = data.process[(data.process.step == row.step) & (data.process.process == serving_process(meta))]
        held = held_connections(data, row.step)
        for series, ts, value in ((FILES, proc.ts_ms, proc.open_fds), (CONNECTIONS, held.ts_ms, held["value"])):
            rows.append(pd.DataFrame({"s": (ts - t0) / 1000, "value": value, "series": series}).assign(
                model=str(row.model), users=row.users))
    if not rows:
        return pd.DataFrame(columns=["s", "value", "series", "model", "users"])
    frame = pd.concat(rows, ignore_index=True)
    frame = frame[frame.s >= 0].assign(s=lambda f: f.s.round())  # a point a second: the most sampled in it
    return frame.groupby(["model", "users", "series", "s"], as_index=False)["value"].max()


def limit_chart(data: ChapterData, table: pd.DataFrame, default: int) -> alt.FacetChart:
    frame = limit_frame(data, table).assign(limit=int(table.nofile.iloc[0]))
    pick = _users_selector([int(n) for n in sorted(table.users.unique())], int(default))
    lines = alt.Chart().mark_line().encode(
        alt.X("s:Q", title="second of the load"), alt.Y("value:Q", title="held by the server"),
        _series_color([CONNECTIONS, FILES]),
        tooltip=[alt.Tooltip("model:N", title="server"), alt.Tooltip("series:N", title="line"),
                 alt.Tooltip("s:Q", title="second of the load"),
                 alt.Tooltip("value:Q", title="count", format=",")])
    limit = alt.Chart().mark_rule(color="#e45756", strokeDash=[4, 3]).encode(  # one rule per panel
        alt.Y("max(limit):Q"), tooltip=[alt.Tooltip("max(limit):Q", title="open-files limit", format=",")])
    layered = alt.layer(lines, limit, data=frame).transform_filter(alt.datum.users == pick)
    return layered.properties(width=WIDTH, height=PANEL_HEIGHT).facet(
        row=alt.Row("model:N", title=None, sort=list(MODELS), header=alt.Header(labelAngle=0, labelAlign="left",
                                                                                 labelAnchor="start", labelOrient="top"))
    ).add_params(pick)
