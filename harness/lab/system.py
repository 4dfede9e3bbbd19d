"""Facts about this machine that bound what an experiment can do, and the versions results depend on."""
from __future__ import annotations

import os
import platform
import resource
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


def git(*args: str, clone: Path | None = None) -> str | None:
    """stdout of a git command in the clone (the book's own by default), None when git is missing or fails: a copy
    without .git, say. A clone of another user's, run as root (for a CPU quota), is read too: git refuses one it finds
    and does not own ("dubious ownership"; its refusal was recorded as the commit), not one it is pointed at."""
    from harness import ROOT

    clone = clone or ROOT
    try:
        # GIT_* of the user's shell (a hook's GIT_INDEX_FILE …) would read another repository's state; no optional
        # lock: as root, `status` would otherwise rewrite the owner's index as root's.
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        pointed = ["--git-dir=.git", "--work-tree=."] if (clone / ".git").exists() else []  # else found above it
        done = subprocess.run(["git", "--no-optional-locks", "-C", str(clone), *pointed, *args],
                              capture_output=True, text=True, timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit(clone: Path | None = None) -> str:
    """The commit the code runs from, +dirty when it differs from it (or git cannot tell), "unknown" outside git."""
    commit = git("rev-parse", "HEAD", clone=clone)
    if not commit:
        return "unknown"
    # Dirty means the code differs from the commit; results being rewritten under data/ do not count.
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!data", clone=clone)
    return f"{commit}{'+dirty' if changed is None or changed else ''}"
