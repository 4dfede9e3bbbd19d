"""CPU placement: which CPUs the load generator and each service may run on, and a service's CPU quota.

A spec's `[placement]` section (in `[defaults]` and in steps, merged per process name) maps a process name —
`k6` (the load tool's name), `server` (the sample server) or another service's name — to a CPU list, or to a
table with a CPU list and a quota in CPUs (docker's `--cpus`: 0.5 is half of one CPU's time per period):

    [defaults.placement]
    k6 = "0"                              # the load generator on CPU 0
    server = { cpus = "1", quota = 0.5 }  # the server on CPU 1, throttled to half of it

Locally a process is pinned by starting it under `taskset` (so the JVM sizes its pools for the CPUs it may use,
all its threads inherit the mask from the start) and throttled by a cgroup v1 `cpu` group made for the step
(cfs_quota_us / cfs_period_us; root only), which the process enters before it execs. On the docker backend the
server's container gets `--cpuset-cpus` and `--cpus`. What was applied — each process's allowed CPUs as the kernel
reports them, the CPUs its threads were seen on, the cgroup's quota — goes into step.json beside what was asked.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import time
from collections import Counter
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from harness import LabError

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the kernel's and docker's default CFS period
MIN_QUOTA_US = 1000  # the kernel refuses a cfs_quota_us below 1 ms
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
KEYS = {"cpus", "quota"}
MAX_CPUS = 8192  # Linux's largest CONFIG_NR_CPUS
CGROUP_PREFIX = "lab-"  # lab-<harness pid>-<process name>: a leftover of a killed harness is recognised by it


# ---- the spec ------------------------------------------------------------------------------------

def parse_cpu_list(value) -> list[int]:
    """"0", "0-2,5", 1 or [0, 1] → sorted CPU numbers; ValueError naming what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"a CPU list is a string like \"0\" or \"0-1,3\", got {value!r}")
    if isinstance(value, int):
        value = [value]
    if isinstance(value, list):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
            raise ValueError(f"a CPU list of numbers must hold whole numbers ≥ 0, got {value!r}")
        return sorted(set(value))
    if not isinstance(value, str) or not re.fullmatch(r"\s*\d+(-\d+)?(\s*,\s*\d+(-\d+)?)*\s*", value):
        raise ValueError(f"a CPU list is a string like \"0\" or \"0-1,3\", got {value!r}")
    cpus: set[int] = set()
    for part in value.replace(" ", "").split(","):
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if high < low:
            raise ValueError(f"the CPU range {part!r} runs backwards")
        if high >= MAX_CPUS:  # listing a billion CPUs would take the validation itself hours
            raise ValueError(f"the CPU range {part!r} goes past any Linux machine's CPUs (at most {MAX_CPUS})")
        cpus.update(range(low, high + 1))
    return sorted(cpus)


def cpu_list(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 5] → "0-2,5", the kernel's and taskset's notation."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def merge_placement(base: dict, table, where: str, problems: list[str]) -> dict:
    """A `[placement]` table → {name: {"cpus": [..], "quota": float}} merged over `base` per name and key."""
    if not isinstance(table, dict):
        problems.append(f"{where}: placement must be a table of process names, got {table!r}")
        return dict(base)
    merged = {name: dict(entry) for name, entry in base.items()}
    for name, value in table.items():
        if not NAME.match(str(name)):
            problems.append(f"{where}: placement.{name}: a process name is lower-case letters, digits, '-' and '_'")
            continue
        entry = value if isinstance(value, dict) else {"cpus": value}
        for key in sorted(set(entry) - KEYS):
            problems.append(f"{where}: placement.{name}: unknown key '{key}' (allowed: cpus, quota)")
        good = dict(merged.get(name, {}))
        if "cpus" in entry:
            try:
                good["cpus"] = parse_cpu_list(entry["cpus"])
            except ValueError as err:
                problems.append(f"{where}: placement.{name}.cpus: {err}")
        if "quota" in entry:
            quota = entry["quota"]
            if isinstance(quota, bool) or not isinstance(quota, int | float) or quota <= 0:
                problems.append(f"{where}: placement.{name}.quota must be a number of CPUs > 0 (e.g. 0.5), got {quota!r}")
            else:
                good["quota"] = float(quota)
        merged[name] = good
    return {name: entry for name, entry in merged.items() if entry}


