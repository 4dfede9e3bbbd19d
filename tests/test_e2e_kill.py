"""Faults in every kind of service, end to end (tests/profiles/kill.toml: one step per kind, real services and k6):
a service killed in the middle of its step ends the step at once as failed, naming it, and the complete step measured
before is kept; the runner killed with SIGKILL at a random point, and then the run that recovers from that, leaves
nothing behind (no process, no listening port, no cgroup, namespace, container or shared memory of the lab), and the
next run cleans up what it can and completes without measuring a complete step again. The random points come from a
fixed seed, printed, so a failure can be replayed."""
from __future__ import annotations

import json
import os
import random
import signal
import time
import tomllib
from pathlib import Path

import pytest

from harness import ROOT
from harness.lab import netns, placement
from harness.lab.units import duration_ms
from harness.lab.services import pgbinaries, pgcluster, pgshm

from test_e2e import command_line, descendants, finish, invoke, lab_ready, port_open, processes, still_running, wait_for  # noqa: F401

# The machine's only lab run (invoke test runs it beside its jobs, which start none): its checks count every
# PostgreSQL segment of the lab's database user (tests/test_e2e_postgres.py leaves some on purpose).
pytestmark = [pytest.mark.e2e, pytest.mark.sole]
PROFILE = ROOT / "tests" / "profiles" / "kill.toml"
PORTS = range(8440, 8451)
SEED = int(os.environ.get("LAB_FAULT_SEED", "27"))
LOAD_MS = duration_ms(tomllib.loads(PROFILE.read_text())["defaults"]["load"]["duration"])  # each step's load
# How each kind's process shows in its command line (the process to kill, and what must be gone after).
PROCESSES = {"tomcat": b"sample-server", "postgres": b"bin/postgres -D", "nginx": b"nginx: master", "netty": b"netty-server",
             "webflux": b"webflux-server", "spring-jar": b"webflux-server"}
DB_UID = pgbinaries.runner_uid()  # the shared memory of the lab's postgres servers is this user's
VICTIMS = {"tomcat": ("tomcat", "tomcat 'server'"), "postgres": ("postgres", "postgres 'db'"),
           "nginx": ("nginx", "nginx 'edge'"), "netty": ("nginx", "netty 'api'"), "webflux": ("webflux", "webflux 'flux'"),
           "spring-jar": ("spring-jar", "spring-jar 'server'")}  # kind → (the step it runs in, how the reason names it)


def lab_processes(root: int) -> dict[int, bytes]:
    return {pid: command_line(pid) for pid in descendants(root)}


def nothing_left(harnesses: list[int]) -> list[str]:
    """What the lab runs of these harness pids left once they are gone: only theirs, as other tests may be running
    (invoke test): the profile's ports, their cgroups, namespaces and PostgreSQL socket folders (named after the
    harness), and the shared memory of postgres servers (they run as the lab's database user)."""
    left = [f"port {p}" for p in PORTS if port_open(p)]
    controller = placement.cpu_controller()
    for pid in harnesses:
        left += [f"cgroup {c.name}" for c in (controller.glob(f"{placement.CGROUP_PREFIX}{pid}-*") if controller else [])]
        left += [f"namespace {name}" for name in sorted(netns.namespaces_of(pid))]
        left += [str(folder) for folder in pgcluster.SOCKETS_IN.glob(f"lab-pg-socket-{pid}-*")]
    left += [f"/dev/shm/{p.name}" for p in Path("/dev/shm").glob("PostgreSQL.*") if owner(p) == DB_UID]
    return left


