"""A step's services as a graph: the spec's `[services.<name>]` tables ([defaults] and steps, merged per name) and the
sample server → the step's resolved services, each with its kind and knobs, and what the runner needs from them:
start order, endpoints, the load target, the ports to check before anything starts. Every problem is appended to the
spec's list, so the user sees them all in one message.

The sample server is the service `server`, set by `[server]` (kind tomcat) or by a `[services.server]` table of a
kind that may take its place (a reader's own jar: spring-jar). A step runs it only when something needs it: the load
goes to it (`load.target`, the default), a service depends on it (an nginx in front of it), or the step restarts it
(kind = "redeploy"). So a step whose load goes to another service starts no sample server at all.
"""
from __future__ import annotations

import re

from harness import LabError
from harness.lab import netns
from harness.lab.services.base import SERVER
from harness.lab.services.kinds import KINDS, SAMPLE_SERVER, SERVER_KINDS

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# Names a service may not take: they are other files of a step directory (<name>.parquet, <name>.log.gz).
RESERVED = {"ss", "actuator", "process", "requests", "series", "startup", "k6", "ab", "wrk", "load", "step", "tomcat",
            "cpu", "outcomes", "latency"}


def resolve_services(base: dict, step: dict, server: dict, load: dict, where: str, problems: list[str],
                     network: str = "loopback") -> dict:
    """The step's graph: `base` (the defaults' tables, or a same_as step's services) updated per name by the step
    table's own [services.<name>], plus the sample server when the step needs it (`server`: its [server] as the
    spec sets it); kinds, knobs, dependencies, ports (none shared) and `load.target` checked. On network = "hosts"
    each service listens on the address of its own host (netns.step_hosts)."""
    table = step.get("services", {})
    redeploy = step.get("kind") == "redeploy"
    if redeploy and (base or table):
        problems.append(f"{where}: a redeploy step starts only the sample server; it takes no [services]")
        return {SERVER: {"kind": SAMPLE_SERVER, **server}}
    for tables in (base, table):
        if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
            problems.append(f"{where}: services must be tables [services.<name>] with a kind, got {tables!r}")
            return {}
    merged = {name: {**base.get(name, {}), **table.get(name, {})} for name in [*base, *(n for n in table if n not in base)]}
    services = {}
    for name, values in merged.items():
        knobs = _resolve_one(name, values, where, problems)
        if knobs is not None:
            services[name] = knobs
    if len(services) < len(merged):
        return services
    if SERVER not in services and (redeploy or _needed(services, load)):
        services[SERVER] = {"kind": SAMPLE_SERVER, **server}
    if network == "hosts":
        _place_on_hosts(services, merged, load, where, problems)
    _check_graph(services, where, problems)
    _check_ports(services, where, problems)
    _check_database(services, where, problems)
    target = load.get("target", SERVER)
    if load and target not in services:
        problems.append(f"{where}: load.target must be 'server' or one of the step's services "
                        f"({', '.join(n for n in services if n != SERVER) or 'none declared'}), got {target!r}")
    return services


def _resolve_one(name: str, values: dict, where: str, problems: list[str]) -> dict | None:
    """One declared service: its name and kind checked, its knobs typed (the kind's own checks included)."""
    if name == SERVER:
        kinds = SERVER_KINDS
    elif not NAME.match(name) or name in RESERVED:
        problems.append(f"{where}: service name {name!r} must be lower-case letters, digits and '_' and not one "
                        f"of {', '.join(sorted(RESERVED))}")
        return None
    else:
        kinds = [k for k in KINDS if k not in SERVER_KINDS]
    kind = values.get("kind")
    if kind not in kinds:
        hint = (" (the sample server is the service 'server', set by [server])" if kind in SERVER_KINDS else
                f" (the service 'server' is the sample server or your own jar: kind {' or '.join(SERVER_KINDS)})")
        problems.append(f"{where}: services.{name}.kind must be one of {', '.join(kinds)}, got {kind!r}{hint}")
        return None
    knobs = KINDS[kind].resolve(name, {k: v for k, v in values.items() if k != "kind"}, where, problems)
    return {"kind": kind, **knobs}


def _needed(services: dict, load: dict) -> bool:
    """Whether the step runs the sample server: the load goes to it, or a service depends on it."""
    return load.get("target", SERVER) == SERVER or any(SERVER in KINDS[k["kind"]].depends_on(k)
                                                       for k in services.values())


def needs(name: str, services: dict) -> list[str]:
    """What one service of the graph needs running first: its kind's dependencies and, for the sample server, every
    service it connects to at start-up (a database: kinds with `before_server`)."""
    knobs = services[name]
    found = KINDS[knobs["kind"]].depends_on(knobs)
    if name == SERVER:
        found += [n for n, k in services.items() if KINDS[k["kind"]].before_server]
    return found


def start_order(services: dict) -> list[str]:
    """Service names in an order where each comes after what it needs (`needs`)."""
    waiting = {name: needs(name, services) for name in services}
    order: list[str] = []
    while waiting:
        ready = sorted(n for n, deps in waiting.items() if all(d in order for d in deps))
        if not ready:
            raise LabError(f"services depend on each other in a cycle: {', '.join(sorted(waiting))}")
        for name in ready:
            order.append(name)
            del waiting[name]
    return order


