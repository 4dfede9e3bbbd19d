"""End to end: a step with CPU placement, k6 on CPU 0 and the server on CPU 1, whose samples show the pinning.

A CPU-bound load (SLEEP_MS = 0, constant VUs for a few seconds) on ports 8280/8281, into a temporary data root.
The second step gives the server a quota of half a CPU (a cgroup made for the step, root only).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from harness import ROOT

pytestmark = pytest.mark.e2e

SPEC = """
title = "Placement, scaled"

[defaults.server]
SLEEP_MS = 0
SERVER_PORT = 8280
MANAGEMENT_PORT = 8281
TOMCAT_MAX_THREADS = 8

[defaults.load]
executor = "constant-vus"
vus = 16
duration = "5s"

[defaults.system]
sample_interval_ms = 250
jvm = "quick"  # where the CPU went and the quota's cap, not how much work it did: the quick start will do

[defaults.placement]
k6 = "0"
server = "1"

[[step]]
id = "pinned"

[[step]]
id = "quota"
placement = { server = { quota = 0.5 } }
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("placement")
    spec = root / "placement-scaled.toml"
    spec.write_text(SPEC)
    env = os.environ | {"LAB_DATA_DIR": str(root / "data")}
    done = subprocess.run([sys.executable, "-m", "invoke", "run", str(spec)], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert done.returncode == 0, done.stdout
    return root / "data" / "placement-scaled"


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
    step = run / "pinned"
    meta, process = load_window(step, "process")
    assert meta["status"] == "complete", meta.get("reason")
    assert meta["config"]["placement"] == {"k6": {"cpus": [0]}, "server": {"cpus": [1]}}
    applied = meta["placement"]["applied"]
    assert applied["server"]["cpus_allowed"] == "1" and applied["k6"]["cpus_allowed"] == "0"
    # Every thread of the server was seen last running on CPU 1, every thread of k6 on CPU 0, at every sample.
    assert set(applied["server"]["threads_last_cpu"]) == {"1"} and applied["server"]["samples"] >= 10
    assert set(applied["k6"]["threads_last_cpu"]) == {"0"}
    assert set(process[process.process == "server"].cpus_allowed) == {"1"}
    assert process[process.process == "k6"].cpus_allowed.iloc[-1] == "0"
    # The server's CPU time fits in CPU 1's busy time, k6's in CPU 0's (with the slack of 10 ms clock ticks).
    used, busy = rates_during_load(step)
    assert used["server"] > 0.1, (used, busy)  # it was working: SLEEP_MS = 0 under 16 VUs (on a shared machine)
    assert used["server"] <= busy[1] + 0.05 and used["k6"] <= busy[0] + 0.05, (used, busy)


def test_a_quota_throttles_the_server_to_half_a_cpu(run):
    step = run / "quota"
    meta, _ = load_window(step, "process")
    assert meta["status"] == "complete", meta.get("reason")
    quota = meta["placement"]["applied"]["server"]["quota"]
    assert (quota["cfs_quota_us"], quota["cfs_period_us"], quota["cpus"]) == (50000, 100000, 0.5)
    assert meta["placement"]["asked"]["server"] == {"cpus": "1", "quota": 0.5}
    used, busy = rates_during_load(step)
    assert 0.1 <= used["server"] <= 0.55, (used, busy)  # it had work (others share the machine), and no more than half
    leftover = [p for p in os.listdir(quota["cgroup"].rsplit("/", 1)[0]) if p == quota["cgroup"].rsplit("/", 1)[1]]
    assert not leftover, "the step's cgroup is removed after the step"
