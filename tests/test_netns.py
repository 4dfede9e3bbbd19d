"""Hosts made of network namespaces (harness.lab.netns), for real: made, reachable from one another across the
switch, removed with nothing left behind, also after their harness is killed. Needs root, as the lab does for them.
Traffic goes only to addresses inside the namespaces the test made."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from harness import LabError, ROOT
from harness.lab import netns

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (CI runs as root)")


def test_host_names_are_checked_before_anything_is_made():
    for bad in (["Proxy"], ["client", "client"], ["switch"], [], ["averyverylongname"]):
        with pytest.raises(LabError, match="host names must be distinct"):
            netns.Hosts(bad)
    hosts = netns.Hosts(["client", "proxy"])
    assert hosts.address("client") == "10.77.0.1" and hosts.address("proxy") == "10.77.0.2"
    assert hosts.command("proxy", ["nginx"]) == ["ip", "netns", "exec", f"lab{os.getpid()}-proxy", "nginx"]


@needs_root
def test_hosts_reach_each_other_across_the_switch_and_are_removed_after():
    own = os.readlink("/proc/thread-self/ns/net")
    with netns.Hosts(["client", "service"]) as hosts:
        assert netns.namespaces_of(os.getpid()) == {f"lab{os.getpid()}-{h}" for h in ("client", "service", "switch")}
        with hosts.inside("service"):
            server = socket.create_server((hosts.address("service"), 8400))
        try:
            with hosts.inside("client"):
                client = socket.create_connection((hosts.address("service"), 8400), timeout=2)
            peer, (address, _) = server.accept()
            assert address == hosts.address("client")  # the connection came from the client host, across the bridge
            # The links add no delay unless asked: timed on the open connection, as a first connect's time can include
            # a retransmitted ARP or SYN (1,010 ms, seen once beside the whole suite on 2 cores).
            began = time.monotonic()
            client.sendall(b"ping")
            assert peer.recv(4) == b"ping"
            peer.sendall(b"pong")
            assert client.recv(4) == b"pong"
            round_trip_ms = (time.monotonic() - began) * 1000
            client.close(), peer.close()
        finally:
            server.close()
        assert round_trip_ms < 50
        shown = subprocess.run(hosts.command("service", ["ip", "-o", "-4", "addr", "show", "eth0"]), capture_output=True,
                               text=True, check=True).stdout
        assert f"{hosts.address('service')}/24" in shown
        assert os.readlink("/proc/thread-self/ns/net") == own  # this thread is back in the harness's namespace
    assert netns.namespaces_of(os.getpid()) == set()


@needs_root
def test_a_failed_make_removes_what_was_made(monkeypatch):
    real = netns._ip
    calls = []

    def failing(*args, check=True):
        calls.append(args)
        if args[:2] == ("-n", f"lab{os.getpid()}-proxy") and "addr" in args:
            raise LabError("boom")
        return real(*args, check=check)

    monkeypatch.setattr(netns, "_ip", failing)
    with pytest.raises(LabError, match="boom"):
        with netns.Hosts(["client", "proxy"]):
            pass
    assert netns.namespaces_of(os.getpid()) == set() and calls


@needs_root
@pytest.mark.quiet  # not while other runs sweep the namespaces of dead harnesses (this one's, first)
def test_hosts_of_a_killed_harness_are_removed_by_the_next():
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from harness.lab.netns import Hosts; "
            "h = Hosts(['client']).__enter__(); print('made', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "made"
        left = {f"lab{child.pid}-client", f"lab{child.pid}-switch"}
        assert left <= set(p.name for p in netns.NETNS_DIR.glob("lab*"))
        assert not set(netns.leftovers()) & left  # its harness still runs: not a leftover
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert left <= set(netns.leftovers())
    assert left <= set(netns.remove_leftovers())
    assert not left & set(p.name for p in netns.NETNS_DIR.glob("lab*"))


@needs_root
def test_the_netem_probe_leaves_no_namespace_behind():
    netns.netem_available()
    assert not {p.name for p in netns.NETNS_DIR.glob("lab*netemprobe")}


def test_a_host_named_like_an_ip_keyword_is_still_an_interface_name():
    """`ip link set a …` reads "a" as "address": the switch's ports are named with `dev`."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (CI runs as root)")
    with netns.Hosts(["a", "up"]) as hosts:
        shown = subprocess.run(hosts.command("a", ["ip", "-o", "-4", "addr", "show", "eth0"]), capture_output=True,
                               text=True, check=True).stdout
        assert "10.77.0.1/24" in shown


def spec_problems(system: dict, services: dict, load: dict) -> str:
    from pathlib import Path

    from conftest import LIMITS
    from harness.lab.spec import parse_spec

    raw = {"defaults": {"load": {"executor": "constant-vus", "vus": 2, "duration": "1s", **load}, "system": system,
                        "services": services}, "step": [{"id": "s"}]}
    with pytest.raises(LabError) as err:
        parse_spec("t", raw, Path("t.toml"), LIMITS)
    return str(err.value)


NETTY = {"kind": "netty", "port": 9001, "management_port": 9002}


def test_a_step_on_hosts_is_checked_before_anything_starts():
    out = spec_problems({"network": "wires"}, {}, {})
    assert "system.network must be one of loopback, hosts, got 'wires'" in out
    out = spec_problems({"link_delay_ms": 5}, {}, {})
    assert "system.link_delay_ms needs system.network = \"hosts\"" in out
    out = spec_problems({"network": "hosts"}, {"edge": {"kind": "nginx", "address": "127.0.0.1"}}, {"target": "edge"})
    assert "services.edge.address is its host's" in out and "proxies to the sample server, which stays on loopback" in out
    out = spec_problems({"network": "hosts"}, {"db": {"kind": "postgres"}, "api_server": NETTY}, {})
    assert "a postgres service does not run on a host of its own (kinds that do: netty, nginx, webflux)" in out
    assert "a service's name is its host's" in out and "got 'api_server'" in out
    assert "the load goes to a service of the step (load.target), not the sample server" in out


def test_a_step_on_hosts_gets_its_hosts_addresses():
    from pathlib import Path

    from conftest import LIMITS
    from harness.lab.spec import parse_spec

    raw = {"defaults": {"load": {"executor": "constant-vus", "vus": 2, "duration": "1s", "target": "edge"},
                        "system": {"network": "hosts"},
                        "services": {"api": NETTY, "edge": {"kind": "nginx", "upstream": "api", "port": 9003,
                                                            "status_port": 9004}}}, "step": [{"id": "s"}]}
    step = parse_spec("t", raw, Path("t.toml"), LIMITS).steps[0]
    assert netns.step_hosts(step.services) == ["client", "api", "edge"]
    assert step.services["api"]["address"] == "10.77.0.2" and step.services["edge"]["address"] == "10.77.0.3"


def test_link_delay_is_refused_where_the_kernel_has_no_netem():
    if netns.netem_available():
        pytest.skip("this kernel has netem: the delay is possible here")
    with pytest.raises(LabError, match=r"link_delay_ms = 5 needs tc's netem qdisc, which this kernel lacks "
                                       r"\(CONFIG_NET_SCH_NETEM is not set"):
        netns.check_delay_possible(5)
    netns.check_delay_possible(0)  # no delay asked: nothing to refuse
