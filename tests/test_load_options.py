"""[load]: profiles (executors), scenarios and spike modes; their checks and the load plan k6 gets (no k6 needed)."""
import json
import os
import re
import tomllib
from pathlib import Path

import pytest

from harness import ROOT, LabError
from harness.lab.load.k6 import k6_command, summaries_not_whole, summary_counts
from harness.lab.load.tool import tool_environment
from harness.lab.load.options import load_plan
from harness.lab.spec import load_spec, parse_spec
from harness.models import NoPrediction, expected_step_ms, predict

from conftest import LIMITS, SAMPLES


def parse(raw, **limits):
    return parse_spec("t", raw, Path("t.toml"), LIMITS | limits)


def step_of(**load):
    return parse({"step": [{"id": "s", "load": load}]}).steps[0]


def problems_of(**load) -> list[str]:
    with pytest.raises(LabError) as err:
        parse({"step": [{"id": "s", "load": load}]})
    return [line.removeprefix("  - ") for line in str(err.value).splitlines()[1:]]


RAMP_RATE = {"executor": "ramping-arrival-rate", "start_rate": 10, "pre_allocated_vus": 20, "max_vus": 50,
             "stages": [{"duration": "10s", "target": 30}, {"duration": "20s", "target": 30}]}


def test_committed_specs_resolve_as_before_the_move():
    """Every committed spec's steps: the same resolved load, requests asked and stop time as before load validation
    moved into harness/lab/load/options.py (captured then in tests/samples/resolved-loads.json). Steps added to a
    spec since (chapter 2's batch-N) are not in the capture; none of the captured ones may be gone. Copies written
    out as `<id>-<k>` became the runs of one step (`runs = n`: `<id>` and `<id>.<k>`) and are compared under their
    new ids. The scaled chapter 3's request timeouts were halved since, with its sleep, and its d-timeouts became
    24 users against a 2 s timeout (the capture says so too)."""
    before = json.loads((SAMPLES / "resolved-loads.json").read_text())
    assert len(before) == 7 and sum(map(len, before.values())) == 98
    for path, captured in before.items():
        steps = {run_id(k): v for k, v in captured.items()}
        now = {s.id: {"load": s.load, "requests_asked": s.requests_asked, "stop_ms": s.stop_ms if s.kind == "load" else None}
               for s in load_spec(str(ROOT / path), LIMITS).steps}
        assert steps.keys() <= now.keys(), path
        assert json.loads(json.dumps({k: now[k] for k in steps})) == steps, path


def test_ramping_vus():
    step = step_of(executor="ramping-vus", stages=[{"duration": "1m", "target": 100}, {"duration": "30s", "target": 0}])
    assert step.load | {} == {"tool": "k6", "executor": "ramping-vus", "graceful_stop": "30s", "request_timeout": "60s",
                              "path": "/hello", "connection_reuse": True, "start_vus": 1, "graceful_ramp_down": "30s",
                              "stages": [{"duration": "1m", "target": 100}, {"duration": "30s", "target": 0}]}
    assert (step.stop_ms, step.requests_asked) == (90_000 + 30_000, 0)  # a closed loop: not fixed in advance
    assert load_plan(step.load)["options"]["scenarios"]["lab"] == {
        "executor": "ramping-vus", "gracefulStop": "30s", "startVUs": 1, "gracefulRampDown": "30s",
        "stages": [{"duration": "1m", "target": 100}, {"duration": "30s", "target": 0}]}


def test_constant_arrival_rate():
    step = step_of(executor="constant-arrival-rate", rate=50, time_unit="2s", duration="1m", pre_allocated_vus=10)
    assert step.load["max_vus"] == 10  # defaults to the pre-allocated VUs
    assert "iterations" not in step.load and "max_duration" not in step.load
    assert (step.requests_asked, step.stop_ms) == (50 * 30, 60_000 + 30_000)
    assert load_plan(step.load)["options"]["scenarios"]["lab"] == {
        "executor": "constant-arrival-rate", "gracefulStop": "30s", "rate": 50, "timeUnit": "2s", "duration": "1m",
        "preAllocatedVUs": 10, "maxVUs": 10}
    # k6 starts one iteration at 0 and one each period while before the end: 7 per 2 s for 1.5 s → 6
    assert step_of(executor="constant-arrival-rate", rate=7, time_unit="2s", duration="1500ms",
                   pre_allocated_vus=1).requests_asked == 6


