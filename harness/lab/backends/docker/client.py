"""The docker client as the lab uses it: which daemon, is it there, the lab's containers, tools that need root.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

from harness import LabError, say

LABEL = "concurrency-lab"  # every container the lab starts carries it, so leftovers can be found


# The private daemon: data root outside the repository so images survive between runs and clones.
DAEMON_DATA_ROOT = Path("/var/lib/concurrency-lab/docker")


DAEMON_LOG = DAEMON_DATA_ROOT.parent / "dockerd.log"


DAEMON_EXEC_ROOT = Path("/run/concurrency-lab-docker")  # short: it holds unix sockets


DAEMON_PIDFILE = Path("/run/concurrency-lab-docker.pid")


DAEMON_SOCKET = Path("/run/concurrency-lab-docker.sock")


DEFAULT_SOCKET = Path("/var/run/docker.sock")


START_DAEMON_HINT = "start a private one with `invoke dockerd`, then `export DOCKER_HOST=unix://" + str(DAEMON_SOCKET) + "`"


def docker_env() -> dict:
    """The user's environment; the private daemon's socket when DOCKER_HOST is unset and no default daemon exists."""
    env = dict(os.environ)
    if "DOCKER_HOST" not in env and not DEFAULT_SOCKET.exists() and DAEMON_SOCKET.exists():
        env["DOCKER_HOST"] = f"unix://{DAEMON_SOCKET}"
    return env


def docker(*args: str, check: bool = True, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the docker client. It gets its own session: a Ctrl-C must not cut a `docker run` in half,
    or the container could appear after the harness has already cleaned up."""
    proc = subprocess.Popen(["docker", *args], env=env or docker_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except KeyboardInterrupt:
        proc.communicate(timeout=60)
        raise
    except subprocess.TimeoutExpired:
        proc.kill()
        raise LabError(f"`docker {' '.join(args[:2])}` did not answer in {timeout:.0f} s") from None
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check and done.returncode != 0:
        raise LabError(f"`docker {' '.join(args)}` failed: {err.strip() or out.strip()}")
    return done


def daemon_version(env: dict | None = None) -> str | None:
    """The daemon's version when one answers, else None."""
    if not shutil.which("docker"):
        return None
    done = docker("version", "--format", "{{.Server.Version}}", check=False, timeout=15, env=env)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def image_id(tag: str) -> str | None:
    done = docker("image", "inspect", "--format", "{{.Id}}", tag, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def remote_host(docker_host: str) -> str | None:
    """The other machine a DOCKER_HOST names (ssh://…, tcp:// to an address not on this machine), else None."""
    scheme, _, rest = docker_host.partition("://")
    if scheme == "unix" or not rest:
        return None
    host = urlsplit(f"{scheme}://{rest}").hostname or ""
    if scheme == "tcp" and (host == "localhost" or host.startswith("127.") or host == "::1"):
        return None
    return host or rest


def check_daemon() -> None:
    remote = remote_host(docker_env().get("DOCKER_HOST", ""))
    if remote:  # the container would run there, but the load, the samplers and the step's checks stay here
        raise LabError(f"DOCKER_HOST names another machine ({remote}): the docker backend runs the server on this one "
                       f"only, since k6 reaches it on 127.0.0.1 and the samplers read this kernel's sockets, /proc and "
                       f"cgroups; unset DOCKER_HOST or point it at a daemon here (docs/reference.md: a remote target)")
    if not shutil.which("docker"):
        raise LabError("the docker backend needs the docker client: install Docker (Debian: `apt-get install docker.io`)")
    if daemon_version() is None:
        where = docker_env().get("DOCKER_HOST", f"unix://{DEFAULT_SOCKET}")
        raise LabError(f"no Docker daemon answers at {where}: {START_DAEMON_HINT}")


def lab_containers() -> list[str]:
    return docker("ps", "--all", "--quiet", "--filter", f"label={LABEL}").stdout.split()


def _require_as_root(tool: str, package: str, task: str) -> None:
    if not shutil.which(tool):
        raise LabError(f"{tool} is missing: install it (Debian: `apt-get install {package}`)")
    if os.geteuid() != 0:
        raise LabError(f"{task} needs root")


def _run_with_progress(cmd: list[str], log: Path, every_s: float = 15) -> None:
    """A long command with its output in `log`, a progress line every `every_s` seconds."""
    began = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        while proc.poll() is None:
            try:
                proc.wait(timeout=every_s)
            except subprocess.TimeoutExpired:
                last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
                say(f"    {time.monotonic() - began:4.0f} s  {last[:100]}")
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise LabError(f"`{' '.join(cmd[:3])} …` failed (exit {proc.returncode}):\n{tail}")


def container_name(step, service: str = "") -> str:
    """lab-<chapter>-<step>[-<service>]: one per step (and service), so a leftover of an interrupted run is found and
    replaced."""
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", f"lab-{step.chapter}-{step.id}" + (f"-{service}" if service else ""))


def image_labels(tag: str) -> dict | None:
    """An image's labels ({} without any), None when the image is not there."""
    done = docker("image", "inspect", "--format", "{{json .Config.Labels}}", tag, check=False)
    return (json.loads(done.stdout) or {}) if done.returncode == 0 else None

