"""Your own Spring Boot application as the service `server`: kind `spring-jar`, any executable Spring Boot jar.

`invoke run chapter3 --server path/to/app.jar` (or a spec's `[services.server] kind = "spring-jar"`, `path = …`) runs
a chapter's load against it instead of the sample server. The step's `[server]` knobs that Spring Boot itself
understands become its standard properties on the command line (TOMCAT_MAX_THREADS → server.tomcat.threads.max …:
PROPERTIES), so the chapter's Tomcat settings apply to your app as they do to the sample server; the sample server's
own knobs (SLEEP_MS, WORK_*, PAIR_ROOM …) are given as environment variables only, which another app ignores
(step.json lists them).
It listens where the step says (`port`, `management_port`), is ready when its health URL answers 2xx, and is ours when
the process listening on its port is the one started. With Actuator and Micrometer's Prometheus registry on its
classpath, its metrics are sampled into actuator.parquet as the sample server's are; without, the run says what to
add and goes on with the client's and the kernel's view only.
"""
from __future__ import annotations

import urllib.error
import zipfile
from pathlib import Path

from harness import ROOT, say
from harness.lab.backends.process import check_servers_reach, http_get, http_json, listener
from harness.lab.integrity import sha256
from harness.lab.jdk import java_command, java_major, virtual_threads_java
from harness.lab.samplers import ActuatorSampler
from harness.lab.store import home_expanded
from harness.lab.services.base import (Context, RunningService, ServiceKind, StepFailed, check_listening,
                                       check_local_jvm, latest, spawn_java)

# The [server] knobs Spring Boot understands, as its own properties (what the sample server maps them to as well).
PROPERTIES = {
    "TOMCAT_MAX_THREADS": "server.tomcat.threads.max",
    "TOMCAT_MIN_SPARE_THREADS": "server.tomcat.threads.min-spare",
    "TOMCAT_MAX_CONNECTIONS": "server.tomcat.max-connections",
    "TOMCAT_ACCEPT_COUNT": "server.tomcat.accept-count",
    "TOMCAT_CONNECTION_TIMEOUT": "server.tomcat.connection-timeout",  # ms: Spring reads a bare number as ms
    "TOMCAT_KEEP_ALIVE_TIMEOUT": "server.tomcat.keep-alive-timeout",
    "TOMCAT_MAX_KEEP_ALIVE_REQUESTS": "server.tomcat.max-keep-alive-requests",
    "VIRTUAL_THREADS": "spring.threads.virtual.enabled",
    "HIKARI_MAX_POOL_SIZE": "spring.datasource.hikari.maximum-pool-size",
    "HIKARI_CONNECTION_TIMEOUT": "spring.datasource.hikari.connection-timeout",
    "JPA_OPEN_IN_VIEW": "spring.jpa.open-in-view",
}
PLACES = ("SERVER_PORT", "MANAGEMENT_PORT", "SERVER_ADDRESS")  # where it listens: the kind's port knobs instead
HEALTH_ON = ("management", "server")
METRICS_PATH = "/actuator/prometheus"
METRICS_HINT = ("add spring-boot-starter-actuator and micrometer-registry-prometheus to the app for its Tomcat and "
                "JVM metrics")
CONFIGPROPS_PATH = "/actuator/configprops/server"  # the beans bound under `server.` (ServerProperties), values shown
# Where ServerProperties keeps each [server] knob the profile sizes by (configprops names them camelCase in Spring
# Boot 2 and 3; lower-cased and without dashes, both spellings match).
CONFIGPROPS_KNOBS = {"TOMCAT_MAX_THREADS": ("tomcat", "threads", "max"),
                     "TOMCAT_MAX_CONNECTIONS": ("tomcat", "maxconnections"),
                     "TOMCAT_ACCEPT_COUNT": ("tomcat", "acceptcount")}


