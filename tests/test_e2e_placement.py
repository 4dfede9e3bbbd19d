"""End to end: steps with CPU placement, k6 on CPU 0 and the server on CPU 1, whose samples show the pinning; and a
server given a quota of half a CPU (a cgroup made for the step, root only).

The steps are chapter 4 scaled down's (tests/profiles/chapter4-scaled.toml, run once for the session with its own
checks, conftest.py's chapter4_measured): 100 users of a CPU-bound endpoint, the server pinned with a quota of one
CPU ("one-core") and of half a CPU ("half-core").
"""
from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from conftest import CHAPTER4_SCALED

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def run(chapter4_measured):
    return chapter4_measured / CHAPTER4_SCALED.stem


def load_window(step_dir, table: str) -> tuple[dict, pd.DataFrame]:
    meta = json.loads((step_dir / "step.json").read_text())
    frame = pd.read_parquet(step_dir / f"{table}.parquet")
    return meta, frame


def rates_during_load(step_dir) -> tuple[dict, dict]:
    """CPU seconds per second during the load: of each process (process.parquet) and each CPU's busy time
    (cpu.parquet), each from its first and last sample inside the load's window."""
    meta, process = load_window(step_dir, "process")
    _, cpu = load_window(step_dir, "cpu")
    start, end = meta["load_started_ms"], meta["load_ended_ms"]

    def rate(rows: pd.DataFrame, column: str) -> float:
        rows = rows[(rows.ts_ms >= start) & (rows.ts_ms <= end)].sort_values("ts_ms")
        return (rows[column].iloc[-1] - rows[column].iloc[0]) / ((rows.ts_ms.iloc[-1] - rows.ts_ms.iloc[0]) / 1000)

    return ({name: rate(rows, "cpu_seconds") for name, rows in process.groupby("process")},
            {cpu_: rate(rows, "busy_seconds") for cpu_, rows in cpu.groupby("cpu")})


def test_the_samples_show_the_server_on_cpu_1_and_k6_on_cpu_0(run):
    step = run / "one-core"
    meta, process = load_window(step, "process")
    assert meta["status"] == "complete", meta.get("reason")
    assert meta["config"]["placement"] == {"k6": {"cpus": [0]}, "server": {"cpus": [1], "quota": 1.0}}
    applied = meta["placement"]["applied"]
    assert applied["server"]["cpus_allowed"] == "1" and applied["k6"]["cpus_allowed"] == "0"
    # Every thread of the server was seen last running on CPU 1, every thread of k6 on CPU 0, at every sample.
    assert set(applied["server"]["threads_last_cpu"]) == {"1"} and applied["server"]["samples"] >= 10
    assert set(applied["k6"]["threads_last_cpu"]) == {"0"}
    assert set(process[process.process == "server"].cpus_allowed) == {"1"}
    assert process[process.process == "k6"].cpus_allowed.iloc[-1] == "0"
    # The server's CPU time fits in CPU 1's busy time, k6's in CPU 0's (with the slack of 10 ms clock ticks).
    used, busy = rates_during_load(step)
    assert used["server"] > 0.1, (used, busy)  # it was working: 10 ms of CPU a request for 100 users
    assert used["server"] <= busy[1] + 0.05 and used["k6"] <= busy[0] + 0.05, (used, busy)


def test_a_quota_throttles_the_server_to_half_a_cpu(run):
    step = run / "half-core"
    meta, _ = load_window(step, "process")
    assert meta["status"] == "complete", meta.get("reason")
    quota = meta["placement"]["applied"]["server"]["quota"]
    assert (quota["cfs_quota_us"], quota["cfs_period_us"], quota["cpus"]) == (50000, 100000, 0.5)
    assert meta["placement"]["asked"]["server"] == {"cpus": "1", "quota": 0.5}
    used, busy = rates_during_load(step)
    assert 0.1 <= used["server"] <= 0.55, (used, busy)  # it had work, and no more than half
    leftover = [p for p in os.listdir(quota["cgroup"].rsplit("/", 1)[0]) if p == quota["cgroup"].rsplit("/", 1)[1]]
    assert not leftover, "the step's cgroup is removed after the step"
