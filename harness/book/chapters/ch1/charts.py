"""Chapter 1's charts and tables, from every run of its steps: the rates against the model, the latency of a full and
of an overfull pool, the busy threads, the model's predictions and Little's law. Fields carry human titles; widths
are left to the shared renderer.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch1 import runs
from harness.book.chapters.ch1.claims import ARTICLE_RPS
from harness.book.chapters.ch1.runs import pool_of
from harness.book.chapters.ch1.values import every_run, little_rows
from harness.book.charts import PALETTE, T_TITLE, WIDTH, faded_unless, legend_highlight
from harness.book.tables import people_table
from harness.lab.store import ChapterData

ECDF_POINTS = 200  # a latency curve is drawn from this many quantiles, not every request


def label(run: runs.Run) -> str:
    """A run as a reader names it: "k6, 500 clients"."""
    return f"{runs.tool_of(run.meta)}, {runs.clients_of(run.meta):,} clients"


def tool_color(names) -> alt.Color:
    present = [n for n in ("k6", "ab", "model") if n in set(names)]
    return alt.Color("series:N", title=None, scale=alt.Scale(domain=present, range=[PALETTE[n] for n in present]))


def rates_frame(data: ChapterData) -> pd.DataFrame:
    rows = [{"series": runs.tool_of(r.meta), "run": r.name, "C": runs.clients_of(r.meta), "rate": runs.whole_rate(r),
             "steady": runs.steady_rate(r), "model": r.meta["model"]["rps"]} for r in every_run(data, runs.by_clients(data))]
    return pd.DataFrame(rows)


def log_domain(values) -> list[float]:
    """A log axis over the data's range, with a little room at each end."""
    return [float(np.min(values)) / 1.3, float(np.max(values)) * 1.3]


def rates_chart(data: ChapterData) -> alt.LayerChart:
    """Each run's whole-run rate (points, by tool) on the model's line min(C, threads) × rate, both axes log."""
    pool, frame = pool_of(data), rates_frame(data)
    levels = sorted(set(frame["C"]) | {pool.threads})
    line = pd.DataFrame({"C": levels, "rate": [pool.model_rps(c) for c in levels], "series": "model"})
    pick = legend_highlight()
    color = tool_color([*frame["series"], "model"])
    x = alt.X("C:Q", title="concurrent clients C (log scale)", scale=alt.Scale(type="log", domain=log_domain(levels)))
    y = alt.Y("rate:Q", title="requests per second (log scale)",
              scale=alt.Scale(type="log", domain=log_domain([*frame["rate"], *line["rate"]])))
    model = alt.Chart(line).mark_line(strokeDash=[4, 3]).encode(
        x, y, color=color, opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("C:Q", title="concurrent clients", format=","),
                 alt.Tooltip("rate:Q", title="requests/s (model)", format=",.0f")])
    points = alt.Chart(frame).mark_point(filled=False, strokeWidth=2, size=110).encode(
        x, y, color=color, opacity=faded_unless(pick),
        shape=alt.Shape("series:N", legend=None, scale=alt.Scale(domain=["k6", "ab"], range=["circle", "square"])),
        tooltip=[alt.Tooltip("run:N", title="run"), alt.Tooltip("series:N", title="load tool"),
                 alt.Tooltip("C:Q", title="concurrent clients", format=","),
                 alt.Tooltip("rate:Q", title="requests/s, whole run", format=",.1f"),
                 alt.Tooltip("steady:Q", title="requests/s, steady", format=",.1f"),
                 alt.Tooltip("model:Q", title="requests/s (model)", format=",.0f")])
    return (model + points).add_params(pick).properties(width=WIDTH, height=300)


def latency_frame(data: ChapterData, steps: list[str]) -> pd.DataFrame:
    """Per step (every run pooled): the share of requests answered within each of ECDF_POINTS latencies."""
    shares = np.linspace(0, 1, ECDF_POINTS)
    frames = []
    for step in steps:
        chosen = runs.runs(step)
        durations = pd.concat([r.ok["duration_ms"] for r in chosen])
        frames.append(pd.DataFrame({"series": label(chosen[0]), "share": shares,
                                    "latency_ms": np.maximum(durations.quantile(shares).to_numpy(), 1.0)}))
    return pd.concat(frames, ignore_index=True)


def latency_chart(data: ChapterData) -> alt.Chart:
    """The share of requests answered within a latency (log scale), the pool just full and overfull, every run."""
    pool = pool_of(data)
    steps = runs.steps_with(data, lambda c: c >= pool.threads)
    frame = latency_frame(data, steps)
    order = list(dict.fromkeys(frame["series"]))
    pick = legend_highlight()
    return alt.Chart(frame).mark_line(interpolate="step-after").encode(
        alt.X("latency_ms:Q", title="latency (ms, log scale)",
              scale=alt.Scale(type="log", domain=[1, float(frame["latency_ms"].max())], nice=False)),
        alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of requests answered within"),
        alt.Color("series:N", title=None, sort=order), alt.StrokeDash("series:N", sort=order, legend=None),
        opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("series:N", title="load tool and clients"),
                 alt.Tooltip("latency_ms:Q", title="latency (ms)", format=",.0f"),
                 alt.Tooltip("share:Q", title="answered within it", format=".0%")],
    ).add_params(pick).properties(width=WIDTH, height=260)


def busy_frame(data: ChapterData, steps: list[str]) -> pd.DataFrame:
    frames = []
    for step in steps:
        for run in runs.runs(step):
            start = run.ok["start_ms"].min()
            samples = run.busy.rename(columns={"value": "busy"})
            frames.append(samples.assign(t_s=(samples["ts_ms"] - start) / 1000, series=runs.tool_of(run.meta),
                                         C=f"{runs.clients_of(run.meta):,} clients", run=run.name))
    frame = pd.concat(frames, ignore_index=True)
    end = max(runs.span_s(r) for s in steps for r in runs.runs(s))
    return frame[frame["t_s"].between(0, end)]