def test_ramping_arrival_rate_asks_the_area_under_its_rate():
    step = step_of(**RAMP_RATE)
    assert step.requests_asked == 200 + 600  # 10 → 30 over 10 s, then 30 for 20 s
    assert step.stop_ms == 30_000 + 30_000
    assert load_plan(step.load)["options"]["scenarios"]["lab"] == {
        "executor": "ramping-arrival-rate", "gracefulStop": "30s", "startRate": 10, "timeUnit": "1s",
        "preAllocatedVUs": 20, "maxVUs": 50, "stages": RAMP_RATE["stages"]}
    # k6 v1.8.1 started floor(area) iterations in these (measured): 3 → 6 over 1 s (4.5) → 4; 0 → 5 over 3 s → 7
    assert step_of(**RAMP_RATE | {"start_rate": 3, "stages": [{"duration": "1s", "target": 6}]}).requests_asked == 4
    assert step_of(**RAMP_RATE | {"start_rate": 0, "stages": [{"duration": "3s", "target": 5}]}).requests_asked == 7


@pytest.mark.parametrize("load, expected", [
    ({"executor": "constant-arrival-rate", "rate": 0, "duration": "1m", "pre_allocated_vus": 5},
     "load.rate must be ≥ 1, got 0"),
    ({"executor": "ramping-vus", "stages": []}, "load.stages is empty"),
    (RAMP_RATE | {"stages": [{"duration": "soon", "target": 5}]}, "load.stages[1]: duration 'soon' is not a duration"),
    (RAMP_RATE | {"stages": [{"duration": "5s", "target": -1}]}, "load.stages[1]: target must be a whole number from 0 to 2,147,483,647, got -1"),
    (RAMP_RATE | {"stages": [{"duration": "5s", "target": 1, "rate": 2}]}, "load.stages[1]: unknown key 'rate'"),
    (RAMP_RATE | {"stages": ["5s"]}, "load.stages[1] must be a table"),
    (RAMP_RATE | {"stages": "5s"}, "load.stages must be list"),
    (RAMP_RATE | {"max_vus": 10}, "load.max_vus 10 is below load.pre_allocated_vus 20"),
    (RAMP_RATE | {"vus": 10}, "load.vus does not apply to ramping-arrival-rate (it is a key of per-vu-iterations, "
                              "constant-vus, shared-iterations)"),
    (RAMP_RATE | {"rate": 10}, "load.rate does not apply to ramping-arrival-rate (it is a key of constant-arrival-rate)"),
    ({"vus": 5, "stages": [{"duration": "1s", "target": 1}]}, "load.stages does not apply to per-vu-iterations"),
    ({"vus": 5, "executor": "constant-vus", "duration": "1s", "iterations": 5}, "load.iterations does not apply to constant-vus"),
    ({"executor": "constant-arrival-rate", "rate": 5, "duration": "1m"}, "load.pre_allocated_vus is required with constant-arrival-rate"),
    ({"executor": "constant-arrival-rate", "rate": 5, "pre_allocated_vus": 1}, "load.duration is required with constant-arrival-rate"),
    ({"executor": "ramping-arrival-rate", "pre_allocated_vus": 1}, "load.stages is required with ramping-arrival-rate"),
    (RAMP_RATE | {"time_unit": "0s"}, "load.time_unit must be longer than 0"),
    # k6's own least duration (1s), which it would enforce only once the server is up; and no stage lasting at all
    ({"vus": 1, "executor": "constant-vus", "duration": "0s"}, "load.duration must be at least 1s, got '0s'"),
    ({"vus": 1, "executor": "constant-vus", "duration": "999ms"}, "load.duration must be at least 1s, got '999ms'"),
    ({"vus": 1, "iterations": 2, "executor": "shared-iterations", "max_duration": "0s"},
     "load.max_duration must be at least 1s, got '0s'"),
    ({"vus": 1, "executor": "constant-vus", "duration": "１s"}, "load.duration: '１s' is not a duration"),  # a wide 1
    ({"executor": "ramping-vus", "stages": [{"duration": "0s", "target": 2}]}, "load.stages last 0s in all"),
    (RAMP_RATE | {"time_unit": "1 second"}, "load.time_unit: '1 second' is not a duration"),
    ({"executor": "ramping-vus", "stages": [{"duration": "1s", "target": 2}], "graceful_ramp_down": "x"},
     "load.graceful_ramp_down: 'x' is not a duration"),
    ({"vus": 5, "spike_mode": "burst"}, "load.spike_mode must be one of vus, batch"),
    ({"vus": 5, "executor": "constant-vus", "duration": "1s", "spike_mode": "batch"}, "load.spike_mode does not apply to constant-vus"),
    ({"vus": 5, "spike_mode": "batch", "batch_vus": 6}, "load.batch_vus 6 exceeds load.vus 5"),
    ({"vus": 5, "batch_vus": 2}, 'load.batch_vus applies to spike_mode = "batch" only'),
    ({"vus": 5, "spike_mode": "batch", "requests": [{"path": "/a"}, {"path": "/b"}]}, "sends one request per user"),
    ({"vus": 5, "requests": []}, "load.requests is empty"),
    ({"vus": 5, "requests": ["/a"]}, "load.requests[1] must be a table"),
    ({"vus": 5, "requests": [{"path": "a"}]}, "load.requests[1]: path must be a URL path: '/' then printable"),
    ({"vus": 5, "requests": [{"path": "/a\tb"}]}, "load.requests[1]: path must be a URL path"),
    ({"vus": 5, "requests": [{"path": "/é"}]}, "(percent-encode the rest), got '/é'"),
    ({"vus": 5, "requests": [{"path": "/a", "method": "FETCH"}]}, "load.requests[1]: method must be one of GET"),
    ({"vus": 5, "requests": [{"path": "/a", "verb": "GET"}]}, "load.requests[1]: unknown key 'verb'"),
    ({"vus": 5, "requests": [{"path": "/a/${id}"}]}, "load.requests[1]: ${id} is set by no earlier request's extract (known: iter, vu)"),
    ({"vus": 5, "requests": [{"path": "/a", "extract": {"id": "x"}}, {"path": "/b", "body": '{"id": "${idd}"}'}]},
     "load.requests[2]: ${idd} is set by no earlier request's extract (known: id, iter, vu)"),
    ({"vus": 5, "requests": [{"path": "/a", "extract": {"id": ""}}]}, "load.requests[1]: extract.id must be a JSON field path"),
    ({"vus": 5, "requests": [{"path": "/a", "extract": {"vu": "x"}}]}, "'vu' is not a usable variable name"),
    ({"vus": 5, "requests": [{"path": "/a", "think_time": "a while"}]}, "think_time 'a while' is not a duration"),
    ({"vus": 5, "requests": [{"path": "/a", "headers": {"X-N": 1}}]}, "headers must be a table of strings"),
    ({"vus": 5, "requests": [{"path": "/a", "body": {"a": 1}}]}, "body must be a string"),
    ({"vus": 5, "requests": [{"path": "/a", "port": 70000}]}, "port must be a port number"),
    ({"vus": 5, "path": "/x", "requests": [{"path": "/a"}]}, "load.path and load.requests both given"),
    ({"vus": 5, "iterations": 5, "tool": "ab", "executor": "shared-iterations", "requests": [{"path": "/a"}]},
     "ab sends one GET of load.path"),
])
def test_bad_load_is_named_once(load, expected):
    problems = problems_of(**load)
    assert [p for p in problems if expected in p], problems
    assert len(problems) == 1, problems  # one clear message per problem


