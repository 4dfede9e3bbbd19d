"""Machines made on this one: each host a network namespace with one interface, all on one switch (a bridge in a
namespace of its own), the way the article's client, NGINX and service ran on three instances of one network.

    with Hosts(["client", "proxy", "service"]) as hosts:
        hosts.address("service")            # '10.77.0.3': its address on the switch
        hosts.command("proxy", ["nginx"])   # ['ip', 'netns', 'exec', 'lab<pid>-proxy', 'nginx']: pid kept (exec)
        with hosts.inside("proxy"):         # this thread in the proxy's namespace: a socket made here counts there
            ...

Every address lives inside namespaces the lab made (10.77.0.0/24 on the switch), so traffic between hosts never
leaves them. The namespaces are named lab<harness pid>-<host>: Hosts removes them on exit (on failure and Ctrl-C
too), and the next Hosts removes those whose harness is gone (a kill -9). Deleting a namespace deletes its interfaces.
Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and `ip` (iproute2). Network delay (`tc netem`) is a kernel feature
this module does not assume: `netem_available()` says whether the kernel has it.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

from harness import LabError

SUBNET = "10.77.0"  # the switch's /24: host n is SUBNET.(n + 1); the bridge itself has no address
PREFIX = "lab"
SWITCH = "switch"
CLIENT = "client"  # a step's load tool runs on this host; each of its services on a host named after the service
NETNS_DIR = Path("/run/netns")  # where `ip netns add` pins namespaces
CLONE_NEWNET = 0x40000000
HOST_SYSCTLS = {"tcp_tw_reuse": "ipv4/tcp_tw_reuse", "ip_local_port_range": "ipv4/ip_local_port_range",
                "somaxconn": "core/somaxconn", "tcp_max_tw_buckets": "ipv4/tcp_max_tw_buckets"}
NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")  # short: interface names are at most 15 characters
OWNED = re.compile(rf"^{PREFIX}(\d+)-([a-z0-9]+)$")


def namespace(host: str) -> str:
    """This harness's namespace for `host`: lab<pid>-<host>."""
    return f"{PREFIX}{os.getpid()}-{host}"


def namespaces_of(harness: int) -> set[str]:
    """The namespaces the harness with pid `harness` made and has not removed (others' are named after their own)."""
    return {p.name for p in NETNS_DIR.glob(f"{PREFIX}{harness}-*")}


def client_hosts(processes: int = 1) -> list[str]:
    """The load tool's hosts: `client`, and client2, client3 … when the test is split over k6 processes."""
    return [CLIENT, *(f"{CLIENT}{n}" for n in range(2, processes + 1))]


def step_hosts(services, processes: int = 1) -> list[str]:
    """The hosts of a step on network = "hosts": the clients, then one per service, in the spec's order."""
    return [*client_hosts(processes), *services]


