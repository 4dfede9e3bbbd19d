"""Where a step's server runs: `backend(name)` gives the local backend (harness.lab.backends.local) or the docker
one (harness.lab.backends.docker); what both share is in harness.lab.backends.base."""
from __future__ import annotations

from harness import LabError


def _local_backend():
    # imported when asked for, like docker's: the package's init then imports nothing that imports it back
    # (backends.base → services.base → backends.process)
    from harness.lab.backends.local import LocalProcessBackend

    return LocalProcessBackend()


def _docker_backend():
    from harness.lab.backends.docker.backend import DockerBackend  # imported when asked for: it needs the docker client

    return DockerBackend()


BACKENDS = {"local": _local_backend, "docker": _docker_backend}


def backend(name: str):
    if name not in BACKENDS:
        raise LabError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)}")
    return BACKENDS[name]()
