"""A step's service graph deployed: checked before anything starts (tools, launches, ports), each service started
after what it needs and given what those give it (a database's URL), waited ready and checked to be the process
started, sampled under its own name, and stopped in reverse order, each even if one before failed (also when a start
fails, on Ctrl-C and SIGTERM: the runner stops them in its `finally`). Their tables (<table>.parquet) and logs
(<name>.log.gz) go into the step directory, also for a failed step.

What step.json says of them: the sample server's facts at its top level, as before services existed (`startup_ms`,
`server_info`, `launch`, `container`, `server_env`, `server_exit`, and its versions), every other service under
`services.<name>` (kind, title, url, ready time, pids, what it reports of itself, its exit).
"""
from __future__ import annotations

import os
from pathlib import Path

from harness import LabError
from harness.lab.backends.process import SERVER_USERS, StepFailed, check_server_users, listener
from harness.lab.services.base import Context, RunningService, book_folders, port_in_use
from harness.lab.services.graph import SERVER, endpoints, hosted, needs, start_order
from harness.lab.services.kinds import KINDS

def kind_of(step, name: str):
    return KINDS[step.services[name]["kind"]]


def check_services(steps, backend: str) -> None:
    """Before anything starts: every kind's tools (naming the package to install) and its checks of the steps that
    run it, then every service port free. A step none of whose services runs on the backend is refused (each would
    run as a local process, and its step.json would say the backend)."""
    elsewhere = [s for s in steps
                 if s.services and not any(backend in kind_of(s, name).backends for name in s.services)]
    if elsewhere:
        ids = ", ".join(s.id for s in elsewhere[:5]) + (f" and {len(elsewhere) - 5} more" if len(elsewhere) > 5 else "")
        kinds = ", ".join(sorted({k["kind"] for s in elsewhere for k in s.services.values()}))
        raise LabError(f"--backend {backend}: no service of step(s) {ids} runs there (kinds {kinds} run as local "
                       f"processes only): run them without --backend {backend}")
    if os.geteuid() == 0:  # as another user every JVM runs as that user
        jvms = {s.id: len(jvms_of(s, backend)) for s in steps}
        crowded = [f"{step} ({n})" for step, n in jvms.items() if n > len(SERVER_USERS)]
        if crowded:
            raise LabError(f"as root, step(s) {', '.join(crowded)} run more JVMs than the lab has users to run them as, "
                           f"each its own ({len(SERVER_USERS)}: {', '.join(SERVER_USERS)}): split the step")
        check_server_users(max(jvms.values(), default=0))
    for kind in sorted({k["kind"] for step in steps for k in step.services.values()}):
        using = [s for s in steps if any(k["kind"] == kind for k in s.services.values())]
        where = placed_on(KINDS[kind], backend)
        KINDS[kind].check_tools(where)
        KINDS[kind].check_steps(using, where)
    for step in steps:
        if step.system["network"] == "loopback":  # hosts are made for the step: nothing listens on them yet
            check_ports_free(step)


def jvms_of(step, backend: str) -> list[str]:
    """The step's JVM services that run here as processes (not in a container), in start order: as root the n-th runs
    as the n-th of SERVER_USERS (Context.server_user), so no JVM can write another's folder."""
    return [name for name in start_order(step.services)
            if kind_of(step, name).runs_java and placed_on(kind_of(step, name), backend) == "local"]


def server_user(jvms: list[str], name: str) -> str:
    """The user service `name` runs as when it is a JVM and root runs the lab: the n-th of `jvms`, the n-th user."""
    return SERVER_USERS[jvms.index(name)] if name in jvms else SERVER_USERS[0]


def placed_on(kind, backend: str) -> str:
    """Where a kind runs on the run's backend: there when it can, else as a local process beside the containers
    (they share the host's network, so it reaches them on the same loopback address)."""
    return backend if backend in kind.backends else "local"


def check_ports_free(step, error: type[Exception] = LabError, names=None) -> None:
    for name, knobs in step.services.items():
        if names is not None and name not in names:
            continue
        for what, port in KINDS[knobs["kind"]].ports(knobs).items():
            if port_in_use(KINDS[knobs["kind"]].endpoint(knobs)[0], port):
                found = listener(port)
                by = f" by {found[0]} (pid {found[1]})" if found else _ephemeral(port)
                setting = KINDS[knobs["kind"]].setting(name, what)
                raise error(f"step {step.id}: service '{name}' needs port {port} ({what}), which is in use{by}: stop "
                            f"that process or set {setting} to another port")


