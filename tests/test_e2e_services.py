"""End to end with two services: k6 → nginx (the Debian package) → the sample server, on the real machine.

One run of tests/profiles/services-scaled.toml's short step through the command line, then SIGTERM in the middle of
its long step. Checks that both services were sampled under their own names (proxy.parquet from stub_status,
actuator.parquet from Actuator), that k6's requests went through nginx, and that no nginx or java outlives the run.
"""
from __future__ import annotations

from types import SimpleNamespace
import json
import os
import shutil
import signal
import socket
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest

from harness.lab import store
from harness import ROOT
from harness.lab.backends.process import may_make_namespaces, may_make_view
from harness.lab.services.base import Context, StepFailed, port_in_use
from harness.lab.services.nginx import ERROR_METRICS, STUB_METRICS, UPSTREAM_METRICS, NginxKind, nginx_binary

from test_e2e import command_name, descendants, finish, invoke, lab_children, lab_ready, port_open, wait_for  # noqa: F401 — lab_ready: a fixture

pytestmark = [pytest.mark.e2e, pytest.mark.alongside]  # two at a time (invoke test)
PROFILE = ROOT / "tests" / "profiles" / "services-scaled.toml"
PORTS = (8180, 8181, 8182, 8183)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def ports_free() -> None:
    """Below the kernel's ephemeral range (32768+), but a server of an earlier test may still be stopping."""
    wait_for(lambda: not any(port_in_use("127.0.0.1", p) for p in PORTS), 120, f"ports {PORTS} to be free")


