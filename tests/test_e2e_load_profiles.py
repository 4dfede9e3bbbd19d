"""Load profiles end to end, small: real k6 and the real sample server on ports 18080/18081.

- a ramping-arrival-rate step and an arrival rate one VU cannot keep up with, through the runner (step.json's
  requests: asked, issued, dropped_iterations);
- a scenario whose first request's JSON (the Actuator's /actuator/info on the management port: the sample server
  has no JSON endpoint of its own) feeds the next request's path, a failed extract, batch spike mode and the
  dashboard report: k6 run directly against one server (the CSV checked against the recording contract), since
  multi-request iterations need the streaming reader.
"""
from __future__ import annotations

import base64
import csv
import gzip
import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from harness.lab.load.tool import tool_environment
from harness.lab.services.deploy import Deployment
from harness.lab.load.k6 import CSV_FILE, DASHBOARD_REPORT, find_k6, k6_command, summary_counts
from harness.lab.load.recording import read_requests
from harness.lab.spec import parse_spec

from conftest import LIMITS

pytestmark = pytest.mark.e2e

PORTS = {"SERVER_PORT": 18080, "MANAGEMENT_PORT": 18081}
THREADS = 300  # the value the scenario extracts from /actuator/info and sleeps for, in ms

SPEC = f"""
[defaults.server]
SERVER_PORT = {PORTS["SERVER_PORT"]}
MANAGEMENT_PORT = {PORTS["MANAGEMENT_PORT"]}
SLEEP_MS = 5

[defaults.system]
jvm = "quick"  # counts of iterations and drops against sleeps, not the server's speed

[[step]]
id = "ramp"
load = {{ executor = "ramping-arrival-rate", start_rate = 0, pre_allocated_vus = 5, max_vus = 20, stages = [
  {{ duration = "2s", target = 20 }}, {{ duration = "2s", target = 20 }} ] }}

[[step]]
id = "overload"
why = "1 VU, 500 ms a request, 10 asked a second: most iterations are dropped"
load = {{ executor = "constant-arrival-rate", rate = 10, duration = "2s", pre_allocated_vus = 1, path = "/hello?sleepMs=500" }}
"""


def test_arrival_rates_through_the_runner(data_dir, tmp_path):
    from harness.lab.runner import run_chapter
    from harness.plan import plan_steps

    spec = tmp_path / "profiles.toml"
    spec.write_text(SPEC)
    outcomes = run_chapter(str(spec), plan=plan_steps)
    assert [o.status for o in outcomes] == ["complete", "complete"], [o.reason for o in outcomes]
    ramp = json.loads(next(data_dir.rglob("ramp/step.json")).read_text())  # wherever a spec run by path is stored
    assert ramp["requests"]["asked"] == 60  # 0 → 20/s over 2 s, then 20/s for 2 s
    counts = ramp["requests"]
    # the 60th iteration is due exactly at the end of the last stage: k6 starts it or not (a race, seen both ways)
    assert counts["issued"] + counts["dropped_iterations"] in (59, 60) and counts["succeeded"] == counts["issued"]
    assert ramp["config"]["load"]["stages"][0] == {"duration": "2s", "target": 20}
    assert ramp["model"]["reason"].startswith("no model")
    overload = json.loads(next(data_dir.rglob("overload/step.json")).read_text())["requests"]
    assert overload["asked"] == 20
    assert overload["dropped_iterations"] >= 10  # one VU answers ~2 a second of the 10 asked
    assert overload["issued"] + overload["dropped_iterations"] in (20, 21)  # one due exactly at the end, or not


# ---- k6 directly, one server for the rest --------------------------------------------------------------------

