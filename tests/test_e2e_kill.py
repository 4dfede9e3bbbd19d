"""Faults in every kind of service, end to end (tests/profiles/kill.toml: one step per kind, real services and k6):
a service killed in the middle of its step ends the step at once as failed, naming it, and the complete step measured
before is kept; the runner killed with SIGKILL at a random point leaves nothing behind (no process, no listening
port, no cgroup, namespace, container or shared memory of the lab), and the next run cleans up what it can and
completes. The random points come from a fixed seed, printed, so a failure can be replayed."""
from __future__ import annotations

import json
import os
import random
import signal
import shutil
import time
import tomllib
from pathlib import Path

import pytest

from harness import ROOT
from harness.lab import netns, placement
from harness.lab.units import duration_ms
from harness.lab.services import pgshm

from test_e2e import descendants, finish, invoke, lab_ready, port_open, wait_for  # noqa: F401

pytestmark = pytest.mark.e2e
PROFILE = ROOT / "tests" / "profiles" / "kill.toml"
PORTS = range(8440, 8451)
SEED = int(os.environ.get("LAB_FAULT_SEED", "27"))
LOAD_MS = duration_ms(tomllib.loads(PROFILE.read_text())["defaults"]["load"]["duration"])  # each step's load
# How each kind's process shows in its command line (the process to kill, and what must be gone after).
PROCESSES = {"tomcat": b"sample-server", "postgres": b"bin/postgres -D", "nginx": b"nginx: master", "netty": b"netty-server",
             "webflux": b"webflux-server", "spring-jar": b"webflux-server"}
VICTIMS = {"tomcat": ("tomcat", "tomcat 'server'"), "postgres": ("postgres", "postgres 'db'"),
           "nginx": ("nginx", "nginx 'edge'"), "netty": ("nginx", "netty 'api'"), "webflux": ("webflux", "webflux 'flux'"),
           "spring-jar": ("spring-jar", "spring-jar 'server'")}  # kind → (the step it runs in, how the reason names it)


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def lab_processes(root: int) -> dict[int, bytes]:
    return {pid: command_line(pid) for pid in descendants(root)}


def nothing_left(data_dir: Path) -> list[str]:
    """What of the lab still exists once its harness is gone."""
    left = [f"port {p}" for p in PORTS if port_open(p)]
    controller = placement.cpu_controller()
    left += [f"cgroup {c.name}" for c in (controller.glob(f"{placement.CGROUP_PREFIX}*") if controller else [])]
    left += [f"namespace {n}" for n in netns.leftovers()]
    left += [f"/dev/shm/{p.name}" for p in Path("/dev/shm").glob("PostgreSQL.*")]
    return left


@pytest.fixture(scope="module")
def recovered(lab_ready, tmp_path_factory):  # noqa: F811
    """The runner killed with SIGKILL at a random point, then run again to the end, twice from nothing: per round,
    what the kill left, how the next run went and what it left. The last round's data, every step complete, is what
    the service kills below must never lose (so the suite measures the profile twice, not three times)."""
    rng = random.Random(SEED)
    print(f"fault seed {SEED} (LAB_FAULT_SEED replays it)")
    data_dir = tmp_path_factory.mktemp("kill") / "data"
    rounds = []
    for round_ in range(2):
        if (data_dir / "kill").exists():  # start again from nothing
            shutil.rmtree(data_dir / "kill")
        delay = rng.uniform(1.0, 18.0)  # anywhere from the checks to the middle of the third step
        proc = invoke(data_dir, "run", str(PROFILE))
        time.sleep(delay)
        started = lab_processes(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_for(lambda started=started: not any(command_line(p) for p in started), 30,
                 f"the children of a runner killed after {delay:.1f} s to die with it (round {round_})")
        wait_for(lambda: not [x for x in nothing_left(data_dir) if not x.startswith("/dev/shm")], 20,
                 f"the ports of a runner killed after {delay:.1f} s to close")
        complete = {p.parent.name: p.read_text() for p in (data_dir / "kill").glob("*/step.json")} \
            if (data_dir / "kill").exists() else {}
        code, out = finish(invoke(data_dir, "run", str(PROFILE)), timeout=300)
        rounds.append({
            "at": f"round {round_}, runner killed after {delay:.1f} s", "code": code, "out": out,
            # what was complete before the kill is not measured again
            "remeasured": [step for step, text in complete.items() if json.loads(text)["status"] == "complete"
                           and (data_dir / "kill" / step / "step.json").read_text() != text],
            "hidden": sorted(p.name for p in (data_dir / "kill").glob(".*")),
            "left": nothing_left(data_dir),
            "shm": [s for s in pgshm.segments() if s.nattch == 0 and pgshm.dsm_control(s.shmid) is not None]})
    return {"data_dir": data_dir, "rounds": rounds}


@pytest.fixture(scope="module")
def measured(recovered):
    """Every step complete, as the last recovery run left them: what a fault must never lose."""
    last = recovered["rounds"][-1]
    assert last["code"] == 0, f"{last['at']}:\n{last['out']}"
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
    wait_for(lambda: not nothing_left(measured), 20, "nothing of the step left")


def test_the_runner_killed_at_random_points_leaves_nothing_and_the_next_run_recovers(recovered):
    for found in recovered["rounds"]:
        at = found["at"]
        assert found["code"] == 0, f"{at}:\n{found['out']}"
        assert not found["remeasured"], f"{at}: complete steps measured again: {found['remeasured']}"
        assert not found["hidden"], f"{at}: left in the data folder: {found['hidden']}\n{found['out']}"
        assert not found["left"], f"{at}: left after the next run: {found['left']}"
        assert not found["shm"], f"{at}: orphan shared memory: {found['shm']}"
