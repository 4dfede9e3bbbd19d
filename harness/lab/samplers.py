"""Server-side truth on the clients' clock: sockets (what `ss` shows), `nstat`'s counters, Actuator, /proc and each CPU's
busy time, sampled every few hundred ms. The kernel is read directly (harness.lab.kernel), so that sampling 15,000
connections costs little CPU; `parse_ss` reads `ss` output where netlink is missing, and `parse_nstat` (nstat's
output) is what the /proc/net reader is tested against.

Each sampler is a thread that ticks on a fixed schedule (start + k × interval) and stamps rows with
Unix epoch milliseconds from the same clock k6 uses, so samples and requests share one timeline.
The parsers are pure functions of command output so they are unit tested on captured samples.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.lab import placement
from harness.lab.backends.process import http_get
from harness.lab.netns import entered
from harness.lab.kernel import (CLOCK_TICKS, SocketCounter, count_fds, parse_proc_stat, proc_stat_fields,  # noqa: F401 - CLOCK_TICKS: services read it here
                               executable_name, read_net_counters, ss_row)

# ss state names → ss.parquet columns; every other state is summed into other_states.
SS_STATES = {"ESTAB": "estab", "SYN-RECV": "syn_recv", "TIME-WAIT": "time_wait", "CLOSE-WAIT": "close_wait"}
# nstat counters (system-wide) → column names; stored as deltas since the previous sample.
NSTAT_COUNTERS = {
    "TcpExtListenOverflows": "listen_overflows",
    "TcpExtListenDrops": "listen_drops",
    "TcpExtSyncookiesSent": "syncookies_sent",
    "TcpExtTCPReqQFullDrop": "req_queue_full_drops",
    "TcpExtTCPSynRetrans": "syn_retrans",
    "TcpAttemptFails": "attempt_fails",
    "TcpEstabResets": "estab_resets",
    "TcpExtTCPAbortOnData": "aborts_on_data",
    "TcpExtTCPTimeouts": "tcp_timeouts",
    "TcpActiveOpens": "active_opens",  # connections opened by connect(): k6's, and a proxy's to its upstream
    "TcpPassiveOpens": "passive_opens",  # connections accepted
}
# Prometheus names from /actuator/prometheus → Micrometer names stored in actuator.parquet.
# Tomcat metrics are kept for the main connector only (the management port is a second Tomcat).
PROMETHEUS_METRICS = {
    "tomcat_threads_busy_threads": "tomcat.threads.busy",
    "tomcat_threads_current_threads": "tomcat.threads.current",
    "tomcat_threads_config_max_threads": "tomcat.threads.config.max",
    "tomcat_connections_current_connections": "tomcat.connections.current",
    "tomcat_connections_keepalive_current_connections": "tomcat.connections.keepalive.current",
    "tomcat_connections_config_max_connections": "tomcat.connections.config.max",
    "tomcat_global_request_seconds_count": "tomcat.global.request.count",
    "http_server_requests_seconds_count": "http.server.requests.count",  # Spring's count of requests answered
    "tomcat_global_error_total": "tomcat.global.error",
    "jvm_threads_live_threads": "jvm.threads.live",
    "jvm_threads_peak_threads": "jvm.threads.peak",
    "process_cpu_usage": "process.cpu.usage",
    "system_cpu_usage": "system.cpu.usage",
    "process_files_open_files": "process.files.open",
    "jvm_memory_used_bytes": "jvm.memory.used",  # summed over heap pools (area="heap")
    "jvm_gc_pause_seconds_sum": "jvm.gc.pause.total",  # seconds, summed over causes
    "jvm_gc_pause_seconds_count": "jvm.gc.pause.count",
    "jvm_gc_pause_seconds_max": "jvm.gc.pause.max",
    # HikariCP (the pair-room API, chapter 5): the pool in front of the database.
    "hikaricp_connections_active": "hikaricp.connections.active",
    "hikaricp_connections_idle": "hikaricp.connections.idle",
    "hikaricp_connections_pending": "hikaricp.connections.pending",
    "hikaricp_connections": "hikaricp.connections",
    "hikaricp_connections_max": "hikaricp.connections.max",
    "hikaricp_connections_timeout_total": "hikaricp.connections.timeout",
    "hikaricp_connections_acquire_seconds_sum": "hikaricp.connections.acquire.total",  # seconds waited, summed
    "hikaricp_connections_acquire_seconds_count": "hikaricp.connections.acquire.count",
    "hikaricp_connections_usage_seconds_sum": "hikaricp.connections.usage.total",  # seconds held, summed
    "hikaricp_connections_usage_seconds_count": "hikaricp.connections.usage.count",
    # Reactor Netty (the WebFlux service, chapter 7): connections open and being served on the service port.
    "reactor_netty_http_server_connections": "reactor.netty.http.server.connections",
    "reactor_netty_http_server_connections_active": "reactor.netty.http.server.connections.active",
}
PROM_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)")
PROM_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CGROUP_ROOT = Path("/sys/fs/cgroup")
NO_MEMORY_LIMIT_V1 = 2**62  # cgroup v1 reports "no limit" as a huge page-aligned number
WRAPPERS = {"sh", "dash", "bash", "taskset", "setpriv", "ip"}  # what a placed process is before it execs into itself


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# ---- parsers -------------------------------------------------------------------------------------

def parse_ss(text: str, port: int) -> dict:
    """`ss -Htan '( sport = :PORT )'` → state counts and the listening socket's queue and backlog."""
    counts: Counter[str] = Counter()
    row = {"accept_queue": 0, "accept_backlog": 0}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or not parts[3].endswith(f":{port}"):
            continue
        state = parts[0]
        if state == "LISTEN":  # for a listener Recv-Q is the accept queue now, Send-Q the backlog
            row["accept_queue"], row["accept_backlog"] = int(parts[1]), int(parts[2])
        else:
            counts[state] += 1
    for state, column in SS_STATES.items():
        row[column] = counts.pop(state, 0)
    row["other_states"] = sum(counts.values())
    return row


