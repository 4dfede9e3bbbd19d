"""The one import each chapter makes: `from harness.book import *`.

It sets the chart theme and an offline chart renderer, and gives chapters short calls: `load(chapter)`,
the chart builders, `reproduce_box(chapter)`, `verdict_table(verdicts)`, `Verdict` and its helpers.

Offline charts. Altair's own HTML renderer fetches vega, vega-lite and vega-embed from a CDN when the
page opens, so a chart is blank without internet and depends on a third party at read time. The book
serves the copies pinned in package.json instead: `npm ci` puts them in node_modules/, `_quarto.yml`
lists the three files as project resources (Quarto copies them to _book/node_modules/), and each chart
loads them relative to the site root that Quarto writes into every page (<meta name="quarto:offset">).
A page without that tag (a test page) is taken to sit one folder below the root, as chapters/ does.
Referencing node_modules in place keeps one source of truth (package-lock.json) and no copy step.

No cell emits HTML: charts are Markdown holding a raw HTML block, tables are Markdown (harness.tables). Quarto
adds require.js and jQuery from a CDN to any page with an HTML cell output; offline they fail to load, and
online require.js turns the chart libraries into AMD modules (the loader copes with that too, see LOADER_JS).
"""
from __future__ import annotations

import json
import uuid

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.analysis import latency_percentiles, per_second, spike_start_ms, throughput_table
from harness.charts import (THEME, busy_threads_chart, capacity_explorer, completion_rate_chart, completions_chart,
                            connections_chart, explorer_measured, failures_chart, latency_ecdf_chart,
                            rps_chart, ss_timeline_chart, step_order)
from harness import answer, calibration
from harness.calibration import Check
from harness.charts import (issued_chart, memory_chart, noise_chart, redeploy_chart, sampler_cost_chart, spread_chart,
                            start_curves_chart)
from harness.provenance import machines_table, readme_commands, reproduce_box
from harness.store import ChapterData, load
from harness.tables import markdown_table, people_table
from harness.verdicts import ARTICLE_002_RPS, answered, failure_kinds, DIFFERS, NOT_REPRODUCED, REPRODUCED, Verdict, f000_verdicts, f002_verdicts, verdict_of, within, within_abs

__all__ = [
    "alt", "pd", "Markdown", "load", "ChapterData",
    "completions_chart", "ss_timeline_chart", "busy_threads_chart",
    "rps_chart", "latency_ecdf_chart", "completion_rate_chart", "throughput_table", "latency_percentiles", "latency_table", "per_second",
    "f002_verdicts", "f000_verdicts", "failures_chart", "connections_chart", "capacity_explorer", "explorer_measured",
    "predictions_table", "spike_predictions_table", "failure_summary", "issued_table", "plus_one_table", "rps_table", "littles_law_table", "ceiling_sentences",
    "reproduce_box", "readme_commands", "verdict_table", "machines_table", "steps_table", "peaks_table", "completion_table",
    "Verdict", "verdict_of", "within", "within_abs", "REPRODUCED", "NOT_REPRODUCED", "DIFFERS",
    "answer", "calibration", "check_table", "overflow_summary", "issued_repeats", "people_table", "ceilings_table", "starts_summary", "memory_summary", "redeploy_summary", "noise_runs",
    "noise_waves", "sampler_summary", "start_curves_chart", "spread_chart", "issued_chart", "memory_chart", "redeploy_chart",
    "sampler_cost_chart", "noise_chart",
]

RENDERER = "concurrency-lab-offline"
# Site-relative paths of the chart libraries, in load order (vega-lite needs vega, vega-embed both).
VEGA_SCRIPTS = (
    "node_modules/vega/build/vega.min.js",
    "node_modules/vega-lite/build/vega-lite.min.js",
    "node_modules/vega-embed/build/vega-embed.min.js",
)
FALLBACK_ROOT = "../"  # where the site root is for a page without Quarto's offset tag
# svg: crisp, and its marks are DOM nodes a test can count; no "open in editor" (it needs the internet).
EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}

