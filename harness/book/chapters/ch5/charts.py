"""Chapter 5's charts, each with one message: a step's timeline (users, answers, latency, the pool, on one time
axis), the single APIs against the article's, the pool sizes (one panel per database and open-in-view setting, every
run a point, the model's bound beside them), Tomcat's knobs and the GC pauses (every run a point, the mean a tick),
and the final settings offered the goal's rate. Every tooltip and legend names its fields in words.
"""
from __future__ import annotations

import warnings

import altair as alt
import pandas as pd

from harness.book.chapters.ch5.runs import API, DB, SCENARIO
from harness.book.chapters.ch5.values import Loads, stream_bound
from harness.book.chapters.ch5.claims import (ACCEPT_STEPS, CONNECTION_STEPS, FINAL_STEP, THREAD_STEPS,
                                                article_apis, article_runs)
from harness.book.charts import PALETTE, WIDTH, faded_unless, legend_highlight
from harness.lab import histogram
from harness.lab.store import ChapterData, answered

PANEL_HEIGHT = 110
RUN, MEAN, MODEL = "each run", "mean of the runs", "every stream served (model)"
SERIES = alt.Scale(domain=[RUN, MEAN, MODEL], range=[PALETTE["k6"], PALETTE["ab"], PALETTE["model"]])
TIMELINE = {"hikaricp.connections.active": "connections in use", "hikaricp.connections.pending": "waiting for a connection",
            "pg.activity.active": "database sessions at work"}


def timeline_frame(data: ChapterData, step: str) -> pd.DataFrame:
    """Per second of one step's first run, long format (second, panel, series, value): users; answered; latency p50
    and p90; HikariCP's connections in use and requests waiting, the database's working sessions (last sample of
    each second)."""
    t0 = data.steps[step]["recording"]["t0_ms"]
    outcomes = data.outcomes[data.outcomes.step == step]
    seconds = range(int(outcomes["second"].max()) + 1) if len(outcomes) else range(0)
    per_second = outcomes[answered(outcomes)].groupby("second")["requests"].sum().reindex(seconds, fill_value=0)
    rows = [per_second.rename("answered").to_frame().assign(panel="answered per second")]  # a second without: 0
    latency = data.latency[data.latency.step == step]
    if len(latency):
        q = histogram.quantiles(latency).set_index("second")
        rows.append(q[["p50", "p90"]].rename(columns={"p50": "median", "p90": "90th percentile"})
                    .assign(panel="latency (ms, log)"))
    series = data.series[data.series.step == step].set_index("second")
    rows.append(series[["vus"]].rename(columns={"vus": "users"}).assign(panel="users"))
    samples = pd.concat([data.actuator[data.actuator.step == step], data.service(DB, step)], ignore_index=True)
    rows.append(_per_second(samples, t0, TIMELINE).assign(panel="connections"))
    long = pd.concat([r.reset_index().rename(columns={"index": "second"}).melt(
        id_vars=["second", "panel"], var_name="series", value_name="value") for r in rows], ignore_index=True)
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
    for panel in ("users", "answered per second", "latency (ms, log)", "connections"):
        rows = long[long.panel == panel]
        log = panel.startswith("latency")
        panels.append(alt.Chart(rows).mark_line(interpolate="step-after").encode(
            x, alt.Y("value:Q", title=panel, scale=alt.Scale(type="log") if log else alt.Scale()),
            alt.Color("series:N", title=None), opacity=faded_unless(pick),
            tooltip=[alt.Tooltip("series:N", title="what"), alt.Tooltip("second:Q", title="second"),
                     alt.Tooltip("value:Q", title="ms" if log else "how many", format=",.0f")],
        ).properties(width=WIDTH, height=PANEL_HEIGHT))
    # One selection for the four panels: a legend entry clicked in any of them highlights its series there. Altair
    # binds it to each panel and warns that it merged the copies (altair#3891): that merge is the point.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Automatically deduplicated selection parameter")
        return alt.vconcat(*panels).add_params(pick).resolve_scale(x="shared", color="independent")


def apis_chart(runs: pd.DataFrame) -> alt.Chart:
    """Each single API's answered requests per second here against the article's TPS."""
    apis = runs[runs["kind"] == API].assign(api=lambda t: t["step"].str.removeprefix("api-"))
    article = article_apis()
    rows = pd.concat([apis[["api", "tps"]].assign(series="measured here"),
                      article[["api", "tps"]].assign(series="the article")], ignore_index=True)
    return alt.Chart(rows).mark_bar().encode(
        alt.Y("api:N", title=None, sort=list(apis["api"])),
        alt.X("tps:Q", title="answered requests per second (whole load)"),
        alt.YOffset("series:N"), alt.Color("series:N", title=None),
        tooltip=[alt.Tooltip("api:N", title="API"), alt.Tooltip("series:N", title="from"),
                 alt.Tooltip("tps:Q", title="requests per second", format=",.1f")],
    ).properties(width=WIDTH, height=26 * max(len(apis), 1))


