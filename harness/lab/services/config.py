"""`[services.<name>]` tables of a spec ([defaults] and steps, merged per name) → a step's resolved services, and what
the runner needs from them: start order, endpoints, the load target, the tools and ports to check before anything
starts. Every problem is appended to the spec's list, so the user sees them all in one message.
"""
from __future__ import annotations

import re

from harness import LabError
from harness.lab import netns
from harness.lab.services.base import ServiceKind
from harness.lab.services.netty import NettyKind
from harness.lab.services.nginx import NginxKind
from harness.lab.services.postgres import PostgresKind
from harness.lab.services.webflux import WebfluxKind

KINDS: dict[str, ServiceKind] = {"nginx": NginxKind(), "postgres": PostgresKind(), "netty": NettyKind(),
                                  "webflux": WebfluxKind()}  # what `kind = "…"` may name
SERVER = "server"  # the implicit service (the sample server, kind tomcat, set by [server]): the load's default target
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# Names a service may not take: they are other files of a step directory (<name>.parquet, <name>.log.gz).
RESERVED = {SERVER, "ss", "actuator", "process", "requests", "series", "startup", "k6", "ab", "wrk", "load", "step", "tomcat"}


def resolve_services(base: dict, step: dict, server: dict, load: dict, where: str, problems: list[str],
                     network: str = "loopback") -> dict:
    """The step's services: `base` (the defaults' tables, or a same_as step's services) updated per name by the
    step table's own [services.<name>]; kinds, knobs, dependencies, ports (none shared, none of the sample server's:
    `server` is its resolved [server]) and `load.target` checked. A redeploy step takes none. On network = "hosts"
    each service listens on the address of its own host (netns.step_hosts)."""
    table = step.get("services", {})
    if step.get("kind") == "redeploy":
        if base or table:
            problems.append(f"{where}: a redeploy step starts only the sample server; it takes no [services]")
        return {}
    for tables in (base, table):
        if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
            problems.append(f"{where}: services must be tables [services.<name>] with a kind, got {tables!r}")
            return {}
    merged = {name: {**base.get(name, {}), **table.get(name, {})} for name in [*base, *(n for n in table if n not in base)]}
    services = {}
    for name, values in merged.items():
        if not NAME.match(name) or name in RESERVED:
            problems.append(f"{where}: service name {name!r} must be lower-case letters, digits and '_' and not one "
                            f"of {', '.join(sorted(RESERVED))} (the sample server is the implicit service 'server')")
            continue
        kind = values.get("kind")
        if kind not in KINDS:
            hint = " (the sample server is the implicit service 'server', set by [server])" if kind == "tomcat" else ""
            problems.append(f"{where}: services.{name}.kind must be one of {', '.join(KINDS)}, got {kind!r}{hint}")
            continue
        knobs = KINDS[kind].resolve(name, {k: v for k, v in values.items() if k != "kind"}, where, problems)
        services[name] = {"kind": kind, **knobs}
    if network == "hosts" and len(services) == len(merged):
        _place_on_hosts(services, merged, load, where, problems)
    if len(services) == len(merged):
        _check_graph(services, where, problems)
        _check_ports(services, {"server": server["SERVER_PORT"], "management": server["MANAGEMENT_PORT"]}, where, problems)
        _check_database(services, server, where, problems)
    target = load.get("target", SERVER)
    if load and target != SERVER and target not in services:
        problems.append(f"{where}: load.target must be 'server' or one of the step's services "
                        f"({', '.join(services) or 'none declared'}), got {target!r}")
    return services


def _place_on_hosts(services: dict, asked: dict, load: dict, where: str, problems: list[str]) -> None:
    """network = "hosts": each service on its own host, listening on that host's address; the sample server stays on
    this machine's loopback, which no host reaches, so neither the load nor a proxy may go to it."""
    for name, knobs in services.items():
        if not KINDS[knobs["kind"]].on_hosts:
            problems.append(f"{where}: services.{name}: a {knobs['kind']} service does not run on a host of its own "
                            f"(kinds that do: {', '.join(k for k, kind in KINDS.items() if kind.on_hosts)})")
        if not netns.NAME.match(name) or name.startswith(netns.CLIENT) or name == netns.SWITCH:
            problems.append(f"{where}: on network = \"hosts\" a service's name is its host's: 1-8 lower-case letters "
                            f"and digits, not '{netns.CLIENT}…' or '{netns.SWITCH}', got {name!r}")
        if "address" in asked[name]:
            problems.append(f"{where}: services.{name}.address is its host's on network = \"hosts\"; leave it out")
        knobs["address"] = netns.address_of(netns.step_hosts(services, load.get("processes", 1)), name)
        if knobs.get("upstream") == SERVER:
            problems.append(f"{where}: services.{name} proxies to the sample server, which stays on loopback on "
                            f"network = \"hosts\": proxy to a service of the step")
    if load and load.get("target", SERVER) == SERVER:
        problems.append(f"{where}: on network = \"hosts\" the load goes to a service of the step (load.target), not "
                        f"the sample server, which stays on loopback")


def _check_graph(services: dict, where: str, problems: list[str]) -> None:
    for name, knobs in services.items():
        for needed in KINDS[knobs["kind"]].depends_on(knobs):
            if needed != SERVER and needed not in services:
                problems.append(f"{where}: services.{name} needs '{needed}', which is neither 'server' nor a service "
                                f"of the step ({', '.join(services)})")
                return
    try:
        start_order(services)
    except LabError as err:
        problems.append(f"{where}: {err}")


def _check_database(services: dict, server: dict, where: str, problems: list[str]) -> None:
    """PAIR_ROOM needs the one database it connects to; a before_server service's own checks of [server]."""
    databases = [n for n, k in services.items() if k["kind"] == "postgres"]
    if server.get("PAIR_ROOM") and len(databases) != 1:
        problems.append(f"{where}: PAIR_ROOM = true needs exactly one service of kind postgres (the database the "
                        f"pair-room API connects to), the step has {len(databases)}"
                        + (f" ({', '.join(databases)})" if databases else ""))
    elif len(databases) > 1:
        problems.append(f"{where}: at most one postgres service per step (the server gets one SPRING_DATASOURCE_URL), "
                        f"got {', '.join(databases)}")
    for name, knobs in services.items():
        KINDS[knobs["kind"]].check_server(name, knobs, server, where, problems)


def start_order(services: dict) -> list[str]:
    """Service names in an order where each comes after what it depends on: the `before_server` services (a database
    the server connects to at start-up), then the server, then the others (which may depend on the server)."""
    first = [n for n, k in services.items() if KINDS[k["kind"]].before_server]
    needs = {SERVER: first} | {n: KINDS[k["kind"]].depends_on(k) + ([] if n in first else [SERVER])
                               for n, k in services.items()}
    order: list[str] = []
    while needs:
        ready = [n for n, deps in needs.items() if all(d in order for d in deps)]
        if not ready:
            raise LabError(f"services depend on each other in a cycle: {', '.join(sorted(needs))}"
                           + (f" ({', '.join(first)}: started before the server, so cannot need it)" if first else ""))
        for name in sorted(ready):
            order.append(name)
            del needs[name]
    return order


def _check_ports(services: dict, server_ports: dict, where: str, problems: list[str]) -> None:
    seen = {port: f"server's {what}" for what, port in server_ports.items()}
    for name, knobs in services.items():
        for what, port in KINDS[knobs["kind"]].ports(knobs).items():
            if port in seen:
                problems.append(f"{where}: services.{name}.{what} {port} is also the {seen[port]} port")
            seen[port] = f"{name}'s {what}"