# Loads the libraries once per page, then draws the chart; a failure shows in the page and the console.
# Where require.js is on the page (Quarto adds it, from a CDN, to pages with HTML cell outputs), the libraries'
# UMD bundles register as AMD modules instead of globals, so they are asked of require.js by name.
LOADER_JS = """(function (id, scripts, fallbackRoot, options) {
  var meta = document.querySelector('meta[name="quarto:offset"]');
  var root = meta ? meta.getAttribute("content") : fallbackRoot;
  if (root && root.slice(-1) !== "/") root += "/";
  function load(src) {
    return new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = root + src;
      tag.onload = resolve;
      tag.onerror = function () { reject(new Error("cannot load " + tag.src)); };
      document.head.appendChild(tag);
    });
  }
  function viaScriptTags() {
    return scripts.reduce(function (ready, src) {
      return ready.then(function () { return load(src); });
    }, Promise.resolve()).then(function () { return window.vegaEmbed; });
  }
  function viaRequireJs() {
    var paths = {};
    scripts.forEach(function (src) { paths[src.split("/")[1]] = root + src.replace(/\\.js$/, ""); });
    window.requirejs.config({paths: paths});
    return new Promise(function (resolve, reject) {
      window.requirejs(["vega-embed"], resolve, function (err) {
        reject(new Error("cannot load the chart libraries through require.js: " + err.message));
      });
    });
  }
  var amd = typeof window.define === "function" && window.define.amd && typeof window.requirejs === "function";
  window.labVega = window.labVega || (amd ? viaRequireJs() : viaScriptTags());
  var el = document.getElementById(id);
  var spec = JSON.parse(document.getElementById(id + "-spec").textContent);
  window.labVega
    .then(function (embed) { return embed(el, spec, options); })
    .catch(function (err) {
      el.innerHTML = '<p class="lab-chart-error" style="color:#b00"></p>';
      el.firstChild.textContent = "Chart not drawn: " + err.message;
      console.error(err);
    });
})"""


def _script_json(value) -> str:
    """JSON safe inside <script>: no '<' can close the tag early."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def chart_html(spec: dict, embed_options: dict | None = None) -> str:
    """A chart as an HTML fragment: its div, its spec as JSON, and the loader call."""
    chart_id = f"lab-chart-{uuid.uuid4().hex[:10]}"
    args = ", ".join(_script_json(v) for v in (chart_id, list(VEGA_SCRIPTS), FALLBACK_ROOT,
                                                {**EMBED_OPTIONS, **(embed_options or {})}))
    return (f'<div class="lab-chart" id="{chart_id}"></div>\n'
            f'<script type="application/json" id="{chart_id}-spec">{_script_json(spec)}</script>\n'
            f"<script>{LOADER_JS}({args});</script>\n")


def raw_html(html: str) -> str:
    """HTML as Markdown that Pandoc passes through untouched."""
    return f"```{{=html}}\n{html}\n```\n"


def offline_renderer(spec: dict, **metadata) -> dict:
    """A chart as Markdown holding raw HTML, not as a text/html output: Quarto adds require.js and jQuery from a
    CDN to every page with an HTML cell output, which an offline reader cannot load."""
    return {"text/markdown": raw_html(chart_html(spec, metadata.get("embed_options"))), "text/plain": "<chart>"}


alt.renderers.register(RENDERER, offline_renderer)
alt.renderers.enable(RENDERER)
alt.theme.enable(THEME)
# Altair refuses to embed more than 5000 rows (its default): builders aggregate first, so keep that guard.
alt.data_transformers.enable("default", max_rows=5000)


# ---- tables ---------------------------------------------------------------------------------------------

def verdict_table(verdicts: list[Verdict]) -> Markdown:
    """The chapter's closing table: finding, what the article says, the verdict and its reason in one clause;
    what we measured and the whole reason follow, folded."""
    if not verdicts:
        return Markdown("*No finding is tested in this chapter yet.*")
    table = pd.DataFrame([{"Finding": v.finding, "The article says": v.article,
                           "Verdict": f"**{v.verdict}**" + (f": {headline(v.why)}" if v.why else "")} for v in verdicts])
    evidence = "\n\n".join(f"**{v.finding}** ({v.verdict}). We measured: {v.measured}." + (f" Why: {v.why}." if v.why else "")
                            for v in verdicts)
    return Markdown(markdown_table(table) + "\n\n" + folded("The evidence behind each verdict", evidence))


def headline(reason: str) -> str:
    """A reason's first clause (up to its first semicolon): what a reader of the table needs first."""
    return reason.split("; ")[0]


