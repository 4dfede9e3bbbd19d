"""The docker backend without a daemon: the `docker run` command, apt sources, cgroup files, clear errors."""
from pathlib import Path

import pytest

from harness import LabError
from harness.lab.samplers import parse_cgroup

from test_spec import parse, one_step
from harness.lab.backends.docker.client import container_name
from harness.lab.backends.docker.container import namespace_pid, run_argv as container_argv
from harness.lab.backends.docker.image import debian_mirror
from harness.lab.backends.docker import client as docker_client, image as docker_image
from harness.lab.services.tomcat import container as tomcat_container
from harness.lab.services.tomcat.knobs import server_env


def step_with(**sections):
    return parse(one_step(**sections)).steps[0]


def run_argv(step, image: str, nofile: int) -> list[str]:
    """The sample server's `docker run`: the container module's shared part and the tomcat kind's own options."""
    options = tomcat_container.options(step, server_env(step.server), nofile)
    return container_argv(step, "server", image, options, tomcat_container.command(step.server))


def flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_run_argv_applies_the_limits_on_the_host_network():
    step = step_with(container={"cpus": 1.5, "memory": "2g", "nofile": 10000})
    argv = run_argv(step, "img:tag", nofile=20000)
    assert argv[:2] == ["run", "--detach"] and argv[-1] == "img:tag"
    assert flag_values(argv, "--network") == ["host"]  # no bridge, no port proxy in the load path
    assert flag_values(argv, "--cpus") == ["1.5"]
    assert flag_values(argv, "--memory") == flag_values(argv, "--memory-swap") == ["2g"]  # no swap
    assert flag_values(argv, "--ulimit") == ["nofile=10000:10000"]
    assert "concurrency-lab=1" in flag_values(argv, "--label")
    assert flag_values(argv, "--name") == ["lab-t-s-server"]


def test_run_argv_without_limits_keeps_the_machines_open_files_limit():
    argv = run_argv(step_with(container={"cpus": 2}), "img", nofile=20000)
    assert flag_values(argv, "--cpus") == ["2"]
    assert "--memory" not in argv and flag_values(argv, "--ulimit") == ["nofile=20000:20000"]


def test_run_argv_passes_the_server_env_as_spring_reads_it():
    step = step_with(server={"TOMCAT_MAX_THREADS": 2, "VIRTUAL_THREADS": True})
    assert flag_values(run_argv(step, "img", 20000), "--env") == [
        "TOMCAT_MAX_THREADS=2", "VIRTUAL_THREADS=true", "JAVA_TOOL_OPTIONS=-XX:MaxRAMPercentage=25"]  # the local backend's heap rule


def test_container_names_are_valid_for_any_chapter_name():
    step = step_with()
    assert container_name(type(step)(**{**step.__dict__, "chapter": "chapter3 scaled/x"})) == "lab-chapter3-scaled-x-s"


