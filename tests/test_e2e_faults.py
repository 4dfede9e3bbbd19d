"""Results always belong to their spec, end to end with the real server and k6 (tests/profiles/faults.toml, on ports
8380/8381): kill -9 mid-step then re-run, an edited spec re-run, a second Ctrl-C while the step stops, a SIGTERM after
the load, a path spec whose name is taken, the environment checked before anything starts (LAB_DATA_DIR a file, a
JAVA_HOME without java), and a data directory that fills mid-load."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.lab import fingerprint, store
from harness.lab.spec import load_spec
from harness import ROOT
from test_e2e import command_name, finish, lab_children, lab_ready, port_open, processes, still_running, wait_for  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.alongside]  # two at a time (invoke test)
PROFILE = ROOT / "tests" / "profiles" / "faults.toml"
PORTS = (8380, 8381)


def invoke(data_dir: Path, *args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    env = os.environ | {"LAB_DATA_DIR": str(data_dir)} | (env or {})
    return subprocess.Popen([sys.executable, "-m", "invoke", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)


def mid_step(proc: subprocess.Popen, names: tuple[str, ...] = ("java", "k6")) -> list[int]:
    """Wait until the server and k6 (or the programs named) all run, not just a sampler's `ss`; their pids."""
    def running():
        found = {}
        for pid in lab_children(proc.pid):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            found.update({name: pid for name in names if command.endswith(name.encode())})
        return len(found) == len(names) and list(found.values())
    return wait_for(running, 90, " and ".join(names))


@pytest.fixture(scope="module")
def spec_copy(lab_ready, tmp_path_factory):  # noqa: F811
    """The profile copied where a test may edit it, run once to completion into its own data root."""
    spec = tmp_path_factory.mktemp("here") / "faults.toml"
    shutil.copy(PROFILE, spec)
    data_dir = tmp_path_factory.mktemp("faults") / "data"
    code, out = finish(invoke(data_dir, "run", str(spec)))
    assert code == 0, out
    return spec, data_dir


def test_kill_9_mid_step_leaves_no_child_and_the_rerun_cleans_up(lab_ready, tmp_path):  # noqa: F811
    proc = invoke(tmp_path, "run", str(PROFILE))
    children = processes(mid_step(proc))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_for(lambda: not still_running(children), 15, "the server and k6 to die with the harness")
    wait_for(lambda: not any(port_open(p) for p in PORTS), 15, "the server's ports to close")
    partial = [p.name for p in (tmp_path / "faults").iterdir()]
    assert partial == [f".waves.partial-{proc.pid}"], (partial, proc.stdout.read())
    code, out = finish(invoke(tmp_path, "run", str(PROFILE)))
    assert code == 0, out
    assert f"removed {tmp_path}/faults/.waves.partial-{proc.pid}" in out and f"(pid {proc.pid}, gone)" in out
    assert sorted(p.name for p in (tmp_path / "faults").iterdir()) == ["waves"]


def test_an_edited_spec_is_not_answered_with_the_old_data(spec_copy):
    spec, data_dir = spec_copy
    before = (data_dir / "faults" / "waves" / "step.json").read_text()
    original = spec.read_text()
    spec.write_text(original.replace("SLEEP_MS = 1000", "SLEEP_MS = 1200"))
    try:
        code, out = finish(invoke(data_dir, "run", str(spec)), timeout=60)
        with store.reading(data_dir):  # what `invoke list` marks a step by (it lists experiments/ only, not a path)
            edited = fingerprint.state("faults", load_spec(str(spec)).select(["waves"])[0], "local",
                                       fingerprint.tool_versions())
    finally:
        spec.write_text(original)
    assert code == 2, out
    assert "1 complete step(s)" in out and "  waves:\n    server.SLEEP_MS: 1000 → 1200" in out
    assert f"invoke run {spec} --force --step waves" in out
    assert "Traceback" not in out and "[1/1]" not in out
    assert (data_dir / "faults" / "waves" / "step.json").read_text() == before
    assert (edited.status, edited.changes) == ("stale", ["server.SLEEP_MS: 1000 → 1200"])
    code, out = finish(invoke(data_dir, "run", str(spec)), timeout=60)  # undone: up to date again
    assert code == 0 and "1 step(s) already complete" in out, out


def test_a_path_spec_with_a_taken_name_is_refused(spec_copy, tmp_path):
    _, data_dir = spec_copy
    elsewhere = tmp_path / "elsewhere" / "faults.toml"
    elsewhere.parent.mkdir()
    shutil.copy(PROFILE, elsewhere)
    code, out = finish(invoke(data_dir, "run", str(elsewhere)), timeout=60)
    assert code == 2, out
    assert f"{data_dir}/faults holds the steps of {spec_copy[0]} (waves)" in out and "Traceback" not in out


