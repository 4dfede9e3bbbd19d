"""The capacity explorer ("What will my server do?" on the answer page, the capacity explorer in chapter 3): the reader
sets users and the server's knobs and reads the model's prediction (harness.models.capacity), with the book's
measured steps that ran at the same settings drawn on top.

Why a port and not a grid: the prediction is an event simulation, and the explorer has eleven knobs. A precomputed
grid of even three values per knob is 177,147 simulations and more rows than a page can carry, and it answers only on
its grid points. The simulation in JavaScript (explorer.js) answers any setting at once, offline, in a few kilobytes;
tests/test_explorer.py holds its outputs equal to the Python function's, in node and in Chromium.

How it draws: a form of knobs, a table of numbers (filled by Python for the first settings, then by explorer.js), and
one Vega-Lite chart drawn by the book's offline renderer. The chart's two parameters are bound to hidden inputs
(Vega's direct binding): explorer.js writes the model's bins and the matching steps' ids there, and the chart
recomputes; the measured bins ship with the chart.
"""
from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import altair as alt
import pandas as pd

from harness.book.analysis import spike_start_ms
from harness.book.charts import PALETTE
from harness.book.render import chart_html, raw_html
from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS
from harness.lab.steps import step_from_config
from harness.lab.store import ChapterData, answered
from harness.lab.units import duration_ms
from harness.models.capacity import RANGES, CapacityPrediction, Knobs, bin_of, constants, predict_capacity
from harness.models.closed_loop import is_closed_loop
from harness.models.spike import server_of

SCRIPT = (Path(__file__).with_name("explorer.js")).read_text()
SPIKES = ("per-vu-iterations", "constant-vus")  # every user arrives at once with one request
ARTICLE = Knobs(users=10_000, service_ms=SERVER_DEFAULTS["SLEEP_MS"], threads=1000,
                max_connections=SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"],
                accept_count=SERVER_DEFAULTS["TOMCAT_ACCEPT_COUNT"], keep_alive_s=20)  # F000-f (seed 000) on 2 cores
LABELS = {  # knob → (label, what it is, in a tooltip)
    "users": ("users arriving at once", "each sends one request"),
    "service_ms": ("service time (ms)", "how long a request holds its thread: the /hello sleep, a query"),
    "cpu_ms": ("of which CPU (ms)", "the part of the service time spent computing, on one core"),
    "cores": ("cores", "the server's CPUs (a quota may be fractional)"),
    "threads": ("threads.max", "Tomcat's worker threads"),
    "pool": ("database pool (0: none)", "HikariCP's maximum-pool-size; with open-in-view a request holds a "
                                        "connection for its whole time on a thread"),
    "max_connections": ("max-connections", "connections Tomcat takes at once"),
    "accept_count": ("accept-count", "the kernel's queue of connections Tomcat has not taken yet"),
    "open_files": ("open files (ulimit -n)", "every connection is a file of the server process"),
    "keep_alive_s": ("keep-alive timeout (s; 0: off)", "how long an answered connection stays open, idle"),
    "timeout_s": ("client timeout (s)", "the client gives up waiting for an answer (k6: 60 s)"),
}
SERIES = {"model: answered": PALETTE["model: ok"], "model: failed": PALETTE["model: failed"],
          "measured: answered": PALETTE["measured: ok"], "measured: failed": PALETTE["measured: failed"]}
MEASURED_COLUMNS = ["ref", "chapter", "step", "key", "from_s", "to_s", "series", "requests"]
UNMATCHED = "none of the book's steps ran at these settings"


# ---- the same words and numbers explorer.js writes -------------------------------------------------------------

def whole(x: float) -> str:
    """A number rounded half up, with thousands separators (as explorer.js rounds: not Python's half to even)."""
    return f"{math.floor(x + 0.5):,}"


def seconds(ms: float) -> str:
    return f"{math.floor(ms / 100 + 0.5) / 10:.1f} s"


