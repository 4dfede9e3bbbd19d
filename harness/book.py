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
"""
from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.analysis import latency_percentiles, per_second, spike_start_ms, throughput_table
from harness.charts import (THEME, busy_threads_chart, capacity_explorer, completion_rate_chart, completions_chart,
                            connections_chart, explorer_measured, failures_chart, latency_ecdf_chart,
                            rps_chart, ss_timeline_chart, step_order)
from harness import ROOT, calibration
from harness.calibration import Check
from harness.charts import (issued_chart, memory_chart, noise_chart, redeploy_chart, sampler_cost_chart, spread_chart,
                            start_curves_chart)
from harness.store import ChapterData, complete_steps, data_root, load
from harness.verdicts import ARTICLE_002_RPS, answered, failure_kinds, DIFFERS, NOT_REPRODUCED, REPRODUCED, Verdict, f000_verdicts, f002_verdicts, verdict_of, within, within_abs

__all__ = [
    "alt", "pd", "Markdown", "load", "ChapterData",
    "completions_chart", "ss_timeline_chart", "busy_threads_chart",
    "rps_chart", "latency_ecdf_chart", "completion_rate_chart", "throughput_table", "latency_percentiles", "per_second",
    "f002_verdicts", "f000_verdicts", "failures_chart", "connections_chart", "capacity_explorer", "explorer_measured",
    "predictions_table", "spike_predictions_table", "failure_summary", "issued_table", "plus_one_table", "rps_table", "littles_law_table", "ceiling_sentences",
    "reproduce_box", "readme_commands", "verdict_table", "machines_table", "steps_table", "peaks_table", "completion_table",
    "Verdict", "verdict_of", "within", "within_abs", "REPRODUCED", "NOT_REPRODUCED", "DIFFERS",
    "calibration", "check_table", "ceilings_table", "starts_summary", "memory_summary", "redeploy_summary", "noise_runs",
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
  window.labVega = window.labVega || scripts.reduce(function (ready, src) {
    return ready.then(function () { return load(src); });
  }, Promise.resolve());
  var el = document.getElementById(id);
  var spec = JSON.parse(document.getElementById(id + "-spec").textContent);
  window.labVega
    .then(function () { return vegaEmbed(el, spec, options); })
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


def offline_renderer(spec: dict, **metadata) -> dict:
    return {"text/html": chart_html(spec, metadata.get("embed_options")), "text/plain": "<chart>"}


alt.renderers.register(RENDERER, offline_renderer)
alt.renderers.enable(RENDERER)
alt.theme.enable(THEME)
# Altair refuses to embed more than 5000 rows (its default): builders aggregate first, so keep that guard.
alt.data_transformers.enable("default", max_rows=5000)


# ---- the Reproduce box -------------------------------------------------------------------------------

def reproduce_box(chapter: str) -> Markdown:
    """A callout: the command that re-runs the chapter, the machine and versions the data came from, how long it took."""
    steps = dict(sorted(complete_steps(chapter).items(), key=lambda item: item[1].get("started_ms", 0)))
    lines = ['::: {.callout-note title="Reproduce this chapter"}', "```bash", f"invoke run {chapter}", "```", ""]
    if steps:
        lines += [run_line(steps), "", "Machine: " + machine_text(steps), "", "Versions: " + versions_text(steps)]
    else:
        lines.append(f"No complete steps in `data/{chapter}/` yet: the command above runs them.")
    return Markdown("\n".join(lines + [":::"]))


def run_line(steps: dict[str, dict]) -> str:
    first = min(m["started_ms"] for m in steps.values())
    when = datetime.fromtimestamp(first / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    each = ", ".join(f"{name} {duration_text(m.get('wall_s', 0))}" for name, m in steps.items())
    total = sum(m.get("wall_s", 0) for m in steps.values())
    commits = distinct(steps, lambda m: short_commit(m.get("git_commit", "unknown")))
    count = f"{len(steps)} step" + ("s" if len(steps) > 1 else "")
    return (f"The data: {count}, run {when} from commit {commits}; "
            f"{duration_text(total)} in all, start-up included ({each}).")


def short_commit(commit: str) -> str:
    """c72e12708fca…+dirty → c72e127+dirty: short, but still saying the tree had uncommitted changes."""
    return re.sub(r"^([0-9a-f]{7})[0-9a-f]*", r"\1", commit)


def machine_of(meta: dict) -> str:
    machine = meta.get("machine", {})
    kernel = machine.get("kernel") or meta.get("versions", {}).get("kernel", "?")
    return (f"{machine.get('cores', '?')} cores ({machine.get('cpu_model', 'CPU unknown')}), "
            f"{machine.get('memory_bytes', 0) / 2**30:.1f} GiB memory, Linux {kernel}")


def versions_of(meta: dict) -> str:
    versions = meta.get("versions", {})
    return (f"Java {versions.get('java', '?')}, Spring Boot {versions.get('spring_boot', '?')}, "
            f"k6 {versions.get('k6', '?')}")


def machine_text(steps: dict[str, dict]) -> str:
    return distinct(steps, machine_of)


def versions_text(steps: dict[str, dict]) -> str:
    return distinct(steps, versions_of)


def distinct(steps: dict[str, dict], describe) -> str:
    """One description when all steps agree; otherwise each with the steps it applies to (a partial re-run
    on another machine must not pass for a uniform one)."""
    groups: dict[str, list[str]] = {}
    for name, meta in steps.items():
        groups.setdefault(describe(meta), []).append(name)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{text} (steps {', '.join(names)})" for text, names in groups.items())


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def readme_commands() -> Markdown:
    """README's set-up commands (its first bash block), quoted so the book cannot drift from the README."""
    block = re.search(r"```bash\n.*?```", (ROOT / "README.md").read_text(), re.S)
    return Markdown(block.group(0) if block else "*README.md has no bash block.*")


