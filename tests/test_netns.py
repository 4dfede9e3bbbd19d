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


def ours() -> set[str]:
    return {p.name for p in netns.NETNS_DIR.glob(f"{netns.PREFIX}{os.getpid()}-*")} if netns.NETNS_DIR.is_dir() else set()


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
        assert ours() == {f"lab{os.getpid()}-{h}" for h in ("client", "service", "switch")}
        with hosts.inside("service"):
            server = socket.create_server((hosts.address("service"), 8400))
        try:
            with hosts.inside("client"):
                began = time.monotonic()
                client = socket.create_connection((hosts.address("service"), 8400), timeout=2)
                connect_ms = (time.monotonic() - began) * 1000
            peer, (address, _) = server.accept()
            assert address == hosts.address("client")  # the connection came from the client host, across the bridge
            client.sendall(b"ping")
            assert peer.recv(4) == b"ping"
            client.close(), peer.close()
        finally:
            server.close()
        assert connect_ms < 50
        shown = subprocess.run(hosts.command("service", ["ip", "-o", "-4", "addr", "show", "eth0"]), capture_output=True,
                               text=True, check=True).stdout
        assert f"{hosts.address('service')}/24" in shown
        assert os.readlink("/proc/thread-self/ns/net") == own  # this thread is back in the harness's namespace
    assert ours() == set()


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
    assert ours() == set() and calls


@needs_root
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