def encode_bins(prediction: CapacityPrediction) -> str:
    """The model's bins as the chart's hidden input holds them: "from,to,answered,failed" per bin, space-separated."""
    return " ".join(",".join(str(v) for v in b) for b in prediction.bins)


def knob_key(knobs: Knobs, prediction: CapacityPrediction) -> str:
    """The simulation a setting runs, as a key measured steps are matched on (explorer.js: key)."""
    return " ".join(str(v) for v in (knobs.users, min(knobs.threads, knobs.pool or knobs.threads), prediction.hold_ms,
                                     prediction.connections, knobs.accept_count, knobs.keep_alive_s * 1000,
                                     knobs.timeout_s * 1000))


# ---- the measured steps -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MeasuredStep:
    chapter: str
    step: str
    key: str  # the simulation the step's settings run (knob_key's format)
    bin_ms: int
    answered: int
    failed: int

    @property
    def ref(self) -> str:
        """The step's name in the chart's data: step ids are unique only within a chapter."""
        return f"{self.chapter}:{self.step}"

    @property
    def text(self) -> str:
        return f"{self.step} ({self.chapter.replace('chapter', 'chapter ')}): {whole(self.answered)} answered, {whole(self.failed)} failed"


def step_key(data: ChapterData, step_id: str) -> tuple[str, int] | None:
    """A spike step's key and bin width, rebuilt from what its step.json says it ran; None for any other step (a
    closed loop, an unknown server, or a run where users did not each send exactly one request)."""
    meta = data.steps[step_id]
    machine = meta.get("machine", {})
    limits = {name: machine[field] for name, field in (("nofile", "nofile_limit"), ("somaxconn", "somaxconn"))
              if field in machine}
    step = step_from_config(data.chapter, step_id, meta["config"], limits)
    server = server_of(step) if step.load.get("executor") in SPIKES and not is_closed_loop(step) else None
    if server is None or meta["requests"]["issued"] != meta["requests"]["asked"]:
        return None
    timeout = duration_ms(step.load["request_timeout"])
    key = " ".join(str(v) for v in (meta["requests"]["asked"], server.threads, server.service_ms, server.max_connections,
                                    server.accept_count, server.keep_alive_timeout_ms if server.keep_alive else 0, timeout))
    return key, bin_of(server.service_ms)


def step_ends(data: ChapterData, step_id: str) -> pd.DataFrame | None:
    """When the step's requests ended (ms since its first request) and how (`answered`), `requests` of each:
    one row per request, or, for a step recorded per second (beyond ~20k requests), one row per second and outcome
    (to the second). None when the step has neither."""
    start = spike_start_ms(data)[step_id]
    requests = data.requests[data.requests["step"] == step_id]
    if len(requests):
        timeout = duration_ms(data.steps[step_id]["config"]["load"].get("request_timeout", "60s"))
        ends = requests["end_ms"].fillna(requests["start_ms"] + timeout) - start
        return pd.DataFrame({"end_ms": ends, "answered": answered(requests), "requests": 1})
    seconds = data.outcomes[data.outcomes["step"] == step_id]
    if len(seconds):
        return pd.DataFrame({"end_ms": seconds["ts_ms"] - start, "answered": answered(seconds),
                             "requests": seconds["requests"]})
    return None


def explorer_measured(*datas: ChapterData) -> pd.DataFrame:
    """Every spike step of these chapters, binned as the model bins it (a bin one request time wide, from the step's
    first request): requests answered and failed per bin, one step at a time."""
    parts = []
    for data in datas:
        for step_id in data.steps:
            found = step_key(data, step_id)
            ends = step_ends(data, step_id) if found else None
            if ends is None:
                continue
            key, width = found
            binned = ends.assign(bin=(ends["end_ms"] // width).astype(int), series=ends["answered"].map(
                {True: "measured: answered", False: "measured: failed"})).groupby(["bin", "series"], as_index=False)[
                "requests"].sum()
            parts.append(binned.assign(ref=f"{data.chapter}:{step_id}", chapter=data.chapter, step=step_id, key=key,
                                       from_s=binned["bin"] * width / 1000, to_s=(binned["bin"] + 1) * width / 1000))
    frame = pd.concat(parts, ignore_index=True)[MEASURED_COLUMNS] if parts else pd.DataFrame(columns=MEASURED_COLUMNS)
    frame.attrs["open_files"] = usual_open_files(*datas)  # the explorer starts at the limit the steps ran with
    return frame


