"""The postgres kind on the docker backend: the step's PostgreSQL in a container of the image `invoke image` builds
(POSTGRES_TAG: the same pinned binaries as a local step, on the lab's base image).

The cached cluster and its template are made, and the step's clone taken, by a local postgres as on the local
backend (preparation, not measured); the step's own postgres then runs in the container on that cluster's data
directory and its socket folder, mounted at the same paths (the cluster's credentials beside them are not), and run as
the data's owner (`nobody` when the harness is root: PostgreSQL refuses root), with the same pg_hba.conf (pgauth) and
an /etc/passwd that names its users (users_file). The container shares the host's network (the server reaches
127.0.0.1:<port>, as locally) and its pid namespace, so postmaster.pid names a pid the harness sees: the identity
check, the process-tree sampler and /proc work as for a local postgres.
The step's `[placement]` for the service becomes the container's CPU set and quota. Its output goes to <name>.log
through `docker logs --follow`.
"""
from __future__ import annotations

import os
import platform
import pwd
import time
from pathlib import Path

from harness import LabError
from harness.lab.backends.docker import container as containers
from harness.lab.backends.docker import image as images
from harness.lab.backends.docker.client import LABEL, check_daemon, docker, docker_env, image_labels
from harness.lab.backends.process import process_running, spawn, terminate
from harness.lab.services import pgauth, pgbinaries

POSTGRES_TAG = f"concurrency-lab/postgres:{pgbinaries.PG_VERSION}"  # built by `invoke image` (build_image)
POSTGRES_LABEL = f"{LABEL}.postgres-binaries"  # the image remembers which binaries it holds (their jar's sha256)
POSTGRES_DOCKERFILE = Path(__file__).with_name("postgres.Dockerfile")


def binaries_digest() -> str:
    return pgbinaries.ARTIFACTS[platform.machine()][2]


def build_image(base: str) -> str:
    """The postgres kind's image: the binaries `invoke setup` unpacked, on the lab's base image."""
    home = pgbinaries.home()
    if not (home / "bin" / "postgres").exists():
        raise LabError(f"the PostgreSQL binaries are missing from {home}: run `invoke setup` first")
    return images.build([POSTGRES_TAG], home, base, {POSTGRES_LABEL: binaries_digest()}, POSTGRES_DOCKERFILE)


def check_image() -> None:
    """Before anything starts: a daemon, and the image holding the binaries this checkout pins."""
    check_daemon()
    labels = image_labels(POSTGRES_TAG)
    rebuild = "run `invoke image` (`invoke image --base debootstrap` where no registry is reachable)"
    if labels is None:
        raise LabError(f"the PostgreSQL image {POSTGRES_TAG} is missing: {rebuild}")
    if labels.get(POSTGRES_LABEL) != binaries_digest():
        raise LabError(f"the PostgreSQL image {POSTGRES_TAG} holds other binaries than `invoke setup` pins: {rebuild}")


def options(data: Path, sockets: Path) -> list[str]:
    """postgres's own `docker run` options: the host's pids (postmaster.pid names a pid the harness sees), its data
    directory and socket folder mounted where they are (the harness connects to the socket by its host path), run as
    the data's owner, with the users it must know by name (users_file)."""
    owner = os.stat(data)
    return ["--pid", "host", "--user", f"{owner.st_uid}:{owner.st_gid}", "--volume", f"{data}:{data}",
            "--volume", f"{sockets}:{sockets}", "--volume", f"{data.parent / USERS_FILE}:/etc/passwd:ro"]


USERS_FILE = "container-passwd"  # beside the cluster's data, in the harness's folder; the container's /etc/passwd


def users_file(data: Path) -> None:
    """The container's /etc/passwd: root, the data's owner and the harness's user, each by its host uid, for the peer
    check, which names whoever connects by the container's users. The image need not know a harness of the docker
    group (not root). Written in the cluster's folder, the harness's own (not the data, which is the cluster user's),
    readable by every user (postgres runs as the data's owner)."""
    owner = os.stat(data)
    users = {0: ("root", 0), owner.st_uid: (pwd.getpwuid(owner.st_uid).pw_name, owner.st_gid),
             os.geteuid(): (pgauth.harness_user(), os.getegid())}
    lines = [f"{name}:x:{uid}:{gid}::/:/usr/sbin/nologin\n" for uid, (name, gid) in users.items()]
    pgauth.write_replacing(data.parent / USERS_FILE, "".join(lines), 0o644)


def run_argv(step, service: str, data: Path, sockets: Path, args: list[str]) -> list[str]:
    """`docker run` for the step's postgres (harness.lab.backends.docker.container: host network, the service's
    placement); `args` are postgres's own (-D …, -c …)."""
    return containers.run_argv(step, service, POSTGRES_TAG, options(data, sockets), args)


def start(step, service: str, data: Path, sockets: Path, args: list[str], log: Path):
    """The container started; returns (its id, its postgres's host pid, the `docker logs` process writing `log`)."""
    users_file(data)
    container, pid = containers.start(step, service, POSTGRES_TAG, options(data, sockets), args)
    try:
        return container, pid, spawn(["docker", "logs", "--follow", container], docker_env(), log)
    except BaseException:  # no container may outlive a failed start
        containers.remove(container)
        raise


def stop(container: str, pid: int, logs, wait_s: float) -> int:
    """A fast shutdown (SIGINT, as locally), then the container removed; the log follower ends with it."""
    try:
        if process_running(pid):
            docker("kill", "--signal", "INT", container, check=False)
            deadline = time.monotonic() + wait_s
            while process_running(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        code = containers.exit_code(container)
    finally:
        containers.remove(container)
        terminate(logs)
    return code

