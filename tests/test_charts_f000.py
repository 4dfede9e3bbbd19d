"""Chapter 3's charts: valid Vega-Lite on real (smoke) and synthetic data, evaluated by the Vega runtime the book
ships (node_modules/, headless: no browser). The capacity explorer's tests are in test_explorer.py."""
from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest
from conftest import load_frozen
from ch3_world import STEPS, model_world

from harness import ROOT
from harness.book.charts import FAILURE_COLORS, PALETTE, client_limits, completions_chart, connection_samples, connections_chart, failure_counts, failures_chart
from harness.book.verdict import INTERRUPTED_TEXT
from harness.models import predict

SMOKE = load_frozen("smoke")
# Compile a spec with the pinned vega-lite, run its dataflow in the pinned vega (no renderer), and report the
# warnings, the number of marks drawn, the explorer's signals (when present) and every dataset.
VEGA_JS = """
import * as vega from "vega"; import * as vl from "vega-lite"; import fs from "fs";
const spec = JSON.parse(fs.readFileSync(process.argv[1]));
const warnings = [];
const logger = vega.logger(vega.Warn);
logger.warn = (...a) => { warnings.push(a.join(" ")); return logger; };
logger.error = (...a) => { warnings.push("error: " + a.join(" ")); return logger; };
const view = new vega.View(vega.parse(vl.compile(spec, {logger}).spec), {renderer: "none", logger});
for (const [name, value] of Object.entries(JSON.parse(process.argv[2]))) view.signal(name, value);
await view.runAsync();
let marks = 0;
(function walk(item) {
  if (item.mark && item.mark.marktype !== "group") marks++;
  (item.items || []).forEach(walk);
})(view.scenegraph().root);
const signals = {};
for (const name of JSON.parse(process.argv[3])) signals[name] = view.signal(name);
const data = {};
const state = view.getState({data: vega.truthy, signals: vega.falsy, recurse: true}).data;
for (const name of Object.keys(state).filter(n => /^(data|source)_/.test(n))) data[name] = view.data(name).map(d => ({...d}));
console.log(JSON.stringify({warnings, marks, signals, data}));
"""


def run_vega(spec: dict, tmp_path, signals: dict | None = None, read: list[str] = ()) -> dict:
    assert shutil.which("node") and (ROOT / "node_modules" / "vega-lite").exists(), \
        "node and the pinned chart libraries are needed: run `invoke setup` (npm ci)"
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    out = subprocess.run(["node", "--input-type=module", "-e", VEGA_JS, str(path), json.dumps(signals or {}), json.dumps(list(read))],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def chapter(step_ids) -> object:
    return model_world().only(list(step_ids))


# ---- failures by kind --------------------------------------------------------------------------------------

def test_failures_chart_on_real_data():
    spec = failures_chart(SMOKE).to_dict(validate=True)
    counts = failure_counts(SMOKE)
    assert counts.groupby("series")["requests"].sum().to_dict() == {"request timeout": 6}  # keep-alive's six
    assert counts["t_s"].between(8, 9).all()  # k6's 8 s timeout, after a 1 s SYN retry for some
    assert "client timeout (model)" in json.dumps(spec)
    # the model's 8 s timeout counts from the first request, which k6 sent ~57 ms after it was launched
    assert client_limits(SMOKE)["t_s"].between(8.0, 8.2).all()


def test_interrupted_requests_stand_where_k6_stopped():
    data = chapter(["c-2000-cv-grace30s", "d-3000-t200-pv"])
    counts = failure_counts(data)
    cut = counts[counts.series == INTERRUPTED_TEXT]
    assert cut["requests"].sum() == 800 and cut["t_s"].between(31, 32).all()  # 1 s + gracefulStop 30 s
    timeouts = counts[(counts.step == "d-3000-t200-pv")]
    assert timeouts["requests"].sum() == predict(STEPS["d-3000-t200-pv"]).failed and set(timeouts["series"]) == {"request timeout"}
    spec = failures_chart(data).to_dict(validate=True)
    assert "k6 stops (model)" in json.dumps(spec)  # only the step whose k6 stops before the client timeout


def test_known_failures_keep_their_colours():
    spec = failures_chart(chapter(["c-2000-cv-grace30s", "d-3000-t200-pv"])).to_dict()
    scale = next(layer["encoding"]["color"]["scale"] for layer in spec["spec"]["layer"])
    colours = dict(zip(scale["domain"], scale["range"], strict=True))
    assert colours["request timeout"] == FAILURE_COLORS["request timeout"]
    assert colours["client timeout (model)"] == PALETTE["client timeout (model)"]


# ---- connections with SYN-RECV -----------------------------------------------------------------------------

def test_connections_chart_adds_syn_recv_and_overflows():
    connections_chart(SMOKE).to_dict(validate=True)
    samples = connection_samples(SMOKE)
    assert set(samples["series"]) == {"established", "accept queue", "SYN-RECV", "listen overflows"}
    overflows = samples[samples.series == "listen overflows"].groupby("step")["value"].sum()
    assert overflows.to_dict() == SMOKE.ss.groupby("step")["listen_overflows"].sum().to_dict()  # summed, not thinned


def test_completions_chart_already_draws_5_s_waves():
    """F000-a/b: completions_chart with 5 s buckets is the waves chart; the model's waves are its diamonds."""
    data = chapter(["a-300-pv", "b-1000-pv"])
    spec = completions_chart(data, bucket_ms=5000).to_dict(validate=True)
    bars = pd.DataFrame(next(iter(spec["datasets"].values())))
    measured = bars[bars.source == "measured"]
    assert set(measured["t_s"]) == {5.0, 10.0, 15.0, 20.0, 25.0}  # each wave in the bucket it opens
    assert measured[measured.step == "a-300-pv"].set_index("t_s")["requests"].to_dict() == {5.0: 200, 10.0: 100}


def test_each_panel_is_titled_with_its_step_and_what_it_is_for():
    """Issue 41: panels titled "a-300-pv" alone meant nothing to a reader; the header says what the step is for."""
    data = chapter(["a-300-pv", "b-1000-pv"])
    data.steps["a-300-pv"]["why"] = "3000 users, 200 threads: 200 answered at 5 s, 100 at 10 s"
    data.steps["b-1000-pv"].pop("why", None)  # a step that says nothing keeps its id
    header = completions_chart(data, bucket_ms=5000).to_dict(validate=True)["facet"]["row"]["header"]
    assert json.dumps("a-300-pv: 3,000 users, 200 threads: 200 answered at 5 s, 100 at 10 s") in header["labelExpr"]
    assert 'datum.value === "b-1000-pv" ? "b-1000-pv" :' in header["labelExpr"]
    assert header["labelExpr"].endswith("datum.value") and header["labelLimit"] > 0


@pytest.mark.parametrize("build", [failures_chart, connections_chart, completions_chart],
                         ids=["failures", "connections", "completions"])
def test_charts_run_in_vega(build, tmp_path):
    result = run_vega(build(SMOKE).to_dict(), tmp_path)
    assert result["warnings"] == [] and result["marks"] > 0
