"""The netty kind without running it: knobs and defaults, the spec checks, the NETTY_* environment it is given, the
sampler's rows, a missing jar named before anything starts. tests/test_e2e_netty.py runs the real service."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import LabError
from harness.lab.services import netty
from harness.lab.spec import parse_spec

from conftest import LIMITS

API = {"kind": "netty", "port": 38232, "management_port": 38233}


def parse(services: dict, load: dict | None = None):
    raw = {"defaults": {"load": {"vus": 2, **(load or {})}, "services": services}, "step": [{"id": "s"}]}
    return parse_spec("t", raw, Path("t.toml"), LIMITS)


def problems_of(services: dict) -> str:
    with pytest.raises(LabError) as err:
        parse(services)
    return str(err.value)


def test_knobs_have_their_defaults_and_the_service_can_be_the_load_target():
    step = parse({"api": API}, {"target": "api"}).steps[0]
    assert step.services["api"] == {"kind": "netty", "address": "127.0.0.1", "port": 38232, "management_port": 38233,
                                    "io_threads": 0, "executor_threads": 0, "backlog": 128}
    assert step.load["target"] == "api"


def test_bad_knobs_are_listed_together():
    text = problems_of({"api": {**API, "threads": 4, "io_threads": -1, "address": "10.0.0.1"}})
    assert "services.api: unknown knob 'threads'" in text and "services.api.io_threads must be ≥ 0" in text
    assert "services.api.address must be an IPv4 loopback address (127.0.0.0/8: the lab's load, samplers and URLs are IPv4), got '10.0.0.1'" in text
    text = problems_of({"api": {**API, "management_port": 38232}})
    assert "port and management_port must differ" in text


def test_nginx_can_proxy_to_it():
    step = parse({"api": API, "edge": {"kind": "nginx", "upstream": "api", "port": 38234, "status_port": 38235}},
                 {"target": "edge"}).steps[0]
    assert step.services["edge"]["upstream"] == "api"


def test_the_environment_leaves_zero_thread_counts_to_resteasy():
    knobs = parse({"api": API}).steps[0].services["api"]
    assert netty.service_env(knobs) == {"NETTY_ADDRESS": "127.0.0.1", "NETTY_PORT": "38232",
                                        "NETTY_MANAGEMENT_PORT": "38233", "NETTY_BACKLOG": "128"}
    assert netty.service_env({**knobs, "io_threads": 2, "executor_threads": 8})["NETTY_IO_THREADS"] == "2"


def test_sampler_rows_add_the_connections_open():
    rows = netty.metric_rows(1700000000000, {"requests": 10, "connections_opened": 7, "connections_closed": 3,
                                             "io_threads": 2, "executor_threads": 16})
    values = {r["metric"]: r["value"] for r in rows}
    assert values == {"netty.requests": 10.0, "netty.connections_opened": 7.0, "netty.connections_closed": 3.0,
                      "netty.connections_open": 4.0}
    assert {r["ts_ms"] for r in rows} == {1700000000000}


def test_a_missing_jar_is_named_with_the_command_that_builds_it(monkeypatch, tmp_path):
    monkeypatch.setattr(netty.NettyKind, "jar", tmp_path / "netty-server.jar")
    with pytest.raises(LabError, match=r"the netty service's jar is missing .*: run `invoke setup`"):
        netty.NettyKind().check_tools("local")
