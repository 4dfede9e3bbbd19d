"""One service of a step in a fresh container, whatever its kind (the sample server, postgres): started with the
lab's labels and name, the host's network (the same loopback path as a local process), the step's `[placement]` for
the service as CPU set and quota, and never left behind (removed after a failed start, after the step, and by the
next run when a harness was killed). The service's kind gives the image and its own arguments.
"""
from __future__ import annotations

import os
from pathlib import Path

from harness.lab import placement
from harness.lab.backends.docker.client import LABEL, container_name, docker
from harness.lab.backends.process import process_running


def run_argv(step, service: str, image: str, options: list[str], command: list[str]) -> list[str]:
    """`docker run` for one service of a step: detached, named and labelled for the step, on the host's network,
    under the service's placement; `options` are the kind's own (limits, env, user, volumes), `command` what the
    image runs (nothing: its entrypoint)."""
    return ["run", "--detach", "--name", container_name(step, service), "--label", f"{LABEL}=1",
            "--label", f"{LABEL}.step={step.chapter}/{step.id}", "--label", f"{LABEL}.pid={os.getpid()}",
            "--network", "host",
            *placement.docker_args(step, service), *options, image, *command]


def start(step, service: str, image: str, options: list[str], command: list[str]) -> tuple[str, int]:
    """The container started (a leftover of the same name removed first): its id and its main process's host pid.
    Nothing outlives a failed start or a Ctrl-C during it."""
    name = container_name(step, service)
    docker("rm", "--force", name, check=False)  # a leftover of a run killed hard
    try:
        container = docker(*run_argv(step, service, image, options, command)).stdout.strip()
        return container, int(inspect(container, "{{.State.Pid}}"))
    except BaseException:
        docker("rm", "--force", name, check=False)
        raise


def inspect(container: str, template: str) -> str:
    return docker("inspect", "--format", template, container).stdout.strip()


def exit_code(container: str) -> int:
    """The container's exit code, -1 when the daemon no longer knows it."""
    done = docker("inspect", "--format", "{{.State.ExitCode}}", container, check=False)
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else -1


def remove(container: str) -> None:
    docker("rm", "--force", container, check=False)


class InContainer:
    """A running service's process facts when it runs in a container (mixed in before RunningService): its main
    process's pid on the host (the lab samples /proc there as for a local process), alive while that runs."""

    host_pid: int

    @property
    def pid(self) -> int:
        return self.host_pid

    def alive(self) -> bool:
        return process_running(self.host_pid)


def namespace_pid(host_pid: int) -> int:
    """The pid a host process has in its own (innermost) pid namespace: the NSpid line's last field."""
    for line in Path(f"/proc/{host_pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return host_pid
