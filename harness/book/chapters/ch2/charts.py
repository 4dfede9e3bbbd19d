"""Chapter 2's charts: how k6 starts users, what constant-vus sends, memory, redeploys, the samplers, the repeats.
Every series and tooltip field is named in words; widths are design widths the book's renderer fits to the page.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness.book.chapters.ch2.lab import (
    AGAIN,
    BATCH,
    CV,
    HOLD,
    QUEUE,
    SERIES,
    SPIKE_MODES,
    SPIKE_S,
    issued_runs,
    memory_table,
    noise_table,
    sampler_cost_table,
    start_curves,
    start_table,
)
from harness.book.chart_style import THOUSANDS_AXIS
from harness.book.charts import PALETTE, T_TITLE, WIDTH, _rule, faded_unless, legend_highlight
from harness.lab.store import ChapterData

# One colour per way of sending a spike, the same in every chart of the chapter.
SERIES_COLORS = {SERIES[HOLD]: "#4c78a8", SERIES[BATCH]: "#f58518", SERIES[QUEUE]: "#54a24b", SERIES[CV]: "#b279a2"}
MODE_COLORS = {SPIKE_MODES[HOLD]: SERIES_COLORS[SERIES[HOLD]], SPIKE_MODES[BATCH]: SERIES_COLORS[SERIES[BATCH]]}
USERS_AXIS = alt.Axis(format=THOUSANDS_AXIS, values=[300, 1000, 3000, 6000, 10000, 15000])


def colors(names: dict[str, str], title: str | None = None, field: str = "series") -> alt.Color:
    return alt.Color(f"{field}:N", title=title, scale=alt.Scale(domain=list(names), range=list(names.values())),
                     legend=alt.Legend(orient="bottom", columns=2))


def users_scale(users: pd.Series) -> alt.Scale:
    """A log scale over the users present (not the decades around them)."""
    return alt.Scale(type="log", domain=[float(users.min()) / 1.25, float(users.max()) * 1.25], nice=False)


def start_curves_chart(data: ChapterData) -> alt.FacetChart:
    """Share of users whose first request has started against seconds since the first: one panel per N, both ways
    of starting a spike in each, on one time axis."""
    curves = start_curves(data)
    pick = alt.selection_point(fields=["mode"], bind="legend")
    lines = alt.Chart().mark_line(interpolate="step-after").encode(
        alt.X("t_s:Q", title="seconds since the first request", scale=alt.Scale(domain=[0, float(curves.t_s.max())])),
        alt.Y("share:Q", axis=alt.Axis(format="%", values=[0, 0.5, 1]), title="users started"),
        colors(MODE_COLORS, "how k6 starts the users", "mode"), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("mode:N", title="started"), alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("t_s:Q", title="seconds since the first", format=".2f"),
                 alt.Tooltip("share:Q", title="share started", format=".0%")]).add_params(pick)
    second = alt.Chart().mark_rule(strokeDash=[4, 3], color=PALETTE["ceiling (model)"]).encode(
        x=alt.datum(SPIKE_S), tooltip=[alt.Tooltip("limit:N", title="limit")]).transform_calculate(
        limit=f"'{SPIKE_S:g} s: constant-vus stops starting users'")
    return alt.layer(lines, second, data=curves).properties(width=(WIDTH - 60) // 3, height=110).facet(
        facet=alt.Facet("users:O", title=None, header=alt.Header(labelExpr="format(datum.value, ',') + ' users'")),
        columns=3)


def spread_chart(data: ChapterData, wave_s: float) -> alt.LayerChart:
    """Seconds until the last user's first request, per N and way of sending, against 1 s and one wave."""
    starts = start_table(data)
    pick = legend_highlight()
    lines = alt.Chart(starts).mark_line(point=True).encode(
        alt.X("users:Q", scale=users_scale(starts.users), axis=USERS_AXIS, title="users N (log scale)"),
        alt.Y("spread_s:Q", title="seconds until the last user started"),
        colors(SERIES_COLORS), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("series:N", title="sent"), alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("spread_s:Q", title="last user started after (s)", format=".2f"),
                 alt.Tooltip("p95_s:Q", title="95% started after (s)", format=".2f"),
                 alt.Tooltip("started_1s:Q", title="started within 1 s", format=",")]).add_params(pick)
    return (lines + _rule(SPIKE_S, f"{SPIKE_S:g} s: constant-vus's duration")
            + _rule(wave_s, f"{wave_s:g} s: one wave of the headline step")).properties(width=WIDTH, height=240)