def check_placement(step, limits: dict, where: str, problems: list[str]) -> None:
    """CPUs this machine has (`limits["cpus"]`, else the CPUs the harness may run on), quotas it can give."""
    machine = sorted(limits.get("cpus") or machine_cpus())
    for name, entry in step.placement.items():
        outside = [c for c in entry.get("cpus", []) if c not in machine]
        if outside:
            problems.append(f"{where}: placement.{name}.cpus names CPU {cpu_list(outside)}, outside this machine's "
                            f"CPUs {cpu_list(machine)}")
        quota = entry.get("quota")
        if quota is not None:
            usable = len(entry.get("cpus") or machine)
            if quota > usable or quota * PERIOD_US < MIN_QUOTA_US:
                problems.append(f"{where}: placement.{name}.quota must be ≥ 0.01 and ≤ the {usable} CPU(s) it may "
                                f"run on, got {quota:g}")
            if name == step.load.get("tool"):
                problems.append(f"{where}: placement.{name}.quota: a quota is for services; the load generator is "
                                "only pinned (a throttled load generator would measure itself)")
    if "quota" in step.placement.get("server", {}) and "cpus" in step.container:
        problems.append(f"{where}: both placement.server.quota and container.cpus give the server a CPU quota: keep one")


def machine_cpus() -> set[int]:
    """The CPUs this process may run on (a container or taskset may give it fewer than the machine has)."""
    return os.sched_getaffinity(0)


def preflight(steps, backend: str) -> None:
    """Before anything starts: every placed name is a process the step starts, and a local quota can be given."""
    problems = []
    for step in steps:
        names = {step.load.get("tool", "k6")} | set(step.services)
        for name in sorted(set(step.placement) - names):
            problems.append(f"step {step.id}: placement names '{name}', but the step starts no process of that name "
                            f"(it starts {', '.join(sorted(names))})")
        quotas = [n for n, e in step.placement.items() if "quota" in e and not (backend == "docker" and n == "server")]
        if quotas and (problem := local_quota_problem()):
            problems.append(f"step {step.id}: placement quota for {', '.join(quotas)}: {problem}")
    if problems:
        raise LabError("CPU placement cannot be applied:\n" + "\n".join(f"  - {p}" for p in problems))
    if any(e.get("cpus") for s in steps for e in s.placement.values()) and not shutil.which("taskset"):
        raise LabError("CPU placement pins processes with `taskset`, which is missing: apt-get install util-linux")


# ---- local mechanics -----------------------------------------------------------------------------

def cpu_controller(mountinfo: str | None = None) -> Path | None:
    """Where the cgroup v1 `cpu` controller is mounted (its own or a `cpu,cpuacct` directory), or None."""
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    for line in text.splitlines():
        fields = line.split()
        if " - cgroup " in line and "cpu" in fields[-1].split(","):
            return Path(fields[4])
    return None


def local_quota_problem() -> str:
    """Why a local CPU quota cannot be given here, or '' when it can."""
    controller = cpu_controller()
    if controller is None:
        return ("this machine has no cgroup v1 `cpu` controller (a cgroup v2 quota is not supported locally): "
                "use the docker backend (--backend docker), which gives the container --cpus")
    if os.geteuid() != 0 or not os.access(controller, os.W_OK):
        return f"a CPU quota needs a cgroup under {controller}, which only root may create: run as root or use docker"
    return ""


def cgroup_dir(name: str, controller: Path | None = None) -> Path:
    return (controller or cpu_controller() or CGROUP_ROOT / "cpu") / f"{CGROUP_PREFIX}{os.getpid()}-{name}"


def command(step, name: str, cmd: list[str]) -> list[str]:
    """`cmd` started under the step's placement for `name`: in its cgroup (entered before exec, so every thread is in
    it from the start) and under taskset. The pid stays the command's own: sh and taskset exec into it."""
    entry = step.placement.get(name, {})
    if "cpus" in entry:
        cmd = ["taskset", "--cpu-list", cpu_list(entry["cpus"]), *cmd]
    if "quota" in entry:
        cmd = in_cgroup(cgroup_dir(name), cmd)
    return cmd


def in_cgroup(path: Path, cmd: list[str]) -> list[str]:
    """`cmd` started in the cgroup `path`: it enters before it execs, so every thread and child is in it from the
    start, and its pid stays the command's own (sh execs into it)."""
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(path / "cgroup.procs"), *cmd]


@contextmanager
def idle_cgroup(name: str):
    """A cgroup whose processes get only CPU time no other process wants (cpu.idle: the whole group scheduled as
    SCHED_IDLE, which the lab's servers, each in a session and so an autogroup of its own, would not see of a single
    process's), for work that must not slow a measurement beside it. Yields a function that starts a command in it,
    or None where no such group can be made (no cgroup v1 `cpu` controller, not root, a kernel before 5.15). On the
    way out, what still runs in it is killed (an interrupted caller's work, with every child, even one in a session of
    its own such as a Jupyter kernel) and the group removed (else the lab's next run removes it: its name is a lab
    cgroup's)."""
    controller = cpu_controller()
    if controller is None or os.geteuid() != 0 or not (controller / "cpu.idle").exists():
        yield None
        return
    path = cgroup_dir(name, controller)
    path.mkdir(exist_ok=True)
    try:
        (path / "cpu.idle").write_text("1")
        yield lambda cmd: in_cgroup(path, cmd)
    finally:
        _kill_members(path)
        _rmdir(path)


