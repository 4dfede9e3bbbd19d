"""The sample server on the docker backend (part of the tomcat kind): its image (`invoke image`: both jars on the lab's
base image, labelled with their digest), and each step's server in a fresh container of it, with the step's
`[container]` CPU, memory and open-files limits and the host's network
(so the load path is the same loopback as for a local process).
"""
from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path

from harness import SERVER_DIR, LabError
from harness.lab import system
from harness.lab.backends.docker import container as containers
from harness.lab.backends.docker import image as images
from harness.lab.backends.docker.client import LABEL, check_daemon, container_name, docker, docker_env, image_labels
from harness.lab.backends.process import STOP_GRACE_S, StepFailed, listener
from harness.lab.samplers import Cgroup
from harness.lab.services.tomcat import process
from harness.lab.services.tomcat.knobs import knob, pair_room
from harness.lab.services.tomcat.process import RunningServer

SERVER_IMAGE = "concurrency-lab/sample-server"
SERVER_TAG = f"{SERVER_IMAGE}:latest"  # the tag the backend runs; `invoke image` also tags the git commit
JAR_LABEL = f"{LABEL}.jar-sha256"  # the image remembers which jar it holds

PAIR_ROOM_IMAGE_JAR = "/app/sample-server-pair-room.jar"  # where sample-server/Dockerfile puts chapter 5's jar


def jar_digest() -> str:
    """One digest of both jars the image holds: a rebuild of either asks for a new image."""
    digest = hashlib.sha256()
    for jar in (process.JAR, process.PAIR_ROOM_JAR):
        digest.update(jar.read_bytes() if jar.exists() else b"")
    return digest.hexdigest()


def build_image(base: str) -> str:
    """The server image: sample-server/Dockerfile on `base`, tagged latest and with the server's git commit."""
    for jar in (process.JAR, process.PAIR_ROOM_JAR):
        if not jar.exists():
            raise LabError(f"the server jar {jar.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup` first")
    version = system.git("rev-parse", "--short", "HEAD") or "dev"
    return images.build([SERVER_TAG, f"{SERVER_IMAGE}:{version}"], SERVER_DIR, base, {JAR_LABEL: jar_digest()})


def check_image(image: str = SERVER_TAG) -> None:
    check_daemon()
    labels = image_labels(image)
    rebuild = "run `invoke image` (`invoke image --base debootstrap` where no registry is reachable)"
    if labels is None:
        raise LabError(f"the server image {image} is missing: {rebuild}")
    if process.JAR.exists() and labels.get(JAR_LABEL) != jar_digest():
        raise LabError(f"the server image {image} holds another build of the jar than "
                       f"{process.JAR.relative_to(SERVER_DIR.parent)}: {rebuild}")


def options(step, env: dict[str, str], nofile: int) -> list[str]:
    """The server's own `docker run` options: the spec's limits and its environment.

    `nofile` is the open-files limit when the spec sets none (this machine's hard limit, as a local server gets);
    memory-swap equal to memory means no swap, as on the article's machine."""
    limits = step.container
    nofile = limits.get("nofile", nofile)
    argv = ["--ulimit", f"nofile={nofile}:{nofile}"]
    if "cpus" in limits:
        argv += ["--cpus", f"{limits['cpus']:g}"]
    if "memory" in limits:
        argv += ["--memory", limits["memory"], "--memory-swap", limits["memory"]]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    return argv


def command(knobs: dict) -> list[str]:
    """What the image runs: its CDS entrypoint, or chapter 5's jar (the archive belongs to the plain jar)."""
    return ["java", "-jar", PAIR_ROOM_IMAGE_JAR] if pair_room(knobs) else []


def start_container(step, service: str, knobs: dict, env: dict[str, str], log: Path,
                    image: str = SERVER_TAG) -> ContainerServer:
    argv = options(step, env, system.nofile_limit())
    entry = command(knobs)
    if entry:
        argv += ["--entrypoint", entry[0]]
    started = time.monotonic()  # start-up counts the container's start, as the article's redeploys did
    container, host_pid = containers.start(step, service, image, argv, entry[1:])
    return ContainerServer(service, container, host_pid, image, log, knobs, step, started)


class ContainerServer(containers.InContainer, RunningServer):
    """A server in a container; `pid` is its JVM's pid on the host, so /proc sampling works as for a local one."""

    backend = "docker"

    def __init__(self, name: str, container: str, host_pid: int, image: str, log: Path, knobs: dict, step,
                 started: float):
        super().__init__(name, None, log, started, knobs, "docker")
        self.container, self.image, self.host_pid, self.step = container, image, host_pid, step
        self.image_id = containers.inspect(container, "{{.Image}}")

    def exit_reason(self) -> str:
        code, oom = containers.inspect(self.container, "{{.State.ExitCode}} {{.State.OOMKilled}}").split()
        if oom == "true":
            return f"killed for exceeding the container's memory limit {self.step.container.get('memory')}"
        # The JVM is PID 1 in the container: a signal shows as 128 + its number.
        return f"killed by signal {int(code) - 128}" if int(code) > 128 else f"exit code {code}"

    def check_identity(self) -> None:
        """Ours is the process listening on the management port (host network: the host's `ss` sees it),
        and it reports the pid our container's JVM has inside its pid namespace."""
        found = listener(knob(self.knobs, "MANAGEMENT_PORT"))
        if found and found[1] != self.host_pid:
            raise StepFailed(f"another server ({found[0]}, pid {found[1]}) answers on {self.management_url}, "
                             f"not the container's (host pid {self.host_pid})")
        inner = containers.namespace_pid(self.host_pid)
        reported = self.info().get("pid")
        if reported != inner:
            raise StepFailed(f"the server on {self.management_url} reports pid {reported}, "
                             f"not the container's JVM (pid {inner} in the container)")

    def step_meta(self) -> dict:
        facts = {"image": self.image, "image_id": self.image_id, "container_id": self.container,
                 "name": self.container_name(), "requested": dict(self.step.container),
                 "nofile": open_files_limit(self.host_pid)}
        try:
            facts["cgroup"] = Cgroup.of_pid(self.host_pid).limits()
        except (OSError, ValueError) as err:  # recorded rather than failing a measured step
            facts["cgroup"] = {"error": str(err)}
        return {"launch": "docker", "container": facts}

    def container_name(self) -> str:
        return container_name(self.step, self.name)

    def cgroups(self) -> dict:
        try:
            return {"container": Cgroup.of_pid(self.host_pid)}
        except (OSError, ValueError):  # the container is gone: the runner sees the server dead and says so
            return {}

    def stop(self) -> int:
        """docker stop (SIGTERM, SIGKILL after the grace), keep the logs, remove the container."""
        try:
            docker("stop", "--time", str(STOP_GRACE_S), self.container, check=False, timeout=STOP_GRACE_S + 30)
            code = containers.exit_code(self.container)
            self._save_logs()
            return code
        finally:
            containers.remove(self.container)

    def _save_logs(self) -> None:
        with open(self.log, "wb") as out:
            subprocess.run(["docker", "logs", self.container], env=docker_env(), stdout=out,
                           stderr=subprocess.STDOUT, timeout=60, start_new_session=True)

    def log_tail(self, lines: int = 15) -> str:
        done = docker("logs", "--tail", str(lines), self.container, check=False)
        return (done.stdout + done.stderr).strip() or "(no output)"


def open_files_limit(pid: int) -> int | None:
    """The soft open-files limit a process runs with, from /proc/<pid>/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return None