def test_a_second_ctrl_c_while_the_step_stops_still_saves_what_was_measured(lab_ready, tmp_path):  # noqa: F811
    proc = invoke(tmp_path, "run", str(PROFILE), start_new_session=True)
    children = processes(mid_step(proc))
    time.sleep(3.5)  # k6 started 10 users at once; the first waves of 2 answer at 1 s, 2 s, 3 s
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to the foreground group
    # The second goes once a child has stopped (the harness took the first: its children have sessions of their own,
    # out of reach of killpg), ~0.01 s into the ~0.23 s it takes to stop and save here. Two SIGINTs that come before
    # the harness runs its handler are one: the kernel and Python each keep one pending, as 50 ms apart was on a
    # busy CI machine.
    wait_for(lambda: len(still_running(children)) < len(children), 15, "the harness to stop a child", every=0.002)
    os.killpg(proc.pid, signal.SIGINT)
    code, out = finish(proc, timeout=90)
    assert code == 130, out
    wait_for(lambda: not still_running(children), 15, "the server and k6 to stop")
    step = tmp_path / "faults" / "waves"
    meta = json.loads((step / "step.json").read_text())
    assert meta["status"] == "failed" and "interrupted" in meta["reason"]
    requests = store.read_parquet(step / "requests.parquet", "requests")
    assert meta["requests"]["issued"] == len(requests) == 10
    assert meta["requests"]["succeeded"] == int((requests["status"] == 200).sum()) >= 2
    assert (step / "ss.parquet").exists() and (step / "server.log.gz").exists()
    assert not [p for p in (tmp_path / "faults").iterdir() if p.name.startswith(".")]
    assert "still stopping the children and saving what was measured" in out


def test_a_data_dir_that_is_a_file_is_refused_before_anything_starts(lab_ready, tmp_path):  # noqa: F811
    (tmp_path / "data").write_text("not a directory")
    code, out = finish(invoke(tmp_path / "data", "run", str(PROFILE)), timeout=60)
    assert code == 2, out
    assert f"error: LAB_DATA_DIR={tmp_path}/data is a file, not a directory" in out and "Traceback" not in out
    assert "[1/1]" not in out


@pytest.mark.parametrize("home", ["missing", "empty"])
def test_an_unusable_java_home_is_named_before_anything_starts(lab_ready, tmp_path, home):  # noqa: F811
    java_home = tmp_path / "jdk"
    if home == "empty":
        java_home.mkdir()
    code, out = finish(invoke(tmp_path / "data", "run", str(PROFILE), env={"JAVA_HOME": str(java_home)}), timeout=60)
    assert code == 2, out
    assert f"error: JAVA_HOME={java_home} " in out and "Traceback" not in out
    assert not (tmp_path / "data").exists()


def test_a_signal_after_the_load_keeps_the_measurement(lab_ready, tmp_path):  # noqa: F811
    """SIGTERM in the tail after k6 ended (two sampler ticks, then the teardown): the step waits for its judgement,
    is kept complete, and the run stops."""
    proc = invoke(tmp_path, "run", str(PROFILE))
    k6 = processes([pid for pid in mid_step(proc) if command_name(pid) == "k6"])
    wait_for(lambda: not still_running(k6), 30, "k6 to end")
    time.sleep(0.4)  # past the harness's next look at k6 (every 0.2 s); the tail lasts 2 ticks of 500 ms
    os.kill(proc.pid, signal.SIGTERM)
    code, out = finish(proc, timeout=90)
    assert code == 130, out
    meta = json.loads((tmp_path / "faults" / "waves" / "step.json").read_text())
    assert meta["status"] == "complete", meta.get("reason")
    assert meta["requests"]["succeeded"] == 10 and "interrupted: the step is kept as complete" in out


FLOOD = """title = "A data directory that fills during the load"
[defaults.system]
jvm = "quick"
[defaults.server]
SLEEP_MS = 0
SERVER_PORT = 8380
MANAGEMENT_PORT = 8381
[[step]]
id = "flood"
why = "k6 writes its CSV into a data directory that fills up"
load = { vus = 10, executor = "constant-vus", duration = "4s" }
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs as the data directory needs root")
def test_a_disk_that_fills_during_the_load_fails_the_step(lab_ready, tmp_path):  # noqa: F811
    """The data directory's disk filled (a file takes all its room) while k6 writes its CSV, freed once k6 ended:
    the step is failed, its reason naming the disk, not complete with requests missing."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", str(data_dir)], check=True)  # room for preflight
    try:
        spec = tmp_path / "flood.toml"
        spec.write_text(FLOOD)
        proc = invoke(data_dir, "run", str(spec))
        # Most of the room goes once the server runs (preflight has passed): zeroing 2 GB took longer than k6's
        # whole load on a busy CI machine. The last 64 MB go once k6 runs, written until the disk says it is full
        # (dd then ends with ENOSPC), as k6 keeps writing meanwhile.
        mid_step(proc, ("java",))
        subprocess.run(["fallocate", "-l", str(shutil.disk_usage(data_dir).free - 64 * 2**20), str(data_dir / "bulk")],
                       check=True)
        k6 = processes([pid for pid in mid_step(proc) if command_name(pid) == "k6"])
        filler = data_dir / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M", "status=none"], check=False)
        assert shutil.disk_usage(data_dir).free < 2**20
        wait_for(lambda: not still_running(k6), 60, "k6 to end")
        filler.unlink()
        (data_dir / "bulk").unlink()  # room again for the tables and step.json: what is lost is k6's output alone
        code, out = finish(proc, timeout=120)
        step = data_dir / "flood" / "flood"
        meta = json.loads((step / "step.json").read_text()) if (step / "step.json").exists() else {}
    finally:
        subprocess.run(["umount", "-l", str(data_dir)], check=True)
    assert code == 1, out  # a failed step, not a complete one nor a traceback
    assert meta.get("status") == "failed" and "disk" in meta["reason"], (meta.get("reason"), out)
    assert "Traceback" not in out