def issued_chart(data: ChapterData) -> alt.LayerChart:
    """constant-vus for 1 s: requests issued (every run) against users asked, beside one VU per user's users started
    within 1 s."""
    starts = start_table(data)
    cv, hold = starts[starts.step.str.startswith(CV)], starts[starts.step.str.startswith(HOLD)]
    again = issued_runs(data)
    names = {"constant-vus for 1 s: requests issued": SERIES_COLORS[SERIES[CV]],
             "one VU per user: users started within 1 s": SERIES_COLORS[SERIES[HOLD]],
             "asked (one request per user)": "#999999"}
    series = list(names)
    frame = pd.concat([
        pd.DataFrame({"users": cv.users, "requests": cv.issued, "series": series[0], "run": cv.step}),
        pd.DataFrame({"users": hold.users, "requests": hold.started_1s, "series": series[1], "run": hold.step}),
        pd.DataFrame({"users": cv.users, "requests": cv.users, "series": series[2], "run": "–"}),
    ], ignore_index=True)
    pick = legend_highlight()
    x = alt.X("users:Q", scale=users_scale(frame.users), axis=USERS_AXIS, title="users N (log scale)")
    tooltip = [alt.Tooltip("series:N", title="line"), alt.Tooltip("run:N", title="step"),
               alt.Tooltip("users:Q", title="users", format=","), alt.Tooltip("requests:Q", title="count", format=",")]
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x, alt.Y("requests:Q", title="requests or users", axis=alt.Axis(format=THOUSANDS_AXIS)), colors(names),
        opacity=faded_unless(pick), tooltip=tooltip,
        strokeDash=alt.condition(alt.datum.series == series[2], alt.value([4, 3]), alt.value([1, 0]))).add_params(pick)
    repeats = alt.Chart(again[again.run.str.startswith(AGAIN)].assign(series=series[0], requests=lambda f: f.issued)
                        ).mark_point(shape="diamond", size=60, filled=True, color=names[series[0]]).encode(
        x, alt.Y("requests:Q"), opacity=faded_unless(pick), tooltip=tooltip)
    return (lines + repeats).properties(width=WIDTH, height=240)


def memory_chart(data: ChapterData) -> alt.FacetChart:
    """Peak RSS against users held: one panel for k6, one for the server, a line per way of sending."""
    table = memory_table(data)
    frame = pd.concat([table.assign(process="k6", mib=table.k6_mib),
                       table.assign(process="the server", mib=table.server_mib)], ignore_index=True)
    pick = legend_highlight()
    lines = alt.Chart().mark_line(point=True).encode(
        alt.X("users:Q", title="users held at once", axis=alt.Axis(format=THOUSANDS_AXIS)),
        alt.Y("mib:Q", title="peak memory (RSS, MiB)", axis=alt.Axis(format=THOUSANDS_AXIS)),
        colors({name: SERIES_COLORS[name] for name in (SERIES[HOLD], SERIES[BATCH], SERIES[QUEUE])}),
        opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("process:N", title="process"), alt.Tooltip("series:N", title="sent"),
                 alt.Tooltip("users:Q", title="users", format=","),
                 alt.Tooltip("mib:Q", title="peak memory (MiB)", format=",.0f"),
                 alt.Tooltip("threads:Q", title="server threads", format=",")]).add_params(pick)
    return alt.layer(lines, data=frame).properties(width=(WIDTH - 40) // 2, height=220).facet(
        column=alt.Column("process:N", title=None))


