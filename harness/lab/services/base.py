"""What every kind of service shares: its knobs validated like a spec section, its ports, its tools checked before
anything starts, and a `RunningService` (pid, url, alive, exit reason, readiness, identity, stop, log tail).

A step is a small graph of services (`Step.services`: {name: {"kind": …, knob: value, …}}, defaults filled in, so
step.json records them as they ran), each started after what it depends on and given what those give it (a
database's URL), and one of them is the load's target. The sample server is the service `server` of kind `tomcat`
(harness.lab.services.tomcat), set by the spec's `[server]` (its `section`); a reader's own Spring Boot jar is kind
`spring-jar`. Each kind is one module (or package) that describes itself once through `ServiceKind`: how it is built and started (as a local
child process with the same spawn/terminate as every child, or in a container on the docker backend where it can),
when it is ready and that it is the process started, what it reports about itself for step.json (its `title` and
versions, which the book's Reproduce box shows), its metrics sampler, the number the progress line shows, and the
facts a model of the load's target needs (`model_server`).
"""
from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import ROOT, LabError
from harness.lab import interrupts, placement
from harness.lab.netns import entered
from harness.lab.typed import typed_values
from harness.lab.backends.process import (SERVER_USER, StepFailed, check_server_can_run,
                                          check_servers_reach, executable, may_make_view, read_only_view, server_owned, spawn,
                                          passed_env, terminate, without_privileges)
from harness.lab.build import maven_package
from harness.lab.integrity import tree_digest
from harness.lab.jdk import check_java_home, java_command, with_jvm_options
from harness.lab.kernel import proc_stat_fields
from harness.lab.store import TEMP_DIR, data_root

READY_TIMEOUT_S = 30
SERVER = "server"  # the sample server's name in every step's service graph, and the load's default target
Knobs = dict[str, tuple[type, "int | None"]]


@dataclass
class Context:
    """What a kind gets to start one service of a step: the step, its directory, the services already running."""

    step: object  # harness.lab.spec.Step
    workdir: Path
    running: dict  # name → RunningService, in start order
    endpoints: dict  # name → (address, port) the load (or a proxy) reaches each service on
    hosts: object = None  # harness.lab.netns.Hosts on network = "hosts", else None
    backend: str = "local"  # the run's backend: the kinds that can run in a container do so on "docker"
    given: dict = field(default_factory=dict)  # what the services this one depends on give it (environment)
    # What it sees read-only (process.read_only_view): a Deployment gives the book's folders and every kind's kept ones.
    protected: list = field(default_factory=lambda: book_folders())
    server_user: str = SERVER_USER  # the user a JVM runs as, when root runs the lab: a step's n-th JVM, the n-th user

    def command(self, service: str, cmd: list[str]) -> list[str]:
        """`cmd` under the step's placement for `service`, on the service's own host when the step has hosts. The
        placement wraps `ip netns exec`, not the other way: inside it /sys is remounted for the namespace, without the
        cgroup hierarchy a quota's process must enter."""
        on_host = self.hosts.command(service, cmd) if self.hosts is not None else cmd
        return placement.command(self.step, service, on_host)


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
            interrupts.check()  # one dropped while the service was spawned
            if not self.alive():
                raise StepFailed(f"{self.kind} '{self.name}' exited during start-up ({self.exit_reason()}); "
                                 f"its log ends:\n{self.log_tail()}")
            with entered(self.netns):  # the probes, and any command they run, on the service's host
                if self.ready():
                    ready_ms = (time.monotonic() - self.started) * 1000
                    self.check_identity()
                    return ready_ms
            time.sleep(0.05)
        hint = self.not_ready_hint()
        raise StepFailed(f"{self.kind} '{self.name}' not ready after {timeout_s:.0f} s{': ' + hint if hint else ''}; "
                         f"its log ends:\n{self.log_tail()}")

    def not_ready_hint(self) -> str:
        """What to check when it never got ready (a kind's own advice), or ''."""
        return ""

    def pids(self) -> dict[str, int]:
        """The processes sampled (process.parquet's `process` column) by name: the service's own by default."""
        return {self.name: self.pid}

    def info(self) -> dict:
        """What the service reports about itself (versions, effective settings), for step.json."""
        return {}

    def versions(self, info: dict) -> dict:
        """The versions results depend on, from its `info`, for step.json's `versions` (the load target's)."""
        return {}

    def step_meta(self) -> dict:
        """Facts of how it ran (a container's limits, a database's clone), for step.json."""
        return {}

    def cgroups(self) -> dict:
        """Cgroups sampled besides the processes, by name (a container's)."""
        return {}

    def stop(self) -> int:
        return terminate(self.proc)

    def log_tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"


