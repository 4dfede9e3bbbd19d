"""`invoke dockerd`: a private Docker daemon with no bridge network, started and stopped by the lab.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from harness import LabError, say
from harness.lab.backends.docker.client import (
    DAEMON_DATA_ROOT,
    DAEMON_EXEC_ROOT,
    DAEMON_LOG,
    DAEMON_PIDFILE,
    DAEMON_SOCKET,
    DEFAULT_SOCKET,
    LABEL,
    _require_as_root,
    daemon_version,
    docker,
    docker_env,
)


def start_daemon() -> str:
    """Start the lab's private dockerd unless a daemon already answers; returns the DOCKER_HOST to use."""
    version = daemon_version()
    if version:
        host = docker_env().get("DOCKER_HOST", f"unix://{DEFAULT_SOCKET}")
        say(f"a Docker daemon ({version}) already answers at {host}: using it, nothing started")
        return host
    _require_as_root("dockerd", "docker.io", "starting a private Docker daemon")
    host = f"unix://{DAEMON_SOCKET}"
    for path in (DAEMON_DATA_ROOT, DAEMON_EXEC_ROOT):
        path.mkdir(parents=True, exist_ok=True)
    # No bridge, no iptables: no private-range network is created; containers use --network host.
    cmd = ["dockerd", "--bridge=none", "--iptables=false", "--ip-masq=false", f"--data-root={DAEMON_DATA_ROOT}",
           f"--exec-root={DAEMON_EXEC_ROOT}", f"--pidfile={DAEMON_PIDFILE}", f"--host={host}"]
    say(f"starting a private Docker daemon (data in {DAEMON_DATA_ROOT}, log {DAEMON_LOG}) …")
    with open(DAEMON_LOG, "ab") as log:  # its own session: it outlives this command
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while daemon_version(os.environ | {"DOCKER_HOST": host}) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = "\n".join(DAEMON_LOG.read_text(errors="replace").splitlines()[-10:])
            _kill_and_wait(proc.pid)
            _remove_runtime_files()
            raise LabError(f"the private Docker daemon did not come up (exit {proc.poll()}):\n{tail}")
        time.sleep(0.5)
    say(f"Docker daemon up (pid {proc.pid}); stop it with `invoke dockerd --stop`")
    return host


def stop_daemon() -> None:
    """Stop the private daemon (never another one), unmount what it left, remove its run-time files."""
    pid = int(DAEMON_PIDFILE.read_text()) if DAEMON_PIDFILE.exists() else None
    if pid and Path(f"/proc/{pid}").exists():
        env = os.environ | {"DOCKER_HOST": f"unix://{DAEMON_SOCKET}"}
        leftovers = docker("ps", "--all", "--quiet", "--filter", f"label={LABEL}", check=False, env=env).stdout.split()
        if leftovers:
            docker("rm", "--force", *leftovers, check=False, env=env)
        say(f"stopping the private Docker daemon (pid {pid}) …")
        _kill_and_wait(pid)
    else:
        say("no private Docker daemon is running")
    _remove_runtime_files()


def _remove_runtime_files() -> None:
    """What a stopped daemon leaves: its mounts (netns/default must go before the directory can), exec root, socket."""
    for mount in sorted(_mounts_under(DAEMON_EXEC_ROOT), key=len, reverse=True):
        subprocess.run(["umount", mount], check=False)
    shutil.rmtree(DAEMON_EXEC_ROOT, ignore_errors=True)
    for path in (DAEMON_PIDFILE, DAEMON_SOCKET):
        path.unlink(missing_ok=True)


def _kill_and_wait(pid: int) -> None:
    for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not Path(f"/proc/{pid}").exists():
            return
    raise LabError(f"the private Docker daemon (pid {pid}) does not stop")


def _mounts_under(root: Path) -> list[str]:
    points = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return [p for p in points if p == str(root) or p.startswith(f"{root}/")]