def folded(summary: str, markdown: str) -> str:
    """Markdown shown only when the reader opens it."""
    return f"<details><summary>{summary}</summary>\n\n{markdown}\n\n</details>"


def check_table(checks: list[Check]) -> Markdown:
    """Chapter 2's closing table: what the book says of its lab, the numbers, and whether they bear it out."""
    return people_table(pd.DataFrame([{"The book says": c.claim, "We measured": c.measured, "Holds?": c.holds}
                                      for c in checks]))


# What each of the machine's ceilings caps in the book (the values come from step.json).
CEILINGS = {
    "cores": ("CPU cores", "k6, the server and the samplers share them: k6's start-up speed and every timing depend on it"),
    "memory_bytes": ("memory", "k6's users and the server's threads and connections; far from the limit, see above"),
    "nofile_limit": ("open files per process (hard limit)", "one socket per user: k6 and the server each hold fewer than this; "
                     "chapter 3's 15,000 users are the most one k6 process can run here"),
    "somaxconn": ("net.core.somaxconn", "silently caps Tomcat's accept-count; chapter 3 raises it for its accept-count 2000 step"),
    "local_port_range": ("local port range", "client ports to one server address and port: about 28,000 connections at once"),
    "pid_max": ("kernel.pid_max", "every server thread takes a pid: N threads plus everything else must fit"),
    "threads_max": ("kernel.threads-max", "threads system-wide"),
}


def ceilings_table(data: ChapterData) -> Markdown:
    """The machine's ceilings as recorded with the data, and what each caps in the chapters."""
    machine = calibration.recorded_machine(data)
    rows = []
    for key, (name, caps) in CEILINGS.items():
        value = machine.get(key)
        if key == "memory_bytes" and value:
            value = f"{value / 2**30:.1f} GiB"
        elif key == "local_port_range" and value:
            value = f"{value[0]}–{value[1]} ({int(value[1]) - int(value[0]) + 1:,} ports)"
        elif isinstance(value, int):
            value = f"{value:,}"
        rows.append({"ceiling": name, "on this machine": value if value is not None else "not recorded", "what it caps": caps})
    return people_table(pd.DataFrame(rows))


def starts_summary(data: ChapterData) -> Markdown:
    table = calibration.start_table(data)
    return people_table(table.rename(columns={"users": "users asked", "issued": "requests issued", "started_1s": "started within 1 s",
                                              "p50_s": "half started (s)", "p95_s": "95 % started (s)",
                                              "spread_s": "all started (s)"}).round(2))


def memory_summary(data: ChapterData) -> Markdown:
    table = calibration.memory_table(data)
    return people_table(table.rename(columns={"k6_mib": "k6 peak (MiB)", "server_mib": "server peak (MiB)",
                                              "server_idle_mib": "server at start (MiB)", "connections": "connections (peak)",
                                              "threads": "threads (peak)"}).round(0))


def redeploy_summary(data: ChapterData) -> Markdown:
    return people_table(calibration.redeploy_table(data).rename(columns={
        "launch": "how the JVM started", "median_ms": "median (ms)", "min_ms": "fastest (ms)", "max_ms": "slowest (ms)",
        "rss_mib": "memory when healthy (MiB)"}).round(0))


