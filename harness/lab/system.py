"""Facts about this machine that bound what an experiment can do, and the versions results depend on."""
from __future__ import annotations

import os
import platform
import resource
import shutil
import subprocess
from pathlib import Path

SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


def nofile_limit() -> int:
    """The open-files limit a child process can raise itself to (the JVM and Go both raise soft to hard)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def cores() -> int:
    return os.cpu_count() or 1


def somaxconn() -> int:
    return int(SOMAXCONN.read_text())


def can_raise_somaxconn() -> bool:
    return os.access(SOMAXCONN, os.W_OK)


def set_somaxconn(value: int) -> None:
    SOMAXCONN.write_text(f"{value}\n")


def memory_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("MemTotal missing from /proc/meminfo")


def machine() -> dict:
    return {
        "cores": cores(),
        "memory_bytes": memory_bytes(),
        "nofile_limit": nofile_limit(),
        "somaxconn": somaxconn(),
        "local_port_range": Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split(),
        # TIME_WAIT reuse (1 for all connections, 2, the default, for loopback only) and its ceiling: what a proxy
        # without upstream keep-alive runs into
        "tcp_tw_reuse": int(Path("/proc/sys/net/ipv4/tcp_tw_reuse").read_text()),
        "tcp_max_tw_buckets": int(Path("/proc/sys/net/ipv4/tcp_max_tw_buckets").read_text()),
        "pid_max": int(Path("/proc/sys/kernel/pid_max").read_text()),  # threads count against it, system-wide
        "threads_max": int(Path("/proc/sys/kernel/threads-max").read_text()),
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
    }


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def command_output(*cmd: str) -> str:
    """stdout+stderr of a short command, or '' when it is missing or fails."""
    if not shutil.which(cmd[0]) and not Path(cmd[0]).exists():
        return ""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).strip()


def git_commit() -> str:
    from harness import ROOT

    commit = command_output("git", "-C", str(ROOT), "rev-parse", "HEAD")
    # Dirty means the code differs from the commit; results being rewritten under data/ do not count.
    dirty = command_output("git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", ".", ":!data")
    return f"{commit}{'+dirty' if dirty else ''}" if commit else "unknown"