def test_the_open_files_check_counts_an_arrival_rates_max_vus():
    with pytest.raises(LabError, match="19900 VUs need 19900 sockets"):
        parse({"step": [{"id": "s", "load": RAMP_RATE | {"max_vus": 19900}}]})


SCENARIO_TOML = '''
[defaults.load]
executor = "per-vu-iterations"
vus = 2

[[defaults.load.requests]]
path = "/hello"

[[step]]
id = "default-scenario"

[[step]]
id = "journey"

[[step.load.requests]]
name = "info"
path = "/actuator/info"
port = 8081
extract = { threads = "lab.tomcat.maxThreads" }

[[step.load.requests]]
name = "order"
method = "POST"
path = "/orders/${threads}?vu=${vu}"
body = '{"threads": ${threads}}'
headers = { "Content-Type" = "application/json" }
think_time = "500ms"
'''


def test_scenarios_from_toml_tables():
    spec = parse_spec("t", tomllib.loads(SCENARIO_TOML), Path("t.toml"), LIMITS)
    plain, journey = spec.steps
    assert [r["path"] for r in plain.load["requests"]] == ["/hello"]
    assert plain.requests_asked == 2
    assert journey.requests_asked == 4  # two requests an iteration
    plan = load_plan(journey.load)
    assert plan["requests"] == [
        {"name": "info", "method": "GET", "path": "/actuator/info", "body": None, "headers": {}, "think_time_ms": 0,
         "extract": {"threads": "lab.tomcat.maxThreads"}, "port": 8081, "background": False},
        {"name": "order", "method": "POST", "path": "/orders/${threads}?vu=${vu}", "body": '{"threads": ${threads}}',
         "headers": {"Content-Type": "application/json"}, "think_time_ms": 500, "extract": {}, "port": None,
         "background": False}]
    assert plan["options"]["discardResponseBodies"] is True  # an extracting request asks for its own body
    assert isinstance(predict(journey), NoPrediction)