def address_of(names: list[str], host: str) -> str:
    """`host`'s address on the switch: host n of `names` is SUBNET.(n + 1)."""
    return f"{SUBNET}.{names.index(host) + 1}"


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.stdout.strip()}")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise LabError(f"`ip {' '.join(args)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


def check_can_make_hosts() -> None:
    """One clear error, before anything starts, when this machine cannot make hosts."""
    if os.geteuid() != 0:
        raise LabError("hosts of their own (network namespaces) need root: run the lab as root, or leave the "
                       "step on loopback")
    if not shutil.which("ip"):
        raise LabError("`ip` is missing: install the Debian package iproute2 (apt-get install iproute2)")


def leftovers() -> list[str]:
    """Namespaces of this module whose harness is gone."""
    found = []
    for name in sorted(p.name for p in NETNS_DIR.glob(f"{PREFIX}*")) if NETNS_DIR.is_dir() else []:
        match = OWNED.match(name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            found.append(name)
    return found


def remove_leftovers() -> list[str]:
    removed = leftovers()
    for name in removed:
        _ip("netns", "del", name, check=False)
    return removed


class Hosts:
    """Hosts on one switch, made on entry and removed on exit."""

    def __init__(self, names: list[str], delay_ms: int = 0):
        bad = [n for n in names if not NAME.match(n) or n == SWITCH]
        if bad or len(set(names)) != len(names) or not names:
            raise LabError(f"host names must be distinct, 1-8 lower-case letters and digits starting with a letter, "
                           f"and not '{SWITCH}': got {names}")
        if len(names) > 250:
            raise LabError(f"at most 250 hosts on one switch, got {len(names)}")
        self.names = list(names)
        self.delay_ms = delay_ms  # added to every packet leaving each host (tc netem): a round trip gets 2 × delay
        self.made: list[str] = []

    def address(self, host: str) -> str:
        return address_of(self.names, host)

    def path(self, host: str) -> Path:
        """Where `host`'s namespace is pinned (for `entered`)."""
        return NETNS_DIR / namespace(host)

    def command(self, host: str, cmd: list[str]) -> list[str]:
        """`cmd` run on `host`: `ip netns exec` enters the namespace and execs it, so the pid is the command's own."""
        return ["ip", "netns", "exec", namespace(host), *cmd]

    def __enter__(self) -> Hosts:
        check_can_make_hosts()
        remove_leftovers()
        try:
            self._make()
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._remove()

    def _make(self) -> None:
        switch = namespace(SWITCH)
        self._add(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        for host in self.names:
            ns = namespace(host)
            self._add(ns)
            # One veth pair: eth0 inside the host, its peer (named after the host) a port of the switch's bridge.
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", host, "netns", switch)
            _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            if self.delay_ms:
                _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay",
                      f"{self.delay_ms}ms"])
            _ip("-n", switch, "link", "set", "dev", host, "master", "br0")
            _ip("-n", switch, "link", "set", "dev", host, "up")

    def _add(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self.made.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")

    def _remove(self) -> None:
        for ns in reversed(self.made):
            _ip("netns", "del", ns, check=False)
        self.made = []

    def sysctls(self, host: str) -> dict:
        """The host's own TCP settings (each network namespace has its own, at the kernel's defaults)."""
        with self.inside(host):
            return {name: Path(f"/proc/sys/net/{path}").read_text().split() for name, path in HOST_SYSCTLS.items()}

    def describe(self) -> dict:
        """step.json's `hosts`: each host's address and TCP settings, and the links' delay."""
        return {"delay_ms": self.delay_ms, "hosts": {h: {"address": self.address(h), **{k: " ".join(v) for k, v in
                                                                                           self.sysctls(h).items()}}
                                                     for h in self.names}}

    @contextmanager
    def inside(self, host: str):
        """The calling thread in `host`'s network namespace for the block (sockets made there stay there)."""
        with entered(self.path(host)):
            yield


@contextmanager
def entered(ns_file: Path | None):
    """This thread in the network namespace pinned at `ns_file` (None: where it is), then back in its own (setns
    affects one thread)."""
    if ns_file is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(ns_file, os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {ns_file}: {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back into the harness's own network namespace")
    finally:
        os.close(target)
        os.close(own)


def check_delay_possible(delay_ms: int) -> None:
    """A step asking for link delay on a kernel without netem: one clear error before anything starts."""
    if delay_ms and not netem_available():
        raise LabError(f"system.link_delay_ms = {delay_ms} needs tc's netem qdisc, which this kernel lacks "
                       f"(CONFIG_NET_SCH_NETEM is not set: `tc qdisc add … netem` says \"Specified qdisc kind is "
                       f"unknown\"); run the step on a kernel with netem, or set link_delay_ms = 0")


def netem_available() -> bool:
    """Whether this kernel can add delay to a link (tc's netem qdisc): tried on a throwaway namespace's loopback."""
    if os.geteuid() != 0 or not shutil.which("tc"):
        return False
    probe = namespace("netemprobe")
    _ip("netns", "add", probe, check=False)
    try:
        done = subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                               "delay", "1ms"], capture_output=True, text=True)
        return done.returncode == 0
    finally:
        _ip("netns", "del", probe, check=False)
