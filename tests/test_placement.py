"""CPU placement: the spec's [placement] section, its errors, and how it becomes commands and docker arguments."""
import os
import signal
import subprocess
import time
from pathlib import Path
from unittest import mock

import psutil
import pytest

from harness import LabError
from harness.lab import placement
from harness.lab.backends.docker.container import run_argv
from harness.lab.placement import cpu_list, parse_cpu_list
from harness.lab.spec import parse_spec

from conftest import LIMITS


def parse(raw, **limits):
    return parse_spec("t", raw, Path("t.toml"), LIMITS | {"cpus": [0, 1]} | limits)


def problems_of(raw, **limits) -> str:
    with pytest.raises(LabError) as err:
        parse(raw, **limits)
    return str(err.value)


def spec(defaults=None, **step):
    return {"defaults": {"load": {"vus": 10}, **({"placement": defaults} if defaults is not None else {})},
            "step": [{"id": "s", **step}]}


@pytest.mark.parametrize(("text", "cpus"), [("0", [0]), ("0-2,5", [0, 1, 2, 5]), (" 1 , 0 ", [0, 1]), (1, [1]),
                                            ([1, 0, 1], [0, 1])])
def test_cpu_lists_in_taskset_notation(text, cpus):
    assert parse_cpu_list(text) == cpus


def test_cpu_list_back_to_the_kernels_notation():
    assert cpu_list([5, 0, 1, 2]) == "0-2,5"
    assert cpu_list({1}) == "1"


def test_placement_merges_per_name_and_key_and_goes_into_the_config():
    step = parse(spec({"k6": "0", "server": {"cpus": "1"}}, placement={"server": {"quota": 0.5}})).steps[0]
    assert step.placement == {"k6": {"cpus": [0]}, "server": {"cpus": [1], "quota": 0.5}}
    assert step.config()["placement"] == step.placement


def test_no_placement_is_empty_and_old_specs_keep_working():
    assert parse(spec()).steps[0].placement == {}


@pytest.mark.parametrize(("table", "expected"), [
    ({"server": "2"}, "placement.server.cpus names CPU 2, outside this machine's CPUs 0-1"),
    ({"server": "0-3"}, "placement.server.cpus names CPU 2-3, outside this machine's CPUs 0-1"),
    ({"server": "1-0"}, "the CPU range '1-0' runs backwards"),
    ({"server": "one"}, "a CPU list is a string like"),
    ({"server": True}, "a CPU list is a string like"),
    ({"server": {"cpus": "0", "shares": 2}}, "placement.server: unknown key 'shares'"),
    ({"server": {"quota": 0}}, "placement.server.quota must be a number of CPUs > 0"),
    ({"server": {"cpus": "1", "quota": 1.5}}, "placement.server.quota must be ≥ 0.01 and ≤ the 1 CPU(s)"),
    ({"k6": {"cpus": "0", "quota": 0.5}}, "a quota is for services"),
    ({"Server!": "0"}, "a process name is lower-case"),
])
def test_bad_placement_is_one_clear_error(table, expected):
    assert expected in problems_of(spec(placement=table))


def test_a_cpu_outside_the_machine_is_named_for_each_step_that_uses_it():
    text = problems_of(spec({"server": "7"}) | {"step": [{"id": "a"}, {"id": "b"}]})
    assert "has 2 problem(s)" in text and "step a: placement.server.cpus names CPU 7" in text


def test_a_quota_given_twice_is_refused():
    assert "both placement.server.quota and container.cpus" in problems_of(
        spec(placement={"server": {"quota": 1}}, container={"cpus": 1}))


def test_the_command_runs_under_taskset_inside_the_cgroup():
    step = parse(spec({"server": {"cpus": "1", "quota": 0.5}, "k6": "0"})).steps[0]
    with mock.patch.object(placement, "cpu_controller", return_value=Path("/sys/fs/cgroup/cpu")):
        server = placement.command(step, "server", ["java", "-jar", "x.jar"])
    assert server[:3] == ["sh", "-c", 'echo $$ > "$0" && exec "$@"']
    assert server[3].startswith("/sys/fs/cgroup/cpu/lab-") and server[3].endswith("-server/cgroup.procs")
    assert server[4:] == ["taskset", "--cpu-list", "1", "java", "-jar", "x.jar"]
    assert placement.command(step, "k6", ["k6", "run"]) == ["taskset", "--cpu-list", "0", "k6", "run"]
    assert placement.command(step, "other", ["x"]) == ["x"]


def test_docker_gets_cpuset_and_cpus():
    step = parse(spec({"server": {"cpus": "1", "quota": 0.5}})).steps[0]
    argv = run_argv(step, "server", "image", [], [])
    assert argv[argv.index("--cpuset-cpus") + 1] == "1" and argv[argv.index("--cpus") + 1] == "0.5"


def test_preflight_refuses_names_the_step_does_not_start():
    step = parse(spec({"nginx": "0"})).steps[0]
    with pytest.raises(LabError, match="placement names 'nginx', but the step starts no process of that name"):
        placement.preflight([step], "local")


def test_preflight_refuses_a_local_quota_without_root():
    step = parse(spec({"server": {"quota": 1}})).steps[0]
    with mock.patch.object(placement.os, "geteuid", return_value=1000), \
            pytest.raises(LabError, match="only root may create"):
        placement.preflight([step], "local")
    with mock.patch.object(placement.os, "geteuid", return_value=1000):
        placement.preflight([step], "docker")  # docker gives the container --cpus itself


def test_preflight_refuses_a_local_quota_without_a_v1_cpu_controller():
    step = parse(spec({"server": {"quota": 1}})).steps[0]
    with mock.patch.object(placement, "cpu_controller", return_value=None), \
            pytest.raises(LabError, match=r"cgroup v2 quota is not supported locally\): use the docker backend"):
        placement.preflight([step], "local")


MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
33 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 30 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
"""


def test_the_cpu_controller_is_found_in_mountinfo():
    assert placement.cpu_controller(MOUNTINFO) == Path("/sys/fs/cgroup/cpu")
    joint = MOUNTINFO.replace("/sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
                              "/sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct")
    assert placement.cpu_controller(joint) == Path("/sys/fs/cgroup/cpu,cpuacct")
    assert placement.cpu_controller("30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n") is None


def test_local_cgroups_are_made_with_the_quota_and_removed(tmp_path):
    step = parse(spec({"server": {"quota": 0.25}})).steps[0]
    with mock.patch.object(placement, "cpu_controller", return_value=tmp_path), \
            mock.patch.object(Path, "rmdir", lambda self: __import__("shutil").rmtree(self)):
        (tmp_path / "lab-999999999-server").mkdir()  # a leftover of a harness that is gone
        with placement.local_cgroups(step, ["server"]) as quotas:
            made = Path(quotas["server"]["cgroup"])
            assert quotas["server"] == {"cgroup": str(made), "cfs_quota_us": 25000, "cfs_period_us": 100000, "cpus": 0.25}
            assert not (tmp_path / "lab-999999999-server").exists()
        assert not made.exists()


def test_an_idle_cgroup_is_made_where_the_kernel_has_one_and_removed_after(tmp_path):
    (tmp_path / "cpu.idle").write_text("0")  # the controller's own knob: a kernel that has cpu.idle (5.15+)
    with mock.patch.object(placement, "cpu_controller", return_value=tmp_path), \
            mock.patch.object(placement.os, "geteuid", return_value=0), \
            mock.patch.object(Path, "rmdir", lambda self: __import__("shutil").rmtree(self)):
        with placement.idle_cgroup("render") as idle:
            [made] = tmp_path.glob("lab-*-render")
            (made / "cgroup.procs").write_text("")  # the kernel's list of its processes: none left
            assert (made / "cpu.idle").read_text() == "1"
            assert idle(["quarto", "render"]) == ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(made / "cgroup.procs"),
                                                  "quarto", "render"]
        assert not made.exists()


@pytest.mark.parametrize("machine", ["no v1 cpu controller", "not root", "a kernel before 5.15"])
def test_no_idle_cgroup_where_none_can_be_made(tmp_path, machine):
    if machine != "a kernel before 5.15":
        (tmp_path / "cpu.idle").write_text("0")
    with mock.patch.object(placement, "cpu_controller", return_value=None if machine == "no v1 cpu controller" else tmp_path), \
            mock.patch.object(placement.os, "geteuid", return_value=1000 if machine == "not root" else 0):
        with placement.idle_cgroup("render") as idle:
            assert idle is None
    assert list(tmp_path.glob("lab-*")) == []


@pytest.mark.skipif(os.geteuid() != 0 or placement.cpu_controller() is None,
                    reason="an idle cgroup needs root and a cgroup v1 cpu controller (CI has both)")
def test_a_command_started_in_the_idle_cgroup_runs_in_it_scheduled_as_idle():
    with placement.idle_cgroup("idle-test") as idle:
        [line] = [line for line in subprocess.run(idle(["cat", "/proc/self/cgroup"]), capture_output=True, text=True,
                                                  check=True).stdout.splitlines() if "cpu" in line.split(":")[1].split(",")]
        made = placement.cpu_controller() / line.split(":")[2].lstrip("/")
        assert made.name == f"lab-{os.getpid()}-idle-test" and (made / "cpu.idle").read_text().strip() == "1"
    assert not made.exists()


@pytest.mark.skipif(os.geteuid() != 0 or placement.cpu_controller() is None,
                    reason="an idle cgroup needs root and a cgroup v1 cpu controller (CI has both)")
def test_what_still_runs_in_the_idle_cgroup_is_killed_on_the_way_out():
    """An interrupted `invoke test` leaves its jobs' processes in the group, some in sessions of their own (a Jupyter
    kernel's): none outlives it."""
    with placement.idle_cgroup("idle-test") as idle:
        job = subprocess.Popen(idle(["sh", "-c", "setsid sleep 60 & exec sleep 60"]))
        made = placement.cgroup_dir("idle-test", placement.cpu_controller())
        wait_for_members = time.monotonic() + 10
        while len((made / "cgroup.procs").read_text().split()) < 2 and time.monotonic() < wait_for_members:
            time.sleep(0.05)
        members = [psutil.Process(int(pid)) for pid in (made / "cgroup.procs").read_text().split()]
        assert len(members) == 2 and job.pid in [member.pid for member in members]
    assert job.wait(timeout=5) == -signal.SIGKILL and not made.exists()
    assert psutil.wait_procs(members, timeout=5)[1] == []  # (gone, alive)


def test_mismatches_name_the_process_and_the_cpus():
    step = parse(spec({"server": "1", "k6": "0"})).steps[0]
    seen = {"server": {"cpus_allowed": "1", "threads_last_cpu": {"1": 40, "0": 2}}, "k6": {"cpus_allowed": "0-1"}}
    assert placement.mismatches(step, seen) == ["server: threads seen on CPU 0", "k6: allowed CPUs 0-1, asked 0"]
    assert placement.mismatches(step, {}) == []  # nothing sampled (sampling off): nothing to check


def test_thread_cpus_of_a_live_process():
    import os

    seen = placement.thread_cpus(os.getpid())
    assert sum(seen.values()) >= 1 and set(seen) <= os.sched_getaffinity(0)
