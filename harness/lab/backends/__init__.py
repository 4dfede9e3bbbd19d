"""Where a step's services run: `local` (each a child process of the harness) or `docker` (the kinds that can run in
a container do: the sample server and postgres; the others run locally beside them, on the same host network). The
process mechanics every kind shares are in harness.lab.backends.process, a container's in backends.docker.container.
"""
from __future__ import annotations

from harness import LabError

BACKENDS = ("local", "docker")


def check(name: str) -> None:
    """A known backend, and for docker a daemon that answers on this machine (before anything starts)."""
    if name not in BACKENDS:
        raise LabError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)}")
    if name == "docker":
        from harness.lab.backends.docker.client import check_daemon  # imported when asked for: it needs the client

        check_daemon()