def parse_nstat(text: str) -> dict[str, int]:
    """`nstat -asz` → {column: absolute counter} for the counters in NSTAT_COUNTERS."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in NSTAT_COUNTERS:
            values[NSTAT_COUNTERS[parts[0]]] = int(parts[1])
    return {column: values.get(column, 0) for column in NSTAT_COUNTERS.values()}


def parse_prometheus(text: str, port: int) -> dict[str, float]:
    """Actuator's Prometheus text → {micrometer name: value}; sums series that share a name.

    Tomcat series are kept for the connector on `port` only: it is named http-nio-<port>, or
    http-nio-<address>-<port> when bound to an address; the management port is another connector.
    """
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = PROM_LINE.match(line)
        if not match or match.group(1) not in PROMETHEUS_METRICS:
            continue
        name, labels = match.group(1), dict(PROM_LABEL.findall(match.group(2) or ""))
        if name.startswith("tomcat_") and not labels.get("name", "").endswith(f"-{port}"):
            continue
        if name.startswith("reactor_netty_") and not labels.get("local_address", "").endswith(f":{port}"):
            continue
        if name == "jvm_memory_used_bytes" and labels.get("area") != "heap":
            continue
        value = float(match.group(3))
        metric = PROMETHEUS_METRICS[name]
        values[metric] = max(values.get(metric, value), value) if name.endswith("_max") else values.get(metric, 0.0) + value
    return values


def read_proc(pid: int) -> dict:
    """RSS, CPU seconds and open file descriptors of a live process from /proc."""
    fields = proc_stat_fields(pid)
    rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return {
        "rss_bytes": rss_pages * PAGE_SIZE,
        "cpu_seconds": (int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
        "open_fds": count_fds(pid),
    }


@dataclass(frozen=True)
class Cgroup:
    """A container's cgroup: its CPU and memory use (sampled) and its limits (read once), v1 or v2."""

    version: int
    cpu: Path  # cpu.max (v2) or cpu.cfs_quota_us / cpu.cfs_period_us (v1)
    cpuacct: Path  # cpu.stat usage_usec (v2) or cpuacct.usage in ns (v1)
    memory: Path  # memory.current / memory.max (v2) or memory.usage_in_bytes / memory.limit_in_bytes (v1)

    @classmethod
    def of_pid(cls, pid: int, root: Path = CGROUP_ROOT) -> Cgroup:
        return parse_cgroup(Path(f"/proc/{pid}/cgroup").read_text(), root)

    def usage(self) -> dict:
        """The columns of a process row: memory charged to the cgroup (page cache included), CPU, open files."""
        if self.version == 2:
            stat = dict(line.split() for line in (self.cpuacct / "cpu.stat").read_text().splitlines())
            cpu_seconds, memory = int(stat["usage_usec"]) / 1e6, int((self.memory / "memory.current").read_text())
        else:
            cpu_seconds = int((self.cpuacct / "cpuacct.usage").read_text()) / 1e9
            memory = int((self.memory / "memory.usage_in_bytes").read_text())
        pids = (self.memory / "cgroup.procs").read_text().split()
        return {"rss_bytes": memory, "cpu_seconds": cpu_seconds, "open_fds": sum(_open_fds(int(p)) for p in pids)}

    def limits(self) -> dict:
        if self.version == 2:
            quota, period = (self.cpu / "cpu.max").read_text().split()
            memory = (self.memory / "memory.max").read_text().strip()
            quota_us = None if quota == "max" else int(quota)
            memory_bytes = None if memory == "max" else int(memory)
        else:
            quota_us = int((self.cpu / "cpu.cfs_quota_us").read_text())
            quota_us = None if quota_us < 0 else quota_us
            period = (self.cpu / "cpu.cfs_period_us").read_text()
            memory_bytes = int((self.memory / "memory.limit_in_bytes").read_text())
            memory_bytes = None if memory_bytes >= NO_MEMORY_LIMIT_V1 else memory_bytes
        period_us = int(period)
        return {"cgroup_version": self.version, "cpu_quota_us": quota_us, "cpu_period_us": period_us,
                "cpus": None if quota_us is None else quota_us / period_us, "memory_limit_bytes": memory_bytes}


