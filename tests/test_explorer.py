"""The capacity explorer (harness.book.explorer, explorer.js) and the model behind it (harness.models.capacity): the
model reduces to the book's models where one limit acts alone, the JavaScript port answers exactly as the Python
function (in node here, in Chromium below), measured steps are matched and binned as the model is, one step at a time,
and the widget draws offline with its numbers following the knobs."""
from __future__ import annotations

import functools
import json
import math
import shutil
import subprocess
import time
from dataclasses import asdict, replace

import pandas as pd
import pytest
from test_book import site_page, with_libraries

from harness import ROOT
from harness.book import explorer
from harness.book.explorer import (ARTICLE, UNMATCHED, capacity_explorer, encode_bins, explorer_measured, knob_key,
                                   measured_steps, outputs)
from harness.lab.spec import FD_RESERVE, load_spec
from harness.lab.store import COLUMNS, ChapterData
from harness.lab.units import duration_ms
from harness.models import predict
from harness.models.bounds import predict_bounds
from harness.models.capacity import CPU, OPEN_FILES, POOL, THREADS, USERS, Knobs, constants, predict_capacity
from harness.models.pool import pool_bound_tps
from harness.models.spike import server_of

LIMITS = {"nofile": 20000, "somaxconn": 4096, "can_raise_somaxconn": True, "cores": 2}
JS = ROOT / "harness" / "book" / "explorer.js"

# Settings that put each limit in charge, and the article's: the JavaScript port must answer each exactly.
SETTINGS = {
    "the article's F000-f": ARTICLE,
    "keep-alive off": replace(ARTICLE, keep_alive_s=0),
    "15,000 users, chapter 7's F000-k": replace(ARTICLE, users=15_000, threads=2000, max_connections=50_000,
                                                accept_count=5000),
    "a pool of 10": replace(ARTICLE, pool=10),
    "the CPU": Knobs(users=3000, service_ms=200, cpu_ms=50, cores=0.5, threads=200, keep_alive_s=0),
    "short timeouts": replace(ARTICLE, timeout_s=10, keep_alive_s=5),
    "few users": Knobs(users=7, service_ms=1000, threads=200),
    "one thread, one connection": Knobs(users=10, service_ms=5000, threads=1, max_connections=1, accept_count=1),
}


# ---- the model ---------------------------------------------------------------------------------------------------

@functools.cache
def chapter3_steps() -> dict[str, object]:
    """Chapter 3's steps, as its spec gives them, on the machine the reference data came from."""
    return {s.id: s for s in load_spec("chapter3", LIMITS).steps}