def owner(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except FileNotFoundError:  # removed since it was listed (another test's, or a sweep)
        return None


@pytest.fixture(scope="module")
def recovered(lab_ready, tmp_path_factory):  # noqa: F811
    """The runner killed with SIGKILL at a random point, the run that recovers from it killed the same way, then a
    third run to the end: what each kill left at once, and what the last run measured again and left behind. Two
    kills for the price of about one measurement of the profile, and the second may land while its run still cleans
    up after the first. The last run's data, every step complete, is what the service kills below must never lose."""
    rng = random.Random(SEED)
    print(f"fault seed {SEED} (LAB_FAULT_SEED replays it)")
    data_dir = tmp_path_factory.mktemp("kill") / "data"
    kills, killed, complete = [], [], {}  # what each kill found; the killed runs' pids; complete steps' step.json
    for number in (1, 2):
        delay = rng.uniform(1.0, 18.0)  # anywhere from the checks to the middle of the run's third step
        proc = invoke(data_dir, "run", str(PROFILE))
        killed.append(proc.pid)
        time.sleep(delay)
        started = processes(descendants(proc.pid))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        at = f"run {number} killed after {delay:.1f} s"
        try:
            wait_for(lambda started=started: not still_running(started), 30, f"the children of the {at} to die with it")
        except AssertionError as timeout:  # name the survivors: what started them is the defect
            raise AssertionError(f"{timeout}; still running: {still_running(started)}") from None
        wait_for(lambda: not [x for x in nothing_left(killed) if not x.startswith(("/dev/shm", "/tmp/lab-pg-socket-"))], 20,
                 f"the ports of the {at} to close")
        kills.append({"at": at, "code": proc.returncode})
        for path in (data_dir / "kill").glob("*/step.json"):  # none while the kill came before the first step
            if json.loads(text := path.read_text())["status"] == "complete":
                complete.setdefault(path.parent.name, text)
    last = invoke(data_dir, "run", str(PROFILE))
    code, out = finish(last, timeout=300)
    return {"data_dir": data_dir, "kills": kills, "code": code, "out": out,
            # what was complete before a kill is not measured again
            "remeasured": [step for step, text in complete.items()
                           if (data_dir / "kill" / step / "step.json").read_text() != text],
            "hidden": sorted(p.name for p in (data_dir / "kill").glob(".*")),
            "left": nothing_left([*killed, last.pid]),
            "shm": [s for s in pgshm.segments()
                    if s.uid == DB_UID and s.nattch == 0 and pgshm.dsm_control(s.shmid) is not None]}


@pytest.fixture(scope="module")
def measured(recovered):
    """Every step complete, as the last recovery run left them: what a fault must never lose."""
    assert recovered["code"] == 0, recovered["out"]
    return recovered["data_dir"]


@pytest.mark.parametrize("kind", list(VICTIMS))
def test_a_service_killed_mid_step_ends_the_step_at_once_naming_it(measured, kind):
    step, named = VICTIMS[kind]
    before = (measured / "kill" / step / "step.json").read_text()
    proc = invoke(measured, "run", str(PROFILE), "--step", step, "--force")
    def victim_under_load():
        running = lab_processes(proc.pid)
        loading = any(cmd.split(b" ")[0].endswith(b"k6") for cmd in running.values())
        return loading and next((pid for pid, cmd in running.items() if PROCESSES[kind] in cmd), None)

    victim = wait_for(victim_under_load, 120, f"the {kind} under load")
    time.sleep(1)  # into the load
    os.kill(victim, signal.SIGKILL)
    code, out = finish(proc, timeout=120)
    assert code == 1, out
    assert f"{named} exited during the step" in out, out
    kept = measured / "kill" / step / "step.json"
    assert kept.read_text() == before  # the complete step is not replaced by the failed attempt
    attempt = json.loads((measured / "kill" / f".{step}.failed" / "step.json").read_text())
    assert attempt["status"] == "failed" and named in attempt["reason"]
    # at once: the step (teardown and saving included) ended before its load would have (killed about 1 s into
    # its 4 s, it ends about half a second later; one that ran on would end after 4 s and its teardown)
    assert attempt["ended_ms"] - attempt["load_started_ms"] < LOAD_MS, "the step ran on after its service died"
    wait_for(lambda: not nothing_left([proc.pid]), 20, "nothing of the step left")


def test_the_runner_killed_at_random_points_leaves_nothing_and_the_next_run_recovers(recovered):
    for kill in recovered["kills"]:
        assert kill["code"] == -signal.SIGKILL, f"{kill['at']}: it had ended by itself (exit code {kill['code']})"
    assert recovered["code"] == 0, f"the run after two kills:\n{recovered['out']}"
    assert not recovered["remeasured"], f"complete steps measured again: {recovered['remeasured']}"
    assert not recovered["hidden"], f"left in the data folder: {recovered['hidden']}\n{recovered['out']}"
    assert not recovered["left"], f"left after the run that recovered: {recovered['left']}"
    assert not recovered["shm"], f"orphan shared memory: {recovered['shm']}"