def _place_on_hosts(services: dict, asked: dict, load: dict, where: str, problems: list[str]) -> None:
    """network = "hosts": each service on its own host, listening on that host's address; the sample server runs on
    this machine's loopback, which no host reaches, so a hosts step may not need it."""
    for name, knobs in services.items():
        if name != SERVER and SERVER in KINDS[knobs["kind"]].depends_on(knobs):
            problems.append(f"{where}: services.{name} proxies to the sample server, which stays on loopback on "
                            f"network = \"hosts\": proxy to a service of the step")
    if load and load.get("target", SERVER) == SERVER:
        problems.append(f"{where}: on network = \"hosts\" the load goes to a service of the step (load.target), not "
                        f"the sample server, which stays on loopback")
    for name, knobs in services.items():
        if name == SERVER:
            continue
        if not KINDS[knobs["kind"]].on_hosts:
            problems.append(f"{where}: services.{name}: a {knobs['kind']} service does not run on a host of its own "
                            f"(kinds that do: {', '.join(k for k, kind in KINDS.items() if kind.on_hosts)})")
        if not netns.NAME.match(name) or name.startswith(netns.CLIENT) or name == netns.SWITCH:
            problems.append(f"{where}: on network = \"hosts\" a service's name is its host's: 1-8 lower-case letters "
                            f"and digits, not '{netns.CLIENT}…' or '{netns.SWITCH}', got {name!r}")
        if "address" in asked.get(name, {}):
            problems.append(f"{where}: services.{name}.address is its host's on network = \"hosts\"; leave it out")
        knobs["address"] = netns.address_of(netns.step_hosts(hosted(services), load.get("processes", 1)), name)


def hosted(services: dict) -> list[str]:
    """The services that get a host of their own on network = "hosts" (all but the sample server), in spec order."""
    return [name for name in services if name != SERVER]


def _check_graph(services: dict, where: str, problems: list[str]) -> None:
    for name, knobs in services.items():
        for needed in KINDS[knobs["kind"]].depends_on(knobs):
            if needed not in services:
                problems.append(f"{where}: services.{name} needs '{needed}', which is neither 'server' nor a service "
                                f"of the step ({', '.join(n for n in services if n != SERVER)})")
                return
    try:
        start_order(services)
    except LabError as err:
        problems.append(f"{where}: {err}")


def _check_database(services: dict, where: str, problems: list[str]) -> None:
    """A server that connects to a database at start-up (its kind's `needs_database`) needs the one it connects to;
    a database's own checks of [server]."""
    databases = [n for n, k in services.items() if KINDS[k["kind"]].before_server]
    server = services.get(SERVER)
    why = KINDS[server["kind"]].needs_database(server) if server else ""
    if why and len(databases) != 1:
        kinds = " or ".join(name for name, kind in KINDS.items() if kind.before_server)
        problems.append(f"{where}: {why} needs exactly one service of kind {kinds} (the database it connects to), "
                        f"the step has {len(databases)}"
                        + (f" ({', '.join(databases)})" if databases else ""))
    elif len(databases) > 1:
        problems.append(f"{where}: at most one database per step (the server gets one SPRING_DATASOURCE_URL), "
                        f"got {', '.join(databases)}")
    if server:
        for name in databases:
            KINDS[services[name]["kind"]].check_server(name, services[name], server, where, problems)


def _check_ports(services: dict, where: str, problems: list[str]) -> None:
    """No two services (nor two ports of one) on the same port; the sample server's named as [server] sets them."""
    seen: dict[int, str] = {}
    for name in sorted(services, key=lambda n: n != SERVER):  # the sample server first: a clash is the service's
        knobs = services[name]
        for what, port in KINDS[knobs["kind"]].ports(knobs).items():
            setting = KINDS[knobs["kind"]].setting(name, what)
            if port in seen:
                problems.append(f"{where}: {setting} {port} is also {seen[port]}")
            seen[port] = setting


def endpoints(services: dict) -> dict[str, tuple[str, int]]:
    """Where each service of a graph answers: (address, port)."""
    return {name: KINDS[k["kind"]].endpoint(k) for name, k in services.items()}


def target_model(services: dict, load: dict) -> dict | None:
    """What a model needs to know of the load's target (its kind's `model_server`), or None."""
    name = load.get("target", SERVER)
    return KINDS[services[name]["kind"]].model_server(services[name]) if name in services else None


def target(step) -> str:
    """The service the load goes to (`load.target`, the sample server by default)."""
    return (step.load or {}).get("target", SERVER)



def recorded(config: dict) -> dict:
    """A step's graph as step.json's `config` records it: its services, and the sample server (its knobs are
    `config.server`) when the step ran it; steps recorded before services existed ran it always."""
    services = {name: dict(knobs) for name, knobs in config.get("services", {}).items()}
    if SERVER not in services and "server" in config and (config.get("kind") == "redeploy" or
                                                          _needed(services, config.get("load", {}))):
        services[SERVER] = {"kind": SAMPLE_SERVER, **config["server"]}
    return services
