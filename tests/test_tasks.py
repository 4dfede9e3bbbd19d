"""The command line's own edges: an option's value that cannot be used ends in one line naming it (exit 2), before
anything starts, never in a traceback."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness import ROOT, LabError
from harness.lab import bench
from harness.lab.backends.process import StepFailed


@pytest.mark.parametrize(("args", "said"), [
    (["startup", "--starts", "abc"], "--starts 'abc' is not a whole number"),
    (["startup", "--starts", "0"], "--starts 0: at least 1"),
    (["startup", "--starts", "99999999999999999999"], "--starts 99999999999999999999: at most 100"),  # as a spec's
    (["serve", "--port", "abc"], "--port 'abc' is not a whole number"),
    (["serve", "--port", "-3"], "--port -3: at least 0"),
])
def test_an_unusable_number_is_named_in_one_line(args, said):
    done = subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
    assert f"error: {said}" in done.stderr


def test_a_start_that_fails_outside_a_run_is_one_line_naming_which(monkeypatch):
    """A run keeps a failed start as its step's reason; `invoke startup` has no step, so it says it (a port taken
    between the check and the start: another server answered)."""
    def second_start_fails(step, backend, workdir, rows, progress=None):
        rows.append({"startup_ms": 900})
        raise StepFailed("another server (pid 1) answers on http://127.0.0.1:8081, not the one started (pid 2)")

    monkeypatch.setattr(bench, "redeploys", second_start_fails)
    monkeypatch.setattr(bench, "check_services", lambda steps, backend: None)
    with pytest.raises(LabError, match=r"^start 2 of 3 failed: another server \(pid 1\) answers"):
        bench.redeploy_times(3)


def test_a_terminal_without_unicode_gets_the_list_with_its_marks_replaced():
    env = {"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "invoke", "list"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
    assert "?" in done.stdout and "chapter1" in done.stdout