def sampler_summary(data: ChapterData) -> Markdown:
    table = calibration.sampler_cost_table(data)
    return people_table(table.assign(core_share=(table["core_share"] * 100).round(1)).rename(
        columns={"connections": "connections (peak)", "core_share": "% of one core", "ss_cpu_s": "ss + nstat CPU (s)",
                 "actuator_cpu_s": "Actuator CPU (s)", "process_cpu_s": "/proc CPU (s)", "load_s": "load (s)"}).round(2))


def noise_runs(data: ChapterData) -> Markdown:
    return people_table(calibration.runs_table(calibration.noise_table(data)).rename(columns={
        "sampled": "samplers on", "ok": "answered", "model_failed": "failed (model)"}))


def noise_waves(data: ChapterData) -> Markdown:
    return people_table(calibration.noise_summary(calibration.noise_table(data)).rename(columns={
        "median_s": "median (s)", "min_s": "earliest (s)", "max_s": "latest (s)", "range_s": "range (s)",
        "unsampled_min_s": "samplers off: earliest (s)", "unsampled_max_s": "samplers off: latest (s)"}).round(2))


def overflow_summary(data: ChapterData) -> Markdown:
    return people_table(calibration.overflow_table(data).rename(columns={
        "users": "users", "listen_overflows": "accept-queue overflows", "syn_retransmits": "SYN retransmits",
        "accept_queue_peak": "accept queue (peak)", "interrupted": "cut off by k6"}))


def issued_repeats(data: ChapterData) -> Markdown:
    return people_table(calibration.issued_runs(data).rename(columns={
        "users": "users asked", "issued": "requests issued", "last_start_s": "last request started (s)"}).round(2))


def completion_table(data: ChapterData) -> Markdown:
    """Per step: successes and failures predicted vs measured, and how far measured completion times lie from
    the predicted ones (the k-th earliest success against the model's k-th)."""
    rows = []
    for name in step_order(data):
        meta, requests = data.steps[name], data.requests[data.requests["step"] == name]
        ok = requests["status"].between(200, 399) & (requests["error_code"] == 0)
        measured = sorted((requests.loc[ok, "end_ms"] - spike_start_ms(data)[name]) / 1000)
        predicted = [end / 1000 for end, count in meta["model"]["completions"] for _ in range(count)]
        gaps = [abs(m - p) for m, p in zip(measured, predicted, strict=False)]
        rows.append({
            "step": name,
            "answered (model)": meta["model"]["succeeded"], "answered (measured)": int(ok.sum()),
            "failed (model)": meta["model"]["failed"], "failed (measured)": int((~ok).sum()),
            "median gap (s)": round(pd.Series(gaps).median(), 2) if gaps else None,
            "largest gap (s)": round(max(gaps), 2) if gaps else None,
        })
    return people_table(pd.DataFrame(rows))


def steps_table(data: ChapterData) -> Markdown:
    """Per step, in run order: why it exists, the load, the server knobs it sets, and requests asked → answered."""
    rows = []
    for name in step_order(data):
        meta = data.steps[name]
        load, counts = meta["config"]["load"], meta["requests"]
        amount = f"for {load['duration']}" if "duration" in load else f"× {load.get('iterations', 1)} iteration(s)"
        rows.append({
            "step": name, "why": meta.get("why", ""),
            "load": f"{load['executor']}, {load['vus']} VUs {amount}, keep-alive {'on' if load.get('connection_reuse') else 'off'}",
            "server": ", ".join(f"{k}={v}" for k, v in meta["config"]["server"].items()) or "Spring Boot defaults",
            "asked": counts["asked"], "issued": counts["issued"], "answered": counts.get("succeeded"), "failed": counts.get("failed"),
        })
    return people_table(pd.DataFrame(rows))