def parse_cgroup(text: str, root: Path = CGROUP_ROOT) -> Cgroup:
    """/proc/<pid>/cgroup → the directories of its cpu, cpuacct and memory controllers.

    v1 (and hybrid) lines name their controllers, `4:memory:/docker/<id>`, each mounted under root/<controllers>;
    pure v2 has only `0::/path` below one unified root.
    """
    v1: dict[str, Path] = {}
    unified = None
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in filter(None, controllers.split(",")):
            v1[controller] = root / controllers / path.lstrip("/")
        if not controllers:
            unified = root / path.lstrip("/")
    if "memory" in v1:
        return Cgroup(1, v1["cpu"], v1["cpuacct"], v1["memory"])
    if unified is None:
        raise ValueError(f"no cgroup found in {text!r}")
    return Cgroup(2, unified, unified, unified)


def _open_fds(pid: int) -> int:
    try:
        return count_fds(pid)
    except FileNotFoundError:
        return 0


def run_measured(cmd: list[str]) -> tuple[str, float]:
    """Run a short command; return its stdout and the CPU seconds it used (from wait4's rusage)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}")
    return out, usage.ru_utime + usage.ru_stime


# ---- sampler threads -----------------------------------------------------------------------------

def next_tick(tick: int, began_s: float, now_s: float, cpu_s: float, interval_s: float, budget: float | None) -> int:
    """The next tick of the schedule start + k × interval: never one already past and, with a CPU budget, none
    before the sample's CPU cost is spread thin enough (a sample costing c seconds waits c / budget from its start)."""
    if budget is None:
        return max(tick + 1, int(now_s / interval_s))  # a late sample is followed at once by the one it delayed
    return max(tick + 1, math.ceil(max(now_s, began_s + cpu_s / budget) / interval_s - 1e-9))


