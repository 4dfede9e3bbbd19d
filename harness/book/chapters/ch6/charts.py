"""Chapter 6's charts: answered requests per second of each configuration beside the article's series, the upstream's
new connections and TIME_WAIT sockets per step, the wall of ports across the switch, and each core's work. Every
field a reader sees has a human title; widths are design widths the shared renderer fits to the column.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness.book.chapters.ch6.article import article_series
from harness.book.chapters.ch6.runs import pick, port_range, ports_frame, ports_of
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.lab.store import ChapterData, answered

SERIES_STEPS = ("alone", "nginx-alone", "proxied", "keepalive-8", "keepalive-256")
NETWORKS = {"loopback": "loopback", "hosts": "three hosts"}
PROCESS_COLORS = {"k6": "#4c78a8", "wrk": "#72b7b2", "nginx": "#f58518", "Netty service": "#54a24b"}


def sustained(table: pd.DataFrame) -> pd.DataFrame:
    """The 200-connection steps (not the one-user ones)."""
    return table[table.users > 1]


def usual(table: pd.DataFrame) -> pd.DataFrame:
    """The sustained steps of the usual length (a longer one has a figure of its own)."""
    rows = sustained(table)
    return rows[rows.duration_s <= rows.duration_s.median()]


def label(row: pd.Series) -> str:
    """A step as a reader names it: its route and, proxied, its keep-alive; the tool when it is wrk."""
    what = row.route if row.route != "nginx → service" else (
        f"proxied, keepalive {row.keepalive:.0f}" if row.keepalive else "proxied, no keep-alive")
    extra = [f"{row.workers:.0f} workers"] if row.workers > 1 else []
    extra += ["Connection: Keep-Alive"] if row.connection_header == "Keep-Alive" else []
    return ("wrk: " if row.tool == "wrk" else "") + what + (f" ({', '.join(extra)})" if extra else "")


def per_second_frame(data: ChapterData, table: pd.DataFrame, steps=SERIES_STEPS) -> pd.DataFrame:
    """Answered requests in each second of the chosen steps, and the article's series (keep-alive on)."""
    rows = []
    for step in steps:
        row = pick(table, step)
        if row is None:
            continue
        outcomes = data.outcomes[(data.outcomes.step == step)]
        counts = outcomes[answered(outcomes)].groupby("second")["requests"].sum()
        rows.append(pd.DataFrame({"second": counts.index + 1, "requests_per_s": counts.to_numpy(),
                                  "series": label(row), "source": "measured here"}))
    article = article_series().assign(series="the article: keepalive 8 (×4 workers)", source="the article")
    return pd.concat([*rows, article], ignore_index=True)


def series_chart(data: ChapterData, table: pd.DataFrame) -> alt.VConcatChart:
    """Per-second throughput of each configuration here with k6 (top) and the article's client output (bottom)."""
    frame = per_second_frame(data, table)
    pick_ = legend_highlight()
    tooltip = [alt.Tooltip("series:N", title="configuration"), alt.Tooltip("second:Q", title="second of the run"),
               alt.Tooltip("requests_per_s:Q", title="answered that second", format=",")]
    here = frame[frame.source == "measured here"]
    top = alt.Chart(here).mark_line(interpolate="step-after").encode(
        alt.X("second:Q", title="second of the run", scale=alt.Scale(domain=[1, int(here["second"].max())], nice=False)),
        alt.Y("requests_per_s:Q", title="answered per second, here"),
        alt.Color("series:N", title=None, sort=list(dict.fromkeys(here["series"])),
                  legend=alt.Legend(orient="top", columns=2)),
        opacity=faded_unless(pick_), tooltip=tooltip,
    ).add_params(pick_).properties(width=WIDTH, height=220)
    theirs = frame[frame.source == "the article"]
    bottom = alt.Chart(theirs).mark_line(interpolate="step-after", color=PALETTE["model"]).encode(
        alt.X("second:Q", title="second of the article's run",
              scale=alt.Scale(domain=[1, int(theirs["second"].max())], nice=False)),
        alt.Y("requests_per_s:Q", title="per second, the article"), tooltip=tooltip,
    ).properties(width=WIDTH, height=120, title=["The article's client, keepalive 8", "(its lines, one a second)"])
    return alt.vconcat(top, bottom).resolve_scale(x="independent", y="independent")


