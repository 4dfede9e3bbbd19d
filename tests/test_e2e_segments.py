"""One test split over two k6 processes by execution segments, each on a client host of its own
(tests/profiles/segments-scaled.toml): merged, its requests are exactly those of the same test run by one process,
each (vu, iteration) once, and each process ran its half from its own host."""
from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from harness import ROOT
from harness.lab import store
from harness.lab.services.nginx import nginx_binary

from test_e2e import finish, invoke, lab_ready  # noqa: F401 — lab_ready: a fixture

pytestmark = [pytest.mark.e2e, pytest.mark.alongside, pytest.mark.skipif(os.geteuid() != 0, reason="client hosts need root (CI runs as root)")]
PROFILE = ROOT / "tests" / "profiles" / "segments-scaled.toml"


@pytest.fixture(scope="module")
def run(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    assert nginx_binary(), "nginx is missing: apt-get install nginx"
    data_dir = tmp_path_factory.mktemp("segments") / "data"
    code, out = finish(invoke(data_dir, "run", str(PROFILE)), timeout=300)
    print(out)
    assert code == 0, out
    return {s: data_dir / PROFILE.stem / s for s in ("one", "two", "two-loopback")}


def meta(step) -> dict:
    return json.loads((step / "step.json").read_text())


def test_two_processes_issue_exactly_what_one_does(run):
    one, two = meta(run["one"]), meta(run["two"])
    assert one["status"] == two["status"] == "complete"
    assert two["requests"]["issued"] == one["requests"]["issued"] == two["requests"]["asked"] == 1000
    assert two["requests"]["succeeded"] == one["requests"]["succeeded"] == 1000
    requests = store.read_parquet(run["two"] / "requests.parquet", "requests")
    assert len(requests) == 1000 and not requests.duplicated(["vu", "iteration"]).any()
    assert requests["vu"].nunique() == 20  # each process's VUs kept apart when merged


def test_on_loopback_two_processes_issue_exactly_what_one_does(run):
    one, two = meta(run["one"]), meta(run["two-loopback"])
    assert two["status"] == "complete" and "hosts" not in two
    assert two["requests"]["issued"] == one["requests"]["issued"] == two["requests"]["succeeded"] == 1000
    requests = store.read_parquet(run["two-loopback"] / "requests.parquet", "requests")
    assert len(requests) == 1000 and not requests.duplicated(["vu", "iteration"]).any()


def test_each_process_ran_its_segment_from_its_own_host(run):
    step = run["two"]
    halves = [json.loads((step / name).read_text())["metrics"]["iterations"]["count"]
              for name in ("k6-summary.json", "k6-summary-2.json")]
    assert halves == [500, 500]
    hosts = meta(step)["hosts"]["hosts"]
    assert hosts["client"]["address"] == "10.77.0.1" and hosts["client2"]["address"] == "10.77.0.2"
    assert hosts["edge"]["address"] == "10.77.0.3"
    assert {"k6", "k6-2"} <= set(pd.read_parquet(step / "process.parquet")["process"])
    assert (step / "k6-2.log.gz").exists() and not (step / "k6-2.csv").exists()