def pool_frame(runs: pd.DataFrame, loads: Loads) -> pd.DataFrame:
    """The scenario per pool size: every run, the mean of each pool's runs, and (open-in-view on) the bound the
    event streams leave, one panel per database and open-in-view setting."""
    rows = runs[(runs["kind"] == SCENARIO) & runs["indexes"]].copy()
    rows["panel"] = [f"{'small' if q == runs['db_quota'].min() else 'production-size'} database ({q:g} CPU), "
                     f"open-in-view {'on' if o else 'off'}" for q, o in zip(rows["db_quota"], rows["open_in_view"],
                                                                               strict=True)]
    rows = rows[rows.groupby("panel")["pool"].transform("nunique") > 1]  # a panel needs two pool sizes
    each = rows[["panel", "pool", "step", "tps", "success"]].assign(series=RUN)
    means = rows.groupby(["panel", "pool"], as_index=False).agg(tps=("tps", "mean"), success=("success", "mean"),
                                                               step=("step", "first")).assign(series=MEAN)
    on = means[means["panel"].str.endswith("on")]
    model = on.assign(tps=[stream_bound(p, loads.stream_s, loads.session_requests) for p in on["pool"]],
                      success=float("nan"), step="", series=MODEL)
    return pd.concat([each, means, model], ignore_index=True)


def pool_chart(runs: pd.DataFrame, loads: Loads) -> alt.FacetChart:
    """Answered requests per second against HikariCP's pool size: one panel per database and open-in-view setting."""
    frame = pool_frame(runs, loads)
    base = alt.Chart(frame).encode(
        alt.X("pool:O", title="HikariCP maximum-pool-size"), alt.Y("tps:Q", title="answered per second"),
        alt.Color("series:N", scale=SERIES, title=None),
        tooltip=[alt.Tooltip("series:N", title="what"), alt.Tooltip("step:N", title="step"),
                 alt.Tooltip("pool:O", title="pool size"),
                 alt.Tooltip("tps:Q", title="requests per second", format=",.1f"),
                 alt.Tooltip("success:Q", title="share answered", format=".1%")])
    points = base.transform_filter(alt.datum.series == RUN).mark_point(filled=True, size=60)
    lines = base.transform_filter(alt.datum.series != RUN).mark_line(point=True).encode(
        strokeDash=alt.condition(alt.datum.series == MODEL, alt.value([4, 3]), alt.value([1, 0])))
    return alt.layer(lines, points).properties(width=WIDTH, height=150).facet(
        row=alt.Row("panel:N", title=None,  # the label in two lines, for a phone's column
                    header=alt.Header(labelOrient="top", labelExpr="split(datum.value, ', ')"),
                    sort=sorted(frame["panel"].unique(), key=lambda p: (p.startswith("production"), p.endswith("off"))))
    ).resolve_scale(y="independent")