def peaks_table(data: ChapterData) -> Markdown:
    """Per step: the highest values the samplers saw against the model's limits."""
    rows = []
    for name in step_order(data):
        model = data.steps[name]["model"]
        ss = data.ss[data.ss["step"] == name]
        busy = data.actuator[(data.actuator["step"] == name) & (data.actuator["metric"] == "tomcat.threads.busy")]
        rows.append({
            "step": name,
            "established (peak)": _peak(ss["estab"]), "ceiling (model)": model["ceiling"],
            "accept queue (peak)": _peak(ss["accept_queue"]),
            "busy threads (peak)": _peak(busy["value"]), "threads (model)": model["threads"],
            "listen overflows": int(ss["listen_overflows"].sum()),
        })
    return people_table(pd.DataFrame(rows))


def _peak(values: pd.Series) -> int | None:
    """The highest sample; None when the sampler got none (shown as an empty cell, not a crash)."""
    return None if values.dropna().empty else int(values.max())


# ---- throughput chapters (chapter 1) -----------------------------------------------------------------

def latency_table(data: ChapterData, step_ids: list[str]) -> Markdown:
    """Answered requests' latency percentiles per step, in ms."""
    table = latency_percentiles(data, step_ids)
    return people_table(table.rename(columns={c: c.replace("_ms", " (ms)") for c in table.columns}).round(0))


def predictions_table(data: ChapterData) -> Markdown:
    """What the closed-loop model predicted for each step, before any measurement."""
    rows = [{"step": s, "C": m["config"]["load"]["vus"], "requests": m["model"]["requests"],
             "RPS (model)": round(m["model"]["rps"]), "mean latency (model, ms)": round(m["model"]["mean_latency_ms"]),
             "run time (model, s)": round(m["model"]["duration_ms"] / 1000, 1)}
            for s, m in sorted(data.steps.items(), key=lambda item: (item[1]["config"]["load"]["vus"], item[0]))]
    return people_table(pd.DataFrame(rows))


def rps_table(data: ChapterData) -> Markdown:
    """Measured RPS per step beside the article's (ab) and the model's."""
    table = throughput_table(data).sort_values(["concurrency", "tool"])
    table["RPS (article, ab)"] = table["concurrency"].map(ARTICLE_002_RPS)
    table = table.rename(columns={"concurrency": "C", "rps": "RPS (measured)", "rps_model": "RPS (model)",
                                  "rps_error": "measured vs model"})
    shown = table[["step", "tool", "C", "issued", "RPS (measured)", "RPS (article, ab)", "RPS (model)", "measured vs model"]]
    return people_table(shown, {"RPS (measured)": "{:,.1f}", "RPS (article, ab)": "{:,.2f}", "RPS (model)": "{:,.0f}",
                                "measured vs model": "{:+.1%}"})


def littles_law_table(data: ChapterData) -> Markdown:
    """Little's law on our data: throughput × mean latency should equal the clients in flight, C."""
    table = throughput_table(data).sort_values(["concurrency", "tool"])
    shown = table[["step", "tool", "concurrency", "rps", "mean_latency_ms", "littles_concurrency"]].rename(columns={
        "concurrency": "C (clients in flight)", "rps": "RPS", "mean_latency_ms": "mean latency (ms)",
        "littles_concurrency": "RPS × mean latency"})
    return people_table(shown, {"RPS": "{:,.1f}", "mean latency (ms)": "{:,.0f}", "RPS × mean latency": "{:,.1f}"})


def ceiling_sentences(data: ChapterData) -> str:
    """Per spike step, in words: its connection ceiling, who finds no room, and the waves if all are held."""
    lines = []
    for name in step_order(data):
        model, server = data.steps[name]["model"], data.steps[name]["config"]["server"]
        if "ceiling" not in model:
            continue
        room = ("so every user is held from the start" if model["over_ceiling"] == 0 else
                f"so {model['over_ceiling']} of the {model['requests']} users find no room at first")
        lines.append(
            f"- `{name}`: {model['threads']} threads at {model['service_ms']} ms per request, max-connections "
            f"{server.get('TOMCAT_MAX_CONNECTIONS', 8192)}, accept-count {server.get('TOMCAT_ACCEPT_COUNT', 100)}: "
            f"a ceiling of **{model['ceiling']}** connections, {room}; the simulation predicts "
            f"{model['succeeded']} responses and {model['failed']} failures.")
    return "\n".join(lines)