def test_without_a_scenario_one_get_of_load_path():
    step = step_of(vus=3, path="/hello?sleepMs=10", connection_reuse=False)
    plan = load_plan(step.load)
    assert plan == {
        "options": {"scenarios": {"lab": {"executor": "per-vu-iterations", "gracefulStop": "30s", "vus": 3, "iterations": 1,
                                          "maxDuration": "10m"}},
                    "discardResponseBodies": True, "noConnectionReuse": True,
                    "systemTags": ["status", "method", "url", "name", "error", "error_code", "scenario",
                                   "expected_response", "vu", "iter"],
                    "summaryTrendStats": ["min", "med", "avg", "p(90)", "p(95)", "p(99)", "max", "count"]},
        "requests": [{"name": "/hello?sleepMs=10", "method": "GET", "path": "/hello?sleepMs=10", "body": None,
                      "headers": {}, "think_time_ms": 0, "extract": {}, "port": None, "background": False}],
        "timeout": "60s", "batch": None}


def test_batch_spike_mode():
    step = step_of(vus=15000, spike_mode="batch")
    plan = load_plan(step.load)
    assert plan["batch"] == {"users": 15000, "vus": 100}
    assert plan["options"]["scenarios"]["lab"]["vus"] == 100
    assert (plan["options"]["batch"], plan["options"]["batchPerHost"]) == (150, 150)
    assert step.requests_asked == 15000 and step.stop_ms == step_of(vus=15000).stop_ms
    small = load_plan(step_of(vus=10, spike_mode="batch", batch_vus=3, batch_per_host=2).load)
    assert small["batch"] == {"users": 10, "vus": 3}
    assert (small["options"]["batch"], small["options"]["batchPerHost"]) == (4, 2)
    # the same users and server: the spike model predicts the same for both modes
    assert predict(step).as_dict() == predict(step_of(vus=15000)).as_dict()