class ServiceKind:
    """A kind of service: its knobs (type, minimum) and defaults, ports, tools, build, start, sampler and model facts."""

    name = "kind"
    section: str | None = None  # the spec section that is a short form of `[services.server]` of this kind ([server])
    title = "a service"  # what readers call it (the book's Reproduce box), recorded in step.json with its version
    knobs: Knobs = {}
    defaults: dict = {}
    before_server = False  # the sample server connects to it at start-up (a database): started before, stopped after
    serves_as_server = False  # may be the service `server`, the load's default target (the sample server, a jar)
    runs_java = False  # a JVM: it takes the step's system.jvm options (harness.lab.jdk.with_jvm_options)
    on_hosts = False  # may run on a host of its own (network = "hosts": started through ctx.command)
    backends = ("local",)  # where it runs: a local child process, and for some kinds a container (docker)
    ready_timeout_s = READY_TIMEOUT_S
    artifacts: tuple[Path, ...] = ()  # what `build` makes (`invoke clean` removes them)
    secret_env: tuple[str, ...] = ()  # what it gives others that step.json never records (shown as "***")

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

    def setting(self, service: str, port: str) -> str:
        """How a spec sets one of its ports (`port`: a key of `ports`), for a message that names it."""
        return f"services.{service}.{port}"

    def needs_database(self, knobs: dict) -> str:
        """Why this service, as the step's server, connects to the step's one database at start-up ("" when not)."""
        return ""

    def jvm_options(self, knobs: dict) -> list[str]:
        """JVM options it always runs with, besides the step's system.jvm ones (step.json's `jvm_options`)."""
        return []

    def server_env(self, running: RunningService) -> dict[str, str]:
        """What this service gives the services that depend on it, as environment variables (a database's URL)."""
        return {}

    def depends_on(self, knobs: dict) -> list[str]:
        """The services this one needs running first (besides the `before_server` ones, for the sample server)."""
        return []

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        """(address, port) the load goes to when this service is the load target."""
        raise NotImplementedError

    def ports(self, knobs: dict) -> dict[str, int]:
        """Every port the service listens on, by what it is for."""
        return {}

    def listen_backlog(self, service: str, knobs: dict) -> tuple[int, str] | None:
        """The accept backlog it asks of the kernel (which net.core.somaxconn silently caps) and the setting that asks
        it; None when it leaves the backlog to its runtime."""
        return None

    def connections_held(self, knobs: dict) -> int | None:
        """The most client connections it holds open at once (served and queued), each an open file; None: no bound
        of its own."""
        return None

    def check_tools(self, backend: str) -> None:
        """Raise LabError (naming the package to install) before anything starts."""

    def kept_folders(self) -> list[Path]:
        """Folders of its own that outlive a step (a database's clusters) and no other service may change."""
        return []

    def check_steps(self, steps, backend: str) -> None:
        """Checks of the steps that run this kind, before anything starts (e.g. a launch they need)."""

    def inputs(self, knobs: dict) -> dict[str, str]:
        """What of this service shapes a step's results besides its knobs, as digests for the step's fingerprint: its
        code (a Maven project's sources, your jar), its data files (a database's SQL), its binaries' version."""
        return {}

    def build(self) -> str | None:
        """`invoke setup`: build what the kind runs (a jar); returns a line for setup's report, None when nothing."""
        return None

    def build_image(self, base: str) -> str | None:
        """`invoke image`: its container image on the lab's `base` image (kinds with the docker backend); its tag."""
        return None

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningService:
        raise NotImplementedError

    def sampler(self, running: RunningService, interval_ms: int):
        """A harness.lab.samplers.Sampler whose rows go into <table>.parquet (`table`), or None."""
        return None

    def table(self, service: str) -> str:
        """The step file its sampler's rows go to (<table>.parquet): the service's name."""
        return service

    def live(self, rows: list[dict]) -> str:
        """Its own number for the progress line while it is the load's target (e.g. busy threads), from its
        sampler's rows; "" when it has none."""
        return ""

    served_metric = ""  # its sampler's cumulative count of requests answered ("" when it has none)

    def served(self, rows: list[dict]) -> int | None:
        """Requests it answered since its sampler started (the progress line's count), None when it counts none."""
        values = [r["value"] for r in rows if r["metric"] == self.served_metric] if self.served_metric else []
        return int(values[-1] - values[0]) if values else None

    def model_server(self, knobs: dict) -> dict | None:
        """What a model of the load's target needs to know of it (harness.models.spike): `threads` (None: no pool),
        `max_connections` and `accept_count` (None: none of its own), `keep_alive_timeout_ms` (None: it never closes
        an idle connection), `keep_alive`, and `sleep_ms` (its wait per request; None: unknown). None: no model."""
        return None