def busy_chart(data: ChapterData) -> alt.FacetChart:
    """Busy Tomcat threads over each run with the pool full and overfull, against the pool's size; one panel per C."""
    pool = pool_of(data)
    steps = runs.steps_with(data, lambda c: c >= pool.threads)
    frame = busy_frame(data, steps)
    pick = legend_highlight()
    lines = alt.Chart().mark_line(interpolate="step-after", point=alt.OverlayMarkDef(size=14)).encode(
        alt.X("t_s:Q", title=T_TITLE, scale=alt.Scale(domain=[0, float(frame["t_s"].max())], nice=False)),
        alt.Y("busy:Q", title="busy threads", scale=alt.Scale(domain=[0, pool.threads * 1.1])),
        tool_color(frame["series"]), alt.Detail("run:N"), opacity=faded_unless(pick),
        tooltip=[alt.Tooltip("run:N", title="run"), alt.Tooltip("t_s:Q", title="second", format=".1f"),
                 alt.Tooltip("busy:Q", title="busy threads", format=",.0f")]).add_params(pick)
    limit = alt.Chart().mark_rule(strokeDash=[6, 4], color=PALETTE["max threads (model)"]).encode(
        y=alt.datum(pool.threads), tooltip=[alt.Tooltip("C:N", title="panel")])
    return alt.layer(lines, limit, data=frame).properties(width=WIDTH / 2 - 30, height=180).facet(
        column=alt.Column("C:N", title=None, sort=sorted(set(frame["C"]), key=lambda c: int(c.split()[0].replace(",", "")))))


# ---- tables ------------------------------------------------------------------------------------------------------

def predictions_table(data: ChapterData) -> Markdown:
    """What the closed-loop model predicted at each C, before any run (the same for both tools)."""
    rows = {}
    for step in runs.by_clients(data):
        model = data.steps[step]["model"]
        rows[model["concurrency"]] = {"clients C": model["concurrency"], "requests": model["requests"],
                                      "requests/s": model["rps"], "mean latency (ms)": model["mean_latency_ms"],
                                      "run time (s)": model["duration_ms"] / 1000}
    return people_table(pd.DataFrame(rows.values()), {"requests/s": "{:,.0f}", "mean latency (ms)": "{:,.0f}",
                                                      "run time (s)": "{:,.1f}"})


def rates_table(data: ChapterData) -> Markdown:
    """Per C: the article's rate, the model's, and each tool's whole-run and steady rates (mean of its runs)."""
    frame = rates_frame(data)
    mean = frame.groupby(["C", "series"])[["rate", "steady"]].mean().unstack("series")
    counts = frame.groupby("C")["run"].count() // frame["series"].nunique()
    shown = pd.DataFrame({"clients C": mean.index, "the article (ab)": mean.index.map(ARTICLE_RPS),
                          "the model": frame.groupby("C")["model"].first().to_numpy(),
                          "k6, whole run": mean[("rate", "k6")].to_numpy(), "ab, whole run": mean[("rate", "ab")].to_numpy(),
                          "k6, steady": mean[("steady", "k6")].to_numpy(), "ab, steady": mean[("steady", "ab")].to_numpy(),
                          "runs": counts.to_numpy()})
    return people_table(shown, {"the article (ab)": "{:,.2f}", "the model": "{:,.0f}", "k6, whole run": rate_text,
                                "ab, whole run": rate_text, "k6, steady": rate_text, "ab, steady": rate_text})


def rate_text(rate: float) -> str:
    """A rate to three significant digits, as the article's own are read: 4.95, 49.8, 458."""
    return f"{rate:,.{max(0, 2 - int(np.floor(np.log10(abs(rate)))))}f}" if rate else "0"


def little_table(data: ChapterData) -> Markdown:
    """Little's law per C and tool (mean of the runs): the rate × the mean latency should give back C."""
    rows = little_rows(data).groupby(["C", "tool"], sort=False)[["rate", "mean_ms", "in_flight"]].mean().reset_index()
    shown = rows.rename(columns={"C": "clients C", "tool": "load tool", "rate": "requests/s",
                                 "mean_ms": "mean latency (ms)", "in_flight": "requests/s × latency"})
    return people_table(shown, {"requests/s": rate_text, "mean latency (ms)": "{:,.0f}",
                                "requests/s × latency": "{:,.1f}"})


def latency_table(data: ChapterData) -> Markdown:
    """Latency percentiles with the pool full and overfull, per tool (every run pooled), in ms."""
    pool = pool_of(data)
    rows = []
    for step in runs.steps_with(data, lambda c: c >= pool.threads):
        chosen = runs.runs(step)
        durations = pd.concat([r.ok["duration_ms"] for r in chosen])
        rows.append({"load tool": runs.tool_of(chosen[0].meta), "clients C": runs.clients_of(chosen[0].meta),
                     "median": durations.median(), "66th pct": durations.quantile(0.66),
                     "90th pct": durations.quantile(0.9), "99th pct": durations.quantile(0.99), "longest": durations.max(),
                     f"over {pool.sleep_ms / 2000:g} s": (durations > pool.sleep_ms / 2).mean(), "runs": len(chosen)})
    ms = "{:,.0f}"
    return people_table(pd.DataFrame(rows), {"median": ms, "66th pct": ms, "90th pct": ms, "99th pct": ms,
                                             "longest": ms, f"over {pool.sleep_ms / 2000:g} s": "{:.0%}"})