def test_k6_gets_the_plan_in_a_file_and_lingers_only_for_the_dashboard(tmp_path):
    step = step_of(**RAMP_RATE)
    cmd, env = k6_command(Path("k6"), step, "http://127.0.0.1:18080", tmp_path)
    assert env["LAB_PLAN_FILE"] == str(tmp_path / "k6-plan.json")
    assert json.loads((tmp_path / "k6-plan.json").read_text()) == load_plan(step.load)
    assert env["TARGET"] == "http://127.0.0.1:18080" and "LAB_LINGER_MS" not in env
    assert "-e" not in cmd and not any("k6-plan" in c or "127.0.0.1:18080" in c for c in cmd)  # not shown by `ps`
    assert cmd[-1].endswith("experiments/k6/lab.js") and Path(cmd[-1]).exists()
    cmd, env = k6_command(Path("k6"), step, "http://127.0.0.1:18080", tmp_path, dashboard=True)
    assert env["LAB_LINGER_MS"] == "1500" and env["K6_WEB_DASHBOARD_PERIOD"] == "1000ms"


def test_the_plans_path_is_absolute_for_a_relative_step_folder(tmp_path, monkeypatch):
    """k6 opens a relative path from the script's folder (experiments/k6/), not from its working directory."""
    monkeypatch.chdir(tmp_path)
    _, env = k6_command(Path("k6"), step_of(**RAMP_RATE), "http://127.0.0.1:18080", Path("."))
    assert env["LAB_PLAN_FILE"] == str(tmp_path / "k6-plan.json")


def test_k6_output_is_whole_only_when_its_summaries_count_what_the_recording_holds(tmp_path):
    assert "k6-summary.json is missing" in summaries_not_whole(tmp_path, 1, 0)
    (tmp_path / "k6-summary.json").write_text("")  # what a full disk leaves
    assert "k6-summary.json is missing or unreadable (JSONDecodeError" in summaries_not_whole(tmp_path, 1, 0)
    (tmp_path / "k6-summary.json").write_text(json.dumps({"metrics": {"lab_request_started": {"count": 6}}}))
    assert summaries_not_whole(tmp_path, 1, 6) == ""
    assert summaries_not_whole(tmp_path, 1, 5) == ("k6.csv held 5 requests where k6's summary counted 6 started: "
                                                  "its output is not whole (a full disk?)")
    assert "k6-summary-2.json is missing" in summaries_not_whole(tmp_path, 2, 6)  # one per process
    (tmp_path / "k6-summary-2.json").write_text(json.dumps({"metrics": {}}))  # a process that started none
    assert summaries_not_whole(tmp_path, 2, 6) == ""
    (tmp_path / "k6-summary-2.json").write_text("[]")
    assert "k6-summary-2.json is missing or unreadable (TypeError" in summaries_not_whole(tmp_path, 2, 6)


def test_a_plan_longer_than_one_environment_variable_is_accepted_and_written_whole(tmp_path):
    """Linux holds at most 128 KiB in one variable or argument of a new process: the plan travels in a file instead."""
    raw = {"step": [{"id": "s", "load": {"vus": 1, "requests": [{"path": "/hello", "body": "x" * 140_000}]}}]}
    step = parse_spec("t", raw, Path("t.toml"), LIMITS).steps[0]
    k6_command(Path("k6"), step, "http://127.0.0.1:18080", tmp_path)
    plan = json.loads((tmp_path / "k6-plan.json").read_text())
    assert plan == load_plan(step.load) and plan["requests"][0]["body"] == "x" * 140_000


