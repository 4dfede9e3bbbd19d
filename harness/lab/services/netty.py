"""The Netty REST service as a kind (chapter 6's upstream): `netty-server/`, a JAX-RS `GET /hello` on RESTEasy's
Netty 4 server, the stack of seed 003's netty-rest-simple, built by `invoke setup` into netty-server/target/.

It runs as a local child process (`java -jar`, spawn/terminate/PDEATHSIG as for the sample server, under the step's
`[placement]` for its name). Its knobs become NETTY_* environment variables. Readiness: its management port's
`/health` answers UP (with the pid, versions and thread counts); identity: the pid /health reports is the pid
started; metrics: `/metrics` (requests, connections
the service port opened and closed, as Netty saw them) sampled into <name>.parquet. The management port is apart from
the service port so that the lab's probes never count among the connections a chapter measures.
"""
from __future__ import annotations


from harness import ROOT
from harness.lab.backends.process import http_json
from harness.lab.samplers import Sampler
from harness.lab.services.base import Context, JarServiceKind, RunningService, StepFailed, latest

ENV = {"address": "NETTY_ADDRESS", "port": "NETTY_PORT", "management_port": "NETTY_MANAGEMENT_PORT",
       "io_threads": "NETTY_IO_THREADS", "executor_threads": "NETTY_EXECUTOR_THREADS", "backlog": "NETTY_BACKLOG"}
COUNTERS = ("requests", "connections_opened", "connections_closed")


def service_env(knobs: dict) -> dict[str, str]:
    """NETTY_* for the service; a thread count of 0 is left unset, so RESTEasy's own default applies."""
    return {var: str(knobs[knob]) for knob, var in ENV.items() if knobs[knob] != 0}


class NettyKind(JarServiceKind):
    name = "netty"
    project, title = ROOT / "netty-server", "RESTEasy (Netty)"
    knobs = {
        "address": (str, None),
        "port": (int, 1),
        "management_port": (int, 1),  # /health and /metrics, apart from the measured port
        "io_threads": (int, 0),  # Netty event loops; 0: RESTEasy's default, two per CPU the JVM sees
        "executor_threads": (int, 0),  # the pool that runs resource methods; 0: RESTEasy's default, 16
        "backlog": (int, 1),  # SO_BACKLOG of the listening socket (capped by net.core.somaxconn)
    }
    defaults = {"address": "127.0.0.1", "port": 8280, "management_port": 8281, "io_threads": 0, "executor_threads": 0,
                "backlog": 128}

    def listen_backlog(self, service: str, knobs: dict) -> tuple[int, str]:
        return knobs["backlog"], f"services.{service}.backlog"

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningNetty:
        return RunningNetty(service, *self.spawn_jar(service, service_env(knobs), ctx), knobs)

    def sampler(self, running: RunningNetty, interval_ms: int):
        return NettySampler(interval_ms, running.management_url)

    served_metric = "netty.requests"

    def live(self, rows: list[dict]) -> str:
        opened = latest(rows, "netty.connections_open")
        return "" if opened is None else f"connections open {int(opened)}"


class RunningNetty(RunningService):
    kind = "netty"

    def __init__(self, name, proc, log, started, knobs):
        super().__init__(name, proc, log, started, f"http://{knobs['address']}:{knobs['port']}")
        self.management_url = f"http://{knobs['address']}:{knobs['management_port']}"
        self._health: dict = {}

    def ready(self) -> bool:
        try:
            self._health = http_json(f"{self.management_url}/health", 1.0)
        except (OSError, ValueError):
            return False
        return self._health.get("status") == "UP"

    def check_identity(self) -> None:
        if self._health.get("pid") != self.pid:
            raise StepFailed(f"another process (pid {self._health.get('pid')}) answers on {self.management_url}, not "
                             f"netty '{self.name}' (pid {self.pid})")

    def info(self) -> dict:
        """Versions and thread counts as the service reported them on /health."""
        health = self._health
        return {"version": health.get("resteasy"), "netty": health.get("netty"), "java": health.get("java"),
                "io_threads": health.get("io_threads"), "executor_threads": health.get("executor_threads")}


class NettySampler(Sampler):
    """The service's /metrics, one row per counter per tick (long format), plus the connections open (opened − closed)."""

    name_ = "netty"

    def __init__(self, interval_ms: int, management_url: str):
        super().__init__(interval_ms)
        self.url = f"{management_url}/metrics"

    def take(self, ts_ms: int) -> list[dict]:
        return metric_rows(ts_ms, http_json(self.url, max(self.interval_s * 2, 1.0)))


def metric_rows(ts_ms: int, metrics: dict) -> list[dict]:
    values = {f"netty.{c}": float(metrics[c]) for c in COUNTERS}
    values["netty.connections_open"] = values["netty.connections_opened"] - values["netty.connections_closed"]
    return [{"ts_ms": ts_ms, "metric": m, "value": v} for m, v in values.items()]


KIND = NettyKind()
