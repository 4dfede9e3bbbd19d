"""Chapter 6's charts and tables: answered requests per second of each configuration beside the article's series, the
upstream's new connections and TIME_WAIT sockets per step, every process's CPU, the steps' measurements, and the
handshake's cost measured here and modelled at the article's latencies.
"""
from __future__ import annotations

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch6_steps import pick, port_range, ports_frame, ports_of
from harness.book.chapters.ch6_verdicts import article_numbers, article_series
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.book.tables import markdown_table
from harness.lab.store import ChapterData, answered
from harness.models import proxy

SERIES_STEPS = ("alone", "nginx-alone", "proxied", "keepalive-8", "keepalive-256")
MODEL_RTTS_MS = (1.0, 10.0)  # the round trips the handshake is modelled at: a data centre's and the article's example


def sustained(table: pd.DataFrame) -> pd.DataFrame:
    """The 200-connection steps (not the one-user ones)."""
    return table[table.users > 1]


def usual(table: pd.DataFrame) -> pd.DataFrame:
    """The sustained steps of the usual length (a longer one has a figure of its own)."""
    rows = sustained(table)
    return rows[rows.duration_s <= rows.duration_s.median()]


def label(row: pd.Series) -> str:
    """A step as a reader names it: its route and, proxied, its keep-alive."""
    what = row.route if row.route != "nginx → service" else (
        f"proxied, keepalive {row.keepalive:.0f}" if row.keepalive else "proxied, no keep-alive")
    extra = [f"{row.workers:.0f} workers"] if row.workers > 1 else []
    extra += [f"Connection \"{row.connection_header}\""] if row.connection_header == "Keep-Alive" else []
    extra += ["wrk"] if row.tool == "wrk" else []
    return what + (f" ({', '.join(extra)})" if extra else "")


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
    """Per-second throughput of each configuration here (top) and the article's client output (bottom)."""
    frame = per_second_frame(data, table)
    pick_ = legend_highlight()
    x = alt.X("second:Q", title="second of the run")
    here = alt.Chart(frame[frame.source == "measured here"]).mark_line(interpolate="step-after").encode(
        x, alt.Y("requests_per_s:Q", title="answered per second, here"),
        alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=300)),
        opacity=faded_unless(pick_), tooltip=["series:N", "second:Q", alt.Tooltip("requests_per_s:Q", format=",")],
    ).add_params(pick_).properties(width=WIDTH - 90, height=220)
    theirs = alt.Chart(frame[frame.source == "the article"]).mark_line(
        interpolate="step-after", color=PALETTE["model"]).encode(
        x, alt.Y("requests_per_s:Q", title="per second, the article"),
        tooltip=["series:N", "second:Q", alt.Tooltip("requests_per_s:Q", format=",")],
    ).properties(width=WIDTH - 90, height=120, title="the article's client, keepalive 8 (its lines, one a second)")
    return alt.vconcat(here, theirs).resolve_scale(x="independent", y="independent")


def connections_chart(table: pd.DataFrame) -> alt.VConcatChart:
    """Per proxied 200-connection step: connections the service accepted per second and nginx's TIME_WAIT sockets."""
    rows = usual(table)
    rows = rows[rows.route == "nginx → service"].assign(
        what=lambda t: [label(r) for _, r in t.iterrows()], network=lambda t: t["network"].map(
            {"loopback": "loopback", "hosts": "three hosts"}))
    order = list(dict.fromkeys(rows["what"]))
    color = alt.Color("network:N", title=None, legend=alt.Legend(orient="bottom"))
    height = 22 * max(len(order), 1)
    axis = alt.Axis(labelLimit=320)
    opened = alt.Chart(rows).mark_bar().encode(
        alt.X("new_connections_per_s:Q", title="new upstream connections per second"),
        alt.Y("what:N", title=None, sort=order, axis=axis), alt.YOffset("network:N"), color,
        tooltip=["step:N", alt.Tooltip("new_connections_per_s:Q", format=",.0f"), alt.Tooltip("tps:Q", format=",.0f")],
    ).properties(width=WIDTH - 300, height=height)
    waiting = alt.Chart(rows).mark_bar().encode(
        alt.X("upstream_time_wait_max:Q", title="nginx's upstream sockets in TIME_WAIT, most"),
        alt.Y("what:N", title=None, sort=order, axis=axis), alt.YOffset("network:N"), color,
        tooltip=["step:N", alt.Tooltip("upstream_time_wait_max:Q", format=",.0f"), "ports:N"],
    ).properties(width=WIDTH - 300, height=height)
    return alt.vconcat(opened, waiting)


