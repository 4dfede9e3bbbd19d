"""Other work on the machine during a step's load (harness.lab.counters.user_cpu / outside): user-space CPU time
spent by a process outside the lab's process tree counts, the lab's own (a child's, reaped or alive) does not.
Real processes and the real /proc: an orphaned busy loop is other work, a child's busy loop is the lab's."""
from __future__ import annotations

import os
import shlex
import subprocess
import time

import pytest

from harness.lab import counters

BUSY_S = 1.0


def window(start_busy) -> dict[str, float]:
    """The outside CPU of a window in which `start_busy()` makes BUSY_S of CPU-bound work somewhere."""
    before, began = counters.user_cpu({os.getpid()}), time.monotonic()
    start_busy()
    time.sleep(BUSY_S + 0.3)
    return counters.outside(before, counters.user_cpu({os.getpid()}), time.monotonic() - began, os.cpu_count() or 1)


def busy_loop(seconds: float) -> list[str]:
    return ["timeout", str(seconds), "sh", "-c", "while :; do :; done"]


def orphan() -> None:
    """A busy loop whose parent exits at once: init adopts it, as any process outside the lab."""
    subprocess.run(["sh", "-c", shlex.join(busy_loop(BUSY_S)) + " &"], check=True)


def child() -> None:
    """A busy loop the runner itself started and waits for: the lab's."""
    subprocess.run(busy_loop(BUSY_S), check=False)


@pytest.mark.quiet  # any other work on the machine (a container, an orphan of a killed run) would count as `own`
def test_an_orphans_cpu_counts_as_other_work_and_a_childs_does_not():
    other = window(orphan)
    own = window(child)
    assert other["user_seconds"] >= 0.8 * BUSY_S, other
    assert own["user_seconds"] <= other["user_seconds"] - 0.5 * BUSY_S, (own, other)


def test_the_share_is_of_all_the_machines_cpus():
    used = counters.outside({"machine": 0.0, "lab": 0.0}, {"machine": 3.0, "lab": 1.0},
                            seconds=10, cpus=2)
    assert used == {"user_seconds": 2.0, "share": 0.1}
