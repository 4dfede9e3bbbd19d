"""Counters read twice a step, when the load starts and when it ends: what the load cost each process beyond what the
samplers follow over time. Context switches (summed over a process's threads: /proc/<pid>/status counts its main
thread only), and a quota cgroup's throttling (cpu.stat: how many of its periods ran out of quota)."""
from __future__ import annotations

import os
from pathlib import Path


def context_switches(pid: int) -> dict[str, int]:
    """Voluntary and involuntary context switches of every live thread of a process (a thread that ended between two
    reads takes its count with it: the JVM's pools keep theirs for the step)."""
    total = {"voluntary": 0, "involuntary": 0}
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            text = status.read_text()
        except OSError:  # the thread ended meanwhile
            continue
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                total["voluntary"] += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                total["involuntary"] += int(line.split()[1])
    return total


def throttling(cgroup: Path) -> dict[str, int]:
    """A cgroup v1 cpu controller's bandwidth counters: periods, throttled periods, throttled nanoseconds."""
    stat = dict(line.split() for line in (cgroup / "cpu.stat").read_text().splitlines())
    return {"periods": int(stat.get("nr_periods", 0)), "throttled": int(stat.get("nr_throttled", 0)),
            "throttled_ns": int(stat.get("throttled_time", 0))}


def snapshot(pids: dict[str, int], cgroups: dict[str, Path]) -> dict[str, dict[str, int]]:
    found = {}
    for name, pid in pids.items():
        try:
            found[name] = context_switches(pid)
        except OSError:  # gone
            continue
    for name, path in cgroups.items():
        try:
            found[f"{name}.cgroup"] = throttling(path)
        except (OSError, ValueError):
            continue
    return found


def during(start: dict, end: dict) -> dict[str, dict[str, int]]:
    """What each counter gained between two snapshots (the processes and cgroups in both)."""
    return {name: {key: end[name][key] - start[name].get(key, 0) for key in end[name]} for name in end if name in start}


# ---- other work on the machine: the user-space CPU time no process of the lab spent ---------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BUSY_SHARE_NOTED = 0.10  # a tenth of the machine's CPUs: enough to move a step whose server or load tool is CPU-bound


def _proc_stat(pid: str) -> tuple[int, int] | None:
    """(parent pid, user ticks of the process and of its reaped children) from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # ended meanwhile
        return None
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return int(fields[1]), int(fields[11]) + int(fields[13])  # ppid; utime + cutime


def user_ticks(roots: set[int]) -> dict[str, int]:
    """The machine's user-space CPU ticks (user + nice, all CPUs) and those of the lab: the processes `roots` (the
    runner, each service, each load tool: a container's processes are not the runner's children) and all their
    descendants, with the children they reaped. User time only: the kernel's share of the load (softirqs of the
    loopback traffic, ksoftirqd) is not any process's own and would read as other work."""
    machine = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    stats = {int(pid): found for pid in os.listdir("/proc") if pid.isdigit() and (found := _proc_stat(pid))}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    lab, todo = set(), [pid for pid in roots if pid in stats]
    while todo:
        pid = todo.pop()
        if pid not in lab:
            lab.add(pid)
            todo += children.get(pid, [])
    return {"machine": int(machine[1]) + int(machine[2]), "lab": sum(stats[pid][1] for pid in lab)}


def outside(start: dict[str, int], end: dict[str, int], seconds: float, cpus: int) -> dict[str, float]:
    """User-space CPU time spent outside the lab between two user_ticks readings, and its share of the machine."""
    other = max(0, (end["machine"] - start["machine"]) - (end["lab"] - start["lab"])) / CLOCK_TICKS
    return {"user_seconds": round(other, 2), "share": round(other / (seconds * cpus), 3) if seconds > 0 else 0.0}
