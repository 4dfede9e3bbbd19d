"""The sample server's endpoints on an event loop as a kind (chapter 7): `webflux-server/`, Spring WebFlux on Reactor
Netty, `/sleep` waiting `sleep_ms` on a timer instead of a thread, built by `invoke setup` into webflux-server/target/.

It runs as a local child process (`java -jar`, spawn/terminate/PDEATHSIG as for the sample server, under the step's
`[placement]` for its name; on its own host on network = "hosts"). Its knobs become environment variables. Readiness:
Actuator's /health on its management port answers UP; identity: the pid /actuator/info reports is the pid started;
metrics: /actuator/prometheus (Reactor Netty's connections on the service port, the JVM's threads, heap, GC, open
files) sampled into <name>.parquet, the same Micrometer names as actuator.parquet.
"""
from __future__ import annotations


from harness import ROOT
from harness.lab.backends.process import http_json
from harness.lab.samplers import ActuatorSampler
from harness.lab.services.base import Context, JarServiceKind, RunningService, StepFailed, latest

ENV = {"address": "SERVER_ADDRESS", "port": "SERVER_PORT", "management_port": "MANAGEMENT_PORT", "sleep_ms": "SLEEP_MS"}


class WebfluxKind(JarServiceKind):
    name = "webflux"
    project, title = ROOT / "webflux-server", "Spring Boot (WebFlux)"
    knobs = {
        "address": (str, None),
        "port": (int, 1),
        "management_port": (int, 1),  # Actuator, apart from the measured port
        "sleep_ms": (int, 0),  # /sleep's wait when the request gives no ?ms=
    }
    defaults = {"address": "127.0.0.1", "port": 8290, "management_port": 8291, "sleep_ms": 0}

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningWebflux:
        return RunningWebflux(service, *self.spawn_jar(service, {v: str(knobs[k]) for k, v in ENV.items()}, ctx), knobs)

    def sampler(self, running: RunningWebflux, interval_ms: int):
        return ActuatorSampler(interval_ms, running.management_url, running.port)

    served_metric = "http.server.requests.count"

    def live(self, rows: list[dict]) -> str:
        held = latest(rows, "reactor.netty.http.server.connections")
        return "" if held is None else f"connections {int(held)}"

    def model_server(self, knobs: dict) -> dict:
        """An event loop: no pool (a timer per wait, no thread held), no connection limit of its own, the kernel's
        somaxconn as its backlog (None here: the model takes the machine's), and Reactor Netty closes no idle
        kept-alive connection by itself."""
        return {"threads": None, "max_connections": None, "accept_count": None, "keep_alive": True,
                "keep_alive_timeout_ms": None, "sleep_ms": knobs["sleep_ms"]}


class RunningWebflux(RunningService):
    kind = "webflux"

    def __init__(self, name, proc, log, started, knobs):
        super().__init__(name, proc, log, started, f"http://{knobs['address']}:{knobs['port']}")
        self.management_url = f"http://{knobs['address']}:{knobs['management_port']}"
        self.port = knobs["port"]
        self._info: dict = {}

    def ready(self) -> bool:
        try:
            if http_json(f"{self.management_url}/actuator/health", 1.0).get("status") != "UP":
                return False
            self._info = http_json(f"{self.management_url}/actuator/info", 1.0)
        except (OSError, ValueError):
            return False
        return True

    def check_identity(self) -> None:
        if self._info.get("pid") != self.pid:
            raise StepFailed(f"another process (pid {self._info.get('pid')}) answers on {self.management_url}, not "
                             f"webflux '{self.name}' (pid {self.pid})")

    def info(self) -> dict:
        """Versions and the event loop's size, as the service reported them on /actuator/info."""
        return {"version": self._info.get("springBootVersion"), "reactor_netty": self._info.get("reactorNetty"),
                "java": self._info.get("java"), "event_loop_threads": self._info.get("eventLoopThreads")}


KIND = WebfluxKind()