class Sampler(threading.Thread):
    """Calls `take()` every `interval_ms` until stopped; keeps rows, counts failures and CPU used."""

    name_: str = "sampler"
    cpu_budget: float | None = None  # share of one core this sampler may use; it skips ticks to stay within

    def __init__(self, interval_ms: int):
        super().__init__(daemon=True, name=self.name_)
        self.interval_s = interval_ms / 1000
        self.rows: list[dict] = []
        self.errors: Counter[str] = Counter()
        self.child_cpu_s = 0.0
        self.thread_cpu_s = 0.0
        self.netns: Path | None = None  # a host's network namespace to sample from (network = "hosts")
        self._stop_event = threading.Event()

    def take(self, ts_ms: int) -> list[dict]:
        raise NotImplementedError

    def run(self) -> None:
        with entered(self.netns):  # this thread only: its sockets and /proc/thread-self/net are the host's
            self._loop()
        self.thread_cpu_s = time.thread_time()

    def _loop(self) -> None:
        start = time.monotonic()
        tick = 0
        while not self._stop_event.is_set():
            began, cpu_before = time.monotonic() - start, self._cpu_used()
            try:
                self.rows.extend(self.take(now_ms()))
            except Exception as err:  # a missed sample is data too: count it, keep sampling
                self.errors[type(err).__name__] += 1
            cost = self._cpu_used() - cpu_before
            tick = next_tick(tick, began, time.monotonic() - start, cost, self.interval_s, self.cpu_budget)
            self._stop_event.wait(max(0.0, start + tick * self.interval_s - time.monotonic()))

    def _cpu_used(self) -> float:
        return time.thread_time() + self.child_cpu_s

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)

    def summary(self) -> dict:
        budget = {} if self.cpu_budget is None else {"cpu_budget": self.cpu_budget}
        return {
            "samples": len(self.rows), "errors": dict(self.errors),
            "cpu_seconds": round(self.thread_cpu_s + self.child_cpu_s, 3), **budget,
        }


class SocketSampler(Sampler):
    """The server port's sockets per state (sock_diag, else `ss`) plus nstat's kernel counters (as deltas), one row per tick."""

    name_ = "ss"
    # The kernel describes each socket of the port (~1.5 µs each): at 15,000 connections a sample costs ~25 ms, 5 %
    # of one core at 500 ms. Above ~5,000 connections the socket counts come less often instead.
    cpu_budget = 0.02

    def __init__(self, interval_ms: int, port: int):
        super().__init__(interval_ms)
        self.port = port
        self._last: dict[str, int] | None = None
        self.counter: SocketCounter | None = None
        self._tried = False

    def take(self, ts_ms: int) -> list[dict]:
        if not self._tried:  # sock_diag, as `ss` itself uses: counted in-process, no command and no text to parse
            self._tried = True
            try:
                self.counter = SocketCounter(self.port)
            except OSError:  # no netlink here: run `ss` and parse its output
                self.counter = None
        if self.counter is not None:
            sockets = ss_row(*self.counter.counts(), SS_STATES)
        else:
            ss_out, ss_cpu = run_measured(["ss", "-Htan", f"( sport = :{self.port} )"])
            self.child_cpu_s += ss_cpu
            sockets = parse_ss(ss_out, self.port)
        kernel = read_net_counters()  # what `nstat -asz` prints, read from /proc/net directly
        counters = {column: kernel.get(name, 0) for name, column in NSTAT_COUNTERS.items()}
        last, self._last = self._last, counters
        deltas = {k: (v - last[k] if last else 0) for k, v in counters.items()}
        return [{"ts_ms": ts_ms, **sockets, **deltas}]

    def stop(self) -> None:
        super().stop()
        if self.counter is not None:
            self.counter.close()


class ActuatorSampler(Sampler):
    """Actuator's Prometheus endpoint on the management port: one scrape gives every metric."""

    name_ = "actuator"

    def __init__(self, interval_ms: int, management_url: str, server_port: int):
        super().__init__(interval_ms)
        self.url = f"{management_url}/actuator/prometheus"
        self.port = server_port

    def take(self, ts_ms: int) -> list[dict]:
        with http_get(self.url, timeout=max(self.interval_s * 2, 1.0)) as reply:
            text = reply.read().decode()
        return [{"ts_ms": ts_ms, "metric": m, "value": v} for m, v in parse_prometheus(text, self.port).items()]