def spring_boot_manifest(path: Path) -> dict[str, str] | None:
    """The jar's manifest when it is an executable Spring Boot jar (it names a Start-Class), else None."""
    try:
        with zipfile.ZipFile(path) as jar:
            text = jar.read("META-INF/MANIFEST.MF").decode(errors="replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    manifest = dict(line.split(": ", 1) for line in text.replace("\r\n ", "").splitlines() if ": " in line)
    return manifest if "Start-Class" in manifest else None


def embeds_tomcat(path: Path) -> bool:
    """Whether the jar carries Tomcat as its web server (tomcat-embed-core among its libraries): ServerProperties
    holds Tomcat's settings, defaults included, in an app on Netty or Jetty too, where they limit nothing."""
    try:
        with zipfile.ZipFile(path) as jar:
            return any(Path(name).name.startswith("tomcat-embed-core") for name in jar.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def jar_path(knobs: dict) -> Path:
    """The jar, ~ expanded, relative to the clone (a ~ of no user stays as it is: the check names it missing)."""
    return ROOT / home_expanded(Path(knobs["path"]))


def properties(server: dict, knobs: dict) -> list[str]:
    """The command-line properties for a step: where it listens (the kind's knobs), the step's Tomcat settings, and
    Actuator's health, info, prometheus and configprops endpoints exposed on the management port (ignored by an app
    without it), with Tomcat's MBeans registered: Micrometer reads Tomcat's threads and connections from them, and
    Spring Boot registers none unless told (the sample server sets it in its application.properties). configprops
    shows its values (Spring Boot 3 masks them unless told): the app's own accept-count is in no metric. The
    management port listens on the step's address, always a loopback one (check_listening)."""
    args = {"server.port": knobs["port"], "management.server.port": knobs["management_port"],
            "server.address": knobs["address"], "management.server.address": knobs["address"],
            "management.endpoints.web.exposure.include": "health,info,prometheus,configprops",
            "management.endpoint.configprops.show-values": "always",
            "server.tomcat.mbeanregistry.enabled": "true"}
    args |= {PROPERTIES[k]: str(v).lower() if isinstance(v, bool) else v for k, v in server.items() if k in PROPERTIES}
    return [f"--{name}={value}" for name, value in args.items()]


def tomcat_settings(configprops: dict) -> dict[str, int]:
    """The app's effective Tomcat settings (as [server] knobs) from Actuator's configprops for the `server` prefix:
    its own configuration with the command line's on top, Spring Boot's defaults where neither sets one. Empty when
    the answer holds no ServerProperties or its values are masked."""
    found: dict[str, int] = {}
    contexts = configprops.get("contexts") if isinstance(configprops, dict) else None
    for context in (contexts if isinstance(contexts, dict) else {}).values():
        beans = context.get("beans") if isinstance(context, dict) else None
        for bean in (beans if isinstance(beans, dict) else {}).values():
            if not isinstance(bean, dict) or bean.get("prefix") != "server":
                continue
            for knob, path in CONFIGPROPS_KNOBS.items():
                value = _walk(bean.get("properties"), path)
                if isinstance(value, int) and not isinstance(value, bool):
                    found[knob] = value
    return found


def _walk(value, path: tuple[str, ...]):
    for name in path:
        if not isinstance(value, dict):
            return None
        value = {k.replace("-", "").lower(): v for k, v in value.items()}.get(name)
    return value


def read_tomcat_settings(management_url: str) -> dict:
    """tomcat_settings from the running app, or why they could not be read ({"unread": …})."""
    url = management_url + CONFIGPROPS_PATH
    try:
        settings = tomcat_settings(http_json(url))
    except (OSError, urllib.error.HTTPError, ValueError) as err:
        return {"unread": f"{url} does not answer ({type(err).__name__}): no Actuator, or configprops not exposed"}
    return settings or {"unread": f"{url} holds no Tomcat settings (masked values, or not a Tomcat server)"}


class SpringJarKind(ServiceKind):
    name = "spring-jar"
    title = "your Spring Boot app"
    serves_as_server = True
    runs_java = True
    ready_timeout_s = 90
    knobs = {
        "path": (str, None),  # the executable jar (relative: to the repository)
        "address": (str, None),
        "port": (int, 1),
        "management_port": (int, 1),
        "health": (str, None),  # the path that answers 2xx when the app is ready
        "health_on": (str, None),  # which port answers it: management (Actuator's) or server (the app's own)
    }
    defaults = {"path": "", "address": "127.0.0.1", "port": 8080, "management_port": 8081,
                "health": "/actuator/health", "health_on": "management"}

    def check(self, service: str, k: dict, where: str, problems: list[str]) -> None:
        at = f"{where}: services.{service}"
        check_listening(k, ("port", "management_port"), at, problems)
        if k["health_on"] not in HEALTH_ON:
            problems.append(f"{at}.health_on must be one of {', '.join(HEALTH_ON)}, got {k['health_on']!r}")
        if not k["health"].startswith("/"):
            problems.append(f"{at}.health must be a path starting with '/', got {k['health']!r}")
        if not k["path"]:
            problems.append(f"{at}.path must name your Spring Boot jar")
        elif len(k["path"]) > 4096 or any(len(part) > 255 for part in Path(k["path"]).parts):  # PATH_MAX, NAME_MAX
            problems.append(f"{at}.path {k['path'][:60]}…: too long a name for a file")
        elif not jar_path(k).is_file():
            problems.append(f"{at}.path {k['path']}: " + ("a folder, not a jar" if jar_path(k).is_dir() else "no such file"))
        elif spring_boot_manifest(jar_path(k)) is None:
            problems.append(f"{at}.path {k['path']} is not an executable Spring Boot jar (its manifest names no "
                            f"Start-Class: build it with spring-boot-maven-plugin's repackage or bootJar)")

    def inputs(self, knobs: dict) -> dict[str, str]:
        path = jar_path(knobs)
        return {"jar": sha256(path) if path.is_file() else "missing"}

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        return knobs["address"], knobs["port"]

    def ports(self, knobs: dict) -> dict[str, int]:
        return {"server": knobs["port"], "management": knobs["management_port"]}

    def check_tools(self, backend: str) -> None:
        check_local_jvm()

    def check_steps(self, steps, backend: str) -> None:
        if any(s.server.get("VIRTUAL_THREADS") for s in steps):
            check_local_jvm(virtual_threads_java()[0])  # a clear error now when there is no Java 21+ it can run
        jars = {jar_path(knobs) for s in steps for knobs in s.services.values() if knobs["kind"] == self.name}
        check_servers_reach(sorted(jars))  # yours may lie where the servers' users cannot read it

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningJar:
        java = virtual_threads_java()[0] if ctx.step.server.get("VIRTUAL_THREADS") else java_command()
        env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in ctx.step.server.items()} | ctx.given
        cmd = [java, "-jar", str(jar_path(knobs)), *properties(ctx.step.server, knobs)]
        proc, log, started = spawn_java(service, cmd, env, ctx)
        return RunningJar(service, proc, log, started, knobs, ctx.step.server, java)

    def sampler(self, running: RunningJar, interval_ms: int):
        """Actuator's Prometheus scrape when the app has it; else none, and the run says what to add."""
        try:
            with http_get(running.management_url + METRICS_PATH, timeout=2):
                return ActuatorSampler(interval_ms, running.management_url, running.port)
        except (OSError, urllib.error.HTTPError):
            running.metrics = f"none: {running.management_url}{METRICS_PATH} does not answer ({METRICS_HINT})"
            say(f"    note: your app's metrics are not sampled: {running.metrics}")
            return None

    def table(self, service: str) -> str:
        return "actuator"

    served_metric = "tomcat.global.request.count"

    def live(self, rows: list[dict]) -> str:
        busy = latest(rows, "tomcat.threads.busy")
        return "" if busy is None else f"busy threads {int(busy)}"


class RunningJar(RunningService):
    kind = "spring-jar"

    def __init__(self, name, proc, log, started, knobs: dict, server: dict, java: str):
        super().__init__(name, proc, log, started, f"http://{knobs['address']}:{knobs['port']}")
        self.knobs, self.server, self.java, self.port = knobs, server, java, knobs["port"]
        self.management_url = f"http://{knobs['address']}:{knobs['management_port']}"
        health_port = knobs["management_port"] if knobs["health_on"] == "management" else knobs["port"]
        self.health_url = f"http://{knobs['address']}:{health_port}{knobs['health']}"
        self.metrics = f"sampled from {self.management_url}{METRICS_PATH}"

    def ready(self) -> bool:
        try:
            with http_get(self.health_url, timeout=1.0) as reply:
                return 200 <= reply.status < 300
        except (OSError, urllib.error.HTTPError):
            return False

    def not_ready_hint(self) -> str:
        return (f"nothing answered {self.health_url} with 2xx: without Actuator, set services.server.health to a path "
                f"your app answers and health_on = \"server\"")

    def check_identity(self) -> None:
        found = listener(self.port)
        if found and found[1] != self.pid:
            raise StepFailed(f"another process ({found[0]}, pid {found[1]}) listens on {self.url}, not your app "
                             f"(pid {self.pid})")

    def info(self) -> dict:
        path = jar_path(self.knobs)
        manifest = spring_boot_manifest(path) or {}
        return {"jar": str(path), "jar_sha256": sha256(path),
                "start_class": manifest.get("Start-Class"), "spring_boot": manifest.get("Spring-Boot-Version"),
                "java_major": java_major(self.java), "metrics": self.metrics,
                "applied": {k: v for k, v in self.server.items() if k in PROPERTIES},
                "tomcat": read_tomcat_settings(self.management_url) if embeds_tomcat(path)  # what the app ran with
                else {"unread": "the app does not run on Tomcat (no tomcat-embed-core among its libraries)"},
                # the sample server's own knobs: given as environment variables only, which another app ignores
                "environment_only": sorted(k for k in self.server if k not in PROPERTIES and k not in PLACES)}

    def versions(self, info: dict) -> dict:
        return {"java": str(info.get("java_major")), "spring_boot": info.get("spring_boot")}


KIND = SpringJarKind()