def redeploy_chart(data: ChapterData, goal_ms: float) -> alt.LayerChart:
    """Every start's time to healthy, per way of launching, against the lab's goal."""
    launches = {"cds": "with the CDS archive", "jar": "from the plain jar"}
    starts = data.startup.assign(launch=data.startup.step.map(
        lambda s: launches.get(data.steps[s].get("launch", "?"), data.steps[s].get("launch", "?"))))
    ticks = alt.Chart(starts).mark_tick(thickness=2, size=24).encode(
        alt.X("startup_ms:Q", title="start to healthy (ms)", scale=alt.Scale(zero=True), axis=alt.Axis(format=THOUSANDS_AXIS)),
        alt.Y("launch:N", title=None), alt.Color("launch:N", legend=None),
        tooltip=[alt.Tooltip("launch:N", title="launched"), alt.Tooltip("start:Q", title="start"),
                 alt.Tooltip("startup_ms:Q", title="start to healthy (ms)", format=",.0f")])
    return (ticks + _rule(goal_ms, f"goal {goal_ms / 1000:g} s", axis="x")).properties(width=WIDTH, height=110)


def sampler_cost_chart(data: ChapterData, budgets: dict[int, float]) -> alt.LayerChart:
    """The samplers' CPU as a share of one core, per step, against the connections held; the budget as dashes."""
    table = sampler_cost_table(data)
    points = alt.Chart(table).mark_point(filled=True, size=50).encode(
        alt.X("connections:Q", title="established connections (peak)", axis=alt.Axis(format=THOUSANDS_AXIS)),
        alt.Y("core_share:Q", axis=alt.Axis(format="%"), title="samplers' CPU (share of one core)"),
        alt.Color("socket_counts:N", title="sockets counted", legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("connections:Q", title="connections", format=","),
                 alt.Tooltip("core_share:Q", title="share of one core", format=".1%"),
                 alt.Tooltip("ss_cpu_s:Q", title="sockets and nstat (CPU s)", format=".2f"),
                 alt.Tooltip("actuator_cpu_s:Q", title="Actuator (CPU s)", format=".2f"),
                 alt.Tooltip("process_cpu_s:Q", title="/proc (CPU s)", format=".2f")])
    steps = pd.DataFrame([{"from": lo, "to": hi, "budget": b / 100} for lo, (hi, b) in
                          zip([0, *sorted(budgets)], sorted(budgets.items()), strict=False)])
    budget = alt.Chart(steps).mark_rule(strokeDash=[4, 3], color=PALETTE["ceiling (model)"]).encode(
        x="from:Q", x2="to:Q", y="budget:Q", tooltip=[alt.Tooltip("budget:Q", title="budget (share of a core)",
                                                                  format=".0%")])
    return (points + budget).properties(width=WIDTH, height=220)


def noise_chart(data: ChapterData) -> alt.LayerChart:
    """When each wave of the repeated step finished, run by run, with and without samplers, on the model's times."""
    table = noise_table(data)
    names = {"with samplers": "#4c78a8", "without samplers": "#f58518"}
    frame = table.assign(series=table.sampled.map({True: "with samplers", False: "without samplers"}))
    model = frame.drop_duplicates("wave")[["wave", "model_s"]]
    pick = legend_highlight()
    runs = alt.Chart(frame).mark_point(filled=False, size=60).encode(
        alt.X("wave:O", title="wave (threads.max answers each)", axis=alt.Axis(labelAngle=0)),
        alt.Y("t_s:Q", title=T_TITLE), colors(names), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("run:N", title="run"), alt.Tooltip("series:N", title="samplers"),
                 alt.Tooltip("wave:O", title="wave"), alt.Tooltip("t_s:Q", title="measured (s)", format=".2f"),
                 alt.Tooltip("model_s:Q", title="model (s)", format=".2f")]).add_params(pick)
    line = alt.Chart(model).mark_line(strokeDash=[4, 3], color=PALETTE["model"]).encode(
        x="wave:O", y="model_s:Q", tooltip=[alt.Tooltip("wave:O", title="wave"),
                                            alt.Tooltip("model_s:Q", title="model (s)", format=".2f")])
    return (line + runs).properties(width=WIDTH, height=240)
