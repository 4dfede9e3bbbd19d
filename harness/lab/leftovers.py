"""What a killed run leaves outside its data directory, removed by the next run of any kind, which says so: the
quota cgroups and the hosts' network namespaces of harnesses that are gone, the lab's containers whose harness is
gone, and the shared memory and socket folders a killed PostgreSQL left. (Half-written step directories are the data
directory's own: harness.lab.preflight.clean_leftovers.) The lab's child processes need no sweep: each dies with its
harness (PR_SET_PDEATHSIG), and nginx's workers with their master's pid namespace.
"""
from __future__ import annotations

import os

from harness import LabError, say
from harness.lab import netns, placement
from harness.lab.services import pgcluster, pgshm


def sweep() -> None:
    """Remove what killed runs left, one line for each kind of thing removed."""
    cgroups = placement.remove_leftover_cgroups() if os.geteuid() == 0 else []
    if cgroups:
        say(f"removed the CPU-quota cgroups a killed run left: {', '.join(cgroups)}")
    namespaces = netns.remove_leftovers() if os.geteuid() == 0 else []
    if namespaces:
        say(f"removed the hosts (network namespaces) a killed run left: {', '.join(namespaces)}")
    containers = _dead_runs_containers()
    if containers:
        say(f"removed the containers a killed run left: {', '.join(containers)}")
    pgshm.clean_up()
    sockets = pgcluster.remove_leftover_sockets()
    if sockets:
        say(f"removed the PostgreSQL socket folders a killed run left in {pgcluster.SOCKETS_IN}: {', '.join(sockets)}")


def _dead_runs_containers() -> list[str]:
    """The lab's containers (label concurrency-lab) whose harness (label concurrency-lab.pid) is gone, removed; only
    where a Docker daemon answers on this machine (no daemon: nothing to remove)."""
    from harness.lab.backends.docker import client

    try:
        if client.daemon_version() is None:
            return []
        found = client.docker("ps", "--all", "--filter", f"label={client.LABEL}",
                              "--format", f'{{{{.Names}}}} {{{{.Label "{client.LABEL}.pid"}}}}', check=False).stdout
    except (OSError, LabError):
        return []
    removed = []
    for line in found.splitlines():
        name, _, pid = line.partition(" ")
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            client.docker("rm", "--force", name, check=False)
            removed.append(name)
    return removed
