"""Chapter 2's charts: start curves, start spread, requests issued, memory, redeploys, sampler cost, noise.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness.book.chapters.ch2_lab import SERIES, memory_costs
from harness.book.charts import PALETTE, T_TITLE, WIDTH, _rule, faded_unless, legend_highlight
from harness.lab.store import ChapterData


def start_curves_chart(curves: pd.DataFrame, spike_s: float) -> alt.LayerChart | alt.HConcatChart:
    """Share of users whose first request has started, against seconds since the first: one curve per N, one panel
    per spike mode on a shared time axis (the legend highlights an N in both)."""
    order = sorted(curves["users"].unique())
    pick = alt.selection_point(fields=["users"], bind="legend")
    modes = list(dict.fromkeys(curves["mode"]))
    x_scale = alt.Scale(domain=[0, float(curves["t_s"].max())])
    panels = []
    for mode in modes:
        lines = alt.Chart(curves[curves["mode"] == mode]).mark_line(
            interpolate="step-after", point=alt.OverlayMarkDef(size=12, opacity=0)).encode(
            alt.X("t_s:Q", title="seconds since the first request", scale=x_scale),
            alt.Y("share:Q", axis=alt.Axis(format="%"), title="users started"),
            alt.Color("users:O", sort=order, title="users", scale=alt.Scale(scheme="viridis", domain=order)),
            opacity=faded_unless(pick),
            tooltip=["mode:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("t_s:Q", title="seconds", format=".2f"),
                     alt.Tooltip("share:Q", title="started", format=".0%")],
        )
        lines = lines.add_params(pick) if not panels else lines  # one selection, defined once, drives every panel
        rule = _rule(spike_s, f"{spike_s:g} s: constant-vus stops starting", axis="x")
        width = WIDTH if len(modes) == 1 else (WIDTH - 40) // len(modes)
        panels.append((lines + rule).properties(width=width, height=260, title=mode))
    return panels[0] if len(panels) == 1 else alt.hconcat(*panels)


def spread_chart(starts: pd.DataFrame, spike_s: float, wave_s: float) -> alt.LayerChart:
    """Seconds until the last user's first request, per N and series, against the 1 s and one-wave limits."""
    pick = legend_highlight()
    points = alt.Chart(starts).mark_line(point=True).encode(
        alt.X("users:Q", scale=alt.Scale(type="log"), title="users N (log)"),
        alt.Y("spread_s:Q", title="seconds until the last user started"),
        alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=3)), opacity=faded_unless(pick),
        tooltip=["step:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("spread_s:Q", title="last start s", format=".2f"),
                 alt.Tooltip("p95_s:Q", title="95 % started by s", format=".2f"),
                 alt.Tooltip("started_1s:Q", title="started in 1 s", format=",")],
    ).add_params(pick)
    return (points + _rule(spike_s, f"{spike_s:g} s (constant-vus duration)")
            + _rule(wave_s, f"{wave_s:g} s (one wave in chapter 3)")).properties(width=WIDTH, height=260)


def issued_chart(starts: pd.DataFrame) -> alt.LayerChart:
    """constant-vus for 1 s: requests issued against users asked, beside the per-vu users started within 1 s."""
    cv = starts[starts.series == SERIES["cv-"]]
    hold = starts[starts.series == SERIES["hold-"]]
    frame = pd.concat([
        pd.DataFrame({"users": cv["users"], "requests": cv["issued"], "series": "constant-vus 1 s: issued"}),
        pd.DataFrame({"users": hold["users"], "requests": hold["started_1s"], "series": "per-vu: started within 1 s"}),
        pd.DataFrame({"users": cv["users"], "requests": cv["users"], "series": "asked (one per user)"}),
    ], ignore_index=True)
    pick = legend_highlight()
    return alt.Chart(frame).mark_line(point=True).encode(
        alt.X("users:Q", scale=alt.Scale(type="log"), title="users N (log)"),
        alt.Y("requests:Q", title="requests"),
        alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=3)), opacity=faded_unless(pick),
        strokeDash=alt.condition(alt.datum.series == "asked (one per user)", alt.value([4, 3]), alt.value([1, 0])),
        tooltip=["series:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("requests:Q", format=",")],
    ).add_params(pick).properties(width=WIDTH, height=260)


