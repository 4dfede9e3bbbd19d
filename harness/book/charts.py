"""Altair chart builders shared by every chapter: one theme, tooltips on every mark, legends that highlight
(the conventions, and the helpers chapters use for their own charts, are in harness.book.chart_style).

A chart carries little data: each builder first aggregates in pandas (per time bucket, per series), so a
page stays light however many requests a step made. Time runs in seconds since the step's first request
(`harness.book.analysis.spike_start_ms`), so the model's predictions, which count from the spike, line up with it.
One row of small multiples per step.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from harness import LabError
from harness.book.analysis import spike_start_ms
from harness.book.chart_style import (  # noqa: F401 - THEME and scrolling: chapters import them from here too
    PALETTE,
    ROW_HEIGHT,
    T_TITLE,
    THEME,
    WIDTH,
    faded_unless,
    legend_highlight,
    log_scale,
    scrolling,
    series_color,
    step_header,
    tip,
)
from harness.book.verdict import failure_kinds
from harness.lab.store import ChapterData, answered

BUCKET_MS = 100  # completions are counted per 100 ms: finer than any wave, coarse enough to stay small


SAMPLE_BUCKET_MS = 500  # the samplers' default interval; longer runs still get one point per bucket


def require_steps(data: ChapterData) -> None:
    """A chart of nothing would draw blank: say what to run instead."""
    if not data.steps:
        raise LabError(f"no complete steps in data/{data.chapter}/: run `invoke run {data.chapter}` first")


def step_order(data: ChapterData) -> list[str]:
    """Steps in the order they ran."""
    return sorted(data.steps, key=lambda s: data.steps[s].get("started_ms", 0))


def seconds_since_spike(frame: pd.DataFrame, column: str, data: ChapterData) -> pd.Series:
    """A timestamp column (epoch ms) as seconds since its step's first request."""
    return (frame[column] - frame["step"].map(spike_start_ms(data))) / 1000