def test_the_load_tools_get_nothing_of_the_users_shell_that_changes_a_step(monkeypatch):
    """k6 hands lab.js its whole environment: a LAB_LINGER_MS, TARGET or K6_* of the user's shell would change a step;
    k6 sends its requests to any address but loopback through the shell's proxy (chapter 6's hosts); GOMAXPROCS=1
    would hold k6 to one core, LD_PRELOAD change ab or wrk. They get PATH, HOME and the like, and their own."""
    changes = {"LAB_LINGER_MS": "9000", "TARGET": "http://elsewhere", "K6_VUS": "3", "LAB_DATA_DIR": "/x",
               "HTTP_PROXY": "http://proxy.example:3128", "https_proxy": "http://proxy.example:3128",
               "GOMAXPROCS": "1", "GOGC": "5", "LD_PRELOAD": "/x.so", "MALLOC_ARENA_MAX": "1"}
    for name, value in changes.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", "/home/reader")
    env = tool_environment({"TARGET": "http://127.0.0.1:18080", "K6_NO_USAGE_REPORT": "true"})
    assert env["TARGET"] == "http://127.0.0.1:18080" and env["K6_NO_USAGE_REPORT"] == "true"
    assert env["HOME"] == "/home/reader" and env["PATH"] == os.environ["PATH"]
    assert not (changes.keys() - {"TARGET"}) & env.keys()


def test_summary_counts(tmp_path):
    summary = tmp_path / "k6-summary.json"
    assert summary_counts(tmp_path, 1) == {"dropped_iterations": 0}  # no summary written
    summary.write_text(json.dumps({"metrics": {"dropped_iterations": {"count": 42, "rate": 1.4},
                                               "lab_extract_failed": {"count": 3, "rate": 0.1}}}))
    assert summary_counts(tmp_path, 1) == {"dropped_iterations": 42, "extract_failed": 3}
    (tmp_path / "k6-summary-2.json").write_text(json.dumps({"metrics": {"dropped_iterations": {"count": 8}}}))
    assert summary_counts(tmp_path, 2) == {"dropped_iterations": 50, "extract_failed": 3}  # every process's
    summary.write_text(json.dumps({"metrics": {"http_reqs": {"count": 10}}}))
    assert summary_counts(tmp_path, 1) == {"dropped_iterations": 0}


def test_models_do_not_crash_on_new_profiles():
    for load in (RAMP_RATE, {"executor": "ramping-vus", "stages": [{"duration": "1m", "target": 5}]},
                 {"executor": "constant-arrival-rate", "rate": 5, "duration": "1m", "pre_allocated_vus": 1}):
        step = step_of(**load)
        prediction = predict(step)
        assert isinstance(prediction, NoPrediction) and "no model" in prediction.reason
        assert prediction.min_duration_ms == step.stop_ms - 30_000  # at least its scheduled time
        assert expected_step_ms(step) > prediction.min_duration_ms
        json.dumps(prediction.as_dict())


def test_the_references_example_is_a_valid_step():
    text = (ROOT / "docs" / "reference.md").read_text()
    example = text[text.index("## Load profiles and scenarios"):].split("```toml\n", 1)[1].split("```", 1)[0]
    step = parse_spec("t", tomllib.loads(example), Path("t.toml"), LIMITS).steps[0]
    assert step.requests_asked == (15_000 + 60_000) * 2  # 0 → 1000/s over 30 s, 1000/s for 1 min; two requests each
    assert [r["name"] for r in load_plan(step.load)["requests"]] == ["login", "orders"]


def test_a_background_request_cannot_feed_later_ones():
    found = problems_of(vus=1, requests=[{"path": "/stream", "background": True, "extract": {"x": "a.b"}},
                                         {"path": "/next", "background": "yes"}])
    assert found == [
        "step s: load.requests[1]: a background request's response arrives after later requests went out: it cannot "
        "extract values for them",
        "step s: load.requests[2]: background must be true or false, got 'yes'"]


RENAMED_COPIES = re.compile(r"^(noise|unsampled|again-cv-10000)-(\d)$")  # chapter 2's copies before `runs = n`


def run_id(captured: str) -> str:
    """A captured copy's id as a run of its step: noise-1 → noise, noise-2 → noise.2; other ids unchanged."""
    match = RENAMED_COPIES.match(captured)
    if not match:
        return captured
    base, k = match.group(1), int(match.group(2))
    return base if k == 1 else f"{base}.{k}"
