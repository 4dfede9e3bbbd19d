"""The docker backend: each step's server in a fresh container with the spec's CPU, memory and open-files limits
(the host's network, so the load path is the same loopback as for a local process).
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness import SERVER_DIR, LabError
from harness.lab import placement, system
from harness.lab.backends.base import JAR, STOP_GRACE_S, RunningServer, StepFailed, listener, pair_room, server_env
from harness.lab.backends.process import process_running
from harness.lab.backends.docker.client import LABEL, check_daemon, container_name, docker, docker_env, image_labels
from harness.lab.backends.docker.image import JAR_LABEL, SERVER_TAG, jar_digest
from harness.lab.samplers import Cgroup
from harness.lab.spec import Step


PAIR_ROOM_IMAGE_JAR = "/app/sample-server-pair-room.jar"  # where sample-server/Dockerfile puts chapter 5's jar


def run_argv(step: Step, image: str, nofile: int, extra_env: dict[str, str] | None = None) -> list[str]:
    """`docker run` arguments for a step: its server env, the host's network and the spec's limits.

    `nofile` is the open-files limit when the spec sets none (this machine's hard limit, as a local
    server gets); memory-swap equal to memory means no swap, as on the article's machine.
    """
    limits = step.container
    nofile = limits.get("nofile", nofile)
    argv = ["run", "--detach", "--name", container_name(step),
            "--label", f"{LABEL}=1", "--label", f"{LABEL}.step={step.chapter}/{step.id}",
            "--network", "host", "--ulimit", f"nofile={nofile}:{nofile}"]
    if "cpus" in limits:
        argv += ["--cpus", f"{limits['cpus']:g}"]
    if "memory" in limits:
        argv += ["--memory", limits["memory"], "--memory-swap", limits["memory"]]
    argv += placement.docker_args(step)  # [placement] server: --cpuset-cpus, --cpus
    for key, value in server_env(step, extra_env).items():
        argv += ["--env", f"{key}={value}"]
    if pair_room(step):  # the image's CDS entrypoint belongs to the plain jar
        return argv + ["--entrypoint", "java", image, "-jar", PAIR_ROOM_IMAGE_JAR]
    return argv + [image]


class DockerBackend:
    """The sample server in a fresh container per step (image from `invoke image`)."""

    name = "docker"

    def __init__(self, image: str = SERVER_TAG):
        self.image = image

    def check(self) -> None:
        check_daemon()
        labels = image_labels(self.image)
        rebuild = "run `invoke image` (`invoke image --base debootstrap` where no registry is reachable)"
        if labels is None:
            raise LabError(f"the server image {self.image} is missing: {rebuild}")
        if JAR.exists() and labels.get(JAR_LABEL) != jar_digest():
            raise LabError(f"the server image {self.image} holds another build of the jar than "
                           f"{JAR.relative_to(SERVER_DIR.parent)}: {rebuild}")

    def start(self, step: Step, log: Path, extra_env: dict[str, str] | None = None) -> ContainerServer:
        name = container_name(step)
        docker("rm", "--force", name, check=False)  # a leftover of a run killed hard
        started = time.monotonic()
        try:
            container = docker(*run_argv(step, self.image, system.nofile_limit(), extra_env)).stdout.strip()
            return ContainerServer(step, container, self.image, log, started)
        except BaseException:  # Ctrl-C or a failed start: no container may outlive the step
            docker("rm", "--force", name, check=False)
            raise


class ContainerServer(RunningServer):
    """A server in a container; `pid` is its JVM's pid on the host, so /proc sampling works as for a local one."""

    backend = "docker"

    def __init__(self, step: Step, container: str, image: str, log: Path, started: float):
        super().__init__(step, None, log, started)
        self.container, self.image = container, image
        state = self._inspect("{{.State.Pid}} {{.Image}}").split()
        self.host_pid, self.image_id = int(state[0]), state[1]

    def _inspect(self, template: str) -> str:
        return docker("inspect", "--format", template, self.container).stdout.strip()

    @property
    def pid(self) -> int:
        return self.host_pid

    def alive(self) -> bool:
        return process_running(self.host_pid)

    def exit_reason(self) -> str:
        code, oom = self._inspect("{{.State.ExitCode}} {{.State.OOMKilled}}").split()
        if oom == "true":
            return f"killed for exceeding the container's memory limit {self.step.container.get('memory')}"
        # The JVM is PID 1 in the container: a signal shows as 128 + its number.
        return f"killed by signal {int(code) - 128}" if int(code) > 128 else f"exit code {code}"

    def _check_identity(self) -> None:
        """Ours is the process listening on the management port (host network: the host's `ss` sees it),
        and it reports the pid our container's JVM has inside its pid namespace."""
        found = listener(self.step.management_port)
        if found and found[1] != self.host_pid:
            raise StepFailed(f"another server ({found[0]}, pid {found[1]}) answers on {self.management_url}, "
                             f"not the container's (host pid {self.host_pid})")
        inner = namespace_pid(self.host_pid)
        reported = self.info().get("pid")
        if reported != inner:
            raise StepFailed(f"the server on {self.management_url} reports pid {reported}, "
                             f"not the container's JVM (pid {inner} in the container)")

    def step_meta(self) -> dict:
        facts = {"image": self.image, "image_id": self.image_id, "container_id": self.container,
                 "name": container_name(self.step), "requested": dict(self.step.container),
                 "nofile": open_files_limit(self.host_pid)}
        try:
            facts["cgroup"] = Cgroup.of_pid(self.host_pid).limits()
        except (OSError, ValueError) as err:  # recorded rather than failing a measured step
            facts["cgroup"] = {"error": str(err)}
        return {"container": facts}

    def cgroups(self) -> dict:
        try:
            return {"container": Cgroup.of_pid(self.host_pid)}
        except (OSError, ValueError):  # the container is gone: the runner sees the server dead and says so
            return {}

    def stop(self) -> int:
        """docker stop (SIGTERM, SIGKILL after the grace), keep the logs, remove the container."""
        try:
            docker("stop", "--time", str(STOP_GRACE_S), self.container, check=False, timeout=STOP_GRACE_S + 30)
            state = docker("inspect", "--format", "{{.State.ExitCode}}", self.container, check=False)
            self._save_logs()
            return int(state.stdout) if state.returncode == 0 else -1  # -1: the daemon lost it
        finally:
            docker("rm", "--force", self.container, check=False)

    def _save_logs(self) -> None:
        with open(self.log, "wb") as out:
            subprocess.run(["docker", "logs", self.container], env=docker_env(), stdout=out,
                           stderr=subprocess.STDOUT, timeout=60, start_new_session=True)

    def log_tail(self, lines: int = 15) -> str:
        done = docker("logs", "--tail", str(lines), self.container, check=False)
        return (done.stdout + done.stderr).strip() or "(no output)"


def namespace_pid(host_pid: int) -> int:
    """The pid a host process has in its own (innermost) pid namespace: the NSpid line's last field."""
    for line in Path(f"/proc/{host_pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return host_pid


def open_files_limit(pid: int) -> int | None:
    """The soft open-files limit a process runs with, from /proc/<pid>/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return None
