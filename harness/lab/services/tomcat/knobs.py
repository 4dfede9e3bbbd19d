"""The sample server's knobs (the spec's `[server]`, the articles' environment variables), Spring Boot's defaults for
those the model needs, and how a step's knobs become the server's environment. No other module of the lab names them:
the spec reads them here, and step.json records every one a step ran with (`knobs`), defaults included.
"""
from __future__ import annotations

# Server env keys (the articles' names) → (type, minimum). None as minimum: any value of the type.
SERVER_KEYS: dict[str, tuple[type, int | None]] = {
    "SLEEP_MS": (int, 0),
    "WORK_CPU_MS": (float, 0),  # /work: CPU work per request, ms of one core (calibrated SHA-256 units)
    "WORK_WAIT_MS": (int, 0),  # /work: then a blocking wait, as for a database call
    "TOMCAT_MAX_THREADS": (int, 1),
    "TOMCAT_MIN_SPARE_THREADS": (int, 0),
    "TOMCAT_MAX_CONNECTIONS": (int, 1),
    "TOMCAT_ACCEPT_COUNT": (int, 1),
    "TOMCAT_CONNECTION_TIMEOUT": (int, 1),
    "TOMCAT_KEEP_ALIVE_TIMEOUT": (int, 1),
    "TOMCAT_MAX_KEEP_ALIVE_REQUESTS": (int, -1),
    "VIRTUAL_THREADS": (bool, None),
    # The pair-room API (chapter 5): Spring Data JPA on HikariCP against the step's postgres service.
    "PAIR_ROOM": (bool, None),  # on: Spring profile `pair-room` (off: no database code runs, chapters 1-4 unchanged)
    "HIKARI_MAX_POOL_SIZE": (int, 1),  # spring.datasource.hikari.maximum-pool-size (HikariCP's default 10)
    "HIKARI_CONNECTION_TIMEOUT": (int, 250),  # ms a request waits for a pool connection (HikariCP: 30000, min 250)
    "JPA_OPEN_IN_VIEW": (bool, None),  # spring.jpa.open-in-view: one connection for the whole request (Boot: on)
    "SSE_TIMEOUT_MS": (int, 1),  # how long the server keeps a room's event stream open
    "SERVER_PORT": (int, 1),
    "MANAGEMENT_PORT": (int, 1),
    "SERVER_ADDRESS": (str, None),
}
# Spring Boot's own defaults, used by the model when a step leaves a knob unset.
SERVER_DEFAULTS = {
    "SLEEP_MS": 5000,
    "TOMCAT_MAX_THREADS": 200,
    "TOMCAT_MAX_CONNECTIONS": 8192,
    "TOMCAT_ACCEPT_COUNT": 100,
    "TOMCAT_CONNECTION_TIMEOUT": 60000,  # Tomcat's HTTP/1.1 default (Boot sets none; not the article's 20000)
    "TOMCAT_MAX_KEEP_ALIVE_REQUESTS": 100,
    "SERVER_PORT": 8080,
    "MANAGEMENT_PORT": 8081,
    "SERVER_ADDRESS": "127.0.0.1",
}


def virtual(knobs: dict) -> bool:
    return bool(knobs.get("VIRTUAL_THREADS"))


def pair_room(knobs: dict) -> bool:
    return bool(knobs.get("PAIR_ROOM"))


PAIR_ROOM_PROFILE = "pair-room"  # the Spring profile that turns on the pair-room API and its database
# The JVM's heap rule, the same on every backend: at most this share of the memory the server may use (the machine's
# RAM for a local process, the container's --memory limit in docker). It is the JVM's own default, written out so
# that neither backend depends on an image's or a JDK's choice; step.json records it under `jvm_options`.
JVM_OPTIONS = ("-XX:MaxRAMPercentage=25",)


def knob(knobs: dict, name: str):
    """A server knob as the server will see it: the step's value or Spring's default."""
    return knobs.get(name, SERVER_DEFAULTS.get(name))


def settings(knobs: dict) -> dict:
    """The step's [server] settings alone (a graph entry without its `kind`)."""
    return {k: v for k, v in knobs.items() if k != "kind"}


def server_env(knobs: dict, given: dict[str, str] | None = None) -> dict[str, str]:
    """The step's server settings as environment variables (booleans as Spring writes them), what the services it
    depends on give it (`given`: the database's SPRING_DATASOURCE_*), and the JVM options (JAVA_TOOL_OPTIONS: read by
    any java launcher, local or in a container)."""
    env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings(knobs).items()}
    if pair_room(knobs):
        env["SPRING_PROFILES_ACTIVE"] = PAIR_ROOM_PROFILE
    return env | (given or {}) | {"JAVA_TOOL_OPTIONS": " ".join(JVM_OPTIONS)}
