"""Chapter 6's three machines for real (tests/profiles/hosts-scaled.toml): k6 on a client host, nginx and the Netty
service each on a host of their own (network namespaces the lab makes, system.network = "hosts"). Checks that the
traffic crossed the switch from host to host, that the samplers counted the proxy host's sockets and TCP counters
(not this machine's), the chapter's mechanism (without upstream keep-alive nginx opens a connection per request,
with it a handful), and that the hosts are removed after the run and after Ctrl-C, with nothing left running. The
run has a proxy in its environment, which nothing of the lab may use."""
from __future__ import annotations

import json
import os
import signal
import time
from unittest import mock

import pandas as pd
import pytest

from harness import ROOT
from harness.lab import netns, store
from harness.lab.services.nginx import nginx_binary

from test_e2e import descendants, finish, invoke, lab_ready, processes, still_running, wait_for  # noqa: F401 — lab_ready: a fixture

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(os.geteuid() != 0, reason="hosts need root (CI runs as root)")]
PROFILE = ROOT / "tests" / "profiles" / "hosts-scaled.toml"


@pytest.fixture(scope="module")
def run(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    assert nginx_binary(), "nginx is missing: apt-get install nginx"
    data_dir = tmp_path_factory.mktemp("hosts") / "data"
    # As from a shell with a proxy: nothing of the lab may use it, neither its probes nor k6 (which would send the
    # requests to the hosts' addresses through it). Nothing listens on the discard port.
    with mock.patch.dict(os.environ, {"HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}):
        proc = invoke(data_dir, "run", str(PROFILE))
    code, out = finish(proc, timeout=300)
    print(out)
    assert code == 0, out
    return {"steps": {s: data_dir / PROFILE.stem / s for s in ("proxied", "pooled")}, "harness": proc.pid}


def edge(step) -> pd.DataFrame:
    return pd.read_parquet(step / "edge.parquet")


def answered(step) -> int:
    requests = store.read_parquet(step / "requests.parquet", "requests")
    return int(((requests["status"] == 200) & (requests["error_code"] == 0)).sum())


def test_each_service_ran_on_its_own_host_and_the_load_on_the_client(run):
    meta = json.loads((run["steps"]["proxied"] / "step.json").read_text())
    assert meta["status"] == "complete"
    hosts = meta["hosts"]["hosts"]
    assert {h: v["address"] for h, v in hosts.items()} == {"client": "10.77.0.1", "api": "10.77.0.2", "edge": "10.77.0.3"}
    assert hosts["edge"]["tcp_tw_reuse"] in ("0", "1", "2") and len(hosts["edge"]["ip_local_port_range"].split()) == 2
    assert meta["services"]["edge"]["url"] == "http://10.77.0.3:8264"
    assert "server 10.77.0.2:8262;" in (run["steps"]["proxied"] / "edge.conf").read_text()
    assert answered(run["steps"]["proxied"]) > 100  # k6 on the client reached nginx, which reached the service


def test_the_proxy_hosts_own_sockets_and_counters_were_sampled(run):
    step = run["steps"]["proxied"]
    ss = pd.read_parquet(step / "ss.parquet")
    ok = answered(step)
    # Counted in the edge host's namespace: its active opens are nginx's, one per proxied request; its passive opens
    # the 4 k6 connections and the stub_status scrapes (one per sample), not the upstream's thousands.
    assert ss["active_opens"].sum() >= ok * 0.9
    assert ss["passive_opens"].sum() <= 4 + 2 * len(ss) and ss["estab"].max() >= 4
    upstream = edge(step).query("metric == 'upstream.time_wait'")["value"]
    # nginx asks the service to close (HTTP/1.0, Connection: close), so either side may close first and hold the
    # TIME_WAIT: a race (CI once saw 1,020 of 3,516 on nginx's side). What counts here is that nginx's share is seen
    # at all, which only a sampler inside the edge host can: these sockets do not exist in the machine's namespace.
    assert upstream.max() >= ok * 0.05


def test_upstream_keep_alive_removes_the_new_connections_per_second(run):
    proxied, pooled = run["steps"]["proxied"], run["steps"]["pooled"]
    assert answered(pooled) > 100
    per_request = {s.name: pd.read_parquet(s / "ss.parquet")["active_opens"].sum() / answered(s) for s in (proxied, pooled)}
    assert per_request["proxied"] >= 0.9 and per_request["pooled"] < 0.02, per_request
    assert edge(pooled).query("metric == 'upstream.time_wait'")["value"].max() <= 8


def test_a_service_on_a_host_of_its_own_runs_under_its_quota(run):
    meta = json.loads((run["steps"]["pooled"] / "step.json").read_text())
    assert meta["status"] == "complete", meta.get("reason")
    quota = meta["placement"]["applied"]["api"]["quota"]
    assert (quota["cfs_quota_us"], quota["cfs_period_us"], quota["cpus"]) == (100000, 100000, 1.0)


def test_the_hosts_are_removed_after_the_run(run):
    assert not netns.namespaces_of(run["harness"])


@pytest.mark.alongside  # no timing checked: two at a time, beside the unit tests (invoke test)
def test_ctrl_c_mid_step_removes_the_hosts_and_stops_everything(lab_ready, tmp_path):  # noqa: F811
    proc = invoke(tmp_path, "run", str(PROFILE), start_new_session=True)
    wait_for(lambda: len(netns.namespaces_of(proc.pid)) == 4, 60, "the step's hosts and switch")
    wait_for(lambda: any(d.name == "k6.log" for d in (tmp_path / PROFILE.stem).rglob("k6.log")), 60, "k6 to start")
    time.sleep(1)
    children = processes(descendants(proc.pid))
    os.killpg(proc.pid, signal.SIGINT)
    code, out = finish(proc, timeout=90)
    assert code == 130, out
    assert not netns.namespaces_of(proc.pid), out
    wait_for(lambda: not still_running(children), 15, "nginx, the service and k6 to stop")