def latest(rows: list[dict], metric: str):
    """The last sampled value of a long-format metric (ts_ms, metric, value), or None."""
    return next((r["value"] for r in reversed(rows) if r["metric"] == metric), None)


class JarServiceKind(ServiceKind):
    """A Java service of the lab's own (a Maven project `invoke setup` packages: netty, webflux): a service port and a
    management port on `address`, started with the lab's java under the step's placement (and host), its log
    <name>.log."""

    project: Path  # the Maven project; its jar is target/<project name>.jar
    title = "the service"
    on_hosts = True
    runs_java = True

    @property
    def jar(self) -> Path:
        return self.project / "target" / f"{self.project.name}.jar"

    @property
    def artifacts(self) -> tuple[Path, ...]:
        return (self.project / "target",)

    def build(self) -> str:
        maven_package(self.project, f"{self.title} ({self.project.name}/)")
        return f"{self.name}: {self.jar}"

    def inputs(self, knobs: dict) -> dict[str, str]:
        return {"code": tree_digest(self.project / "src", self.project / "pom.xml")}

    def check(self, service: str, k: dict, where: str, problems: list[str]) -> None:
        check_listening(k, ("port", "management_port"), f"{where}: services.{service}", problems)

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        return knobs["address"], knobs["port"]

    def ports(self, knobs: dict) -> dict[str, int]:
        return {"port": knobs["port"], "management_port": knobs["management_port"]}

    def check_tools(self, backend: str) -> None:
        check_local_jvm()
        if not self.jar.is_file():
            raise LabError(f"the {self.name} service's jar is missing ({self.jar}): run `invoke setup`")

    def spawn_jar(self, service: str, env: dict[str, str], ctx: Context):
        """`java -jar` of the service with `env` (and the variables every child gets); (process, log, started)."""
        return spawn_java(service, [java_command(), "-jar", str(self.jar)], env, ctx)




def check_local_jvm(java: str | None = None) -> None:
    """Before a JVM starts here: a usable JDK 17+ (`java`, else the lab's) and, as root, the user it runs as, able to
    run it; else a clear LabError. Also the probe of the read-only view, whose note (if the machine refuses it) then
    comes before anything starts."""
    java = java or java_command()
    check_java_home(java)
    check_servers_reach(book_folders())
    check_server_can_run(java)  # the servers' first user there, then able to run `java`
    may_make_view()


