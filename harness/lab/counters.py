"""Counters read twice a step, when the load starts and when it ends: what the load cost each process beyond what the
samplers follow over time. Context switches (summed over a process's threads: /proc/<pid>/status counts its main
thread only), and a quota cgroup's throttling (cpu.stat: how many of its periods ran out of quota)."""
from __future__ import annotations

import os
from pathlib import Path

from harness.lab.kernel import CLOCK_TICKS, parse_proc_stat, proc_stat_fields


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

BUSY_SHARE_NOTED = 0.10  # a tenth of the machine's CPUs: enough to move a step whose server or load tool is CPU-bound


def _proc_stat(pid: str) -> tuple[int, int] | None:
    """(parent pid, user ticks of the process and of its reaped children: utime + cutime)."""
    try:
        fields = proc_stat_fields(pid)
    except OSError:  # ended meanwhile
        return None
    return int(fields[1]), int(fields[11]) + int(fields[13])


def user_cpu(roots: set[int]) -> dict[str, float]:
    """The machine's user-space CPU seconds (user + nice, all CPUs) and those of the lab: the processes `roots` (the
    runner, each service, each load tool: a container's processes are not the runner's children) and all their
    descendants, with the children they reaped. User time only: the kernel's share of the load (softirqs of the
    loopback traffic, ksoftirqd) is not any process's own and would read as other work."""
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
    machine = sum(cpu["user_seconds"] for cpu in parse_proc_stat(Path("/proc/stat").read_text()))  # user + nice
    return {"machine": machine, "lab": sum(stats[pid][1] for pid in lab) / CLOCK_TICKS}


def outside(start: dict[str, float], end: dict[str, float], seconds: float, cpus: int) -> dict[str, float]:
    """User-space CPU time spent outside the lab between two user_cpu readings, and its share of the machine."""
    other = max(0.0, (end["machine"] - start["machine"]) - (end["lab"] - start["lab"]))
    return {"user_seconds": round(other, 2), "share": round(other / (seconds * cpus), 3) if seconds > 0 else 0.0}
