"""The sample server (Spring Boot on Tomcat) as a kind: the implicit service `server` of every step.

Its knobs are the `[server]` section (SERVER_KEYS, Spring's defaults in SERVER_DEFAULTS), its backend (local process
or docker container, harness.lab.backends) starts it, and the backend's `RunningServer` is its RunningService:
readiness is Actuator's health UP, identity the pid Actuator reports, metrics Actuator's Prometheus scrape
(actuator.parquet, sampled by harness.lab.samplers as before services existed).
"""
from __future__ import annotations

from harness.lab.services.base import ServiceKind
from harness.lab.services.config import SERVER  # noqa: F401 — the implicit service's name, the load's default target
from harness.lab.spec import SERVER_DEFAULTS, SERVER_KEYS


class TomcatKind(ServiceKind):
    name = "tomcat"
    knobs = SERVER_KEYS
    defaults = SERVER_DEFAULTS

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        return (knobs.get("SERVER_ADDRESS", SERVER_DEFAULTS["SERVER_ADDRESS"]),
                knobs.get("SERVER_PORT", SERVER_DEFAULTS["SERVER_PORT"]))

    def ports(self, knobs: dict) -> dict[str, int]:
        return {"server": self.endpoint(knobs)[1], "management": knobs.get("MANAGEMENT_PORT", SERVER_DEFAULTS["MANAGEMENT_PORT"])}
