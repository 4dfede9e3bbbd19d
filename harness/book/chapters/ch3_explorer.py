"""Chapter 3's capacity explorer: the model's simulation on a grid of settings, our measured steps overlaid.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections import Counter

import altair as alt
import pandas as pd

from harness.book.analysis import spike_start_ms
from harness.book.charts import WIDTH, series_color
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered
from harness.models.spike import Server, simulate

EXPLORER_GRID = {  # name → values
    "users": [300, 1000, 2000, 3000, 6000, 10000, 15000],
    "threads": [200, 500, 1000, 2000],
    "max_connections": [SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"], 20000],
    "accept_count": [SERVER_DEFAULTS["TOMCAT_ACCEPT_COUNT"], 2000],
    "keep_alive_s": [0, 20, 30, 60],  # 0: the connection closes after its response
}


EXPLORER_LABELS = {"users": "users ", "threads": "threads.max ", "max_connections": "max-connections ",
                   "accept_count": "accept-count ", "keep_alive_s": "keep-alive timeout (s; 0 = off) "}


EXPLORER_DEFAULTS = {"users": 10000, "threads": 1000, "max_connections": SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"],
                     "accept_count": SERVER_DEFAULTS["TOMCAT_ACCEPT_COUNT"], "keep_alive_s": 20}  # F000-f's settings


EXPLORER_SLEEP_MS, EXPLORER_TIMEOUT_MS, EXPLORER_BUCKET_S = 5000, 60000, 5


def _bucket_end_s(end_ms: float) -> int:
    """The end of the 5 s bucket a completion falls in (a wave due at 5 s counts in 0-5 s)."""
    return int(math.ceil(end_ms / 1000 / EXPLORER_BUCKET_S) * EXPLORER_BUCKET_S)


@functools.cache
def explorer_grid() -> pd.DataFrame:
    """model.simulate for every combination of EXPLORER_GRID: requests answered and failed per 5 s bucket.
    Computed once per process (~9 s): the chart and its totals share it. Callers must not modify it."""
    rows = []
    for combo in itertools.product(*EXPLORER_GRID.values()):
        knobs = dict(zip(EXPLORER_GRID, combo, strict=True))
        server = Server(knobs["threads"], EXPLORER_SLEEP_MS, knobs["max_connections"], knobs["accept_count"],
                        keep_alive=knobs["keep_alive_s"] > 0, keep_alive_timeout_ms=knobs["keep_alive_s"] * 1000)
        counts = Counter((_bucket_end_s(o.end_ms), "model: ok" if o.ok else "model: failed")
                         for o in simulate(knobs["users"], server, EXPLORER_TIMEOUT_MS))
        rows += [{**knobs, "t_end_s": t, "series": series, "requests": n} for (t, series), n in counts.items()]
    return pd.DataFrame(rows).assign(t_s=lambda f: f["t_end_s"] - EXPLORER_BUCKET_S)


def explorer_settings(meta: dict) -> dict | None:
    """A step's settings as a grid point, or None when the grid has no such point (other sleep, timeout, …)."""
    model, server = meta.get("model", {}), meta["config"]["server"]
    if "ceiling" not in model or model["service_ms"] != EXPLORER_SLEEP_MS or model["client_timeout_ms"] != EXPLORER_TIMEOUT_MS:
        return None
    accept = server.get("TOMCAT_ACCEPT_COUNT", SERVER_DEFAULTS["TOMCAT_ACCEPT_COUNT"])
    timeout = server.get("TOMCAT_KEEP_ALIVE_TIMEOUT", server.get("TOMCAT_CONNECTION_TIMEOUT", SERVER_DEFAULTS["TOMCAT_CONNECTION_TIMEOUT"]))
    point = {"users": meta["requests"]["asked"], "threads": model["threads"],
             "max_connections": server.get("TOMCAT_MAX_CONNECTIONS", SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"]),
             "accept_count": accept,
             "keep_alive_s": timeout // 1000 if model["keep_alive"] else 0}
    return point if all(point[k] in values for k, values in EXPLORER_GRID.items()) else None


def explorer_measured(data: ChapterData) -> pd.DataFrame:
    """Our spike steps that sit on a grid point, bucketed like the grid: answered and failed per 5 s."""
    rows = []
    for step, meta in data.steps.items():
        point = explorer_settings(meta)
        if point is None or meta["requests"]["issued"] < meta["requests"]["asked"]:
            continue  # off the grid, or a constant-vus run that sent fewer requests than it has users
        requests = data.requests[data.requests["step"] == step]
        ends = requests["end_ms"].fillna(requests["start_ms"] + EXPLORER_TIMEOUT_MS) - spike_start_ms(data)[step]
        kinds = answered(requests).map({True: "measured: ok", False: "measured: failed"})
        counts = Counter(zip((_bucket_end_s(e) for e in ends), kinds, strict=True))
        rows += [{**point, "step": step, "t_end_s": t, "series": series, "requests": n} for (t, series), n in counts.items()]
    columns = [*EXPLORER_GRID, "step", "t_end_s", "series", "requests"]
    return pd.DataFrame(rows, columns=columns)


def capacity_explorer(measured: pd.DataFrame | None = None, **defaults) -> alt.VConcatChart:
    """Sliders pick users, threads, max-connections, accept-count and keep-alive; the chart shows the model's answered
    and failed requests per 5 s for them, with our measured steps at the same settings as points."""
    values = {**EXPLORER_DEFAULTS, **defaults}
    unknown = set(values) - set(EXPLORER_GRID)
    if unknown:
        raise ValueError(f"no explorer setting {', '.join(sorted(unknown))}: choose from {', '.join(EXPLORER_GRID)}")
    params = [alt.param(name=name, value=values[name], bind=alt.binding_select(options=options, name=EXPLORER_LABELS[name]))
              for name, options in EXPLORER_GRID.items()]
    chosen = " && ".join(f"datum.{name} == {name}" for name in EXPLORER_GRID)
    measured = measured if measured is not None else pd.DataFrame(columns=[*EXPLORER_GRID, "step", "t_end_s", "series", "requests"])
    shown = ["model: ok", "model: failed", "measured: ok", "measured: failed"]
    color = series_color(pd.Series(shown))
    x = alt.X("t_s:Q", bin="binned", title="seconds since the spike", scale=alt.Scale(domain=[0, 65]))
    bars = alt.Chart(explorer_grid()).transform_filter(chosen).mark_bar(stroke="white", strokeWidth=0.5).encode(
        x, x2="t_end_s:Q", y=alt.Y("requests:Q", title="requests per 5 s"), color=color,
        tooltip=[alt.Tooltip("series:N", title=""), alt.Tooltip("t_s:Q", title="from s"),
                 alt.Tooltip("t_end_s:Q", title="to s"), alt.Tooltip("requests:Q", format=",")],
    )
    points = alt.Chart(measured).transform_filter(chosen).transform_calculate(t_mid="datum.t_end_s - 2.5").mark_point(
        filled=True, size=90, shape="diamond").encode(
        x=alt.X("t_mid:Q"), y="requests:Q", color=color,
        tooltip=["step:N", alt.Tooltip("series:N", title=""), alt.Tooltip("t_end_s:Q", title="bucket ends at s"),
                 alt.Tooltip("requests:Q", format=",")],
    )
    shared = [*EXPLORER_GRID, "series", "requests"]  # no column only one side has: it would embed NaN, invalid JSON
    totals = alt.Chart(pd.concat([explorer_grid()[shared], measured[shared]], ignore_index=True)).transform_filter(chosen).transform_aggregate(
        total="sum(requests)", groupby=["series"]).transform_calculate(
        line="datum.series + ': ' + format(datum.total, ',')").mark_text(align="left", fontSize=12).encode(
        y=alt.Y("series:N", sort=shown, axis=None), x=alt.value(0), text="line:N", color=color,
        tooltip=[alt.Tooltip("line:N", title="")],
    ).properties(width=WIDTH, height=70)
    held = alt.Chart(pd.DataFrame({"i": [0]})).transform_calculate(
        text="'held at once: ' + format(min(users, max_connections + accept_count + 1), ',') + ' of ' + format(users, ',')"
             " + ' users (max-connections + accept-count + 1 = ' + format(max_connections + accept_count + 1, ',') + ')'"
    ).mark_text(align="left", fontSize=12).encode(x=alt.value(0), y=alt.value(8), text="text:N", tooltip="text:N").properties(
        width=WIDTH, height=16)
    # An empty points layer would make Vega warn of an infinite extent: draw it only with measured steps (the
    # chapter's default settings are F000-f's, which has them).
    waves = (bars + points if len(measured) else bars).properties(width=WIDTH, height=240)
    return alt.vconcat(held, waves, totals).add_params(*params)
