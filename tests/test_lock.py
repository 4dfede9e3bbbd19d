"""The locks a run and `invoke clean` take (harness.lab.lock), held by real processes: one run per data directory,
runs on different data directories side by side, and no clean of the clone's tools while any of them runs. The
tools lock is a temporary one: the clone's own may be held by a real run beside the tests."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness import ROOT, LabError
from harness.lab import lock

HOLDER = """
import sys
from pathlib import Path
from harness.lab import lock
lock.TOOLS_LOCK = Path(sys.argv[3])
with lock.holding(sys.argv[1], tools=sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def hold(tmp_path, monkeypatch):
    """Hold the locks from another process, as `what` on data directory `name`, until the test ends."""
    holders = []
    monkeypatch.setattr(lock, "TOOLS_LOCK", tmp_path / ".tools.lock")

    def holding(name: str, what: str, tools: str = "shared") -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, what, tools, str(lock.TOOLS_LOCK)], cwd=ROOT, text=True,
                                env=os.environ | {"LAB_DATA_DIR": str(tmp_path / name)},
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        holders.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield holding
    for proc in holders:
        proc.kill()
        proc.wait()


def test_runs_on_two_data_directories_share_the_tools(hold, tmp_path, monkeypatch):
    hold("a", "invoke run chapter3")
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "b"))
    with lock.holding("invoke run chapter5"):
        pass


def test_a_second_run_on_one_data_directory_is_refused_naming_the_first(hold, tmp_path, monkeypatch):
    first = hold("a", "invoke run chapter3")
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "a"))
    with pytest.raises(LabError, match=rf"another run holds {tmp_path}/a: pid {first.pid} \(invoke run chapter3, since"):
        with lock.holding("invoke run chapter5"):
            pass


def test_clean_is_refused_while_a_run_on_another_data_directory_uses_the_tools(hold, tmp_path, monkeypatch):
    run = hold("elsewhere", "invoke run chapter5")
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(LabError, match=rf"a run uses this clone's tools \({tmp_path}/.tools\): pid {run.pid} \(invoke run"):
        with lock.holding("invoke clean", tools="exclusive"):
            pass
    with lock.holding("invoke clean --clusters"):  # unused clusters only: each cluster's own lock decides
        pass


def test_a_run_is_refused_while_clean_removes_the_tools(hold, tmp_path, monkeypatch):
    clean = hold("data", "invoke clean", tools="exclusive")
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "elsewhere"))
    with pytest.raises(LabError, match=rf"`invoke clean` is removing this clone's tools: pid {clean.pid} \(invoke clean"):
        with lock.holding("invoke run chapter3"):
            pass