def _ephemeral(port: int) -> str:
    """Why a port nobody listens on can still be taken: an outgoing connection's local port."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return (f" as a connection's local port (no listener; {low}-{high} is this machine's ephemeral port range, "
            f"which clients such as k6 draw from)") if low <= port <= high else ""


class Deployment:
    """The services of one step, started in dependency order and stopped in reverse."""

    def __init__(self, step, workdir: Path, hosts=None, backend: str = "local"):
        self.step, self.workdir, self.hosts, self.backend = step, workdir, hosts, backend  # hosts: netns.Hosts or None
        self.running: dict[str, RunningService] = {}  # in start order
        self.meta: dict[str, dict] = {}  # step.json's `services`: every service but the sample server
        self.server_meta: dict = {}  # the sample server's facts, for step.json's top level
        self.sampling: dict = {}  # table name → sampler

    def start(self, only: list[str] | None = None) -> None:
        """Start every service (or those `only` names, with what they need), each after what it needs; wait until
        each answers and is the process started."""
        services = self.step.services
        names = [n for n in start_order(services) if only is None or n in only]
        if self.hosts is None:  # a host made for the step has nothing on it yet
            check_ports_free(self.step, StepFailed, names)  # checked before the run too: something may have started
        protected = book_folders(KINDS.values())  # what every service sees read-only
        jvms = jvms_of(self.step, self.backend)  # all, whichever start: a JVM's user is the same in every run of it
        for name in names:
            kind = KINDS[services[name]["kind"]]
            given = self.given_to(name)
            ctx = Context(self.step, self.workdir, dict(self.running), endpoints(services), self.hosts,
                          placed_on(kind, self.backend), given, protected, server_user(jvms, name))
            service = kind.start(name, services[name], ctx)
            service.netns = self.hosts.path(name) if self.hosts is not None and name in hosted(services) else None
            self.running[name] = service
            if name == SERVER:
                self.server_meta = {"server_env": self.recorded(name, given)} if given else {}
            else:
                self.meta[name] = {"kind": kind.name, "title": kind.title, "url": service.url}
            self._ready(name, service, service.wait_ready(kind.ready_timeout_s))

    def _ready(self, name: str, service: RunningService, ready_ms: float) -> None:
        """What a service that is ready says of itself, for step.json."""
        info = service.info()
        if name == SERVER:
            self.server_meta |= {"startup_ms": round(ready_ms), "server_info": info, "versions": service.versions(info)}
            self.server_meta |= service.step_meta()
        else:
            self.meta[name] |= {"ready_ms": round(ready_ms), "pid": service.pid, "processes": service.pids()}
            self.meta[name] |= info | service.step_meta()

    def recorded(self, name: str, given: dict[str, str]) -> dict[str, str]:
        """What `name` was given, as step.json keeps it: the secrets its services name (`secret_env`) as "***"."""
        secret = {k for needed in needs(name, self.step.services) for k in kind_of(self.step, needed).secret_env}
        return {k: "***" if k in secret else v for k, v in given.items()}

    def given_to(self, name: str) -> dict[str, str]:
        """What the running services `name` needs give it (a database's SPRING_DATASOURCE_*)."""
        given: dict[str, str] = {}
        for needed in needs(name, self.step.services):
            if needed in self.running:
                given |= kind_of(self.step, needed).server_env(self.running[needed])
        return given

    @property
    def server(self) -> RunningService | None:
        return self.running.get(SERVER)

    def url(self, name: str) -> str:
        return self.running[name].url

    def port(self, name: str) -> int:
        return endpoints(self.step.services)[name][1]

    def pids(self) -> dict[str, int]:
        return {name: pid for service in self.running.values() for name, pid in service.pids().items()}

    def cgroups(self) -> dict:
        return {name: cgroup for service in self.running.values() for name, cgroup in service.cgroups().items()}

    def samplers(self, interval_ms: int) -> dict:
        """Each service's own sampler, by the table its rows go to (the Samplers run them with ss and process)."""
        for name, service in self.running.items():
            kind = kind_of(self.step, name)
            sampler = kind.sampler(service, interval_ms)
            if sampler is not None:
                sampler.netns = service.netns
                self.sampling[kind.table(name)] = sampler
        return dict(self.sampling)

    def live(self, name: str) -> str:
        """The service's own number for the progress line (e.g. the sample server's busy threads)."""
        kind = kind_of(self.step, name)
        sampler = self.sampling.get(kind.table(name))
        return kind.live(sampler.rows) if sampler is not None else ""

    def served(self, name: str) -> int | None:
        """Requests the service answered so far, by its own count (None when it keeps none)."""
        kind = kind_of(self.step, name)
        sampler = self.sampling.get(kind.table(name))
        return kind.served(sampler.rows) if sampler is not None else None

    def check_alive(self) -> None:
        for name, service in self.running.items():
            if not service.alive():
                raise StepFailed(f"{service.kind} '{name}' exited during the step ({service.exit_reason()}); "
                                 f"its log ends:\n{service.log_tail()}")

    def stop(self) -> None:
        """Stop every service in reverse start order, each even if one fails (a failure is recorded as its exit); a
        second Ctrl-C while stopping is re-raised once all were asked to stop."""
        interrupted = None
        for name, service in reversed(list(self.running.items())):
            try:
                code = service.stop()
            except Exception as err:
                code = f"not stopped cleanly: {err}"
            except BaseException as err:  # noqa: B036
                interrupted, code = interrupted or err, "interrupted while stopping"
            if name == SERVER:
                self.server_meta["server_exit"] = code
            else:
                self.meta[name] |= {"exit": code} | service.step_meta()  # what stopping added (e.g. the clone dropped)
        self.running = {}
        if interrupted is not None:
            raise interrupted

    def write(self, writer) -> None:
        """Each sampler's rows as <table>.parquet and each service's log as <name>.log.gz."""
        for table, sampler in self.sampling.items():
            writer.table(table, sampler.rows)
        for name in self.step.services:
            writer.gzip(self.workdir / f"{name}.log", f"{name}.log")
