"""wrk as a load tool: its checks, command line, summary recording and counts (no wrk needed), then one real run
against nginx (tests/profiles/wrk-scaled.toml).

tests/samples/wrk-summary.json: what wrk_summary.lua wrote after `wrk -c 4 -t 2 -d 2s --timeout 10s --latency`
against nginx's `return 200 "ok\\n"` on this kind of machine. tests/samples/wrk-summary-errors.json: the same script
after 3 s with --timeout 1s against a keep-alive server whose answers cycled through 200, 500, 200 after 1.2 s, and
closing the connection without an answer: 32 responses (12 fast 200s, 12 × 500, 8 late), 11 read errors.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness import ROOT, LabError
from harness.lab import store
from harness.lab.load import load_tool, wrk
from harness.lab.load.k6 import request_counts
from harness.lab.load.recording import write_recording
from harness.lab.runner import Outcome, _result_line
from harness.lab.services.base import port_in_use
from harness.lab.services.nginx import nginx_binary
from harness.lab.spec import load_spec, parse_spec

from conftest import LIMITS, SAMPLES
from test_e2e import finish, invoke, lab_ready, port_open, wait_for  # noqa: F401 — lab_ready: a fixture

PROFILE = ROOT / "tests" / "profiles" / "wrk-scaled.toml"
PORTS = tuple(range(8240, 8244))
SCRIPT = str(wrk.SCRIPT)


def parse(raw, **limits):
    return parse_spec("t", raw, Path("t.toml"), LIMITS | limits)


def wrk_step(placement=None, **load):
    table = {"id": "s", "load": {"tool": "wrk", "executor": "constant-vus", "vus": 200, "duration": "30s"} | load}
    if placement:
        table["placement"] = placement
    return parse({"step": [table]}, cpus=list(range(16))).steps[0]


def problems_of(**load) -> list[str]:
    with pytest.raises(LabError) as err:
        parse({"step": [{"id": "s", "load": {"tool": "wrk", "vus": 4} | load}]})
    return [line.removeprefix("  - ") for line in str(err.value).splitlines()[1:]]


# ---- checks and the command line ---------------------------------------------------------------------------

def test_wrk_runs_constant_vus_only():
    assert problems_of(executor="per-vu-iterations") == [
        "step s: wrk can only run constant-vus (wrk -c vus -d duration: a closed loop for a fixed time), "
        "not per-vu-iterations"]
    assert any("not constant-arrival-rate" in p for p in problems_of(executor="constant-arrival-rate", rate=10,
                                                                      duration="5s", pre_allocated_vus=2))


def test_wrk_refuses_a_scenario_and_part_seconds():
    problems = problems_of(executor="constant-vus", duration="5s", requests=[{"path": "/a"}, {"path": "/b"}])
    assert problems == ["step s: wrk sends one GET of load.path; load.requests (a scenario) needs tool = \"k6\""]
    assert problems_of(executor="constant-vus", duration="1500ms", request_timeout="500ms") == [
        "step s: wrk takes whole seconds for load.duration (like \"30s\"), got '1500ms'",
        "step s: wrk takes whole seconds for load.request_timeout (like \"30s\"), got '500ms'"]
    assert problems_of(executor="constant-vus", duration="0s") == [
        "step s: wrk takes whole seconds for load.duration (like \"30s\"), got '0s'"]
    assert problems_of(executor="constant-vus", duration="1m")[0].endswith("got '1m'")  # as wrk -d and ab -s


def test_command_line(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    step = wrk_step(request_timeout="5s", path="/hi")
    cmd, env = wrk.wrk_command(Path("/usr/bin/wrk"), step, "http://127.0.0.1:8240", tmp_path)
    assert cmd == ["/usr/bin/wrk", "-c", "200", "-t", "8", "-d", "30s", "--timeout", "5s", "--latency",
                   "-s", SCRIPT, "http://127.0.0.1:8240/hi"]
    assert env == {"LAB_WRK_SUMMARY": str(tmp_path / "wrk-summary.json")}
    closing, _ = wrk.wrk_command(Path("wrk"), wrk_step(duration="90s", connection_reuse=False), "http://h:1", tmp_path)
    assert closing[closing.index("-d") + 1] == "90s" and closing[closing.index("--timeout") + 1] == "60s"
    assert closing[-3:] == ["-H", "Connection: close", "http://h:1/hello"]


def test_threads_divide_the_connections(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 12)
    assert wrk.wrk_threads(wrk_step()) == 10  # 200 // 12 would leave 8 connections unopened
    assert wrk.wrk_threads(wrk_step(vus=4)) == 4  # at most one thread per connection
    assert wrk.wrk_threads(wrk_step(vus=7)) == 7
    assert wrk.wrk_threads(wrk_step(vus=13)) == 1  # a prime above the CPUs
    assert wrk.wrk_threads(wrk_step(placement={"wrk": "0-3"})) == 4  # the CPUs it is pinned to


def test_the_profile_resolves_to_a_wrk_command(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    step = load_spec(str(PROFILE), LIMITS).steps[0]
    cmd, _ = wrk.wrk_command(Path("wrk"), step, "http://127.0.0.1:8240", tmp_path)
    assert cmd == ["wrk", "-c", "4", "-t", "2", "-d", "2s", "--timeout", "2s", "--latency", "-s", SCRIPT,
                   "http://127.0.0.1:8240/hello"]


def test_missing_wrk_names_the_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(LabError, match=re.escape("`apt-get install wrk`")):
        load_tool("wrk")


def test_version_from_wrk_v_which_exits_1(tmp_path):
    fake = tmp_path / "wrk"
    fake.write_text("#!/bin/sh\necho 'wrk 4.1.0 [epoll] Copyright (C) 2012 Will Glozer'\necho 'Usage: wrk'\nexit 1\n")
    fake.chmod(0o755)
    assert wrk.wrk_version(fake) == "4.1.0"
    fake.write_text("#!/bin/sh\necho 'wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer'\nexit 1\n")
    assert wrk.wrk_version(fake) == "4.1.0-3+b2"
    assert wrk.wrk_version(tmp_path / "absent") == ""


# ---- the summary recording ---------------------------------------------------------------------------------

def collected(sample: str, tmp_path: Path, step=None):
    shutil.copy(SAMPLES / sample, tmp_path / "wrk-summary.json")
    return wrk.collect_summary(tmp_path, step)


def test_a_clean_summary_counts_every_response_as_answered(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    recorded = collected("wrk-summary.json", tmp_path, wrk_step(vus=4, duration="2s"))
    assert recorded.format == "summary" and recorded.requests is None and not recorded.tables
    assert request_counts(recorded, asked=4) == {"asked": 4, "issued": 145367, "succeeded": 145367, "failed": 0,
                                                 "errors": {}}
    kept = json.loads((tmp_path / "wrk-summary.json").read_text())
    assert (kept["threads"], kept["connections"], kept["duration_us"]) == (2, 4, 2099595)
    latency = kept["latency_us"]
    assert latency["min"] <= latency["percentiles"]["50"] <= latency["percentiles"]["99.9"] <= latency["max"]
    assert latency["percentiles"]["100"] == latency["max"] == 2435  # wrk's own percentile(100) says 0
    assert len(latency["percentiles"]) == 99 + 4 and latency["mean"] == pytest.approx(51.663)


def test_errors_by_kind(tmp_path):
    recorded = collected("wrk-summary-errors.json", tmp_path)
    # 32 responses: 12 × 500 (status) and 8 late (timeout) failed; 11 connections closed unanswered (read)
    assert request_counts(recorded, asked=4) == {
        "asked": 4, "issued": 43, "succeeded": 12, "failed": 31,
        "errors": {"http status": 12, "request timeout": 8, "read error": 11}}
    assert "threads" not in json.loads((tmp_path / "wrk-summary.json").read_text())  # no step, no threads
    refused = wrk.summary_totals({"requests": 0, "errors": {"connect": 5, "read": 0, "write": 2, "status": 0, "timeout": 0}})
    assert refused == {"issued": 7, "succeeded": 0, "failed": 7, "errors": {"connect error": 5, "write error": 2}}


def test_no_summary_no_recording(tmp_path):
    assert wrk.collect_summary(tmp_path) is None


def test_a_summary_step_writes_no_table_and_reads_back(data_dir, tmp_path):
    recorded = collected("wrk-summary-errors.json", tmp_path)
    writer = store.StepWriter("ch", "s")
    assert write_recording(writer, recorded) == {"format": "summary"} == writer.recording
    assert not list(writer.path.glob("*.parquet"))
    meta = {"id": "s", "status": "complete", "recording": writer.recording, "requests": request_counts(recorded, 4)}
    writer.finish(meta)
    data = store.load("ch")
    assert data.steps["s"]["requests"]["issued"] == 43 and len(data.requests) == 0 and len(data.series) == 0


def test_the_runners_result_line(tmp_path):
    counts = request_counts(collected("wrk-summary-errors.json", tmp_path), asked=0)
    assert _result_line(Outcome(wrk_step(), "complete", "", 3.0, counts)) == "issued 43, ok 12, failed 31"


# ---- end to end ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    assert nginx_binary(), "nginx is missing: apt-get install nginx"
    wrk.find_wrk()
    wait_for(lambda: not any(port_in_use("127.0.0.1", p) for p in PORTS), 120, f"ports {PORTS} to be free")
    data_dir = tmp_path_factory.mktemp("wrk") / "data"
    code, out = finish(invoke(data_dir, "run", str(PROFILE)), timeout=300)
    print(out)
    assert code == 0, out
    return data_dir / PROFILE.stem / "return"


@pytest.mark.e2e
@pytest.mark.alongside  # counts, no timing: two at a time (invoke test)
def test_wrk_against_nginx(run):
    meta = json.loads((run / "step.json").read_text())
    assert meta["status"] == "complete", meta.get("reason")
    assert meta["config"]["load"]["tool"] == "wrk" and meta["recording"] == {"format": "summary"}
    assert meta["versions"]["wrk"] == wrk.wrk_version(wrk.find_wrk()) and "4.1.0" in meta["versions"]["wrk"]
    summary = json.loads((run / "wrk-summary.json").read_text())
    requests = meta["requests"]
    assert requests["issued"] == summary["requests"] > 1000
    assert requests["succeeded"] == requests["issued"] and requests["failed"] == 0 and requests["errors"] == {}
    assert summary["connections"] == 4 and summary["threads"] == wrk.wrk_threads(load_spec(str(PROFILE), LIMITS).steps[0])
    assert 2_000_000 <= summary["duration_us"] < 3_000_000
    assert 0 < summary["latency_us"]["percentiles"]["50"] <= summary["latency_us"]["max"]
    assert not list(run.glob("requests.parquet")) and not list(run.glob("series.parquet"))
    with gzip.open(run / "wrk.log.gz", "rt") as log:
        assert f"{summary['requests']} requests in" in log.read()  # wrk's own report agrees
    # nginx counted them too (stub_status's requests also count the sampler's own status requests)
    stub = pd.read_parquet(run / "edge.parquet").query("metric == 'requests'")["value"]
    assert summary["requests"] <= stub.max() - stub.min() <= summary["requests"] * 1.01 + 100
    assert {"wrk", "edge"} <= set(pd.read_parquet(run / "process.parquet")["process"])
    print(f"wrk → nginx return 200, 4 connections: {summary['requests'] / summary['duration_us'] * 1e6:,.0f} requests/s")


@pytest.mark.e2e
@pytest.mark.alongside
def test_nothing_is_left_running(run):
    assert not any(port_open(p) for p in PORTS)