def knobs_of(step) -> Knobs:
    server = server_of(step)
    return Knobs(users=step.requests_asked, service_ms=server.service_ms, threads=server.threads,
                 max_connections=server.max_connections, accept_count=server.accept_count,
                 open_files=LIMITS["nofile"], keep_alive_s=server.keep_alive_timeout_ms // 1000 if server.keep_alive else 0,
                 timeout_s=duration_ms(step.load["request_timeout"]) // 1000)


@pytest.mark.parametrize("step_id", ["a-300-pv", "d-3000-t200-pv", "f-10k-pv", "f-10k-no-reuse-pv", "j-1-1-1-pv"])
def test_with_no_pool_and_no_cpu_it_is_the_spike_model(step_id):
    step = chapter3_steps()[step_id]
    spike, capacity = predict(step), predict_capacity(knobs_of(step))
    assert (capacity.answered, capacity.failed, capacity.ceiling) == (spike.succeeded, spike.failed, spike.ceiling)
    assert capacity.slowest_ms == max((t for t, _ in spike.completions), default=0)


def test_the_cpu_stretches_the_time_a_request_holds_its_thread_as_the_bounds_say():
    knobs = Knobs(users=400, service_ms=1000, cpu_ms=20, cores=2, threads=200, keep_alive_s=0)
    p = predict_capacity(knobs)
    bound = predict_bounds(users=200, threads=200, cpu_ms=20, wait_ms=980, cores=2)
    assert p.binding == CPU and p.hold_ms == 2000 and p.throughput == bound.tps == 100
    knee = predict_capacity(replace(knobs, cores=4))  # 200 × 20 ms = 4 cores × 1000 ms: the knee, both bounds meet
    assert knee.binding == THREADS and knee.hold_ms == 1000 and knee.throughput == predict_bounds(200, 200, 20, 980, 4).tps
    between = predict_capacity(replace(knobs, cores=3))  # a whole ms per request, rounded up: at most 1 ms slower
    assert between.binding == CPU and between.hold_ms == 1334
    assert predict_bounds(200, 200, 20, 980, 3).tps * 1333 / 1334 <= between.throughput < predict_bounds(200, 200, 20, 980, 3).tps


def test_a_pool_smaller_than_the_threads_serves_as_many_as_it_has():
    p = predict_capacity(Knobs(users=1000, service_ms=500, threads=200, pool=10, keep_alive_s=0))
    assert p.binding == POOL and p.in_service == 10 and p.throughput == pool_bound_tps(10, 500)
    assert predict_capacity(Knobs(users=1000, service_ms=500, threads=200, pool=500)).binding == THREADS


def test_open_files_cap_the_connections_tomcat_takes():
    p = predict_capacity(replace(ARTICLE, users=30_000, threads=2000, max_connections=50_000, open_files=20_000))
    assert p.connections == 20_000 - FD_RESERVE and p.ceiling == p.connections + 100 + 1
    few = predict_capacity(replace(ARTICLE, open_files=500))
    assert few.binding == OPEN_FILES and few.in_service == 500 - FD_RESERVE
    assert predict_capacity(Knobs(users=7, service_ms=1000)).binding == USERS


def test_bins_are_one_request_time_wide_and_a_wave_opens_its_bin():
    p = predict_capacity(ARTICLE)
    assert p.bin_ms == 5000 and p.bins[0][:3] == (5000, 10000, 1000)  # the first wave at 5 s counts in 5–10 s
    assert sum(b[2] for b in p.bins) == p.answered and sum(b[3] for b in p.bins) == p.failed
    assert predict_capacity(Knobs(users=10, service_ms=200)).bin_ms == 1000


def test_out_of_range_settings_are_named_together():
    with pytest.raises(ValueError) as error:
        predict_capacity(Knobs(users=0, service_ms=100, cpu_ms=200, threads=2.5, open_files=FD_RESERVE))
    message = str(error.value)
    for said in ("users must be between 1", "open_files must be between", "threads must be a whole number",
                 "cpu_ms (200) is part of service_ms (100)"):
        assert said in message


# ---- the JavaScript port, in node ----------------------------------------------------------------------------------

NODE_JS = """
const api = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(input.knobs.map(k => {
  const p = api.predict(input.constants, k);
  return Object.assign(p, {mean_ms: isNaN(p.mean_ms) ? null : p.mean_ms, problems: api.problems(input.constants, k),
                           encoded: api.encodeBins(p.bins)});
})));
"""


def node_predictions(knobs: list[Knobs], given: dict | None = None) -> list[dict]:
    assert shutil.which("node"), "node is needed: install Debian's nodejs package (invoke setup lists it)"
    payload = json.dumps({"constants": given or constants(), "knobs": [asdict(k) for k in knobs]})
    out = subprocess.run(["node", "-e", NODE_JS, str(JS)], input=payload, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def python_prediction(knobs: Knobs) -> dict:
    p = predict_capacity(knobs)
    said = {k: v for k, v in p.as_dict().items() if k != "knobs"}
    said["bins"] = [list(b) for b in p.bins]
    said["mean_ms"] = None if math.isnan(p.mean_ms) else p.mean_ms
    return {**said, "problems": [], "encoded": encode_bins(p)}


def test_the_port_answers_every_setting_exactly_as_python():
    knobs = list(SETTINGS.values())
    for name, (js, knob) in zip(SETTINGS, zip(node_predictions(knobs), knobs, strict=True), strict=True):
        assert js == python_prediction(knob), name


def test_the_comparison_sees_a_port_that_differs():
    """The same port fed another kernel rule (+2): the outputs differ, so the test above can fail."""
    js = node_predictions([ARTICLE], {**constants(), "kernel_extra": 2})[0]
    assert js["ceiling"] == python_prediction(ARTICLE)["ceiling"] + 1 and js["answered"] != predict_capacity(ARTICLE).answered


def test_the_port_rejects_what_python_rejects():
    js = node_predictions([replace(ARTICLE, users=0), replace(ARTICLE, threads=2.5), replace(ARTICLE, cpu_ms=6000)])
    assert [bool(j["problems"]) for j in js] == [True, True, True]
    assert "users must be between 1" in js[0]["problems"][0] and "whole number" in js[1]["problems"][0]


# ---- measured steps ------------------------------------------------------------------------------------------------

T0 = 1_800_000_000_000


def spike_step(step: str, users: int, answered_s: list[float], server: dict, executor: str = "per-vu-iterations",
               issued: int | None = None) -> tuple[dict, pd.DataFrame]:
    """A measured spike: answers ending at `answered_s` (s after the first request), the other users failing at 30 s."""
    ends = [T0 + s * 1000 for s in answered_s] + [T0 + 30_000] * (users - len(answered_s))
    rows = pd.DataFrame({"step": step, "vu": range(1, users + 1), "iteration": 0, "start_ms": float(T0), "end_ms": ends,
                         "status": [200] * len(answered_s) + [0] * (users - len(answered_s)),
                         "error_code": [0] * len(answered_s) + [1000] * (users - len(answered_s)), "error": ""})
    rows["duration_ms"] = rows["end_ms"] - rows["start_ms"]
    load = {"executor": executor, "vus": users, "request_timeout": "60s", "connection_reuse": True, "path": "/hello",
            "graceful_stop": "30s", "max_duration": "10m"}
    load |= {"iterations": 1} if executor == "per-vu-iterations" else {"duration": "1s"}
    meta = {"config": {"server": {"SLEEP_MS": 5000, "TOMCAT_CONNECTION_TIMEOUT": 20000, **server}, "load": load},
            "requests": {"asked": users, "issued": users if issued is None else issued},
            "machine": {"nofile_limit": 20000, "somaxconn": 4096}}
    return meta, rows


def chapter(*steps) -> ChapterData:
    empty = {name: pd.DataFrame(columns=["step", *COLUMNS[name]]) for name in ("ss", "actuator", "process")}
    return ChapterData("chapter3", {name: meta for name, (meta, _) in steps},
                       pd.concat([rows for _, (_, rows) in steps], ignore_index=True), **empty)


SMALL = {"TOMCAT_MAX_THREADS": 4, "TOMCAT_MAX_CONNECTIONS": 8, "TOMCAT_ACCEPT_COUNT": 2}  # 20 users, 11 held


def small_world() -> ChapterData:
    """The same 20 users at the same settings measured twice (-cv and -pv) and once with more threads."""
    waves = [5.01] * 4 + [10.02] * 4 + [15.0] * 3
    return chapter(("s-20-cv", spike_step("s-20-cv", 20, waves, SMALL, executor="constant-vus")),
                   ("s-20-pv", spike_step("s-20-pv", 20, waves[:-1], SMALL)),
                   ("s-20-t8-pv", spike_step("s-20-t8-pv", 20, [5.0] * 8 + [10.0] * 3, {**SMALL, "TOMCAT_MAX_THREADS": 8})),
                   ("short-cv", spike_step("short-cv", 20, waves, SMALL, executor="constant-vus", issued=12)))


SMALL_KNOBS = Knobs(users=20, service_ms=5000, threads=4, max_connections=8, accept_count=2, open_files=20000,
                    keep_alive_s=20)


def test_steps_at_the_same_settings_stay_apart():
    """Fig 3.8 used to add the -cv and -pv runs together (4,530 answered of 3,000 users): each keeps its own totals."""
    steps = {m.step: m for m in measured_steps(explorer_measured(small_world()))}
    assert set(steps) == {"s-20-cv", "s-20-pv", "s-20-t8-pv"}  # short-cv sent fewer requests than it has users
    assert (steps["s-20-cv"].answered, steps["s-20-cv"].failed) == (11, 9)
    assert (steps["s-20-pv"].answered, steps["s-20-pv"].failed) == (10, 10)
    key = knob_key(SMALL_KNOBS, predict_capacity(SMALL_KNOBS))
    assert steps["s-20-cv"].key == steps["s-20-pv"].key == key != steps["s-20-t8-pv"].key


def test_measured_answers_fall_in_the_bin_of_the_model_wave():
    """Fig 3.8 drew the model's bars one bin early: a wave due at 5 s and answers at 5.01 s now share the 5–10 s bin."""
    measured = explorer_measured(small_world())
    one = measured[(measured.step == "s-20-cv") & (measured.series == "measured: answered")].set_index("from_s")
    assert one["requests"].to_dict() == {5.0: 4, 10.0: 4, 15.0: 3}
    model = predict_capacity(SMALL_KNOBS)
    assert [(b[0] / 1000, b[2]) for b in model.bins if b[2]][:2] == [(5.0, 4), (10.0, 4)]


def test_a_step_recorded_per_second_is_binned_from_its_seconds():
    """Chapter 7's big steps keep one row per second and outcome, not per request: they are drawn all the same."""
    meta, _ = spike_step("big-pv", 20, [], SMALL)
    meta |= {"load_started_ms": T0, "recording": {"format": "seconds", "t0_ms": T0}}
    seconds = pd.DataFrame({"step": "big-pv", "ts_ms": [T0 + 5_400, T0 + 10_300, T0 + 30_000], "second": [5, 10, 30],
                            "status": [200, 200, 0], "error_code": [0, 0, 1000], "error": "", "requests": [4, 4, 12]})
    empty = {name: pd.DataFrame(columns=["step", *COLUMNS[name]]) for name in ("requests", "ss", "actuator", "process")}
    world = ChapterData("chapter7", {"big-pv": meta}, **empty, outcomes=seconds)
    measured = explorer_measured(world)
    assert measured.groupby(["series", "from_s"])["requests"].sum().to_dict() == {
        ("measured: answered", 5.0): 4, ("measured: answered", 10.0): 4, ("measured: failed", 30.0): 12}
    assert [(m.answered, m.failed) for m in measured_steps(measured)] == [(8, 12)]


def test_the_widget_starts_with_the_models_numbers_and_the_matching_steps():
    widget = capacity_explorer(explorer_measured(small_world()), **{k: v for k, v in asdict(SMALL_KNOBS).items()
                                                                    if v != getattr(ARTICLE, k)})
    assert widget.knobs == SMALL_KNOBS
    html = widget.html()
    said = outputs(widget.knobs, widget.prediction, widget.matched(widget.prediction))
    for name, (text, _) in said.items():
        assert f'id="{widget.widget_id}-{name}"' in html and f">{text}</output>" in html, name
    assert said["measured"][1] == "chapter3:s-20-cv chapter3:s-20-pv"
    assert f'id="{widget.widget_id}-model" value="{encode_bins(widget.prediction)}"' in html
    assert f">{UNMATCHED}</output>" in capacity_explorer().html()  # no measured steps: the table says none matched


def test_the_widget_starts_at_the_open_files_the_steps_ran_with():
    assert capacity_explorer(explorer_measured(small_world())).knobs.open_files == 20000
    world = small_world()
    for meta in world.steps.values():
        meta["machine"]["nofile_limit"] = 4096
    assert capacity_explorer(explorer_measured(world)).knobs.open_files == 4096


def test_unknown_and_impossible_settings_are_refused():
    with pytest.raises(ValueError, match="no explorer setting threds"):
        capacity_explorer(threds=3)
    with pytest.raises(ValueError, match="users must be between"):
        capacity_explorer(users=0)


def test_the_chart_is_valid_vega_lite():
    from test_book import vega_lite_validator
    widget = capacity_explorer(explorer_measured(small_world()))
    spec = explorer.chart(widget.widget_id, widget.prediction, [], widget.measured).to_dict(validate=True)
    errors = list(vega_lite_validator().iter_errors(spec))
    assert not errors, errors[0].message


# ---- in Chromium: the widget as a reader gets it -------------------------------------------------------------------

READ_JS = """JSON.stringify((function (id) {
  var values = {};
  document.querySelectorAll('#' + id + ' output').forEach(function (o) {
    values[o.id.slice(id.length + 1)] = [o.textContent, o.getAttribute('data-value')];
  });
  return {values: values, model: document.getElementById(id + '-model').value,
          steps: document.getElementById(id + '-steps').value,
          marks: document.querySelectorAll('#' + id + ' svg .role-mark path').length,
          state: document.getElementById(id + '-knobs').getAttribute('data-state')};
})(%s))"""
SET_JS = """(function (id, knobs) {
  var form = document.getElementById(id + '-knobs');
  Object.keys(knobs).forEach(function (name) { form.elements[name].value = String(knobs[name]); });
  form.dispatchEvent(new Event('input'));
})(%s, %s)"""


def evaluate(page, expression: str):
    return page.evaluate(expression)


def shown(page, widget_id: str, until=lambda now: True) -> dict:
    """What the page shows once the chart has redrawn (its marks stop changing) and `until` holds; on a busy machine
    the first stable state may still be the one before the input, so the caller says what it waits for. After 20 s
    the last state, whatever it is (the assertions then fail on it)."""
    last, deadline = None, time.monotonic() + 20
    while time.monotonic() < deadline:
        now = json.loads(evaluate(page, READ_JS % json.dumps(widget_id)) or "null")
        if now is not None and now == last and now["marks"] and until(now):
            return now
        last = now
        time.sleep(0.3)
    return last


def test_the_widget_answers_in_chromium_as_python_does(browser, tmp_path):
    world = small_world()
    widget = capacity_explorer(explorer_measured(world))
    page = site_page(with_libraries(tmp_path), "explorer", widget.html())
    report = browser.check(page.as_uri())
    assert report.ok, report.summary()
    opened, _ = browser.open(page.as_uri())
    try:
        shown(opened, widget.widget_id)  # the page loaded and drew its first answer
        for name, knobs in {**SETTINGS, "the small steps' settings": SMALL_KNOBS}.items():
            p = predict_capacity(knobs)
            evaluate(opened, SET_JS % (json.dumps(widget.widget_id), json.dumps(asdict(knobs))))
            got = shown(opened, widget.widget_id, until=lambda now, p=p: now["model"] == encode_bins(p))
            matched = [m for m in measured_steps(widget.measured) if m.key == knob_key(knobs, p)]
            expected = {k: [text, explorer._js_value(value)] for k, (text, value) in outputs(knobs, p, matched).items()}
            assert got["state"] == "answered" and got["values"] == expected, name
            assert got["model"] == encode_bins(p) and got["steps"] == " ".join(m.ref for m in matched), name
            points = widget.measured[widget.measured["ref"].isin([m.ref for m in matched])]
            # a bar per bin and panel, a diamond per measured bin, and each panel's invisible (0, 0)
            assert got["marks"] == 2 * len(p.bins) + len(points) + 2, name
        evaluate(opened, SET_JS % (json.dumps(widget.widget_id), json.dumps({"users": 0})))
        assert shown(opened, widget.widget_id, until=lambda now: now["state"] == "invalid")["state"] == "invalid"
    finally:
        opened.context.close()


def drawn(result: dict) -> tuple[set, set]:
    """What Vega drew of the chart: (the model's bars, the measured diamonds) as (series, from s, requests) rows, read
    from the datasets each panel's marks draw (one outcome or one series each)."""
    bars, diamonds = set(), set()
    for rows in result["data"].values():
        if rows and all("outcome" in r for r in rows) and len({r["outcome"] for r in rows}) == 1:
            bars |= {(r["series"], r["from_s"], r["requests"]) for r in rows}
        elif rows and all("mid_s" in r for r in rows) and len({r["series"] for r in rows}) == 1:
            diamonds |= {(r["ref"], r["series"], r["from_s"], r["requests"]) for r in rows if r["ref"]}  # not the (0, 0)
    return bars, diamonds


def model_rows(p) -> set:
    return {(f"model: {outcome}", b[0] / 1000, n) for b in p.bins for outcome, n in (("answered", b[2]), ("failed", b[3]))}


def test_the_chart_runs_in_vega_and_redraws_from_its_hidden_inputs(tmp_path):
    """Vega evaluates the chart (no browser): the model's bins as bars, the matching steps' bins as diamonds; fed another
    setting's bins and no steps, it draws those instead."""
    from test_charts_f000 import run_vega
    measured = explorer_measured(small_world())
    p = predict_capacity(SMALL_KNOBS)
    matched = [m for m in measured_steps(measured) if m.key == knob_key(SMALL_KNOBS, p)]
    spec = explorer.chart("x", p, matched, measured).to_dict()
    first = run_vega(spec, tmp_path)
    points = measured[measured["ref"].isin([m.ref for m in matched])]
    assert not first["warnings"]
    assert drawn(first) == (model_rows(p), {(r.ref, r.series, r.from_s, r.requests) for r in points.itertuples()})
    other = predict_capacity(ARTICLE)
    second = run_vega(spec, tmp_path, signals={"lab_model": encode_bins(other), "lab_steps": ""})
    assert not second["warnings"] and drawn(second) == (model_rows(other), set())
    none_fail = predict_capacity(SETTINGS["few users"])
    third = run_vega(spec, tmp_path, signals={"lab_model": encode_bins(none_fail), "lab_steps": ""})
    assert not third["warnings"] and drawn(third) == (model_rows(none_fail), set())
