"""The machine's limits a step is checked against before anything starts: open files for the load tool's and the
server's sockets, the kernel's somaxconn for an accept-count, the cores a container or a placement may use, docker's
smallest memory. `machine_limits()` reads this machine's; a spec checked against other limits (the book reads specs
with any machine's) is given them."""
from __future__ import annotations

from harness.lab import system
from harness.lab.load.options import peak_vus
from harness.lab.placement import check_placement
from harness.lab.services.kinds import KINDS
from harness.lab.units import memory_bytes

FD_RESERVE = 200  # file descriptors a process needs besides its sockets (jars, logs, epoll, pipes)
MIN_CONTAINER_MEMORY = 6 * 2**20  # docker refuses less


def machine_limits() -> dict:
    return {
        "nofile": system.nofile_limit(),
        "somaxconn": system.somaxconn(),
        "can_raise_somaxconn": system.can_raise_somaxconn(),
        "cores": system.cores(),
    }


def check_limits(step, limits: dict, where: str, problems: list[str]) -> None:
    check_container(step.container, limits, where, problems)
    check_placement(step, limits, where, problems)
    if step.kind != "load":
        return
    usable = limits["nofile"] - FD_RESERVE
    vus = peak_vus(step.load)
    processes = step.load.get("processes", 1)
    if -(-vus // processes) > usable:  # each k6 process of the test holds its share of the users' sockets
        problems.append(
            f"{where}: {vus} VUs need {-(-vus // processes)} sockets in each of {processes} k6 process(es), but the "
            f"open-files limit is {limits['nofile']} (usable ≈ {usable}); lower load.vus or raise load.processes"
        )
    for name, knobs in step.services.items():
        bound = KINDS[knobs["kind"]].connections_held(knobs)
        if bound is not None and min(vus, bound) > usable and not step.system["allow_fd_exhaustion"]:
            problems.append(
                f"{where}: the {name} would hold up to {min(vus, bound)} connections but its open-files limit is "
                f"{limits['nofile']}; lower the load or set system.allow_fd_exhaustion = true to probe that limit"
            )
    for _name, backlog, setting in backlogs(step):
        if backlog <= limits["somaxconn"]:
            continue
        if not step.system["raise_somaxconn"]:
            problems.append(
                f"{where}: {setting} {backlog} exceeds net.core.somaxconn {limits['somaxconn']}, "
                "which would silently cap the backlog; set system.raise_somaxconn = true or lower it"
            )
        elif not limits["can_raise_somaxconn"]:
            problems.append(
                f"{where}: {setting} {backlog} needs net.core.somaxconn ≥ {backlog} (now "
                f"{limits['somaxconn']}) and this user cannot write /proc/sys/net/core/somaxconn (run as root)"
            )


def backlogs(step) -> list[tuple[str, int, str]]:
    """(service, the accept backlog it asks of the kernel, the setting that asks it) for each of the step's services
    that asks one: what net.core.somaxconn must reach (each kind says, harness.lab.services)."""
    asked = [(name, KINDS[knobs["kind"]].listen_backlog(name, knobs)) for name, knobs in step.services.items()]
    return [(name, *found) for name, found in asked if found is not None]


def check_container(container: dict, limits: dict, where: str, problems: list[str]) -> None:
    cpus = container.get("cpus")
    if cpus is not None and not 0 < cpus <= limits["cores"]:
        problems.append(f"{where}: container.cpus must be > 0 and ≤ this machine's {limits['cores']} cores, got {cpus}")
    if "memory" in container:
        try:
            size = memory_bytes(container["memory"])
        except ValueError as err:
            problems.append(f"{where}: container.memory: {err}")
        else:
            if size < MIN_CONTAINER_MEMORY:
                problems.append(f"{where}: container.memory must be at least 6m (docker's minimum), got {container['memory']!r}")
    nofile = container.get("nofile")
    if nofile is not None and nofile > limits["nofile"]:
        problems.append(f"{where}: container.nofile {nofile} exceeds this machine's hard open-files limit "
                        f"{limits['nofile']} (docker cannot raise it); lower it")