class ProcessSampler(Sampler):
    """RSS and CPU of the lab's processes (server, k6) and of the server's container when there is one.

    `pids()` is asked each tick as k6 comes and goes; a cgroup gives a row like a process's, named
    after it (`container`), so both backends write the same columns.
    """

    name_ = "process"

    def __init__(self, interval_ms: int, pids: Callable[[], dict[str, int]], cgroups: dict[str, Cgroup] | None = None,
                 placed: Iterable[str] = ()):
        super().__init__(interval_ms)
        self.pids = pids
        self.cgroups = cgroups or {}
        self.placed_names = set(placed)  # pinned processes: the CPUs their threads last ran on, counted each tick
        self.placed: dict[str, dict] = {}

    def take(self, ts_ms: int) -> list[dict]:
        rows = []
        for process, pid in self.pids().items():
            try:
                allowed = placement.allowed_cpus(pid)
                rows.append({"ts_ms": ts_ms, "process": process, **read_proc(pid), "cpus_allowed": allowed})
                if process in self.placed_names and executable_name(pid) not in WRAPPERS:
                    self._saw(process, allowed, placement.thread_cpus(pid))
            except (FileNotFoundError, ProcessLookupError):
                pass  # exited between the lookup and the read
        for name, cgroup in self.cgroups.items():
            try:
                rows.append({"ts_ms": ts_ms, "process": name, **cgroup.usage()})
            except FileNotFoundError:
                pass  # the container is gone
        return rows


    def _saw(self, process: str, allowed: str, threads: Counter[int]) -> None:
        facts = self.placed.setdefault(process, {"cpus_allowed": allowed, "threads_last_cpu": {}, "samples": 0})
        facts["cpus_allowed"], facts["samples"] = allowed, facts["samples"] + 1
        for cpu, n in threads.items():
            facts["threads_last_cpu"][str(cpu)] = facts["threads_last_cpu"].get(str(cpu), 0) + n


class CpuSampler(Sampler):
    """Each CPU's cumulative busy, idle and steal seconds from /proc/stat (cpu.parquet): which CPU was saturated."""

    name_ = "cpu"

    def take(self, ts_ms: int) -> list[dict]:
        return [{"ts_ms": ts_ms, **row} for row in parse_proc_stat(Path("/proc/stat").read_text())]


class Samplers:
    """Start and stop the lab's samplers (the load target's sockets, the processes, the CPUs) and the step's services'
    own (`services`: by the table their rows go to, e.g. the sample server's `actuator`) together; `enabled=False`
    runs none (their tables stay empty). `port` is the load target's, for `ss`."""

    def __init__(self, interval_ms: int, port: int, pids: Callable[[], dict[str, int]],
                 cgroups: dict[str, Cgroup] | None = None, enabled: bool = True, services: dict | None = None,
                 placed: Iterable[str] = ()):
        self.all = {
            "ss": SocketSampler(interval_ms, port),
            "process": ProcessSampler(interval_ms, pids, cgroups, placed),
            "cpu": CpuSampler(interval_ms),
        } | (services or {})
        self.interval_ms = interval_ms
        self.enabled = enabled

    def __enter__(self) -> Samplers:
        for sampler in self.all.values() if self.enabled else ():
            sampler.start()
        return self

    def __exit__(self, *exc) -> None:
        for sampler in self.all.values() if self.enabled else ():
            sampler.stop()

    def rows(self, name: str) -> list[dict]:
        return self.all[name].rows

    def placed(self) -> dict[str, dict]:
        """Per pinned process: its allowed CPUs and on which CPUs its threads were seen (for step.json)."""
        return self.all["process"].placed

    def summary(self) -> dict:
        parts = {name: s.summary() for name, s in self.all.items()}
        total = round(sum(p["cpu_seconds"] for p in parts.values()), 3)
        return {"enabled": self.enabled, "interval_ms": self.interval_ms, "cpu_seconds": total, **parts}