def cpu_chart(table: pd.DataFrame) -> alt.Chart:
    """Cores each process used over each 200-connection step: who was busy (CPU 0: the load tool; CPU 1: the rest)."""
    rows = usual(table).assign(what=lambda t: [f"{label(r)}, {r.network}" for _, r in t.iterrows()])
    long = rows.melt(id_vars=["step", "what"], value_vars=["service_cpu", "nginx_cpu", "k6_cpu", "wrk_cpu"],
                     var_name="process", value_name="cores").dropna()
    long["process"] = long["process"].str.removesuffix("_cpu").replace({"service": "Netty service"})
    return alt.Chart(long[long.cores > 0.005]).mark_bar().encode(
        alt.Y("what:N", title=None, sort=list(rows["what"]), axis=alt.Axis(labelLimit=300)),
        alt.X("cores:Q", title="cores used", stack=True),
        alt.Color("process:N", title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["step:N", "process:N", alt.Tooltip("cores:Q", format=".2f")],
    ).properties(width=WIDTH - 330, height=24 * len(rows))


def steps_summary(table: pd.DataFrame) -> Markdown:
    """Every 200-connection step: throughput, latency from the full distribution, new connections, CPU per request."""
    rows = sustained(table)
    shown = pd.DataFrame({
        "step": rows["step"], "what": [label(r) for _, r in rows.iterrows()], "network": rows["network"],
        "answered /s": rows["tps"].map("{:,.0f}".format), "p50 ms": rows["p50_ms"].map("{:.1f}".format),
        "p99 ms": rows["p99_ms"].map("{:.1f}".format), "failed": rows["errors"].map("{:,.0f}".format),
        "new conns /s": rows["new_connections_per_s"].map(lambda v: "" if v != v else f"{v:,.0f}"),
        "service CPU ms / req": rows["service_cpu_ms"].map(lambda v: "" if v != v else f"{v:.3f}"),
        "nginx CPU ms / req": rows["nginx_cpu_ms"].map(lambda v: "" if v != v or v == 0 else f"{v:.3f}")})
    return Markdown(markdown_table(shown))


def handshake_table(table: pd.DataFrame) -> Markdown:
    """One user's request with and without a new connection, measured on loopback and across the switch, and the
    model's per-request time at MODEL_RTTS_MS (one round trip more for a new connection) beside the article's."""
    rows = []
    for network, prefix in (("loopback", ""), ("three hosts", "hosts-")):
        new, kept = pick(table, f"{prefix}connect"), pick(table, f"{prefix}reuse")
        if new is None or kept is None:
            continue
        rows.append({"where": f"measured, {network}", "connect ms": f"{new.connect_ms:.3f}",
                     "kept connection ms": f"{kept.request_ms:.2f}", "new connection ms": f"{new.request_ms:.2f}",
                     "a new connection adds ms": f"{new.request_ms - kept.request_ms:.2f}"})
    for rtt in MODEL_RTTS_MS:
        kept_ms = proxy.per_request_ms(0, rtt, 0, new_connection=False)  # one leg: client to service, no CPU
        new_ms = proxy.per_request_ms(0, rtt, 0)
        rows.append({"where": f"model, {rtt:g} ms round trip", "connect ms": f"{proxy.handshake_ms(rtt):g}",
                     "kept connection ms": f"{kept_ms:g}", "new connection ms": f"{new_ms:g}",
                     "a new connection adds ms": f"{new_ms - kept_ms:g}"})
    latency = article_numbers()["example_latency"]
    rows.append({"where": f"the article, {latency:g} ms latency", "connect ms": "",
                 "kept connection ms": "", "new connection ms": "",
                 "a new connection adds ms": f"{proxy.article_handshake_ms(latency):g}"})
    return Markdown(markdown_table(pd.DataFrame(rows)))


def ports_chart(data: ChapterData, step: str = "hosts-keepalive-8-long") -> alt.VConcatChart:
    """One long step across the switch on one time axis: requests answered and failed per second, nginx's TIME_WAIT
    sockets to the service against its ephemeral ports, and the error-99 lines it logged each second."""
    frame = ports_frame(data, step)
    ports = ports_of(port_range(data.steps[step]))
    x = alt.X("second:Q", title="second of the run")
    panels = []
    for title, whats in (("requests per second", ["answered", "failed (502)"]),
                         ("nginx's TIME_WAIT sockets", ["nginx's TIME_WAIT sockets"]),
                         ("error 99 lines per second", ["connect() failed (99) lines"])):
        rows = frame[frame.what.isin(whats)]
        chart = alt.Chart(rows).mark_line(interpolate="step-after").encode(
            x, alt.Y("value:Q", title=title), alt.Color("what:N", title=None, legend=alt.Legend(orient="right")),
            tooltip=["what:N", "second:Q", alt.Tooltip("value:Q", format=",.0f")])
        if title == "nginx's TIME_WAIT sockets":
            limit = pd.DataFrame({"value": [ports], "label": [f"{ports:,} ephemeral ports"]})
            chart = chart + alt.Chart(limit).mark_rule(strokeDash=[4, 3], color=PALETTE["model"]).encode(
                alt.Y("value:Q"), tooltip=["label:N"])
        panels.append(chart.properties(width=WIDTH - 220, height=110))
    return alt.vconcat(*panels).resolve_scale(color="independent")