def tomcat_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run of the Tomcat series by knob and setting (tomcat-defaults in each: its 200, 8192 and 100)."""
    parts = []
    for knob, steps in (("threads.max", THREAD_STEPS), ("max-connections", CONNECTION_STEPS),
                        ("accept-count", ACCEPT_STEPS)):
        for setting, step in steps.items():
            rows = runs[runs["step"] == step]
            parts.append(rows[["step", "run", "tps", "success", "gc_pause_max_ms"]].assign(knob=knob, setting=setting))
    frame = pd.concat(parts, ignore_index=True)
    return frame.assign(mean=frame.groupby(["knob", "setting"])["tps"].transform("mean"))


def tomcat_chart(runs: pd.DataFrame) -> alt.FacetChart:
    """TPS per setting of each knob: every run a point, the mean of the runs a tick."""
    frame = tomcat_frame(runs)
    base = alt.Chart(frame).encode(alt.X("setting:O", title=None))
    points = base.mark_point(filled=True, size=50, color=PALETTE["k6"]).encode(
        alt.Y("tps:Q", title="answered per second", scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("run:Q", title="run"),
                 alt.Tooltip("tps:Q", title="requests per second", format=",.1f"),
                 alt.Tooltip("success:Q", title="share answered", format=".1%")])
    ticks = base.mark_tick(thickness=2, size=24, color=PALETTE["ab"]).encode(
        alt.Y("mean:Q"), tooltip=[alt.Tooltip("step:N", title="step"),
                                  alt.Tooltip("mean:Q", title="mean of the runs", format=",.1f")])
    # A row per knob, each the column's full width: readable on a phone too.
    return alt.layer(points, ticks).properties(width=WIDTH, height=120).facet(
        row=alt.Row("knob:N", title=None, header=alt.Header(labelOrient="top"),
                    sort=["threads.max", "max-connections", "accept-count"])
    ).resolve_scale(x="independent")


def gc_chart(runs: pd.DataFrame) -> alt.LayerChart:
    """The longest GC pause of each run per max-connections, the mean of the runs, and the article's numbers."""
    frame = tomcat_frame(runs)
    rows = frame[frame["knob"] == "max-connections"].assign(series=RUN)
    means = rows.groupby("setting", as_index=False).agg(gc_pause_max_ms=("gc_pause_max_ms", "mean"),
                                                        step=("step", "first")).assign(series=MEAN)
    said = article_runs().query("experiment == 'max_connections'")
    article = pd.DataFrame({"setting": said["value"].astype(int), "gc_pause_max_ms": said["gc_stop_the_world_ms"],
                            "step": "", "series": "the article"})
    data = pd.concat([rows, means, article], ignore_index=True)
    scale = alt.Scale(domain=[RUN, MEAN, "the article"], range=[PALETTE["k6"], PALETTE["ab"], PALETTE["model"]])
    shape = alt.Scale(domain=[RUN, MEAN, "the article"], range=["circle", "stroke", "diamond"])
    return alt.Chart(data).mark_point(filled=True, size=70).encode(
        alt.X("setting:O", title="Tomcat max-connections"), alt.Y("gc_pause_max_ms:Q", title="longest GC pause (ms)"),
        alt.Color("series:N", scale=scale, title=None), alt.Shape("series:N", scale=shape, title=None),
        tooltip=[alt.Tooltip("series:N", title="what"), alt.Tooltip("step:N", title="step"),
                 alt.Tooltip("setting:O", title="max-connections"),
                 alt.Tooltip("gc_pause_max_ms:Q", title="longest pause (ms)", format=",.1f")],
    ).properties(width=WIDTH, height=220)


def final_frame(data: ChapterData) -> pd.DataFrame:
    """Answered requests per second of the final steps, open-in-view on and off."""
    names = {FINAL_STEP: "open-in-view on (the article's settings)", f"{FINAL_STEP}-no-osiv": "open-in-view off"}
    parts = []
    for step, name in names.items():
        if step not in data.steps:
            continue
        outcomes = data.outcomes[data.outcomes.step == step]
        per_second = outcomes[answered(outcomes)].groupby("second")["requests"].sum()
        seconds = range(int(outcomes["second"].max()) + 1) if len(outcomes) else range(0)
        parts.append(per_second.reindex(seconds, fill_value=0).rename("answered").rename_axis("second")
                     .reset_index().assign(series=name))
    return pd.concat(parts, ignore_index=True)


def final_chart(data: ChapterData, loads: Loads, goal: float) -> alt.LayerChart:
    """The final settings offered the goal's rate: answered per second, the hold the rule reads shaded, the goal."""
    frame = final_frame(data)
    pick = legend_highlight()
    hold = alt.Chart(pd.DataFrame({"start": [loads.hold[0]], "end": [loads.hold[1]], "what": ["the hold the rule reads"]})
                     ).mark_rect(color="#eeeeee").encode(
        alt.X("start:Q"), alt.X2("end:Q"), tooltip=[alt.Tooltip("what:N", title="shaded"),
                                                    alt.Tooltip("start:Q", title="from second"),
                                                    alt.Tooltip("end:Q", title="to second")])
    goal_line = alt.Chart(pd.DataFrame({"goal": [goal], "what": ["the goal (F001-a)"]})).mark_rule(
        strokeDash=[4, 3], color=PALETTE["model"]).encode(
        alt.Y("goal:Q"), tooltip=[alt.Tooltip("what:N", title="line"),
                                  alt.Tooltip("goal:Q", title="requests per second", format=",.2f")])
    lines = alt.Chart(frame).mark_line(interpolate="step-after").encode(
        alt.X("second:Q", title="seconds since the load started"), alt.Y("answered:Q", title="answered per second"),
        alt.Color("series:N", title=None), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("series:N", title="step"), alt.Tooltip("second:Q", title="second"),
                 alt.Tooltip("answered:Q", title="answered", format=",.0f")]).add_params(pick)
    return alt.layer(hold, goal_line, lines).properties(width=WIDTH, height=240)