# ---- tables ---------------------------------------------------------------------------------------------

def verdict_table(verdicts: list[Verdict]) -> Markdown:
    """The chapter's closing table: finding, what the article says, what we measured, verdict (and why)."""
    if not verdicts:
        return Markdown("*No finding is tested in this chapter yet.*")
    rows = ["| Finding | The article says | We measured | Verdict |", "|---|---|---|---|"]
    for v in verdicts:
        verdict = f"**{v.verdict}**" + (f": {v.why}" if v.why else "")
        rows.append("| " + " | ".join(_cell(c) for c in (v.finding, v.article, v.measured, verdict)) + " |")
    return Markdown("\n".join(rows))


def check_table(checks: list[Check]) -> Markdown:
    """Chapter 2's closing table: what the book says of its lab, the numbers, and whether they bear it out."""
    rows = ["| The book says | We measured | Holds? |", "|---|---|---|"]
    rows += [f"| {_cell(c.claim)} | {_cell(c.measured)} | **{'yes' if c.holds else 'no'}** |" for c in checks]
    return Markdown("\n".join(rows))


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


def ceilings_table(data: ChapterData) -> pd.DataFrame:
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
    return pd.DataFrame(rows)


def starts_summary(data: ChapterData) -> pd.DataFrame:
    table = calibration.start_table(data)
    return table.rename(columns={"started_1s": "started in 1 s", "p50_s": "half started (s)", "p95_s": "95 % started (s)",
                                 "spread_s": "all started (s)"}).round(2)


def memory_summary(data: ChapterData) -> pd.DataFrame:
    table = calibration.memory_table(data)
    return table.rename(columns={"k6_mib": "k6 peak MiB", "server_mib": "server peak MiB", "server_idle_mib": "server at start MiB",
                                 "connections": "connections (peak)", "threads": "threads (peak)"}).round(0)


def redeploy_summary(data: ChapterData) -> pd.DataFrame:
    return calibration.redeploy_table(data).round(0)


def sampler_summary(data: ChapterData) -> pd.DataFrame:
    table = calibration.sampler_cost_table(data)
    return table.assign(core_share=(table["core_share"] * 100).round(1)).rename(
        columns={"core_share": "% of one core", "ss_cpu_s": "ss + nstat CPU s", "actuator_cpu_s": "Actuator CPU s",
                 "process_cpu_s": "/proc CPU s", "load_s": "load s"}).round(2)


def noise_runs(data: ChapterData) -> pd.DataFrame:
    return calibration.runs_table(calibration.noise_table(data))


def noise_waves(data: ChapterData) -> pd.DataFrame:
    return calibration.noise_summary(calibration.noise_table(data)).round(2)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def machines_table() -> Markdown:
    """Every machine and set of versions behind the committed data, with the experiments measured on it."""
    rows: dict[tuple[str, str], list[str]] = {}
    root = data_root()
    chapters = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.exists() else []
    for chapter in chapters:
        for name, meta in complete_steps(chapter).items():
            rows.setdefault((machine_of(meta), versions_of(meta)), []).append(f"{chapter}/{name}")
    if not rows:
        return Markdown("*No complete step in `data/` yet.*")
    lines = ["| Machine | Versions | Steps measured on it |", "|---|---|---|"]
    lines += [f"| {_cell(m)} | {_cell(v)} | {_cell(', '.join(s))} |" for (m, v), s in rows.items()]
    return Markdown("\n".join(lines))


def completion_table(data: ChapterData) -> pd.DataFrame:
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
            "ok (model)": meta["model"]["succeeded"], "ok (measured)": int(ok.sum()),
            "failed (model)": meta["model"]["failed"], "failed (measured)": int((~ok).sum()),
            "median gap (s)": round(pd.Series(gaps).median(), 2) if gaps else None,
            "largest gap (s)": round(max(gaps), 2) if gaps else None,
        })
    return pd.DataFrame(rows).set_index("step")