def step_of(load: dict, server: dict | None = None):
    raw = {"step": [{"id": "s", "load": load, "system": {"jvm": "quick"},
                     "server": PORTS | {"TOMCAT_MAX_THREADS": THREADS, "SLEEP_MS": 5000} | (server or {})}]}
    return parse_spec("t", raw, Path("t.toml"), LIMITS).steps[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Started from a folder with an application.properties of its own, as a reader's project folder may be."""
    callers = tmp_path_factory.mktemp("callers-folder")
    (callers / "application.properties").write_text("logging.level.root=DEBUG\n")
    services = Deployment(step_of({"vus": 1}), tmp_path_factory.mktemp("server"))
    started_in = os.getcwd()
    try:
        os.chdir(callers)
        services.start()
        os.chdir(started_in)
        yield services.server
    finally:
        os.chdir(started_in)
        services.stop()


def test_the_server_runs_in_its_own_folder_and_sees_the_clone_read_only(server):
    """The sample server's JVM (as every JVM the lab starts) works in its own folder of the step's work directory, so
    Spring Boot does not read the application.properties of the folder invoke was started in (it did: the server's
    log filled with DEBUG lines); as root it runs as the servers' user, whose HOME is that folder, the one place of the
    book it may write; elsewhere it runs as the user's own process."""
    import pwd

    from harness import ROOT
    from harness.lab.backends.process import SERVER_USER, may_make_view
    from test_process import mount_options, status_field

    own = Path(f"/proc/{server.pid}/cwd").resolve()
    assert own.parts[-2:] == (".tmp", "server")
    assert " DEBUG " not in server.log.read_text()
    assert ("ro" in mount_options(server.pid, ROOT / "harness")) == may_make_view()
    assert "rw" in mount_options(server.pid, own)
    runs_as = pwd.getpwnam(SERVER_USER).pw_uid if os.geteuid() == 0 else os.geteuid()
    assert status_field(server.pid, "Uid").split() == [str(runs_as)] * 4
    assert own.stat().st_uid == runs_as
    environ = dict(item.split("=", 1) for item in Path(f"/proc/{server.pid}/environ").read_text().split("\0") if item)
    assert environ["HOME"] == (str(own) if os.geteuid() == 0 else os.environ["HOME"])  # root's home is not its
    assert (f"-Duser.home={own}" in Path(f"/proc/{server.pid}/cmdline").read_text().split("\0")) == (os.geteuid() == 0)


def test_the_users_own_k6_config_file_changes_nothing(server, tmp_path, monkeypatch):
    """k6 merges a config file into a test's options, by default ~/.config/k6/config.json: a user's tags (or
    noVUConnectionReuse, which turned the smoke run's 6 timeouts into 0) would change the step. The lab gives k6 an
    empty one instead."""
    (tmp_path / ".config" / "k6").mkdir(parents=True)  # where k6 looks: HOME reaches it, XDG_CONFIG_HOME does not
    (tmp_path / ".config" / "k6" / "config.json").write_text(json.dumps({"tags": {"from": "users-config"}}))
    monkeypatch.setenv("HOME", str(tmp_path))
    rows = run_k6(step_of({"vus": 1, "iterations": 2, "path": "/hello?sleepMs=1"}), server, tmp_path)
    assert len(rows) > 0 and not [row for row in rows if "users-config" in json.dumps(row)]


def run_k6(step, server, workdir: Path, dashboard: bool = False) -> list[dict]:
    """k6 for a step against the server; its CSV rows (k6-summary.json and any report stay in workdir)."""
    cmd, env = k6_command(find_k6(), step, server.url, workdir, dashboard)
    done = subprocess.run(cmd, env=tool_environment(env), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(workdir / CSV_FILE, newline="") as f:
        return list(csv.DictReader(f))


def tags(row: dict) -> dict:
    """vu, iter and req of a sample: metadata, or a tag (extra_tags) for a batched request."""
    pairs = "&".join(filter(None, (row["metadata"], row["extra_tags"])))
    return {k: int(v) for k, v in re.findall(r"(vu|iter|req)=(\d+)", pairs)}


def test_a_scenario_feeds_extracted_values_into_the_next_request(server, tmp_path):
    step = step_of({"vus": 2, "iterations": 2, "requests": [
        {"name": "info", "path": "/actuator/info", "port": PORTS["MANAGEMENT_PORT"],
         "extract": {"threads": "lab.tomcat.maxThreads"}},
        {"name": "hello", "path": "/hello?sleepMs=${threads}", "think_time": "100ms"}]})
    rows = run_k6(step, server, tmp_path)
    started = [tags(r) for r in rows if r["metric_name"] == "lab_request_started"]
    assert len(started) == step.requests_asked == 8
    assert Counter(t["req"] for t in started) == {0: 4, 1: 4}
    ends = [r for r in rows if r["metric_name"] == "http_req_duration"]
    assert Counter((r["name"], r["status"]) for r in ends) == {("info", "200"): 4, ("hello", "200"): 4}
    assert {(tags(r)["vu"], tags(r)["iter"], tags(r)["req"]) for r in ends} == {
        (t["vu"], t["iter"], t["req"]) for t in started}  # every start has its end, one to one
    hello_ms = [float(r["metric_value"]) for r in ends if r["name"] == "hello"]
    assert all(THREADS <= ms < 5000 for ms in hello_ms), hello_ms  # slept the extracted 300 ms, not SLEEP_MS
    assert summary_counts(tmp_path, 1) == {"dropped_iterations": 0}


def test_a_plan_longer_than_one_environment_variable_reaches_k6_whole(server, tmp_path):
    """A request body of 140 kB makes a plan longer than Linux lets one variable or argument of a new process be
    (128 KiB): k6 reads it from its file and sends every byte (Tomcat swallows a GET's body and answers)."""
    body = "x" * 140_000
    step = step_of({"vus": 1, "iterations": 1, "requests": [{"name": "big", "path": "/hello?sleepMs=1", "body": body}]})
    rows = run_k6(step, server, tmp_path)
    assert [(r["name"], r["status"]) for r in rows if r["metric_name"] == "http_reqs"] == [("big", "200")]
    assert json.loads((tmp_path / "k6-summary.json").read_text())["metrics"]["data_sent"]["count"] > len(body)


def test_a_background_request_runs_beside_the_next_and_is_recorded_as_its_own(server, tmp_path):
    """An event stream held open while the user goes on: the next request goes out before the background one ends,
    the iteration still waits for it, and the recording pairs each start with its own end by its `req` tag."""
    step = step_of({"vus": 2, "iterations": 2, "requests": [
        {"name": "stream", "path": "/hello?sleepMs=1000", "background": True},
        {"name": "quick", "path": "/hello?sleepMs=10"}]})
    run_k6(step, server, tmp_path)
    rows = read_requests(tmp_path / CSV_FILE)
    assert len(rows) == step.requests_asked == 8 and set(rows["status"]) == {200}
    by_request = rows.set_index(["vu", "iteration", "req"])
    for vu, iteration in {(v, i) for v, i, _ in by_request.index}:
        stream, quick = by_request.loc[(vu, iteration, 0)], by_request.loc[(vu, iteration, 1)]
        assert (stream["name"], quick["name"]) == ("stream", "quick")
        assert stream["duration_ms"] >= 1000 and quick["duration_ms"] < 1000
        assert quick["end_ms"] < stream["end_ms"]  # went out and came back while the stream was open
    first, second = (rows[(rows["vu"] == 1) & (rows["iteration"] == i)] for i in (0, 1))
    assert second["start_ms"].min() >= first["end_ms"].max() - 1  # the next iteration waited for the stream


def test_a_failed_extract_ends_the_iteration_and_is_counted(server, tmp_path):
    step = step_of({"vus": 2, "requests": [
        {"name": "info", "path": "/actuator/info", "port": PORTS["MANAGEMENT_PORT"], "extract": {"x": "lab.nope"}},
        {"name": "never", "path": "/hello?n=${x}"}]})
    rows = run_k6(step, server, tmp_path)
    assert Counter(r["name"] for r in rows if r["metric_name"] == "http_reqs") == {"info": 2}
    assert summary_counts(tmp_path, 1) == {"dropped_iterations": 0, "extract_failed": 2}


def test_batch_spike_mode_opens_every_users_request_at_once(server, tmp_path):
    step = step_of({"vus": 40, "spike_mode": "batch", "batch_vus": 4, "path": "/hello?sleepMs=1000"})
    rows = run_k6(step, server, tmp_path)
    starts = [r for r in rows if r["metric_name"] == "lab_request_started"]
    ends = [r for r in rows if r["metric_name"] == "http_reqs"]
    assert len(starts) == len(ends) == 40 and {r["status"] for r in ends} == {"200"}
    keys = {(tags(r)["vu"], tags(r)["iter"], tags(r)["req"]) for r in ends}
    assert keys == {(tags(r)["vu"], tags(r)["iter"], tags(r)["req"]) for r in starts} and len(keys) == 40
    assert {k[0] for k in keys} == {1, 2, 3, 4} and {k[2] for k in keys} == set(range(10))
    first = min(int(r["timestamp"]) for r in starts) / 1000
    last_end = max(int(r["timestamp"]) for r in ends) / 1000
    durations = [float(r["metric_value"]) for r in rows if r["metric_name"] == "http_req_duration"]
    assert min(durations) >= 1000 and last_end - first < 2500  # one wave: all 40 were in flight together


def dashboard_counts(report: Path, metric: str) -> int:
    """The total of a counter over the periods k6's dashboard report shows (its data: gzip+base64 JSON lines)."""
    data = re.search(r'<script id="data" type="application/json; charset=utf-8; gzip; base64">(.*?)</script>',
                     report.read_text(), re.S).group(1)
    names, total = set(), 0
    for line in gzip.decompress(base64.b64decode(data.strip())).decode().splitlines():
        event = json.loads(line)
        if event["event"] == "metric":
            names |= set(event["data"])
        elif event["event"] == "snapshot" and metric in names:  # values in the metrics' sorted order
            total += event["data"][sorted(names).index(metric)][0]
    return total


def test_the_dashboard_report_shows_the_last_responses(server, tmp_path):
    """k6's web dashboard drops a test's last unfinished period (7 of these 10 responses showed); the script lingers
    one and a half periods after the last response, so the report shows them all."""
    step = step_of({"vus": 10, "path": "/hello?sleepMs=1000", "connection_reuse": False})
    run_k6(step, server, tmp_path, dashboard=True)
    assert dashboard_counts(tmp_path / DASHBOARD_REPORT, "http_reqs") == 10