# ---- spike chapters (chapter 3) ----------------------------------------------------------------------

def spike_predictions_table(data: ChapterData) -> Markdown:
    """The model's prediction for every spike step, from step.json, before any measurement."""
    rows = []
    for name in step_order(data):
        meta = data.steps[name]
        model, server = meta["model"], meta["config"]["server"]
        if "ceiling" not in model:
            continue
        timeout = server.get("TOMCAT_KEEP_ALIVE_TIMEOUT", server.get("TOMCAT_CONNECTION_TIMEOUT", 60000))
        rows.append({"step": name, "users": model["requests"], "threads": model["threads"], "ceiling": model["ceiling"],
                     "keep-alive": f"{timeout // 1000} s" if model["keep_alive"] else "off",
                     "waves": model["waves"], "answered (model)": model["succeeded"], "failed (model)": model["failed"],
                     "cut by k6 (model)": model["interrupted"],
                     "last answer (model, s)": max((t for t, _ in model["completions"]), default=0) / 1000})
    return people_table(pd.DataFrame(rows))


def issued_table(data: ChapterData) -> Markdown:
    """Per step: requests asked and sent, and how long k6 took to send them all (its start-up spread)."""
    rows = []
    for name in step_order(data):
        meta, requests = data.steps[name], data.requests[data.requests["step"] == name]
        rows.append({"step": name, "executor": meta["config"]["load"]["executor"], "asked": meta["requests"]["asked"],
                     "issued": meta["requests"]["issued"],
                     "all sent within (s)": round((requests["start_ms"].max() - requests["start_ms"].min()) / 1000, 1)
                     if len(requests) else None})
    return people_table(pd.DataFrame(rows))


def plus_one_table(data: ChapterData, prefix: str = "plus1-") -> Markdown:
    """Whose is the +1? Per step: the limits, and the peaks of Tomcat's count, the accept queue and ESTAB."""
    rows = []
    for name in (s for s in step_order(data) if s.startswith(prefix)):
        server = data.steps[name]["config"]["server"]
        ss = data.ss[data.ss["step"] == name]
        tomcat = data.actuator[(data.actuator["step"] == name) & (data.actuator["metric"] == "tomcat.connections.current")]
        rows.append({"step": name, "max-connections": server["TOMCAT_MAX_CONNECTIONS"],
                     "accept-count": server["TOMCAT_ACCEPT_COUNT"],
                     "Tomcat's connections (peak)": int(tomcat["value"].max()) if len(tomcat) else None,
                     "accept queue, ss Recv-Q (peak)": int(ss["accept_queue"].max()) if len(ss) else None,
                     "established, ss (peak)": int(ss["estab"].max()) if len(ss) else None,
                     "ceiling (model)": data.steps[name]["model"]["ceiling"]})
    return people_table(pd.DataFrame(rows))


def failure_summary(data: ChapterData) -> Markdown:
    """Per step and kind of failure: how many, and when (seconds after the first request: first, median, last)."""
    rows = []
    for name in step_order(data):
        requests = data.requests[data.requests["step"] == name]
        failed = requests[~answered(requests)]
        if failed.empty:
            continue
        ends = (failed["end_ms"].fillna(failed["start_ms"]) - spike_start_ms(data)[name]) / 1000
        for kind, times in ends.groupby(failure_kinds(failed)):
            rows.append({"step": name, "failure": kind, "requests": len(times), "first (s)": round(times.min(), 1),
                         "median (s)": round(times.median(), 1), "last (s)": round(times.max(), 1)})
    if not rows:
        return Markdown("*No request failed in these steps.*")
    return people_table(pd.DataFrame(rows))
