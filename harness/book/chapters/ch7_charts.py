"""Chapter 7's charts and tables: answered requests per second of each server model at each user count beside the
model's prediction, the serving process's connections and open files against its limit, memory per connection and
per k6 user, and every step's measurements.
"""
from __future__ import annotations

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch7_steps import (MODELS, arrivals_model_completions, completions, held_connections,
                                             serving_process)
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.book.tables import markdown_table
from harness.lab.store import ChapterData

MODEL_COLORS = {"platform threads": "#4c78a8", "virtual threads": "#e45756", "event loop": "#54a24b"}


def _color() -> alt.Color:
    return alt.Color("model:N", title=None, scale=alt.Scale(domain=list(MODELS), range=list(MODEL_COLORS.values())),
                     legend=alt.Legend(orient="bottom"))


def completions_frame(data: ChapterData, table: pd.DataFrame) -> pd.DataFrame:
    """Answered per second of each step, measured, and the model's fed the users' measured arrivals."""
    rows = []
    for row in table.itertuples():
        rows.append(completions(data, row.step).assign(model=row.model, users=row.users, source="measured"))
        rows.append(arrivals_model_completions(data, row.step).assign(model=row.model, users=row.users,
                                                                      source="model"))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["second", "answered", "model", "users", "source"])


def ch7_completions_chart(data: ChapterData, table: pd.DataFrame) -> alt.FacetChart:
    frame = completions_frame(data, table)
    frame["users"] = frame["users"].map(lambda n: f"{n:,} users")
    pick_ = legend_highlight()
    base = alt.Chart(frame).encode(
        alt.X("second:Q", title="second since k6 started"), _color(), opacity=faded_unless(pick_),
        tooltip=["model:N", "source:N", "second:Q", alt.Tooltip("answered:Q", format=",")])
    measured = base.transform_filter(alt.datum.source == "measured").mark_line(interpolate="step-after").encode(
        alt.Y("answered:Q", title="answered in that second"))
    model = base.transform_filter(alt.datum.source == "model").mark_line(
        interpolate="step-after", strokeDash=[3, 2], strokeWidth=1).encode(alt.Y("answered:Q"))
    order = [f"{n:,} users" for n in sorted(table.users.unique())]
    return alt.layer(measured, model).add_params(pick_).properties(width=WIDTH - 200, height=110).facet(
        row=alt.Row("users:N", title=None, sort=order)).resolve_scale(y="independent")


def limit_frame(data: ChapterData, table: pd.DataFrame, users: int) -> pd.DataFrame:
    """The serving process's connections and open files over the load of each model's step at `users`."""
    rows = []
    for row in table[table.users == users].itertuples():
        meta = data.steps[row.step]
        name = serving_process(meta)
        t0 = meta["load_started_ms"]
        proc = data.process[(data.process.step == row.step) & (data.process.process == name)]
        rows.append(pd.DataFrame({"s": (proc.ts_ms - t0) / 1000, "value": proc.open_fds, "series": "open files"}
                                 ).assign(model=row.model))
        held = held_connections(data, row.step)
        rows.append(pd.DataFrame({"s": (held.ts_ms - t0) / 1000, "value": held["value"], "series": "connections"}
                                 ).assign(model=row.model))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["s", "value", "series", "model"])


def ch7_limit_chart(data: ChapterData, table: pd.DataFrame, users: int) -> alt.LayerChart:
    frame = limit_frame(data, table, users)
    frame = frame[frame.s >= 0]
    nofile = int(table.nofile.iloc[0])
    lines = alt.Chart(frame).mark_line().encode(
        alt.X("s:Q", title="second of the load"), alt.Y("value:Q", title="held by the serving process"), _color(),
        alt.StrokeDash("series:N", title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["model:N", "series:N", alt.Tooltip("s:Q", format=".1f"), alt.Tooltip("value:Q", format=",")])
    limit = alt.Chart(pd.DataFrame({"y": [nofile], "label": [f"open-files limit {nofile:,}"]})).encode(y="y:Q")
    rule = limit.mark_rule(color=PALETTE["model"], strokeDash=[4, 3]) + limit.mark_text(
        align="left", dx=4, dy=-6, color=PALETTE["model"]).encode(x=alt.value(0), text="label:N")
    return (lines + rule).properties(width=WIDTH - 140, height=240)


def memory_frame(table: pd.DataFrame) -> pd.DataFrame:
    server = table.assign(what="server, per connection", kib=table.per_connection_bytes / 1024)
    client = table.assign(what="k6, per user", kib=table.per_user_k6_bytes / 1024)
    return pd.concat([server, client])[["model", "users", "what", "kib"]].dropna()


def ch7_memory_chart(table: pd.DataFrame) -> alt.FacetChart:
    frame = memory_frame(table)
    return alt.Chart(frame).mark_line(point=True).encode(
        alt.X("users:Q", title="users", axis=alt.Axis(format="~s")), alt.Y("kib:Q", title="KiB"), _color(),
        tooltip=["model:N", "what:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("kib:Q", format=",.0f")],
    ).properties(width=(WIDTH - 200) // 2, height=200).facet(column=alt.Column("what:N", title=None, sort=["server, per connection", "k6, per user"])).resolve_scale(
        y="independent")


SHORT = {"platform threads": "platform", "virtual threads": "virtual", "event loop": "event loop"}
COUNT = "{:,.0f}"


def ch7_steps_table(table: pd.DataFrame) -> Markdown:
    """Every step from the client's side: what came back against the model's two predictions."""
    frame = pd.DataFrame({
        "users": table.users, "server": table.model.astype(str).map(SHORT), "k6 processes": table.processes,
        "answered": table.succeeded, "model, all at once": table.predicted_ok,
        "model, measured arrivals": table.arrivals_ok, "never connected": table.dial_timeouts,
        "no answer in time": table.request_timeouts, "other errors": table.other_errors,
        "last answer (s)": table.last_ok_s})
    counts = ["users", "answered", "model, all at once", "model, measured arrivals", "never connected",
              "no answer in time", "other errors"]
    return Markdown(markdown_table(frame, dict.fromkeys(counts, COUNT) | {"last answer (s)": "{:.0f}"}))


def ch7_server_table(table: pd.DataFrame) -> Markdown:
    """Every step from the server's side: what it held, its files and threads, and the limit the data names."""
    frame = pd.DataFrame({
        "users": table.users, "server": table.model.astype(str).map(SHORT),
        "most connections": table.peak_connections, "most in accept queue": table.accept_queue_max,
        "most open files": table.peak_open_files, "\"Too many open files\" logged": table.emfile_logged, "JVM threads": table.peak_threads,
        "MiB at peak": table.rss_peak / 2**20, "limit": table.limit})
    counts = ["users", "most connections", "most in accept queue", "most open files", "\"Too many open files\" logged", "JVM threads",
              "MiB at peak"]
    return Markdown(markdown_table(frame, dict.fromkeys(counts, COUNT)))