def connections_chart(table: pd.DataFrame) -> alt.VConcatChart:
    """Per proxied 200-connection step: connections the service accepted per second and nginx's TIME_WAIT sockets."""
    rows = usual(table)
    rows = rows[rows.route == "nginx → service"].assign(
        what=lambda t: [label(r) for _, r in t.iterrows()], network=lambda t: t["network"].map(NETWORKS))
    order = list(dict.fromkeys(rows["what"]))
    color = alt.Color("network:N", title=None, legend=alt.Legend(orient="top"))
    what = alt.Y("what:N", title=None, sort=order)
    common = [alt.Tooltip("step:N", title="step"), alt.Tooltip("network:N", title="network"),
              alt.Tooltip("tps:Q", title="answered/s", format=",.0f")]
    opened = alt.Chart(rows).mark_bar().encode(
        alt.X("new_connections_per_s:Q", title=["new upstream connections", "per second"]), what,
        alt.YOffset("network:N"), color,
        tooltip=[*common, alt.Tooltip("new_connections_per_s:Q", title="new connections/s", format=",.0f")],
    ).properties(width=WIDTH - 200, height=24 * max(len(order), 1))
    waiting = alt.Chart(rows).mark_bar().encode(
        alt.X("upstream_time_wait_max:Q", title=["nginx's upstream sockets", "in TIME_WAIT, at most"]), what,
        alt.YOffset("network:N"), color,
        tooltip=[*common, alt.Tooltip("upstream_time_wait_max:Q", title="TIME_WAIT sockets, at most", format=",.0f"),
                 alt.Tooltip("ports:N", title="ephemeral port range")],
    ).properties(width=WIDTH - 200, height=24 * max(len(order), 1))
    return alt.vconcat(opened, waiting)


def cpu_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Per usual sustained step on loopback: the cores each process used, by the core it ran on."""
    rows = usual(table)
    rows = rows[rows.network == "loopback"].assign(what=lambda t: [label(r) for _, r in t.iterrows()])
    long = rows.melt(id_vars=["step", "what"], value_vars=["service_cpu", "nginx_cpu", "k6_cpu", "wrk_cpu"],
                     var_name="process", value_name="cores").dropna()
    long["process"] = long["process"].str.removesuffix("_cpu").replace({"service": "Netty service"})
    long["core"] = long["process"].map(lambda p: "CPU 0: the load generator" if p in ("k6", "wrk")
                                       else "CPU 1: nginx and the service")
    return long[long.cores > 0.005]


def cpu_chart(table: pd.DataFrame) -> alt.FacetChart:
    """Cores each process used over each 200-connection step on loopback, one panel per core: who was full."""
    frame = cpu_frame(table)
    order = list(dict.fromkeys(frame["what"]))
    processes = [p for p in PROCESS_COLORS if p in set(frame["process"])]
    bars = alt.Chart().mark_bar().encode(
        alt.Y("what:N", title=None, sort=order),
        alt.X("cores:Q", title="cores used", stack=True,
              scale=alt.Scale(domain=[0, 1.05], nice=False), axis=alt.Axis(values=[0, 0.5, 1], format=".1f")),
        alt.Color("process:N", title=None, legend=alt.Legend(orient="top"),
                  scale=alt.Scale(domain=processes, range=[PROCESS_COLORS[p] for p in processes])),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("process:N", title="process"),
                 alt.Tooltip("cores:Q", title="cores used", format=".2f")])
    full = alt.Chart().mark_rule(strokeDash=[4, 3], color=PALETTE["model"], aria=False).encode(x=alt.datum(1))
    return alt.layer(bars, full, data=frame).properties(width=170, height=20 * max(len(order), 1)).facet(
        column=alt.Column("core:N", title=None, header=alt.Header(labelFontWeight="normal", labelExpr="split(datum.value, ': ')")))


def ports_chart(data: ChapterData, step: str = "hosts-keepalive-8-long") -> alt.VConcatChart:
    """One long step across the switch on one time axis: requests answered and failed per second, nginx's TIME_WAIT
    sockets to the service against its ephemeral ports, and the error-99 lines it logged each second."""
    frame = ports_frame(data, step)
    ports = ports_of(port_range(data.steps[step]))
    x = alt.X("second:Q", title="second of the run", scale=alt.Scale(domain=[0, int(frame["second"].max())], nice=False))
    panels = []
    for title, whats in (("requests per second", ["answered", "failed (502)"]),
                         ("nginx's TIME_WAIT sockets", ["nginx's TIME_WAIT sockets"]),
                         ("error 99 lines per second", ["connect() failed (99) lines"])):
        rows = frame[frame.what.isin(whats)]
        chart = alt.Chart(rows).mark_line(interpolate="step-after").encode(
            x, alt.Y("value:Q", title=title), alt.Color("what:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=[alt.Tooltip("what:N", title="what"), alt.Tooltip("second:Q", title="second of the run"),
                     alt.Tooltip("value:Q", title="how many", format=",.0f")])
        if title == "nginx's TIME_WAIT sockets":
            limit = pd.DataFrame({"value": [ports], "label": [f"{ports:,} ephemeral ports"]})
            chart = chart + alt.Chart(limit).mark_rule(strokeDash=[4, 3], color=PALETTE["model"]).encode(
                alt.Y("value:Q"), tooltip=[alt.Tooltip("label:N", title="limit")])
        panels.append(chart.properties(width=WIDTH, height=110))
    return alt.vconcat(*panels).resolve_scale(color="independent")
