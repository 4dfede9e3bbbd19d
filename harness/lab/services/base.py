"""What every kind of service shares: its knobs validated like SERVER_KEYS, its ports, its tools checked before
anything starts, and a `RunningService` (pid, url, alive, exit reason, readiness, identity, stop, log tail).

A step's services are plain dicts in `Step.services` ({name: {"kind": …, knob: value, …}}, defaults filled in),
so step.json records them as they ran. The sample server is the implicit service `server` of kind `tomcat`
(harness.lab.services.tomcat: the backends' RunningServer has the same interface); other kinds (harness.lab.services.nginx) run as local child processes started
with the same spawn/terminate as the server (own session, PR_SET_PDEATHSIG), whatever the server's backend.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness import LabError
from harness.lab import placement
from harness.lab.netns import entered
from harness.lab.typed import typed_values
from harness.lab.backends.process import PASSED_ENV, StepFailed, spawn, terminate
from harness.lab.jdk import check_java_home, java_command

READY_TIMEOUT_S = 30
Knobs = dict[str, tuple[type, "int | None"]]


@dataclass
class Context:
    """What a kind gets to start one service of a step: the step, its directory, the services already running."""

    step: object  # harness.lab.spec.Step
    workdir: Path
    running: dict  # name → RunningService, in start order
    endpoints: dict  # name → (address, port) the load (or a proxy) reaches each service on
    hosts: object = None  # harness.lab.netns.Hosts on network = "hosts", else None
    backend: str = "local"  # the server's backend: a kind may run its process there too (postgres on docker)

    def command(self, service: str, cmd: list[str]) -> list[str]:
        """`cmd` under the step's placement for `service`, on the service's own host when the step has hosts."""
        cmd = placement.command(self.step, service, cmd)
        return self.hosts.command(service, cmd) if self.hosts is not None else cmd


class RunningService:
    """A started service: its pid and url, alive or not and why, ready and really ours, stopped for sure."""

    kind = "service"

    def __init__(self, name: str, proc: subprocess.Popen | None, log: Path, started: float, url: str = ""):
        self.name, self.proc, self.log, self.started, self.url = name, proc, log, started, url
        self.netns: Path | None = None  # its host's network namespace (network = "hosts"): probes are made from there

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_reason(self) -> str:
        code = self.proc.poll()
        return f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"

    def ready(self) -> bool:
        """One readiness probe (True when the service answers); the kind's own check."""
        raise NotImplementedError

    def check_identity(self) -> None:
        """Raise StepFailed when the process answering is not the one started."""

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Block until ready and checked; returns start-to-ready milliseconds."""
        deadline = self.started + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise StepFailed(f"{self.kind} '{self.name}' exited during start-up ({self.exit_reason()}); "
                                 f"its log ends:\n{self.log_tail()}")
            with entered(self.netns):  # the probes, and any command they run, on the service's host
                if self.ready():
                    ready_ms = (time.monotonic() - self.started) * 1000
                    self.check_identity()
                    return ready_ms
            time.sleep(0.05)
        raise StepFailed(f"{self.kind} '{self.name}' not ready after {timeout_s:.0f} s; its log ends:\n{self.log_tail()}")

    def pids(self) -> dict[str, int]:
        """The processes sampled (process.parquet's `process` column) by name: the service's own by default."""
        return {self.name: self.pid}

    def info(self) -> dict:
        """What the service reports about itself (versions, effective settings), for step.json."""
        return {}

    def step_meta(self) -> dict:
        return {}

    def stop(self) -> int:
        return terminate(self.proc)

    def log_tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"


class ServiceKind:
    """A kind of service: its knobs (type, minimum) and defaults, ports, tools, start and sampler."""

    name = "kind"
    knobs: Knobs = {}
    defaults: dict = {}
    before_server = False  # started before the sample server (which connects to it at start-up), stopped after it
    on_hosts = False  # may run on a host of its own (network = "hosts": started through ctx.command)

    def resolve(self, service: str, values: dict, where: str, problems: list[str]) -> dict:
        """The spec's knobs typed and checked, defaults filled in (kind-specific checks in `check`)."""
        good = typed_knobs(self.knobs, values, f"{where}: services.{service}", problems)
        resolved = {**self.defaults, **good}
        self.check(service, resolved, where, problems)
        return resolved

    def check(self, service: str, knobs: dict, where: str, problems: list[str]) -> None:
        """Kind-specific checks of one resolved service (e.g. an upstream that must exist)."""

    def check_server(self, service: str, knobs: dict, server: dict, where: str, problems: list[str]) -> None:
        """Checks of the step's resolved [server] against this service (e.g. a pool that must fit its connections)."""

    def server_env(self, running: RunningService) -> dict[str, str]:
        """Environment a before_server service gives the sample server (e.g. where its database is)."""
        return {}

    def depends_on(self, knobs: dict) -> list[str]:
        return []

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        """(address, port) the load goes to when this service is the load target."""
        raise NotImplementedError

    def ports(self, knobs: dict) -> dict[str, int]:
        """Every port the service listens on, by what it is for."""
        return {}

    def check_tools(self, backend: str) -> None:
        """Raise LabError (naming the package to install) before anything starts."""

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningService:
        raise NotImplementedError

    def sampler(self, running: RunningService, interval_ms: int):
        """A harness.lab.samplers.Sampler whose rows go into <service name>.parquet, or None."""
        return None


class JarServiceKind(ServiceKind):
    """A Java service of the lab's own (a jar `invoke setup` builds: netty, webflux): a service port and a management
    port on `address`, started with the lab's java under the step's placement (and host), its log <name>.log."""

    jar: Path
    title = "the service"  # for the message when the jar is missing
    on_hosts = True

    def check(self, service: str, k: dict, where: str, problems: list[str]) -> None:
        check_listening(k, ("port", "management_port"), f"{where}: services.{service}", problems)

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        return knobs["address"], knobs["port"]

    def ports(self, knobs: dict) -> dict[str, int]:
        return {"port": knobs["port"], "management_port": knobs["management_port"]}

    def check_tools(self, backend: str) -> None:
        check_java_home(java_command())  # a clear LabError when there is no usable JDK 17+
        if not self.jar.is_file():
            raise LabError(f"{self.title}'s jar is missing ({self.jar}): run `invoke setup`")

    def spawn_jar(self, service: str, env: dict[str, str], ctx: Context):
        """`java -jar` of the service with `env` (and the variables every child gets); (process, log, started)."""
        log = ctx.workdir / f"{service}.log"
        started = time.monotonic()
        proc = spawn(ctx.command(service, [java_command(), "-jar", str(self.jar)]),
                     {k: os.environ[k] for k in PASSED_ENV if k in os.environ} | env, log)
        return proc, log, started


def typed_knobs(knobs: Knobs, values: dict, where: str, problems: list[str]) -> dict:
    """Like a spec section: unknown knobs listed with the allowed ones, then types and minimums (typed.typed_values)."""
    for key in values.keys() - knobs.keys():
        problems.append(f"{where}: unknown knob '{key}' (allowed: {', '.join(sorted(knobs))})")
    return typed_values(knobs, {k: v for k, v in values.items() if k in knobs}, where, problems)


def check_listening(knobs: dict, port_names: tuple[str, ...], where: str, problems: list[str]) -> None:
    """A service's `address` must be a loopback one (the lab sends its traffic nowhere else) and its ports (the knobs
    `port_names`) distinct and ≤ 65535."""
    try:
        loopback = ipaddress.ip_address(knobs["address"]).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        problems.append(f"{where}.address must be a loopback address, got {knobs['address']!r}")
    ports = [knobs[name] for name in port_names]
    if max(ports) > 65535 or len(set(ports)) < len(ports):
        problems.append(f"{where}: {' and '.join(port_names)} must differ and be ≤ 65535, got "
                        f"{', '.join(map(str, ports))}")


def port_in_use(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return True
    return False


def ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def require(what: str, found: str | None, package: str) -> str:
    if not found:
        raise LabError(f"{what} is not installed: install the Debian package `{package}` "
                       f"(`apt-get install {package}`)")
    return found