def spawn_java(service: str, cmd: list[str], env: dict[str, str], ctx: Context):
    """A JVM of the step's (`cmd`: java and its arguments) under the step's placement and on the service's host, with
    `env`, the variables every child gets and the options of the step's system.jvm, its log <service>.log. Its
    temporary files, and its working directory, are its folder in the step's work directory (not /tmp, where they
    would outlive it; not the directory the harness was started in, whose application.properties Spring Boot would
    read). When the harness is root it runs as its user (ctx.server_user: no other JVM of the step's), which owns
    that folder and nothing else, and sees the book's folders read-only but for that one (process.without_privileges,
    process.read_only_view). Returns (process, log, started)."""
    log = ctx.workdir / f"{service}.log"
    temp = (ctx.workdir / TEMP_DIR / service).resolve()  # it runs there: no path of its may be relative
    temp.mkdir(parents=True, exist_ok=True)
    server_owned(temp, ctx.server_user)
    env = with_jvm_options(passed_env() | env, ctx.step.system)
    home = []
    if os.geteuid() == 0:  # the server's user's home is its folder: not root's, nor its passwd entry's (/nonexistent)
        home, env["HOME"] = [f"-Duser.home={temp}"], str(temp)
    cmd = [str(Path(cmd[0]).absolute()) if "/" in cmd[0] else cmd[0], f"-Djava.io.tmpdir={temp}", *home, *cmd[1:]]
    started = time.monotonic()
    reads = [*ctx.protected, executable(cmd[0]), *arguments_naming_paths(cmd[1:])]  # its jar, its CDS archive …
    contained = read_only_view(without_privileges(cmd, ctx.server_user, reads), temp, ctx.protected)
    proc = spawn(ctx.command(service, contained), env, log, cwd=temp)  # placed as root, then contained
    return proc, log, started


def arguments_naming_paths(args: list[str]) -> list[Path]:
    """The absolute paths a command's arguments name (`/x.jar`, `-XX:SharedArchiveFile=/x.jsa`)."""
    return [Path(value) for value in (arg.split("=", 1)[-1] for arg in args) if value.startswith("/")]


def book_folders(kinds=()) -> list[Path]:
    """What a service must not change: the clone (code, tools, the committed data), the data directory in use, and the
    folders the `kinds` keep (ServiceKind.kept_folders)."""
    return [ROOT, data_root(), *(folder for kind in kinds for folder in kind.kept_folders())]


def typed_knobs(knobs: Knobs, values: dict, where: str, problems: list[str]) -> dict:
    """Like a spec section: unknown knobs listed with the allowed ones, then types and minimums (typed.typed_values)."""
    for key in values.keys() - knobs.keys():
        problems.append(f"{where}: unknown knob '{key}' (allowed: {', '.join(sorted(knobs))})")
    return typed_values(knobs, {k: v for k, v in values.items() if k in knobs}, where, problems)


def check_listening(knobs: dict, port_names: tuple[str, ...], where: str, problems: list[str]) -> None:
    """A service's `address` must be a loopback one (the lab sends its traffic nowhere else) and its ports (the knobs
    `port_names`) distinct and ≤ 65535."""
    if problem := loopback_problem(knobs["address"]):
        problems.append(f"{where}.address {problem}")
    ports = [knobs[name] for name in port_names]
    if max(ports) > 65535 or len(set(ports)) < len(ports):
        problems.append(f"{where}: {' and '.join(port_names)} must differ and be ≤ 65535, got "
                        f"{', '.join(map(str, ports))}")


def loopback_problem(address) -> str:
    """Why a service cannot listen on `address` ("" when it can): an IPv4 loopback address (127.0.0.0/8), the only
    place the lab sends traffic to; its load, samplers and URLs are IPv4 (::1 would pass the loopback test and then
    be refused by every IPv4 socket, as a port in use)."""
    try:
        if ipaddress.IPv4Address(address).is_loopback:
            return ""
    except ValueError:
        pass
    return f"must be an IPv4 loopback address (127.0.0.0/8: the lab's load, samplers and URLs are IPv4), got {address!r}"


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
        return int(proc_stat_fields(pid)[1])
    except FileNotFoundError:
        return None


def require(what: str, found: str | None, package: str) -> str:
    if not found:
        raise LabError(f"{what} is not installed: install the Debian package `{package}` "
                       f"(`apt-get install {package}`)")
    return found