ONE_LINE = """\
# deb http://old.example/debian bookworm main
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://one.example/debian bookworm main
"""
DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
"""


def test_mirror_from_deb822_sources_with_comments_inside_a_stanza():
    assert debian_mirror([DEB822], "bookworm") == "http://mirror.example/debian"


def test_mirror_from_one_line_sources_skips_comments_and_deb_src():
    assert debian_mirror([ONE_LINE], "bookworm") == "http://one.example/debian"


def test_disabled_stanza_and_other_suites_are_not_mirrors():
    disabled = DEB822.replace("Types: deb\n#", "Enabled: no\nTypes: deb\n#", 1)
    with pytest.raises(LabError, match="no apt source for Debian bookworm"):
        debian_mirror([disabled, "deb http://x.example/debian trixie main\n"], "bookworm")


def test_apt_sources_reads_only_what_apt_reads(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    (tmp_path / "sources.list.d" / "vendor.list.disabled").write_text("deb http://off.example/debian bookworm main\n")
    assert docker_image.apt_sources(tmp_path) == [DEB822]


CGROUP_V1 = "\n".join(f"{n}:{c}:/docker/abc" for n, c in enumerate(["cpu", "cpuacct", "cpuset", "memory", "name=systemd"], 1)) + "\n0::/docker/abc\n"


def write(path: Path, text: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for line in text.strip().splitlines():
        name, value = line.split("=", 1)
        (path / name).write_text(value.replace("\\n", "\n") + "\n")


def test_cgroup_v1_usage_and_limits(tmp_path):
    cgroup = parse_cgroup(CGROUP_V1, tmp_path)
    assert cgroup.version == 1 and cgroup.memory == tmp_path / "memory" / "docker" / "abc"
    write(cgroup.cpu, "cpu.cfs_quota_us=150000\ncpu.cfs_period_us=100000")
    write(cgroup.cpuacct, "cpuacct.usage=2500000000")
    write(cgroup.memory, f"memory.usage_in_bytes=1048576\nmemory.limit_in_bytes={768 * 2**20}\ncgroup.procs={Path('/proc/self').resolve().name}")
    usage = cgroup.usage()
    assert (usage["rss_bytes"], usage["cpu_seconds"]) == (1048576, 2.5) and usage["open_fds"] > 0
    assert cgroup.limits() == {"cgroup_version": 1, "cpu_quota_us": 150000, "cpu_period_us": 100000, "cpus": 1.5,
                               "memory_limit_bytes": 768 * 2**20}


def test_cgroup_v1_without_limits(tmp_path):
    cgroup = parse_cgroup(CGROUP_V1, tmp_path)
    write(cgroup.cpu, "cpu.cfs_quota_us=-1\ncpu.cfs_period_us=100000")
    write(cgroup.memory, "memory.limit_in_bytes=9223372036854771712")
    assert cgroup.limits()["cpus"] is None and cgroup.limits()["memory_limit_bytes"] is None


def test_cgroup_v2_usage_and_limits(tmp_path):
    cgroup = parse_cgroup("0::/system.slice/docker-abc.scope\n", tmp_path)
    assert cgroup.version == 2 and cgroup.cpu == cgroup.memory == tmp_path / "system.slice" / "docker-abc.scope"
    write(cgroup.cpu, "cpu.max=200000 100000\ncpu.stat=usage_usec 1500000\\nuser_usec 1000000\n"
                      "memory.current=4096\nmemory.max=max\ncgroup.procs=")
    assert cgroup.usage() == {"rss_bytes": 4096, "cpu_seconds": 1.5, "open_fds": 0}
    assert cgroup.limits()["cpus"] == 2.0 and cgroup.limits()["memory_limit_bytes"] is None


def test_namespace_pid_outside_a_container_is_the_pid():
    pid = int(Path("/proc/self").resolve().name)
    assert namespace_pid(pid) == pid


@pytest.mark.parametrize("which, version, labels, expected", [
    (None, None, None, "needs the docker client"),
    ("/usr/bin/docker", None, None, "no Docker daemon answers at unix:///tmp/none.sock: start a private one with `invoke dockerd`"),
    ("/usr/bin/docker", "20.10", None, "the server image concurrency-lab/sample-server:latest is missing: run `invoke image`"),
])
def test_check_gives_one_clear_error(monkeypatch, which, version, labels, expected):
    monkeypatch.setenv("DOCKER_HOST", "unix:///tmp/none.sock")
    monkeypatch.setattr(docker_client.shutil, "which", lambda name: which)
    monkeypatch.setattr(docker_client, "daemon_version", lambda env=None: version)
    monkeypatch.setattr(tomcat_container, "image_labels", lambda tag: labels)
    with pytest.raises(LabError) as err:
        tomcat_container.check_image()
    assert expected in str(err.value)


def test_check_refuses_an_image_of_another_jar(monkeypatch):
    monkeypatch.setattr(docker_client.shutil, "which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr(docker_client, "daemon_version", lambda env=None: "20.10")
    monkeypatch.setattr(tomcat_container, "image_labels", lambda tag: {tomcat_container.JAR_LABEL: "old"})
    monkeypatch.setattr(tomcat_container.process, "JAR", Path(__file__).resolve())
    monkeypatch.setattr(tomcat_container, "jar_digest", lambda: "new")
    with pytest.raises(LabError, match="holds another build of the jar"):
        tomcat_container.check_image()


def test_a_docker_host_on_another_machine_is_refused_before_anything_starts(monkeypatch):
    from harness import LabError
    from harness.lab.backends.docker.client import check_daemon, remote_host

    assert remote_host("unix:///run/concurrency-lab-docker.sock") is None
    assert remote_host("tcp://127.0.0.1:2375") is None and remote_host("tcp://localhost:2375") is None
    assert remote_host("ssh://lab@loadbox.example") == "loadbox.example"
    assert remote_host("tcp://10.0.0.7:2376") == "10.0.0.7"
    monkeypatch.setenv("DOCKER_HOST", "ssh://lab@loadbox.example")
    with pytest.raises(LabError, match=r"DOCKER_HOST names another machine \(loadbox.example\): the docker backend"):
        check_daemon()