def _buckets(frame: pd.DataFrame, bucket_ms: int):
    bucket = (frame["t_s"] * 1000 // bucket_ms).astype("int64")
    return frame.assign(bucket=bucket).groupby(["step", "series", "bucket"], as_index=False)


def count_per_bucket(frame: pd.DataFrame, bucket_ms: int, value: str) -> pd.DataFrame:
    """Sum `value` per step, series and time bucket; a row spans its bucket, from `t_s` to `t_end_s`."""
    summed = _buckets(frame, bucket_ms)[value].sum()
    start = summed.pop("bucket") * bucket_ms / 1000
    return summed.assign(t_s=start, t_end_s=start + bucket_ms / 1000)


def thin_samples(frame: pd.DataFrame, bucket_ms: int) -> pd.DataFrame:
    """At most one sample per step, series and bucket: the highest value, at the bucket's first sample time
    (never moved to the bucket's edge, so a sample keeps its real time)."""
    return _buckets(frame, bucket_ms).agg(value=("value", "max"), t_s=("t_s", "min")).drop(columns="bucket")


def by_step(layers: alt.LayerChart, data: ChapterData) -> alt.FacetChart:
    """Small multiples: one row per step, sharing the time axis."""
    whys = {step: data.steps[step].get("why", "") for step in step_order(data)}
    row = alt.Row("step:N", sort=step_order(data), title=None, header=step_header(whys))
    return layers.properties(width=WIDTH, height=ROW_HEIGHT).facet(row=row)


def measured_completions(data: ChapterData, bucket_ms: int = BUCKET_MS) -> pd.DataFrame:
    """Requests finished per time bucket, ok (a 2xx/3xx response) or failed (no response, an error, 4xx/5xx)."""
    requests = data.requests
    ok = answered(requests)
    frame = pd.DataFrame({
        "step": requests["step"],
        "series": ok.map({True: "answered", False: "failed"}),
        "t_s": seconds_since_spike(requests, "end_ms", data),
        "requests": 1,
    })
    return count_per_bucket(frame, bucket_ms, "requests").assign(source="measured")


def predicted_completions(data: ChapterData) -> pd.DataFrame:
    """The model's completions (step.json `model.completions`) and its failures, which end at the client timeout."""
    rows = []
    for step, meta in data.steps.items():
        model = meta["model"]
        rows += [(step, "answered (model)", end_ms / 1000, count) for end_ms, count in model["completions"]]
        if model.get("failed"):
            rows.append((step, "failed (model)", model["client_timeout_ms"] / 1000, model["failed"]))
    frame = pd.DataFrame(rows, columns=["step", "series", "t_s", "requests"])
    return frame.assign(t_end_s=frame["t_s"], source="model")


def completions_chart(data: ChapterData, bucket_ms: int = BUCKET_MS) -> alt.FacetChart:
    """Bars: requests that finished in each bucket; diamonds: when and how many the model said would."""
    require_steps(data)
    frame = pd.concat([measured_completions(data, bucket_ms), predicted_completions(data)], ignore_index=True)
    highlight = legend_highlight()
    tooltip = [tip("step:N", "step"), tip("series:N", "requests"), tip("t_s:Q", "from second", ".1f"),
               tip("t_end_s:Q", "to second", ".1f"), tip("requests:Q", "how many", "d")]
    encode = {"color": series_color(frame["series"]), "opacity": faded_unless(highlight), "tooltip": tooltip}
    base = alt.Chart(frame)
    bars = base.transform_filter(alt.datum.source == "measured").mark_bar().encode(
        # Counted in pandas already ("binned"); time runs from the load's start.
        x=alt.X("t_s:Q", bin="binned", title=T_TITLE, scale=alt.Scale(zero=True)), x2="t_end_s:Q",
        y=alt.Y("requests:Q", title=f"requests finished per {bucket_ms} ms"), **encode,
    ).add_params(highlight)
    diamonds = base.transform_filter(alt.datum.source == "model").mark_point(
        shape="diamond", filled=True, size=90).encode(x="t_s:Q", y="requests:Q", **encode)
    return by_step(alt.layer(bars, diamonds), data)


def timeline_chart(samples: pd.DataFrame, limits: pd.DataFrame, data: ChapterData, y_title: str) -> alt.FacetChart:
    """Sampled series as steps over time, each limit as a horizontal rule; both in the legend.

    `samples`: step, series, t_s, value. `limits`: step, series, value.
    """
    frame = pd.concat([samples.assign(kind="sample"), limits.assign(kind="limit")], ignore_index=True)
    highlight = legend_highlight()
    encode = {"color": series_color(frame["series"]), "opacity": faded_unless(highlight)}
    what = [tip("step:N", "step"), tip("series:N", "what")]
    base = alt.Chart(frame)
    lines = base.transform_filter(alt.datum.kind == "sample").mark_line(
        interpolate="step-after", point=True, strokeWidth=2).encode(
        x=alt.X("t_s:Q", title=T_TITLE), y=alt.Y("value:Q", title=y_title), **encode,
        tooltip=[*what, tip("t_s:Q", "second", ".1f"), tip("value:Q", y_title)],
    ).add_params(highlight)
    # A limit holds all along: its tooltip has no time.
    rules = base.transform_filter(alt.datum.kind == "limit").mark_rule(strokeDash=[6, 4], strokeWidth=2).encode(
        y="value:Q", **encode, tooltip=[*what, tip("value:Q", y_title)])
    # Each row on its own scale: a step with 7 connections must not be flattened under one with 8293.
    return by_step(alt.layer(lines, rules), data).resolve_scale(y="independent")


def ss_samples(data: ChapterData, bucket_ms: int = SAMPLE_BUCKET_MS) -> pd.DataFrame:
    """Established connections and the listening socket's accept queue, from `ss`, highest per bucket."""
    ss = data.ss.rename(columns={"estab": "established", "accept_queue": "accept queue"})
    long = ss.melt(id_vars=["step", "ts_ms"], value_vars=["established", "accept queue"], var_name="series")
    long["t_s"] = seconds_since_spike(long, "ts_ms", data)
    return thin_samples(long, bucket_ms)


def model_limit(data: ChapterData, series: str, key: str) -> pd.DataFrame:
    """One horizontal line per step at the model's `key` (e.g. ceiling, threads)."""
    rows = [(step, series, meta["model"][key]) for step, meta in data.steps.items()]
    return pd.DataFrame(rows, columns=["step", "series", "value"])


def ss_timeline_chart(data: ChapterData, bucket_ms: int = SAMPLE_BUCKET_MS) -> alt.FacetChart:
    """Connections the kernel shows over time, against the model's ceiling (max-connections + accept-count + 1)."""
    require_steps(data)
    ceiling = model_limit(data, "ceiling (model)", "ceiling")
    return timeline_chart(ss_samples(data, bucket_ms), ceiling, data, "connections")


def actuator_samples(data: ChapterData, metric: str, series: str, bucket_ms: int = SAMPLE_BUCKET_MS) -> pd.DataFrame:
    """One Actuator metric over time, highest per bucket."""
    rows = data.actuator[data.actuator["metric"] == metric]
    frame = pd.DataFrame({"step": rows["step"], "series": series, "value": rows["value"],
                          "t_s": seconds_since_spike(rows, "ts_ms", data)})
    return thin_samples(frame, bucket_ms)


def busy_threads_chart(data: ChapterData, bucket_ms: int = SAMPLE_BUCKET_MS) -> alt.FacetChart:
    """Tomcat's busy worker threads (Actuator `tomcat.threads.busy`) against the pool size the model assumes."""
    require_steps(data)
    busy = actuator_samples(data, "tomcat.threads.busy", "busy threads", bucket_ms)
    pool = model_limit(data, "max threads (model)", "threads")
    return timeline_chart(busy, pool, data, "threads")


def rps_chart(table: pd.DataFrame, rate_per_thread: float, threads: int) -> alt.LayerChart:
    """Measured RPS per concurrency and tool (points) on the model's line min(C, threads) × rate."""
    measured = table.assign(series=table["tool"])[["series", "concurrency", "rps", "rps_model", "rps_error", "step"]]
    levels = sorted(set(table["concurrency"]) | {threads})
    line = pd.DataFrame({"concurrency": levels, "series": "model"})
    line["rps"] = [min(c, threads) * rate_per_thread for c in levels]
    pick = legend_highlight()
    color = series_color(pd.concat([measured["series"], line["series"]]))  # one scale for both layers
    x = alt.X("concurrency:Q", scale=log_scale(levels), title="concurrent clients C (log)")
    y = alt.Y("rps:Q", scale=log_scale([*measured["rps"], *line["rps"]]), title="requests per second (log)")
    model = alt.Chart(line).mark_line(strokeDash=[4, 3]).encode(
        x, y, color=color, opacity=faded_unless(pick),
        tooltip=[tip("concurrency:Q", "concurrent clients", "d"), tip("rps:Q", "requests/s (model)", ".0f")],
    )
    # Hollow and shaped by tool: the two tools often land on the same spot, and both must stay visible.
    tools = sorted(measured["series"].unique())
    points = alt.Chart(measured).mark_point(filled=False, strokeWidth=2).encode(
        x, y, color=color, opacity=faded_unless(pick),
        shape=alt.Shape("series:N", legend=None, scale=alt.Scale(domain=tools, range=["circle", "square"])),
        size=alt.condition(alt.datum.series == "ab", alt.value(320), alt.value(90)),
        tooltip=[tip("step:N", "step"), tip("series:N", "tool"), tip("concurrency:Q", "concurrent clients", "d"),
                 tip("rps:Q", "requests/s", ".1f"), tip("rps_model:Q", "requests/s (model)", ".0f"),
                 tip("rps_error:Q", "against the model", "+.1%")],
    )
    return (model + points).add_params(pick).properties(width=WIDTH, height=300)


def latency_ecdf_chart(data: ChapterData, step_ids: list[str], points: int = 200) -> alt.LayerChart:
    """Share of requests answered within a time, per step: a steep start then a long tail means queueing.

    Each curve is drawn from `points` quantiles, not every request, so the page stays light.
    """
    quantiles = [i / (points - 1) for i in range(points)]
    frames = []
    for step in step_ids:
        ok = data.requests[(data.requests.step == step) & answered(data.requests)]["duration_ms"]
        frames.append(pd.DataFrame({"series": step, "share": quantiles, "duration_ms": ok.quantile(quantiles).to_numpy()}))
    frame = pd.concat(frames, ignore_index=True)
    pick = alt.selection_point(fields=["series"], bind="legend")
    return alt.Chart(frame).mark_line(interpolate="step-after", point=alt.OverlayMarkDef(size=12, opacity=0)).encode(
        alt.X("duration_ms:Q", title="latency (ms)"),
        alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of requests answered within"),
        alt.Color("series:N", title=None, sort=step_ids),
        opacity=faded_unless(pick),
        tooltip=[tip("series:N", "step"), tip("duration_ms:Q", "latency (ms)", ".0f"),
                 tip("share:Q", "share answered within it", ".0%")],
    ).add_params(pick).properties(width=WIDTH, height=260)


def completion_rate_chart(data: ChapterData, bucket_ms: int = BUCKET_MS) -> alt.FacetChart:
    """Answered requests per bucket over time, one row per step: bursts show a pool moving in phase."""
    require_steps(data)
    ok = data.requests[answered(data.requests)]
    frame = pd.DataFrame({"step": ok["step"], "series": "answered", "one": 1})
    frame["t_s"] = seconds_since_spike(ok.assign(step=ok["step"]), "end_ms", data).to_numpy()
    counts = count_per_bucket(frame, bucket_ms, "one").rename(columns={"one": "requests"})
    counts["per_s"] = counts["requests"] * 1000 / bucket_ms
    bars = alt.Chart(counts).mark_bar().encode(
        alt.X("t_s:Q", bin="binned", title=T_TITLE), alt.X2("t_end_s:Q"),
        alt.Y("requests:Q", title=f"answered per {bucket_ms} ms"),
        color=series_color(counts["series"]),
        tooltip=[tip("step:N", "step"), tip("t_s:Q", "from second", ".1f"), tip("requests:Q", "answered", "d"),
                 tip("per_s:Q", "as a rate (per second)", ".0f")],
    )
    return by_step(bars, data)


PALETTE.update({  # series of the chapter-3 charts, added after the shared ones so their colours stay put
    "SYN-RECV": "#72b7b2",
    "listen overflows": "#9d755d",
    "client timeout (model)": "#222222",
    "k6 stops (model)": "#888888",
})


# Failure kinds are open-ended (k6's error texts); the common ones keep a colour across the book.
FAILURE_COLORS = {
    "request timeout": "#e45756",
    "interrupted: k6 stopped before a response": "#bab0ac",
    "connection reset by peer": "#f58518",
    "i/o timeout": "#b279a2",
    "cannot allocate memory": "#eeca3b",
    "connection refused": "#ff9da6",
    "EOF": "#79706e",
}


SPARE_COLORS = ("#4c78a8", "#54a24b", "#72b7b2", "#d67195", "#fcbf5f", "#8cd17d")


FAILURE_BUCKET_MS = 1000


def kind_color(kinds: list[str]) -> alt.Color:
    """Known failure kinds in their colours, others from a spare list, limits (rules) in PALETTE's."""
    spare = iter(SPARE_COLORS * (1 + len(kinds) // len(SPARE_COLORS)))
    colors = {k: PALETTE.get(k) or FAILURE_COLORS.get(k) or next(spare) for k in kinds}
    return alt.Color("series:N", scale=alt.Scale(domain=list(colors), range=list(colors.values())), title=None)


def failure_counts(data: ChapterData, bucket_ms: int = FAILURE_BUCKET_MS) -> pd.DataFrame:
    """Failed requests per step, kind (`series`) and bucket of seconds since the load started. A request k6 cut off
    has no end: it is placed when k6 stopped (load_ended_ms)."""
    requests = data.requests.assign(series=failure_kinds(data.requests))
    failed = requests[requests["series"] != ""]
    stopped = failed["step"].map({s: m.get("load_ended_ms", m.get("ended_ms")) for s, m in data.steps.items()})
    frame = failed[["step", "series"]].assign(end_ms=failed["end_ms"].fillna(stopped), requests=1)
    frame["t_s"] = seconds_since_spike(frame, "end_ms", data)
    return count_per_bucket(frame, bucket_ms, "requests")


def client_limits(data: ChapterData) -> pd.DataFrame:
    """Per step, when the model says the first clients stop waiting: the request timeout, and k6's stop when that comes
    first (duration + gracefulStop for constant-vus); in seconds since the load started, like the bars."""
    rows = []
    for step, meta in data.steps.items():
        model = meta["model"]
        if "client_timeout_ms" not in model:
            continue
        rows.append((step, "client timeout (model)", model["client_timeout_ms"] / 1000))
        if model.get("stop_ms", float("inf")) < model["client_timeout_ms"]:
            rows.append((step, "k6 stops (model)", model["stop_ms"] / 1000))
    return pd.DataFrame(rows, columns=["step", "series", "t_s"])


def failures_chart(data: ChapterData, bucket_ms: int = FAILURE_BUCKET_MS) -> alt.FacetChart:
    """Failed requests by kind (k6's error, or "http <status>") per bucket, stacked, one row per step; dashed rules
    where the model says clients give up; a step without failures says so in its row."""
    require_steps(data)
    counts, limits = failure_counts(data, bucket_ms), client_limits(data)
    clean = [s for s in step_order(data) if s not in set(counts["step"])]
    notes = pd.DataFrame({"step": clean, "kind": "none", "note": "no failures in this step"})
    frame = pd.concat([counts.assign(kind="failures"), limits.assign(kind="limit"), notes], ignore_index=True)
    highlight = legend_highlight()
    color = kind_color(sorted(counts["series"].unique(), key=lambda k: -counts.loc[counts.series == k, "requests"].sum())
                       + list(dict.fromkeys(limits["series"])))
    base = alt.Chart(frame)
    bars = base.transform_filter(alt.datum.kind == "failures").mark_bar().encode(
        x=alt.X("t_s:Q", bin="binned", title=T_TITLE, scale=alt.Scale(zero=True)), x2="t_end_s:Q",
        y=alt.Y("requests:Q", stack="zero", title=f"failed requests per {bucket_ms} ms"),
        color=color, opacity=faded_unless(highlight),
        tooltip=[tip("step:N", "step"), tip("series:N", "failure"), tip("t_s:Q", "from second", ".1f"),
                 tip("t_end_s:Q", "to second", ".1f"), tip("requests:Q", "requests", "d")],
    ).add_params(highlight)
    rules = base.transform_filter(alt.datum.kind == "limit").mark_rule(strokeDash=[6, 4], strokeWidth=2).encode(
        x="t_s:Q", color=color, opacity=faded_unless(highlight),
        tooltip=[tip("step:N", "step"), tip("series:N", "limit"), tip("t_s:Q", "at second", ".1f")],
    )
    # In the middle of the view, whatever width it is drawn at: the note neither needs nor moves the scales.
    empty = base.transform_filter(alt.datum.kind == "none").mark_text(fontSize=13, color="#555").encode(
        x=alt.value({"expr": "width / 2"}), y=alt.value({"expr": "height / 2"}), text="note:N")
    return by_step(alt.layer(bars, rules, empty), data)


def connection_samples(data: ChapterData, bucket_ms: int = SAMPLE_BUCKET_MS) -> pd.DataFrame:
    """From `ss` and nstat: established connections, the accept queue and SYN-RECV sockets (highest per bucket), and
    the listen overflows (SYNs dropped at a full accept queue, machine-wide) summed per bucket."""
    names = {"estab": "established", "accept_queue": "accept queue", "syn_recv": "SYN-RECV"}
    long = data.ss.rename(columns=names).melt(id_vars=["step", "ts_ms"], value_vars=list(names.values()), var_name="series")
    long["t_s"] = seconds_since_spike(long, "ts_ms", data)
    overflows = pd.DataFrame({"step": data.ss["step"], "series": "listen overflows", "value": data.ss["listen_overflows"],
                              "t_s": seconds_since_spike(data.ss, "ts_ms", data)})
    summed = count_per_bucket(overflows, bucket_ms, "value").drop(columns="t_end_s")
    return pd.concat([thin_samples(long, bucket_ms), summed], ignore_index=True)


def connections_chart(data: ChapterData, bucket_ms: int = SAMPLE_BUCKET_MS) -> alt.FacetChart:
    """ss_timeline_chart plus SYN-RECV and the listen overflows per sample: where the users beyond the ceiling are."""
    require_steps(data)
    ceiling = model_limit(data, "ceiling (model)", "ceiling")
    return timeline_chart(connection_samples(data, bucket_ms), ceiling, data, "connections · SYNs dropped")


def _rule(value: float, label: str, axis: str = "y") -> alt.LayerChart:
    """A dashed limit line with its label, for charts whose limits are constants (1 s, 3 s, a budget)."""
    frame = pd.DataFrame({"value": [value], "label": [label]})
    rule = alt.Chart(frame).mark_rule(strokeDash=[4, 3], color=PALETTE["ceiling (model)"]).encode(
        **{axis: "value:Q"}, tooltip=[tip("label:N", "limit")])
    text = alt.Chart(frame).mark_text(align="left", dx=4, dy=-6, color=PALETTE["ceiling (model)"]).encode(
        **{axis: "value:Q"}, text="label:N", **({"x": alt.value(4)} if axis == "y" else {"y": alt.value(8)}))
    return rule + text