def measured_steps(measured: pd.DataFrame) -> list[MeasuredStep]:
    """Each measured step once, with its totals (never two steps added together)."""
    steps = []
    for (chapter, step, key), rows in measured.groupby(["chapter", "step", "key"], sort=False):
        totals = rows.groupby("series")["requests"].sum()
        width = round((rows["to_s"] - rows["from_s"]).iloc[0] * 1000)
        steps.append(MeasuredStep(chapter, step, key, width, int(totals.get("measured: answered", 0)),
                                  int(totals.get("measured: failed", 0))))
    return steps


def usual_open_files(*datas: ChapterData) -> int | None:
    """The open-files limit most of these steps ran with (step.json machine.nofile_limit)."""
    counted = Counter(m.get("machine", {}).get("nofile_limit") for data in datas for m in data.steps.values())
    counted.pop(None, None)
    return counted.most_common(1)[0][0] if counted else None


# ---- the chart ----------------------------------------------------------------------------------------------------

def chart(widget_id: str, prediction: CapacityPrediction, matched: list[MeasuredStep],
          measured: pd.DataFrame) -> alt.VConcatChart:
    """Answered and failed requests per bin: the model's as bars (from the hidden input explorer.js fills), the
    matching steps' as diamonds; two panels on one time axis."""
    model = alt.param(name="lab_model", value=encode_bins(prediction), bind=alt.BindDirect(element=f"#{widget_id}-model"))
    steps = alt.param(name="lab_steps", value=" ".join(m.ref for m in matched),
                      bind=alt.BindDirect(element=f"#{widget_id}-steps"))
    bins = alt.Chart(alt.Data(values=[{"row": 0}])).transform_calculate(bin="split(lab_model, ' ')").transform_flatten(
        ["bin"]).transform_calculate(
        part="split(datum.bin, ',')").transform_calculate(
        from_s="toNumber(datum.part[0]) / 1000", to_s="toNumber(datum.part[1]) / 1000",
        answered="toNumber(datum.part[2])", failed="toNumber(datum.part[3])").transform_fold(
        ["answered", "failed"], as_=["outcome", "requests"]).transform_calculate(series="'model: ' + datum.outcome")
    # A layer whose rows are all filtered out makes Vega warn of an infinite extent: an invisible row per panel at
    # (0, 0), inside the bars' domain already, keeps each layer non-empty whatever the reader chooses.
    sentinels = pd.DataFrame({"ref": "", "chapter": "", "step": "", "from_s": 0.0, "to_s": 0.0,
                              "series": ["measured: answered", "measured: failed"], "requests": 0})
    shown = pd.concat([sentinels, measured.drop(columns=["key"])], ignore_index=True)
    points = alt.Chart(shown).transform_filter(
        "datum.ref == '' || indexof(split(lab_steps, ' '), datum.ref) >= 0").transform_calculate(
        mid_s="(datum.from_s + datum.to_s) / 2")
    color = alt.Color("series:N", title="", scale=alt.Scale(domain=list(SERIES), range=list(SERIES.values())),
                      legend=alt.Legend(orient="top"))
    x = alt.X("from_s:Q", title="seconds since the users arrived")
    time_tips = [alt.Tooltip("from_s:Q", title="from (s)"), alt.Tooltip("to_s:Q", title="to (s)"),
                 alt.Tooltip("requests:Q", title="requests", format=",")]

    def panel(outcome: str) -> alt.LayerChart:
        bars = bins.transform_filter(f"datum.outcome == '{outcome}'").mark_bar(stroke="white", strokeWidth=0.5).encode(
            x=x, x2="to_s:Q", y=alt.Y("requests:Q", title=f"{outcome} per bin"), color=color,
            tooltip=[alt.Tooltip("series:N", title="series"), *time_tips])
        dots = points.transform_filter(f"datum.series == 'measured: {outcome}'").mark_point(
            filled=True, shape="diamond").encode(
            x=alt.X("mid_s:Q"), y="requests:Q", color=color, detail="ref:N",
            size=alt.condition("datum.ref == ''", alt.value(0), alt.value(80)),
            tooltip=[alt.Tooltip("step:N", title="step"), alt.Tooltip("chapter:N", title="chapter"),
                     alt.Tooltip("series:N", title="series"), *time_tips])
        return alt.layer(bars, dots).properties(height=150)

    return alt.vconcat(panel("answered"), panel("failed")).resolve_scale(x="shared").add_params(model, steps)