def memory_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Peak RSS of k6 and of the server against users held; the title gives the per-unit costs drawn from them."""
    costs = memory_costs(table)
    frame = pd.concat([
        pd.DataFrame({"users": table["users"], "mib": table["k6_mib"], "series": "k6 (" + table["series"] + ")"}),
        pd.DataFrame({"users": table["users"], "mib": table["server_mib"], "series": "server, " + table["series"]}),
    ], ignore_index=True)
    pick = legend_highlight()
    points = alt.Chart(frame).mark_line(point=True).encode(
        alt.X("users:Q", title="users held at once"), alt.Y("mib:Q", title="peak memory (RSS, MiB)"),
        alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=3)), opacity=faded_unless(pick),
        tooltip=["series:N", alt.Tooltip("users:Q", format=","), alt.Tooltip("mib:Q", title="MiB", format=",.0f")],
    ).add_params(pick)
    batch = "" if costs["k6_per_batch_user_kib"] != costs["k6_per_batch_user_kib"] else \
        f" ({costs['k6_per_batch_user_kib']:.0f} with http.batch)"
    title = [f"k6 {costs['k6_per_user_kib']:.0f} KiB per user{batch};",  # two lines: one would run past the chart
             f"server {costs['server_per_connection_kib']:.0f} KiB per connection, "
             f"{costs['server_per_thread_kib']:.0f} KiB more with its own thread"]
    return points.properties(width=WIDTH, height=280, title=alt.TitleParams(title, anchor="start"))


def redeploy_chart(data: ChapterData, goal_ms: float) -> alt.LayerChart:
    """Every start's time to healthy, per launch, against the lab's goal."""
    starts = data.startup.assign(launch=data.startup["step"].map(lambda s: data.steps[s].get("launch", "?")))
    points = alt.Chart(starts).mark_tick(thickness=2, size=30).encode(
        alt.X("startup_ms:Q", title="start to healthy (ms)", scale=alt.Scale(zero=True)),
        alt.Y("launch:N", title=None), alt.Color("launch:N", legend=None),
        tooltip=["step:N", "launch:N", alt.Tooltip("start:Q", title="start #"), alt.Tooltip("startup_ms:Q", title="ms", format=",.0f")],
    )
    return (points + _rule(goal_ms, f"goal {goal_ms / 1000:g} s", axis="x")).properties(width=WIDTH, height=120)


def sampler_cost_chart(table: pd.DataFrame, budgets: dict[int, float]) -> alt.LayerChart:
    """The samplers' CPU as a share of one core, per step, against the connections the server held."""
    points = alt.Chart(table).mark_point(filled=True, size=60).encode(
        alt.X("connections:Q", title="established connections (peak)"),
        alt.Y("core_share:Q", axis=alt.Axis(format="%"), title="samplers' CPU (share of one core)"),
        alt.Color("socket_counts:N", title="socket counts"),
        tooltip=["step:N", "socket_counts:N", alt.Tooltip("connections:Q", format=","), alt.Tooltip("core_share:Q", title="of a core", format=".1%"),
                 alt.Tooltip("ss_cpu_s:Q", title="ss + nstat CPU s"), alt.Tooltip("actuator_cpu_s:Q", title="Actuator CPU s"),
                 alt.Tooltip("process_cpu_s:Q", title="/proc CPU s")],
    )
    steps = pd.DataFrame([{"from": lo, "to": hi, "budget": b} for lo, (hi, b) in
                          zip([0, *sorted(budgets)], sorted(budgets.items()), strict=False)])
    budget = alt.Chart(steps).mark_rule(strokeDash=[4, 3], color=PALETTE["ceiling (model)"]).encode(
        x="from:Q", x2="to:Q", y="budget:Q", tooltip=[alt.Tooltip("budget:Q", title="budget", format=".0%")])
    return (points + budget).properties(width=WIDTH, height=260)


def noise_chart(table: pd.DataFrame) -> alt.LayerChart:
    """When each wave of the repeated step finished, run by run, with and without samplers, on the model's times."""
    frame = table.assign(series=table["sampled"].map({True: "sampled run", False: "run without samplers"}))
    model = frame.drop_duplicates("wave")[["wave", "model_s"]].assign(series="model")
    pick = legend_highlight()
    runs = alt.Chart(frame).mark_point(filled=False, size=70).encode(
        alt.X("wave:O", title="wave (threads.max answers each)"), alt.Y("t_s:Q", title=T_TITLE),
        alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=3)), opacity=faded_unless(pick),
        tooltip=["step:N", "wave:O", alt.Tooltip("t_s:Q", title="measured s", format=".2f"),
                 alt.Tooltip("model_s:Q", title="model s", format=".2f")],
    )
    line = alt.Chart(model).mark_line(strokeDash=[4, 3], color=PALETTE["model"]).encode(
        x="wave:O", y="model_s:Q", tooltip=["wave:O", alt.Tooltip("model_s:Q", title="model s", format=".2f")])
    return (line + runs).add_params(pick).properties(width=WIDTH, height=260)