def _kill_members(path: Path, wait_s: float = 5) -> None:
    """SIGKILL every process in the cgroup `path`, and wait (up to `wait_s`) until it has none: a killed process leaves
    its cgroup as it exits, and the group can be removed only once it is empty."""
    deadline = time.monotonic() + wait_s
    while (members := (path / "cgroup.procs").read_text().split()) and time.monotonic() < deadline:
        for pid in members:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:  # it ended since the list was read
                pass
        time.sleep(0.05)


@contextmanager
def local_cgroups(step, names: Iterable[str]):
    """Create the step's quota cgroups for the processes `names` (those run locally), remove them after.

    Yields {name: what the cgroup says it gives}. A cgroup left by a harness killed hard is removed first."""
    quotas = {n: step.placement[n]["quota"] for n in names if "quota" in step.placement.get(n, {})}
    if not quotas:
        yield {}
        return
    controller = cpu_controller()
    _remove_leftovers(controller)
    made = {}
    try:
        for name, quota in quotas.items():
            path = cgroup_dir(name, controller)
            path.mkdir(exist_ok=True)
            (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(round(quota * PERIOD_US)))
            made[name] = path
        yield {name: read_quota(path) for name, path in made.items()}
    finally:
        for path in made.values():
            _rmdir(path)


def read_quota(path: Path) -> dict:
    quota_us = int((path / "cpu.cfs_quota_us").read_text())
    period_us = int((path / "cpu.cfs_period_us").read_text())
    return {"cgroup": str(path), "cfs_quota_us": quota_us, "cfs_period_us": period_us,
            "cpus": None if quota_us < 0 else round(quota_us / period_us, 4)}


def _remove_leftovers(controller: Path | None) -> list[str]:
    """The quota cgroups of harnesses that are gone (killed before they could remove them), removed; their names."""
    removed = []
    for path in controller.glob(f"{CGROUP_PREFIX}*-*") if controller else []:
        owner = path.name[len(CGROUP_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _rmdir(path)
            removed.append(path.name)
    return removed


def remove_leftover_cgroups() -> list[str]:
    return _remove_leftovers(cpu_controller())


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()  # a cgroup directory goes with rmdir once no process is in it
    except FileNotFoundError:
        pass
    except OSError:  # still busy (a process not yet reaped): leave it for the next run's clean-up
        pass


# ---- what was applied ----------------------------------------------------------------------------

def allowed_cpus(pid: int) -> str:
    """The process's allowed CPUs as the kernel reports them (Cpus_allowed_list)."""
    return cpu_list(os.sched_getaffinity(pid))


def thread_cpus(pid: int) -> Counter[int]:
    """How many of the process's threads last ran on each CPU (/proc/<pid>/task/*/stat field 39)."""
    seen: Counter[int] = Counter()
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the thread ended
            continue
        seen[int(text[text.rindex(")") + 2:].split()[36])] += 1  # field 39 counts from 1, the fields here from 3
    return seen


def asked(step, quotas: dict[str, dict]) -> dict:
    """step.json's `placement` before the step: what was asked, and the quota each local cgroup says it gives."""
    return {"asked": {n: {"cpus": cpu_list(e["cpus"]) if "cpus" in e else None, "quota": e.get("quota")}
                      for n, e in step.placement.items()},
            "applied": {n: {"quota": q} for n, q in quotas.items()}}


def add_seen(record: dict, seen: dict[str, dict]) -> dict:
    """Add what the process sampler saw (allowed CPUs, threads' last CPUs) to each placed process's facts."""
    for name in record["asked"]:
        record["applied"][name] = {**seen.get(name, {}), **record["applied"].get(name, {})}
    return record


def mismatches(step, seen: dict[str, dict]) -> list[str]:
    """Processes whose allowed CPUs or threads' CPUs differ from the CPUs asked for them."""
    wrong = []
    for name, entry in step.placement.items():
        if "cpus" not in entry:
            continue
        facts = seen.get(name)
        if not facts:  # sampling off, or a process too short-lived to be sampled: nothing to check
            continue
        if facts.get("cpus_allowed") != cpu_list(entry["cpus"]):
            wrong.append(f"{name}: allowed CPUs {facts.get('cpus_allowed')}, asked {cpu_list(entry['cpus'])}")
        elsewhere = sorted(int(c) for c in facts.get("threads_last_cpu", {}) if int(c) not in entry["cpus"])
        if elsewhere:
            wrong.append(f"{name}: threads seen on CPU {cpu_list(elsewhere)}")
    return wrong


def docker_args(step, name: str = "server") -> list[str]:
    """`docker run` arguments for the placement of process `name` (the server, or a service): its CPU set and quota."""
    entry = step.placement.get(name, {})
    argv = ["--cpuset-cpus", cpu_list(entry["cpus"])] if "cpus" in entry else []
    return argv + (["--cpus", f"{entry['quota']:g}"] if "quota" in entry else [])