def steps_table(data: ChapterData) -> pd.DataFrame:
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
            "asked": counts["asked"], "issued": counts["issued"], "ok": counts.get("succeeded"), "failed": counts.get("failed"),
        })
    return pd.DataFrame(rows).set_index("step")


def peaks_table(data: ChapterData) -> pd.DataFrame:
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
    return pd.DataFrame(rows).set_index("step")


def _peak(values: pd.Series) -> int | None:
    """The highest sample; None when the sampler got none (shown as an empty cell, not a crash)."""
    return None if values.dropna().empty else int(values.max())


# ---- throughput chapters (chapter 1) -----------------------------------------------------------------

def predictions_table(data: ChapterData) -> pd.DataFrame:
    """What the closed-loop model predicted for each step, before any measurement."""
    rows = [{"step": s, "C": m["config"]["load"]["vus"], "requests": m["model"]["requests"],
             "RPS (model)": round(m["model"]["rps"]), "mean latency ms (model)": round(m["model"]["mean_latency_ms"]),
             "run time s (model)": round(m["model"]["duration_ms"] / 1000, 1)}
            for s, m in sorted(data.steps.items(), key=lambda item: (item[1]["config"]["load"]["vus"], item[0]))]
    return pd.DataFrame(rows).set_index("step")


def rps_table(data: ChapterData) -> pd.DataFrame:
    """Measured RPS per step beside the article's (ab) and the model's."""
    table = throughput_table(data).sort_values(["concurrency", "tool"])
    table["RPS (article, ab)"] = table["concurrency"].map(ARTICLE_002_RPS)
    table = table.rename(columns={"concurrency": "C", "rps": "RPS (measured)", "rps_model": "RPS (model)",
                                  "rps_error": "measured vs model"})
    shown = table.set_index("step")[["tool", "C", "issued", "RPS (measured)", "RPS (article, ab)", "RPS (model)", "measured vs model"]]
    return shown.style.format({"RPS (measured)": "{:.1f}", "RPS (article, ab)": "{:.2f}", "RPS (model)": "{:.0f}",
                               "measured vs model": "{:+.1%}"})


def littles_law_table(data: ChapterData) -> pd.DataFrame:
    """Little's law on our data: throughput × mean latency should equal the clients in flight, C."""
    table = throughput_table(data).sort_values(["concurrency", "tool"]).set_index("step")
    shown = table[["tool", "concurrency", "rps", "mean_latency_ms", "littles_concurrency"]].rename(columns={
        "concurrency": "C (clients in flight)", "rps": "RPS", "mean_latency_ms": "mean latency ms",
        "littles_concurrency": "RPS × mean latency"})
    return shown.style.format({"RPS": "{:.1f}", "mean latency ms": "{:.0f}", "RPS × mean latency": "{:.1f}"})


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

def spike_predictions_table(data: ChapterData) -> pd.DataFrame:
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
                     "last answer s (model)": max((t for t, _ in model["completions"]), default=0) / 1000})
    return pd.DataFrame(rows).set_index("step")


def issued_table(data: ChapterData) -> pd.DataFrame:
    """Per step: requests asked and sent, and how long k6 took to send them all (its start-up spread)."""
    rows = []
    for name in step_order(data):
        meta, requests = data.steps[name], data.requests[data.requests["step"] == name]
        rows.append({"step": name, "executor": meta["config"]["load"]["executor"], "asked": meta["requests"]["asked"],
                     "issued": meta["requests"]["issued"],
                     "all sent within s": round((requests["start_ms"].max() - requests["start_ms"].min()) / 1000, 1)
                     if len(requests) else None})
    return pd.DataFrame(rows).set_index("step")


def plus_one_table(data: ChapterData, prefix: str = "plus1-") -> pd.DataFrame:
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
    return pd.DataFrame(rows).set_index("step")


def failure_summary(data: ChapterData) -> pd.DataFrame:
    """Per step and kind of failure: how many, and when (seconds after the first request: first, median, last)."""
    rows = []
    for name in step_order(data):
        requests = data.requests[data.requests["step"] == name]
        failed = requests[~answered(requests)]
        if failed.empty:
            continue
        ends = (failed["end_ms"].fillna(failed["start_ms"]) - spike_start_ms(data)[name]) / 1000
        for kind, times in ends.groupby(failure_kinds(failed)):
            rows.append({"step": name, "failure": kind, "requests": len(times), "first s": round(times.min(), 1),
                         "median s": round(times.median(), 1), "last s": round(times.max(), 1)})
    return pd.DataFrame(rows).set_index(["step", "failure"])
