"""The sample server (Spring Boot on Tomcat, sample-server/) as a kind: the service `server` of every step that needs
it, set by the spec's `[server]`, the short form of `[services.server] kind = "tomcat"` (its knobs are SERVER_KEYS,
the articles' environment variables; Spring's defaults in SERVER_DEFAULTS: tomcat.knobs). Everything of the lab that
knows it is in this package: its knobs (knobs), its jars and local process (process), its image and container
(container).

It runs as a local child process (the JVM from tomcat.process: CDS when trained, a Java 21+ for virtual threads, the
pair-room jar for chapter 5) or, on the docker backend, in a fresh container (tomcat.container). Readiness is
Actuator's health UP on the management port, identity the pid Actuator reports, its own report of itself (effective
Tomcat settings, versions) /actuator/info, its metrics Actuator's Prometheus scrape (actuator.parquet), and the
progress line shows its busy threads. What it gives the model: the pool (or none on virtual threads), max-connections,
accept-count and the keep-alive that decide who gets in (harness.models.spike).
"""
from __future__ import annotations


from harness import SERVER_DIR, LabError
from harness.lab.integrity import tree_digest
from harness.lab.jdk import with_jvm_options
from harness.lab.samplers import ActuatorSampler
from harness.lab.services.base import (Context, RunningService, ServiceKind, check_local_jvm, latest, loopback_problem,
                                       spawn_java)
from harness.lab.services.tomcat import container, process
from harness.lab.services.tomcat.knobs import JVM_OPTIONS, SERVER_DEFAULTS, SERVER_KEYS, knob, server_env, virtual
from harness.lab.services.tomcat.process import RunningServer

HEALTH_TIMEOUT_S = 90  # a JVM's first start on a busy 2-core machine (no CDS, the pair-room jar) can take ~30 s
PORT_SETTINGS = {"server": "SERVER_PORT", "management": "MANAGEMENT_PORT"}


class TomcatKind(ServiceKind):
    name = "tomcat"
    title = "Spring Boot (Tomcat)"
    serves_as_server = True
    runs_java = True
    section = "server"  # the spec's [server] sets it
    knobs = SERVER_KEYS
    defaults = SERVER_DEFAULTS
    backends = ("local", "docker")
    ready_timeout_s = HEALTH_TIMEOUT_S
    artifacts = (SERVER_DIR / "target",)

    def check(self, service: str, knobs: dict, where: str, problems: list[str]) -> None:
        if problem := loopback_problem(knob(knobs, "SERVER_ADDRESS")):
            problems.append(f"{where}: SERVER_ADDRESS {problem}")
        ports = [knob(knobs, k) for k in PORT_SETTINGS.values()]
        if any(p > 65535 for p in ports):
            problems.append(f"{where}: ports must be ≤ 65535, got {ports}")
        if ports[0] == ports[1]:
            problems.append(f"{where}: SERVER_PORT and MANAGEMENT_PORT must differ (both {ports[0]})")
        # Tomcat caps an unset min-spare (10) at max threads itself; only an explicit contradiction is an error.
        threads, spare = knob(knobs, "TOMCAT_MAX_THREADS"), knobs.get("TOMCAT_MIN_SPARE_THREADS", 0)
        if spare > threads:
            problems.append(f"{where}: TOMCAT_MIN_SPARE_THREADS {spare} exceeds TOMCAT_MAX_THREADS {threads}")

    def setting(self, service: str, port: str) -> str:
        return f"[server] {PORT_SETTINGS[port]}"

    def needs_database(self, knobs: dict) -> str:
        return "PAIR_ROOM = true" if knobs.get("PAIR_ROOM") else ""

    def jvm_options(self, knobs: dict) -> list[str]:
        return list(JVM_OPTIONS)

    def build(self) -> str:
        process.build()
        return f"server: {process.JAR} (+ CDS archive); chapter 5's pair-room API: {process.PAIR_ROOM_JAR}"

    def build_image(self, base: str) -> str:
        return container.build_image(base)

    def inputs(self, knobs: dict) -> dict[str, str]:
        return {"code": tree_digest(SERVER_DIR / "src", SERVER_DIR / "pom.xml")}

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        return knob(knobs, "SERVER_ADDRESS"), knob(knobs, "SERVER_PORT")

    def ports(self, knobs: dict) -> dict[str, int]:
        return {"server": knob(knobs, "SERVER_PORT"), "management": knob(knobs, "MANAGEMENT_PORT")}

    def check_tools(self, backend: str) -> None:
        if backend == "docker":
            container.check_image()
            return
        check_local_jvm()
        if not process.JAR.exists():
            raise LabError(f"the server jar {process.JAR.relative_to(SERVER_DIR.parent)} is missing: "
                           f"run `invoke setup`")

    def check_steps(self, steps, backend: str) -> None:
        if backend == "docker":
            if any(virtual(s.server) for s in steps):
                raise LabError("VIRTUAL_THREADS needs Java 21+, and the server image holds the lab's JDK 17 (Spring "
                               "would run platform threads without a word): run these steps on the local backend")
            return
        process.check_launches(steps)

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningService:
        env = server_env(knobs, ctx.given)
        if ctx.backend == "docker":
            env = with_jvm_options(env, ctx.step.system)  # locally, spawn_java adds them
            return container.start_container(ctx.step, service, knobs, env, ctx.workdir / "server.log")
        cmd = process.launch_command(knobs, ctx.step.system)  # finds the java first: start-up is the JVM's own
        proc, log, started = spawn_java(service, cmd, env, ctx)
        return RunningServer(service, proc, log, started, knobs, process.launch_of(knobs, ctx.step.system))

    def sampler(self, running: RunningServer, interval_ms: int):
        return ActuatorSampler(interval_ms, running.management_url, running.port)

    def table(self, service: str) -> str:
        return "actuator"  # the sample server's metrics have their own file in every step directory

    served_metric = "tomcat.global.request.count"

    def live(self, rows: list[dict]) -> str:
        busy = latest(rows, "tomcat.threads.busy")
        return "" if busy is None else f"busy threads {int(busy)}"

    def listen_backlog(self, service: str, knobs: dict) -> tuple[int, str]:
        return knob(knobs, "TOMCAT_ACCEPT_COUNT"), "TOMCAT_ACCEPT_COUNT"

    def connections_held(self, knobs: dict) -> int:
        return knob(knobs, "TOMCAT_MAX_CONNECTIONS") + knob(knobs, "TOMCAT_ACCEPT_COUNT")

    def model_server(self, knobs: dict) -> dict:
        """Tomcat's pool (none on virtual threads: every request its own thread), max-connections and accept-count,
        and its keep-alive: a kept connection holds its slot until the keep-alive timeout, which falls back to the
        connection-timeout when unset (Tomcat's rule)."""
        return {"threads": None if knobs.get("VIRTUAL_THREADS") else knob(knobs, "TOMCAT_MAX_THREADS"),
                "max_connections": knob(knobs, "TOMCAT_MAX_CONNECTIONS"),
                "accept_count": knob(knobs, "TOMCAT_ACCEPT_COUNT"),
                "keep_alive": knob(knobs, "TOMCAT_MAX_KEEP_ALIVE_REQUESTS") != 1,
                "keep_alive_timeout_ms": knobs.get("TOMCAT_KEEP_ALIVE_TIMEOUT", knob(knobs, "TOMCAT_CONNECTION_TIMEOUT")),
                "sleep_ms": knob(knobs, "SLEEP_MS")}


KIND = TomcatKind()
