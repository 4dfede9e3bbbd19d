"""Counters read twice a step, when the load starts and when it ends: what the load cost each process beyond what the
samplers follow over time. Context switches (summed over a process's threads: /proc/<pid>/status counts its main
thread only), and a quota cgroup's throttling (cpu.stat: how many of its periods ran out of quota)."""
from __future__ import annotations

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