# ---- the widget ---------------------------------------------------------------------------------------------------

ROWS = (  # (label, [(output, before, after)]): the table of numbers under the knobs
    ("answered", [("answered", "", "")]),
    ("failed", [("failed", "", "")]),
    ("connections held at once", [("held", "", ""), ("ceiling", " (the connections Tomcat takes + accept-count + 1 = ", ")")]),
    ("waiting for a thread as they arrive", [("waiting", "", "")]),
    ("left retrying to connect", [("outside", "", "")]),
    ("throughput while busy", [("throughput", "", " requests/s, "), ("in_service", "", " served at once, set by "),
                               ("binding", "", "")]),
    ("time to an answer", [("mean", "", " on average, "), ("slowest", "", " the slowest")]),
    ("measured at these settings", [("measured", "", "")]),
)


def outputs(knobs: Knobs, prediction: CapacityPrediction, matched: list[MeasuredStep]) -> dict[str, tuple[str, str]]:
    """Each output's text and raw value for these settings, as explorer.js writes them."""
    p = prediction
    mean = "–" if not p.answered else seconds(p.mean_ms)
    return {
        "answered": (f"{whole(p.answered)} of {whole(knobs.users)}", p.answered), "failed": (whole(p.failed), p.failed),
        "held": (whole(p.held), p.held),
        "ceiling": (f"{whole(p.connections)} + {whole(knobs.accept_count)} + {p.ceiling - p.connections - knobs.accept_count}"
                    f" = {whole(p.ceiling)}", p.ceiling),
        "waiting": (whole(p.waiting), p.waiting), "outside": (whole(p.outside), p.outside),
        "throughput": (whole(p.throughput), p.throughput), "in_service": (whole(p.in_service), p.in_service),
        "binding": (p.binding, p.binding), "mean": (mean, p.mean_ms),
        "slowest": ("–" if not p.answered else seconds(p.slowest_ms), p.slowest_ms),
        "measured": ("; ".join(m.text for m in matched) or UNMATCHED, " ".join(m.ref for m in matched)),
    }


def _js_value(value) -> str:
    """A raw value as explorer.js writes it into data-value (String(x)): NaN, integers without ".0"."""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _form(widget_id: str, knobs: Knobs) -> str:
    fields = []
    for name, (label, what) in LABELS.items():
        low, high = RANGES[name]
        step = "0.25" if name == "cores" else "1"
        fields.append(f'<label title="{_escape(what)}"><span>{_escape(label)}</span>'
                      f'<input name="{name}" type="number" min="{low}" max="{high}" step="{step}" '
                      f'value="{_js_value(getattr(knobs, name))}"></label>')
    return (f'<form id="{widget_id}-knobs" class="lab-explorer-knobs" autocomplete="off" data-state="answered">'
            + "".join(fields) + "</form>")