@pytest.fixture(scope="module")
def proxied(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    assert nginx_binary(), "nginx is missing: apt-get install nginx"
    ports_free()
    data_dir = tmp_path_factory.mktemp("services") / "data"
    code, out = finish(invoke(data_dir, "run", str(PROFILE), "--step", "proxy"), timeout=240)
    print(out)
    assert code == 0, out
    step = data_dir / PROFILE.stem / "proxy"
    return data_dir, step, json.loads((step / "step.json").read_text())


def test_both_services_are_sampled_under_their_own_names(proxied):
    _, step, meta = proxied
    proxy = pd.read_parquet(step / "proxy.parquet")
    assert list(proxy.columns) == ["ts_ms", "metric", "value"]
    metrics = {*STUB_METRICS, *UPSTREAM_METRICS, *ERROR_METRICS}  # in proxy mode: its upstream sockets and errors too
    assert set(proxy["metric"]) == metrics and len(proxy) >= 5 * len(metrics)
    upstream = proxy[proxy["metric"] == "upstream.estab"]["value"]
    assert 1 <= upstream.max() <= 8  # keepalive 8: nginx's pooled connections to the server, seen from its side
    actuator = pd.read_parquet(step / "actuator.parquet")
    assert {"tomcat.threads.busy", "tomcat.global.request.count"} <= set(actuator["metric"])
    processes = set(pd.read_parquet(step / "process.parquet")["process"])
    assert {"server", "proxy", "proxy.worker1", "k6"} <= processes
    assert meta["config"]["services"]["proxy"]["kind"] == "nginx"
    service = meta["services"]["proxy"]
    assert service["exit"] == 0 and service["ready_ms"] > 0 and service["version"]
    assert (step / "proxy.conf").exists() and (step / "proxy.log.gz").exists()
    assert not list(step.glob(".proxy-run"))  # nginx's pid and temp files are removed with it


def test_a_chapter_reads_each_services_table_under_its_name(proxied):
    data_dir, step, _ = proxied
    with mock.patch.dict(os.environ, {"LAB_DATA_DIR": str(data_dir)}):
        data = store.load(PROFILE.stem)
    proxy = data.service("proxy", "proxy")
    assert len(proxy) == len(pd.read_parquet(step / "proxy.parquet")) > 0
    assert set(STUB_METRICS) <= set(proxy["metric"]) and data.service("server").empty


def test_k6_requests_went_through_nginx(proxied):
    _, step, meta = proxied
    requests = store.read_parquet(step / "requests.parquet", "requests")
    answered = int(((requests["status"] == 200) & (requests["error_code"] == 0)).sum())
    assert meta["requests"]["issued"] == len(requests) > 0 and answered == len(requests)
    proxy = pd.read_parquet(step / "proxy.parquet")
    served = proxy[proxy["metric"] == "requests"]["value"]
    assert served.max() - served.min() >= answered  # every k6 request (and the sampler's own scrapes) counted by nginx
    tomcat = pd.read_parquet(step / "actuator.parquet").query("metric == 'tomcat.global.request.count'")["value"]
    assert tomcat.max() - tomcat.min() >= answered * 0.9  # and reached Tomcat behind it
    ss = pd.read_parquet(step / "ss.parquet")
    assert ss["estab"].max() >= 5  # ss watches the load target's port (nginx's): k6's 5 connections


def test_nothing_is_left_running_after_the_run(proxied):
    _, _, meta = proxied
    processes = meta["services"]["proxy"]["processes"]  # nginx's master and workers, by name
    assert set(processes) == {"proxy", "proxy.worker1"}
    assert not [pid for pid in processes.values() if alive(pid)]
    assert not any(port_open(p) for p in PORTS)


def test_sigterm_mid_step_stops_nginx_and_the_server(lab_ready, tmp_path):  # noqa: F811
    ports_free()
    proc = invoke(tmp_path, "run", str(PROFILE), "--step", "held")
    names = lambda: {command_name(p) for p in descendants(proc.pid) if alive(p)}  # noqa: E731
    wait_for(lambda: {"java", "nginx", "k6"} <= names(), 90, "the server, nginx and k6 to run")
    started = descendants(proc.pid)  # nginx's workers included (grandchildren of the harness)
    assert len(started) >= 4
    os.kill(proc.pid, signal.SIGTERM)
    code, out = finish(proc, timeout=90)
    assert code == 130, out
    assert [p for p in started if alive(p)] == [], out
    assert not any(port_open(p) for p in PORTS)
    failed = json.loads((tmp_path / PROFILE.stem / "held" / "step.json").read_text())
    assert failed["status"] == "failed" and "interrupted" in failed["reason"]
    assert failed["services"]["proxy"]["exit"] == 0  # nginx stopped by the harness, not left to PDEATHSIG
    assert (tmp_path / PROFILE.stem / "held" / "proxy.parquet").exists()


@pytest.mark.skipif(not may_make_namespaces(), reason="a pid namespace for nginx needs root with CAP_SYS_ADMIN; elsewhere its workers may outlive a SIGKILL")
def test_sigkill_of_the_harness_leaves_no_nginx_worker(lab_ready, tmp_path):  # noqa: F811
    """PR_SET_PDEATHSIG kills the harness's children (java, k6, nginx's master); nginx's workers are the master's
    children, so as root the lab runs nginx as the init of its own pid namespace: the kernel then kills them too."""
    ports_free()
    proc = invoke(tmp_path, "run", str(PROFILE), "--step", "held")
    names = lambda: {command_name(p) for p in descendants(proc.pid) if alive(p)}  # noqa: E731
    wait_for(lambda: {"java", "nginx", "k6"} <= names(), 90, "the server, nginx and k6 to run")
    started = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    wait_for(lambda: not [p for p in started if alive(p)], 20, "every process the harness started to end")
    wait_for(lambda: not any(port_open(p) for p in PORTS), 10, "the ports to close")


@pytest.mark.parametrize("own_pid_namespace", [True, False], ids=["in-its-pid-namespace", "a-plain-child"])
def test_nginx_runs_as_www_data_with_the_capabilities_it_needs_and_sees_the_book_read_only(tmp_path, monkeypatch,
                                                                                          own_pid_namespace):
    """As root nginx, master and workers, runs as www-data with the capabilities it needs (listen below 1024; read
    its config, only where the step's folder lies behind a folder closed to other users), none to override write
    permissions or change users, and the book's folders are read-only to it (a mount namespace of its own); its pid
    and temp files' folder stays writable. So in its own pid namespace (its parent unshare), here in a folder closed
    to other users (pytest's), and as the harness's own child (root without a pid namespace), here in an open one,
    each behind its guard (process.still_a_child)."""
    import pwd
    import tempfile

    from harness.lab.services import nginx
    from test_process import mount_options, status_field

    if not own_pid_namespace:
        monkeypatch.setattr(nginx, "own_pid_namespace", lambda: None)

    from harness.lab.backends.process import CAPABILITY_BITS, bounded

    from harness.lab.backends.process import closed_to_others

    open_here = not own_pid_namespace and not closed_to_others([ROOT])  # (a clone in /root lends it in both)
    kept = ("net_bind_service",) if open_here else nginx.KEPT_CAPABILITIES
    needed = sum(1 << CAPABILITY_BITS[name] for name in kept if bounded(name))
    folder = tmp_path if own_pid_namespace else Path(tempfile.mkdtemp(prefix="lab-open-"))
    folder.chmod(0o700 if own_pid_namespace else 0o755)

    knobs = NginxKind().resolve("edge", {"mode": "return", "port": 8184, "status_port": 8185}, "t", problems := [])
    assert not problems
    ports_free()
    service = NginxKind().start("edge", knobs, Context(SimpleNamespace(placement={}), folder, {}, {}, protected=[ROOT]))
    try:
        service.wait_ready(timeout_s=10)
        for pid in service.pids().values():  # the master and its worker
            assert ("ro" in mount_options(pid, ROOT / "harness")) == may_make_view()
            assert "rw" in mount_options(pid, service.run_dir)
        assert len(service.pids()) == 2  # the master and its worker
        assert bool(service.isolated) == (own_pid_namespace and may_make_namespaces())
        if os.geteuid() == 0:
            www_data = str(pwd.getpwnam("www-data").pw_uid)
            for pid in service.pids().values():
                assert int(status_field(pid, "CapEff"), 16) == int(status_field(pid, "CapBnd"), 16) == needed
                assert status_field(pid, "Uid").split() == [www_data] * 4
        complaints = [line for line in service.log.read_text().splitlines()
                      if any(f"[{level}]" in line for level in ("warn", "error", "crit", "alert", "emerg"))]
        assert not complaints, complaints
    finally:
        service.stop()
        if not own_pid_namespace:
            shutil.rmtree(folder)


def test_an_nginx_that_cannot_start_fails_with_its_log(tmp_path):
    """The status port taken after the checks: nginx exits at once, and the step's reason ends with its log."""
    knobs = NginxKind().resolve("edge", {"mode": "return", "port": 8184, "status_port": 8185}, "t", problems := [])
    assert not problems
    ports_free()
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 8185))
        taken.listen()
        service = NginxKind().start("edge", knobs, Context(SimpleNamespace(placement={}), tmp_path, {}, {}))
        try:
            with pytest.raises(StepFailed, match=r"(?s)nginx 'edge' exited during start-up .*its log ends:.*Address already in use"):
                service.wait_ready(timeout_s=10)
        finally:
            service.stop()
    assert not alive(service.proc.pid)


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the lab and its JVMs run as that user")
def test_two_jvms_of_a_step_run_as_users_of_their_own_and_neither_can_write_the_others_folder(tmp_path):
    """As root a step's JVMs ran as one user, so one could write the other's folder (its temp files, its working
    directory). Now the step's n-th JVM runs as the n-th of the servers' users, owning its own folder only."""
    import pwd
    import subprocess

    from harness.lab.backends.process import SERVER_USERS, without_privileges
    from harness.lab.services.base import TEMP_DIR
    from harness.lab.services.deploy import Deployment
    from harness.lab.spec import parse_spec
    from test_process import status_field

    netty = {"kind": "netty", "io_threads": 1, "executor_threads": 1}
    raw = {"defaults": {"load": {"vus": 1, "target": "a"},
                        "services": {"a": {**netty, "port": 8186, "management_port": 8187},
                                     "b": {**netty, "port": 8188, "management_port": 8189}}},
           "step": [{"id": "two"}]}
    limits = {"nofile": 4096, "somaxconn": 4096, "can_raise_somaxconn": False, "cores": 2}
    deployment = Deployment(parse_spec("t", raw, tmp_path / "t.toml", limits).steps[0], tmp_path)
    try:
        deployment.start()
        folders = {name: tmp_path / TEMP_DIR / name for name in ("a", "b")}
        for name, user in zip(("a", "b"), SERVER_USERS, strict=False):
            uid = pwd.getpwnam(user).pw_uid
            assert status_field(deployment.running[name].pid, "Uid").split() == [str(uid)] * 4, name
            assert folders[name].stat().st_uid == uid
        for writer, other in ((SERVER_USERS[0], "b"), (SERVER_USERS[1], "a")):
            tried = subprocess.run(without_privileges(["touch", str(folders[other] / "x")], writer, [tmp_path]),
                                   capture_output=True, text=True)
            assert tried.returncode != 0 and "Permission denied" in tried.stderr, (writer, other, tried.stderr)
        own = subprocess.run(without_privileges(["touch", str(folders["b"] / "x")], SERVER_USERS[1], [tmp_path]))
        assert own.returncode == 0  # its own folder it may write
    finally:
        deployment.stop()
