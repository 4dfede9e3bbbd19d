"""Chapter 3's charts: valid Vega-Lite on real (smoke) and synthetic data, evaluated by the Vega runtime the book
ships (node_modules/, headless: no browser), and the capacity explorer's closed form held to model.simulate."""
from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import altair as alt
import pandas as pd
import pytest
from test_verdicts_f000 import STEPS, model_world

from harness import ROOT
from harness.charts import (EXPLORER_DEFAULTS, EXPLORER_EXPRESSIONS, EXPLORER_MAX_WAVES, FAILURE_COLORS, PALETTE,
                            capacity_explorer, client_limits, completions_chart, connection_samples, connections_chart, explorer_measured,
                            explorer_outcome, failure_counts, failures_chart)
from harness.model import Server, predict, server_of, simulate
from harness.spec import duration_ms
from harness.store import load
from harness.verdicts import INTERRUPTED_TEXT

SMOKE = load("smoke")
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
needs_vega = pytest.mark.skipif(not shutil.which("node") or not (ROOT / "node_modules" / "vega-lite").exists(),
                                reason="node and `npm ci` (node_modules/) run the charts' Vega")


def run_vega(spec: dict, tmp_path, signals: dict | None = None, read: list[str] = ()) -> dict:
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


@needs_vega
@pytest.mark.parametrize("build", [failures_chart, connections_chart], ids=["failures", "connections"])
def test_charts_run_in_vega(build, tmp_path):
    result = run_vega(build(SMOKE).to_dict(), tmp_path)
    assert result["warnings"] == [] and result["marks"] > 0


# ---- the capacity explorer ------------------------------------------------------------------------------------

def explorer_args(step_id: str) -> dict:
    """A chapter-3 step as the explorer's slider settings."""
    step = STEPS[step_id]
    server = server_of(step)
    return {"threads": server.threads, "sleep_s": server.service_ms / 1000, "users": step.requests_asked,
            "max_connections": server.max_connections, "accept_count": server.accept_count,
            "timeout_s": duration_ms(step.load["request_timeout"]) / 1000, "keep_alive": server.keep_alive}


def simulated(args: dict) -> int:
    """model.simulate's successes for slider settings (keep-alive timeout: Spring Boot 3.5's 60 s)."""
    server = Server(args["threads"], round(args["sleep_s"] * 1000), args["max_connections"], args["accept_count"],
                    args["keep_alive"], 60000)
    return sum(o.ok for o in simulate(args["users"], server, round(args["timeout_s"] * 1000)))


# The chapter's spike steps the explorer covers: its keep-alive timeout is Boot's 60 s (h and boot-timeout set another).
COVERED = [s for s, step in STEPS.items()
           if not server_of(step).keep_alive or server_of(step).keep_alive_timeout_ms == 60000]


def test_the_explorer_covers_most_of_the_chapter():
    assert set(STEPS) - set(COVERED) == {"h-10k-ct30000-cv", "h-10k-ct30000-pv", "j-1-1-1-boot-timeout"}


@pytest.mark.parametrize("step_id", [s for s in COVERED if s.endswith(("-pv", "reuse")) or s.startswith("plus1")])
def test_closed_form_is_the_simulation_for_the_chapters_steps(step_id):
    outcome, model = explorer_outcome(**explorer_args(step_id)), predict(STEPS[step_id])
    if outcome["exact"]:
        assert (outcome["successes"], outcome["failures"]) == (model.succeeded, model.failed)
    else:  # keep-alive off, users beyond the ceiling: SYN retries let the simulation serve more
        assert outcome["successes"] <= model.succeeded


def test_closed_form_on_a_grid_of_small_servers():
    exact = bound = 0
    for t, s, n, mc, ac, to, ka in itertools.product([1, 2, 5], [1, 2.5, 5], [1, 7, 20], [1, 3, 8], [1, 4], [4, 12, 60], [True, False]):
        args = {"threads": t, "sleep_s": s, "users": n, "max_connections": mc, "accept_count": ac, "timeout_s": to, "keep_alive": ka}
        outcome, ok = explorer_outcome(**args), simulated(args)
        if outcome["exact"]:
            exact += 1
            assert outcome["successes"] == ok, args
        else:
            bound += 1
            assert outcome["successes"] <= ok, args
    assert exact > bound > 0


def test_explorer_is_valid_and_small():
    spec = capacity_explorer(explorer_measured(SMOKE)).to_dict(validate=True)
    assert len(json.dumps(spec)) < 20_000  # sequences are generated in the browser: only the measured rows are embedded
    names = {p["name"] for p in spec["params"]}
    assert {*EXPLORER_DEFAULTS, *EXPLORER_EXPRESSIONS} <= names
    bound = {p["name"]: p["bind"]["input"] for p in spec["params"] if "bind" in p and isinstance(p["bind"], dict)}
    assert bound == {**dict.fromkeys(["threads", "sleep_s", "users", "max_connections", "accept_count", "timeout_s"], "range"),
                     "keep_alive": "checkbox"}


def test_explorer_measured_interface():
    table = explorer_measured(SMOKE).set_index("step")
    assert table.loc["keep-alive"].to_dict() == {"threads": 2, "sleep_s": 1.0, "users": 10, "max_connections": 4,
                                                 "accept_count": 1, "timeout_s": 8.0, "keep_alive": True,
                                                 "successes": 4, "simulated": 4}
    assert table.loc["waves", "keep_alive"] == False  # noqa: E712 (a numpy bool)


def test_explorer_overrides_only_known_sliders():
    with pytest.raises(TypeError):
        explorer_outcome(**EXPLORER_DEFAULTS, threds=3)
    assert isinstance(capacity_explorer(users=300), alt.VConcatChart)


EXPLORED = ["f-10k-pv", "a-300-pv", "d-3000-t200-pv", "i-10k-ac2000-pv", "j-1-1-1-pv", "j-1-1-10-no-reuse", "plus1-mc5-ac1"]


@needs_vega
@pytest.mark.parametrize("step_id", EXPLORED)
def test_explorer_defaults_in_vega_match_the_simulation(step_id, tmp_path):
    """The chart's own Vega expressions, run by Vega with the sliders at a step's settings, give model.simulate's
    successes and failures; its wave bars add up to them."""
    args = explorer_args(step_id)
    result = run_vega(capacity_explorer(**args).to_dict(), tmp_path, read=["successes", "failures", "wave_count"])
    assert result["warnings"] == []
    ok = simulated(args)
    assert (result["signals"]["successes"], result["signals"]["failures"]) == (ok, args["users"] - ok)
    bars = next(rows for rows in result["data"].values() if rows and "size" in rows[0])
    if result["signals"]["wave_count"] <= EXPLORER_MAX_WAVES:
        assert sum(b["size"] for b in bars if b["series"] == "model: ok") == ok


@needs_vega
def test_moving_a_slider_recomputes(tmp_path):
    """The default (10k users, f) with keep-alive unticked: every held user is served, 8293."""
    result = run_vega(capacity_explorer().to_dict(), tmp_path, signals={"keep_alive": False}, read=["successes", "held"])
    assert result["signals"] == {"successes": 8293, "held": 8293}
    text = next(rows for rows in result["data"].values() if rows and "text" in rows[0])
    assert "Predicted: 8,293 succeed, 1,707 fail (at least" in " ".join(r["text"] for r in text)


@needs_vega
def test_explorer_with_measured_points_runs_in_vega(tmp_path):
    result = run_vega(capacity_explorer(explorer_measured(SMOKE)).to_dict(), tmp_path)
    assert result["warnings"] == [] and result["marks"] > 0
