"""A step's services besides the sample server, around the server the runner starts on its backend: checked before
anything starts (tools, ports), started in dependency order in two groups around the server (BEFORE: the kinds the
server connects to at start-up, e.g. postgres, whose `server_env` the server gets; AFTER: the rest, e.g. nginx in
front of it), each waited ready and checked to be the process started, sampled under its own name, and stopped in
reverse order: AFTER, then the server, then BEFORE (also when a start fails, on Ctrl-C and SIGTERM: the runner stops
them in its `finally`). Their tables (<name>.parquet) and logs (<name>.log.gz) go into the
step directory, also for a failed step.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness import LabError
from harness.lab.backends.process import StepFailed, listener
from harness.lab.services.base import Context, RunningService, port_in_use
from harness.lab.services.config import KINDS, SERVER, start_order
from harness.lab.services.tomcat import TomcatKind

TOMCAT = TomcatKind()  # the implicit service `server`: its backend starts it, the runner passes it in

BEFORE, AFTER = "before", "after"  # the groups of services started before and after the sample server
LONG_COLUMNS = ["ts_ms", "metric", "value"]  # every service's metrics table: long format, like actuator.parquet


def endpoints(step) -> dict[str, tuple[str, int]]:
    """Where each service of a step answers: the sample server's SERVER_ADDRESS:SERVER_PORT, and each service's own."""
    found = {SERVER: TOMCAT.endpoint(step.server)}
    return found | {name: KINDS[k["kind"]].endpoint(k) for name, k in step.services.items()}


def target(step) -> str:
    """The service the load goes to (`load.target`, the sample server by default)."""
    return (step.load or {}).get("target", SERVER)


def check_services(steps, backend: str) -> None:
    """Before anything starts: every kind's tools (naming the package to install), then every service port free."""
    for kind in sorted({k["kind"] for step in steps for k in step.services.values()}):
        KINDS[kind].check_tools(backend)
    for step in steps:
        if step.system["network"] == "loopback":  # hosts are made for the step: nothing listens on them yet
            check_ports_free(step)


def groups(step) -> dict[str, list[str]]:
    """The step's services in start order, split around the server: {BEFORE: [...], AFTER: [...]}."""
    order = start_order(step.services)
    at = order.index(SERVER)
    return {BEFORE: order[:at], AFTER: order[at + 1:]}


def check_ports_free(step, error: type[Exception] = LabError, names=None) -> None:
    for name, knobs in step.services.items():
        if names is not None and name not in names:
            continue
        for what, port in KINDS[knobs["kind"]].ports(knobs).items():
            if port_in_use(knobs.get("address", "127.0.0.1"), port):
                found = listener(port)
                by = f" by {found[0]} (pid {found[1]})" if found else _ephemeral(port)
                raise error(f"step {step.id}: service '{name}' needs port {port} ({what}), which is in use{by}: stop "
                            f"that process or set services.{name}.{what} to another port")


def _ephemeral(port: int) -> str:
    """Why a port nobody listens on can still be taken: an outgoing connection's local port."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return (f" as a connection's local port (no listener; {low}-{high} is this machine's ephemeral port range, "
            f"which clients such as k6 draw from)") if low <= port <= high else ""


class Deployment:
    """The services of one step (not the server itself, which the runner starts on its backend and hands over once
    started: `server`)."""

    def __init__(self, step, workdir: Path, server=None, hosts=None, backend: str = "local"):
        self.step, self.workdir, self.server, self.hosts = step, workdir, server, hosts  # hosts: netns.Hosts or None
        self.backend = backend  # the server's: harness.lab.services.base.Context.backend
        self.running: dict[str, RunningService] = {}  # in start order
        self.meta: dict[str, dict] = {}  # step.json's `services`
        self.sampling: dict = {}

    def start(self, group: str = AFTER) -> None:
        """Start the group's services, each after what it depends on; wait until each answers and is the process
        started. AFTER needs the server (`self.server`) running."""
        names = groups(self.step)[group]
        if self.hosts is None:  # a host made for the step has nothing on it yet
            check_ports_free(self.step, StepFailed, names)  # checked before the run too: something may have started since
        running = dict(self.running) | ({SERVER: self.server} if self.server is not None else {})
        ctx = Context(self.step, self.workdir, running, endpoints(self.step), self.hosts, self.backend)
        for name in names:
            knobs = self.step.services[name]
            service = KINDS[knobs["kind"]].start(name, knobs, ctx)
            service.netns = self.hosts.path(name) if self.hosts is not None else None
            self.running[name] = ctx.running[name] = service
            self.meta[name] = {"kind": knobs["kind"], "url": service.url}
            self.meta[name]["ready_ms"] = round(service.wait_ready())
            self.meta[name] |= {"pid": service.pid, "processes": service.pids()}
            self.meta[name] |= service.info() | service.step_meta()

    def server_env(self) -> dict[str, str]:
        """What the BEFORE services tell the server (e.g. SPRING_DATASOURCE_URL of the step's database)."""
        env: dict[str, str] = {}
        for name in groups(self.step)[BEFORE]:
            if name in self.running:
                env |= KINDS[self.step.services[name]["kind"]].server_env(self.running[name])
        return env

    def url(self, name: str) -> str:
        return self.server.url if name == SERVER else self.running[name].url

    def port(self, name: str) -> int:
        return endpoints(self.step)[name][1]

    def pids(self) -> dict[str, int]:
        return {name: pid for service in self.running.values() for name, pid in service.pids().items()}

    def samplers(self, interval_ms: int) -> dict:
        """Each service's own sampler, by service name (the Samplers run them with ss, actuator and process)."""
        for name, service in self.running.items():
            sampler = KINDS[self.step.services[name]["kind"]].sampler(service, interval_ms)
            if sampler is not None:
                sampler.netns = service.netns
                self.sampling[name] = sampler
        return dict(self.sampling)

    def check_alive(self) -> None:
        for name, service in self.running.items():
            if not service.alive():
                raise StepFailed(f"{service.kind} '{name}' exited during the step ({service.exit_reason()}); "
                                 f"its log ends:\n{service.log_tail()}")

    def stop(self, group: str | None = None) -> None:
        """Stop the group's services (all without one) in reverse start order, every one even if one fails (a
        failure is recorded as its exit); a second Ctrl-C while stopping is re-raised once all were asked to stop."""
        interrupted = None
        names = groups(self.step)[group] if group else list(self.running)
        for name, service in reversed([(n, s) for n, s in self.running.items() if n in names]):
            try:
                self.meta[name]["exit"] = service.stop()
            except Exception as err:
                self.meta[name]["exit"] = f"not stopped cleanly: {err}"
            except BaseException as err:  # noqa: B036
                interrupted = interrupted or err
            self.meta[name] |= service.step_meta()  # what stopping added (e.g. the clone dropped)
        self.running = {n: s for n, s in self.running.items() if n not in names}
        if interrupted is not None:
            raise interrupted

    def write(self, writer) -> None:
        """Each service's metrics as <name>.parquet (long format) and its log as <name>.log.gz."""
        for name in self.step.services:
            if name in self.sampling:
                frame = pd.DataFrame(self.sampling[name].rows, columns=LONG_COLUMNS)
                frame.to_parquet(writer.path / f"{name}.parquet", index=False, compression="zstd")
            writer.gzip(writer.path / f"{name}.log", f"{name}.log")