def _table(widget_id: str, values: dict[str, tuple[str, str]]) -> str:
    rows = []
    for label, parts in ROWS:
        cells = "".join(f'{_escape(before)}<output id="{widget_id}-{name}" data-value="{_escape(_js_value(values[name][1]))}">'
                        f"{_escape(values[name][0])}</output>{_escape(after)}" for name, before, after in parts)
        rows.append(f"<tr><th scope=\"row\">{_escape(label)}</th><td>{cells}</td></tr>")
    return f'<table class="lab-explorer-answer" aria-live="polite">{"".join(rows)}</table>'


STYLE = """<style>
.lab-explorer-knobs{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.4rem .8rem;margin:.5rem 0}
.lab-explorer-knobs label{display:flex;flex-direction:column;font-size:.85rem}
.lab-explorer-knobs input{width:100%;text-align:right;font-variant-numeric:tabular-nums}
.lab-explorer-answer{font-size:.9rem;margin:.5rem 0}
.lab-explorer-answer th{font-weight:normal;padding-right:1rem;text-align:left;vertical-align:top}
.lab-explorer-answer output{font-variant-numeric:tabular-nums;font-weight:600}
.lab-explorer-problems{color:#b00;min-height:1em;margin:0}
</style>"""


@dataclass
class Explorer:
    """The widget, shown as Markdown holding raw HTML (as the book's charts are: no HTML cell output)."""

    knobs: Knobs
    measured: pd.DataFrame
    widget_id: str

    @property
    def prediction(self) -> CapacityPrediction:
        return predict_capacity(self.knobs)

    def matched(self, prediction: CapacityPrediction) -> list[MeasuredStep]:
        key = knob_key(self.knobs, prediction)
        return [m for m in measured_steps(self.measured) if m.key == key]

    def html(self) -> str:
        p = self.prediction
        matched = self.matched(p)
        config = {**constants(), "measured": [{**asdict(m), "ref": m.ref, "text": m.text} for m in measured_steps(self.measured)],
                  "unmatched": UNMATCHED}
        hidden = "".join(f'<input type="hidden" id="{self.widget_id}-{name}" value="{_escape(value)}">'
                         for name, value in (("model", encode_bins(p)), ("steps", " ".join(m.ref for m in matched))))
        script = SCRIPT.replace("</", "<\\/")
        config_json = json.dumps(config, separators=(",", ":")).replace("<", "\\u003c")
        return (f'<div class="lab-explorer" id="{self.widget_id}">{STYLE}{_form(self.widget_id, self.knobs)}'
                f'<p class="lab-explorer-problems" id="{self.widget_id}-problems" role="alert"></p>'
                f"{_table(self.widget_id, outputs(self.knobs, p, matched))}{hidden}\n"
                f"{chart_html(chart(self.widget_id, p, matched, self.measured).to_dict())}"
                f'<script type="application/json" id="{self.widget_id}-config">{config_json}</script>\n'
                f'<script>{script}\nlabExplorer.attach("{self.widget_id}", JSON.parse('
                f'document.getElementById("{self.widget_id}-config").textContent));</script></div>')

    def _repr_markdown_(self) -> str:
        return raw_html(self.html())


def capacity_explorer(measured: pd.DataFrame | None = None, **settings) -> Explorer:
    """The explorer at the article's F000-f settings (or `settings`, knob=value), the steps of `measured`
    (explorer_measured) drawn where they match; the open-files limit the measured steps ran with."""
    measured = measured if measured is not None else pd.DataFrame(columns=MEASURED_COLUMNS)
    unknown = set(settings) - set(LABELS)
    if unknown:
        raise ValueError(f"no explorer setting {', '.join(sorted(unknown))}: choose from {', '.join(LABELS)}")
    from_data = {"open_files": measured.attrs["open_files"]} if measured.attrs.get("open_files") else {}
    knobs = replace(ARTICLE, **{**from_data, **settings})
    predict_capacity(knobs)  # a setting out of range fails here, with the knob named
    return Explorer(knobs, measured, f"lab-explorer-{uuid.uuid4().hex[:10]}")
