"""The numbers the glossary (chapters/glossary.qmd) gives for each knob: the Spring Boot property and the environment
variable the book's sample server reads it from (its TomcatEnvironmentPostProcessor), the default the running server
reported when a step left the knob unset (step.json server_info), the machine's kernel settings as recorded, and the
client's retry schedule and timeouts the models use."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pandas as pd
from IPython.display import Markdown

from harness import SERVER_DIR, LabError
from harness.book.prose import and_list
from harness.book.tables import markdown_table
from harness.lab import store
from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS
from harness.lab.spec import FD_RESERVE, LOAD_DEFAULTS
from harness.lab.units import duration_ms
from harness.models.spike import K6_DIAL_TIMEOUT_MS, SYN_RETRY_MS

KNOBS_SOURCE = SERVER_DIR / "src/main/java/lab/TomcatEnvironmentPostProcessor.java"
READ_FROM = ("chapter1", "chapter3")  # chapters whose steps leave Tomcat's knobs at their defaults
# How the sample server's /actuator/info names each Tomcat knob (step.json server_info.tomcat).
REPORTED_AS = {"TOMCAT_MAX_THREADS": "maxThreads", "TOMCAT_MIN_SPARE_THREADS": "minSpareThreads",
               "TOMCAT_MAX_CONNECTIONS": "maxConnections", "TOMCAT_ACCEPT_COUNT": "acceptCount",
               "TOMCAT_CONNECTION_TIMEOUT": "connectionTimeout", "TOMCAT_KEEP_ALIVE_TIMEOUT": "keepAliveTimeout",
               "TOMCAT_MAX_KEEP_ALIVE_REQUESTS": "maxKeepAliveRequests"}
FALLS_BACK_TO = {"TOMCAT_KEEP_ALIVE_TIMEOUT": "TOMCAT_CONNECTION_TIMEOUT"}  # Tomcat: unset keep-alive = connection-timeout
UNITS = {"TOMCAT_CONNECTION_TIMEOUT": "ms", "TOMCAT_KEEP_ALIVE_TIMEOUT": "ms"}
# Defaults no running server reports (its /actuator/info shows Tomcat's): HikariCP's and Spring Boot's documented ones.
DOCUMENTED = {"HIKARI_MAX_POOL_SIZE": "10 (HikariCP's)", "HIKARI_CONNECTION_TIMEOUT": "30,000 ms (HikariCP's)",
              "JPA_OPEN_IN_VIEW": "on (Spring Boot's)"}


def server_env_vars(source=KNOBS_SOURCE) -> dict[str, str]:
    """Spring Boot property → the env var the sample server takes for it (its KNOBS map)."""
    return {prop: env for env, prop in re.findall(r'KNOBS\.put\("(\w+)",\s*"([\w.-]+)"\)', source.read_text())}


def most_common(values):
    """The value most steps agree on, ignoring None; None when there is none."""
    counted = Counter(v for v in values if v is not None).most_common(1)
    return counted[0][0] if counted else None


def step_metas(chapters=READ_FROM) -> list[dict]:
    """The complete steps' step.json of these chapters (a chapter whose data cannot be read adds none)."""
    metas = []
    for chapter in chapters:
        try:
            metas += store.complete_steps(chapter).values()
        except LabError:
            continue
    return metas


def reported_default(env: str, metas: list[dict]) -> int | None:
    """What the running server reported for a knob in the steps that left it (and what it falls back to) unset."""
    unset = {env, FALLS_BACK_TO.get(env, env)}
    return most_common(m.get("server_info", {}).get("tomcat", {}).get(REPORTED_AS[env]) for m in metas
                       if not unset & set(m.get("config", {}).get("server", {})))


@dataclass(frozen=True)
class Glossary:
    env: dict[str, str]  # property → env var
    defaults: dict[str, int | None]  # env var → default (SERVER_DEFAULTS, what the model uses, else reported)
    article_connection_timeout_ms: int | None  # the connection-timeout most chapter-3 steps set (the article's)
    somaxconn: int | None  # net.core.somaxconn as found on the machine, before any step raised it
    nofile: int | None  # the open-files limit the steps ran with

    def default(self, env: str, unit: str = "") -> str:
        value = self.defaults.get(env)
        return "not recorded" if value is None else f"{value:,}" + (f" {unit}" if unit else "")

    def table(self) -> Markdown:
        """Each setting the sample server reads: its default and its environment variable."""
        rows = [{"Setting": f"`{prop}`", "Default": self.setting_default(env), "Env var": f"`{env}`"}
                for prop, env in self.env.items()]
        return Markdown(markdown_table(pd.DataFrame(rows)))

    def setting_default(self, env: str) -> str:
        if env in DOCUMENTED:
            return DOCUMENTED[env]
        fallback = FALLS_BACK_TO.get(env)
        said = self.default(env, UNITS.get(env, ""))
        return f"{said} (the {fallback.removeprefix('TOMCAT_').lower().replace('_', '-')})" if fallback else said

    @staticmethod
    def retries() -> str:
        """"1, 3, 7, 15, 31 and 63 s": every SYN resend, seconds after the first SYN."""
        return and_list(f"{ms // 1000:,}" for ms in SYN_RETRY_MS) + " s"

    @staticmethod
    def resends() -> int:
        return len(SYN_RETRY_MS)

    @staticmethod
    def dial_timeout_s() -> int:
        return K6_DIAL_TIMEOUT_MS // 1000

    @staticmethod
    def request_timeout_s() -> int:
        """k6's request timeout where a step sets none (the lab's default is k6's)."""
        return duration_ms(LOAD_DEFAULTS["request_timeout"]) // 1000

    @staticmethod
    def graceful_stop_s() -> int:
        return duration_ms(LOAD_DEFAULTS["graceful_stop"]) // 1000

    @staticmethod
    def fd_reserve() -> int:
        return FD_RESERVE


def glossary() -> Glossary:
    metas = step_metas()
    machines = [m.get("machine", {}) for m in metas]
    chapter3 = [m for m in metas if m.get("chapter") == "chapter3"]
    return Glossary(
        env=server_env_vars(),
        defaults={env: SERVER_DEFAULTS.get(env, reported_default(env, metas)) for env in REPORTED_AS},
        article_connection_timeout_ms=most_common(m["config"]["server"].get("TOMCAT_CONNECTION_TIMEOUT") for m in chapter3),
        somaxconn=most_common(m.get("somaxconn_before", m.get("somaxconn")) for m in machines),
        nofile=most_common(m.get("nofile_limit") for m in machines))
