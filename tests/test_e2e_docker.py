"""End to end through the docker backend: the smoke experiment, each step in a fresh limited container.

Needs a Docker daemon and the server image (`invoke dockerd`, `invoke image --base debootstrap`).
Without them these tests skip, saying why; with LAB_REQUIRE_DOCKER=1 (CI sets it) they fail instead.
"""
from __future__ import annotations

import gzip
import json
import os
import signal
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest

from harness import EXPERIMENTS, LabError
from harness.lab import store

from test_e2e import assert_in_the_models_waves, finish, invoke, lab_children, lab_ready, measured_vs_model, port_open, wait_for  # noqa: F401
from harness.lab.backends import check as check_backend
from harness.lab.services.tomcat.container import check_image
from harness.lab.backends.docker.client import lab_containers
from harness.lab.jdk import QUICK_JVM_OPTIONS
from harness.lab.services.tomcat.knobs import JVM_OPTIONS

pytestmark = pytest.mark.e2e

# Limits a default container would not have, so seeing them in the cgroup proves they were applied.
CPUS, MEMORY, NOFILE = 1.5, 768 * 2**20, 10000
LIMITS = f'\n[defaults.container]\ncpus = {CPUS}\nmemory = "768m"\nnofile = {NOFILE}\n'


@pytest.fixture(scope="module")
def docker_ready(lab_ready):  # noqa: F811
    try:
        check_backend("docker")
        check_image()
    except LabError as err:
        if os.environ.get("LAB_REQUIRE_DOCKER") == "1":
            pytest.fail(f"LAB_REQUIRE_DOCKER=1 but the docker backend cannot run: {err}")
        pytest.skip(f"the docker backend cannot run here: {err}")


@pytest.fixture(scope="module")
def smoke_spec(tmp_path_factory) -> Path:
    """experiments/smoke.toml plus container limits, under the same name so its data lands in smoke/."""
    spec = tmp_path_factory.mktemp("spec") / "smoke.toml"
    spec.write_text((EXPERIMENTS / "smoke.toml").read_text() + LIMITS)
    return spec


@pytest.fixture(scope="module")
def docker_smoke(docker_ready, smoke_spec, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("docker") / "data"
    code, out = finish(invoke(data_dir, "run", str(smoke_spec), "--backend", "docker"))
    print(out)
    assert code == 0, out
    assert "2 complete, 0 failed" in out
    return data_dir


@pytest.fixture(scope="module")
def local_waves(smoke_measured) -> Path:
    """The local backend's waves step (the session's smoke run, conftest.py), the shape the docker backend's data
    must have."""
    return smoke_measured[0] / "smoke" / "waves"


def meta(data_dir: Path, step_id: str) -> dict:
    return json.loads((data_dir / "smoke" / step_id / "step.json").read_text())


@pytest.mark.parametrize("step_id", ["waves", "keep-alive"])
def test_the_container_had_the_requested_limits(docker_smoke, step_id):
    facts = meta(docker_smoke, step_id)
    assert facts["config"]["backend"] == "docker"
    assert facts["config"]["container"] == {"cpus": CPUS, "memory": "768m", "nofile": NOFILE}
    cgroup = facts["container"]["cgroup"]  # read from the container's own cgroup while it ran
    assert cgroup["cpus"] == CPUS and cgroup["cpu_quota_us"] == CPUS * cgroup["cpu_period_us"]
    assert cgroup["memory_limit_bytes"] == MEMORY
    assert facts["container"]["nofile"] == NOFILE  # from /proc/<jvm>/limits
    assert facts["container"]["image"].startswith("concurrency-lab/sample-server")


def test_step_data_has_the_local_backends_shape(docker_smoke, local_waves):
    in_container = docker_smoke / "smoke" / "waves"
    assert {p.name for p in in_container.iterdir()} == {p.name for p in local_waves.iterdir()}
    for table in store.LOAD_TABLES:
        local, docker = (store.read_parquet(d / f"{table}.parquet", table) for d in (local_waves, in_container))
        assert local.dtypes.to_dict() == docker.dtypes.to_dict(), table
    local_meta, docker_meta = (json.loads((d / "step.json").read_text()) for d in (local_waves, in_container))
    assert set(local_meta) | {"container"} == set(docker_meta)
    assert docker_meta["server_info"]["tomcat"] == local_meta["server_info"]["tomcat"]


def test_container_cpu_and_memory_are_sampled(docker_smoke):
    process = pd.read_parquet(docker_smoke / "smoke" / "waves" / "process.parquet")
    assert {"server", "k6", "container"} <= set(process["process"])
    container = process[process["process"] == "container"]
    assert len(container) >= 10  # every 500 ms through a 5 s step
    assert container["rss_bytes"].between(50 * 2**20, MEMORY).all()
    assert container["cpu_seconds"].is_monotonic_increasing and container["cpu_seconds"].iloc[-1] > 1


def test_completions_come_in_the_models_waves_in_a_container(docker_smoke):
    with mock.patch.dict(os.environ, {"LAB_DATA_DIR": str(docker_smoke)}):
        data = store.load("smoke")
    _, _, ends, predicted = measured_vs_model(data, "waves")
    assert_in_the_models_waves(ends, predicted)


def running_k6(parent: int) -> list[int]:
    found = []
    for pid in lab_children(parent):
        try:
            if b"k6" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def test_ctrl_c_mid_step_leaves_no_container(docker_smoke, smoke_spec):
    proc = invoke(docker_smoke, "run", str(smoke_spec), "--backend", "docker", "--step", "keep-alive", "--force",
                  start_new_session=True)
    wait_for(lambda: running_k6(proc.pid) and lab_containers(), 90, "k6 against a running container")  # mid-step
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to the foreground group
    code, out = finish(proc, timeout=90)
    assert code == 130, out
    assert "interrupted" in out
    assert lab_containers() == []
    assert not port_open(8080) and not port_open(8081)
    failed = json.loads((docker_smoke / "smoke" / ".keep-alive.failed" / "step.json").read_text())
    assert failed["status"] == "failed" and "interrupted" in failed["reason"]


# Not alongside others: beside the unit tests 7 of its 103 requests failed (its pool times out after 1 s).
def test_the_pair_room_api_and_its_database_run_in_containers(docker_ready, tmp_path_factory):
    """Chapter 5's server in the image, the pair-room jar (JPA, HikariCP), against the step's PostgreSQL in the
    lab's postgres image."""
    from harness import ROOT

    data_dir = tmp_path_factory.mktemp("docker-pair-room") / "data"
    profile = ROOT / "tests" / "profiles" / "chapter5-scaled.toml"
    code, out = finish(invoke(data_dir, "run", str(profile), "--backend", "docker", "--step", "no-open-in-view"))
    assert code == 0, out
    step = json.loads((data_dir / "chapter5-scaled" / "no-open-in-view" / "step.json").read_text())
    assert step["config"]["backend"] == "docker" and step["status"] == "complete"
    assert step["requests"]["issued"] > 0 and step["requests"]["failed"] == 0
    # the profile's system.jvm = "quick" reached the JVM in the container too (it says so on stderr)
    assert step["jvm_options"] == [*JVM_OPTIONS, *QUICK_JVM_OPTIONS]
    with gzip.open(data_dir / "chapter5-scaled" / "no-open-in-view" / "server.log.gz", "rt") as log:
        assert f"Picked up JAVA_TOOL_OPTIONS: {' '.join(step['jvm_options'])}" in log.read()
    samples = pd.read_parquet(data_dir / "chapter5-scaled" / "no-open-in-view" / "actuator.parquet")
    assert (samples.metric == "hikaricp.connections.active").any()  # the JPA stack is there, and Hikari with it
    db = step["services"]["db"]  # the database in a container of the lab's postgres image, stopped and removed
    assert db["image"].startswith("concurrency-lab/postgres:") and db["container"] and db["clone_dropped"]
    tree = pd.read_parquet(data_dir / "chapter5-scaled" / "no-open-in-view" / "db.parquet")
    assert tree[tree.metric == "pg.processes"].value.max() > 1  # its backends seen through the host's /proc
    assert lab_containers() == []


def test_a_rebuild_leaves_no_untagged_image_of_the_kinds_behind(docker_ready, tmp_path):
    """Each `invoke image` moves a kind's tags to a new image (a new jar), and the one they left, untagged, kept its
    ~150 MB in the daemon: the build removes the untagged images that carry its kind's label, and no other."""
    from harness.lab.backends.docker import image as images
    from harness.lab.backends.docker.client import docker, docker_env, image_id

    base = next((b for b in (images.DEBOOTSTRAP_BASE, images.DEFAULT_BASE) if image_id(b)), None)
    assert base, "no base image here: `invoke image --base debootstrap` made one before these tests"
    (tmp_path / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    tag, key = "concurrency-lab/test-rebuild:latest", "concurrency-lab.test-rebuild"
    other, other_key = "concurrency-lab/test-other:latest", "concurrency-lab.test-other"

    def untagged(label):
        return docker("images", "--quiet", "--no-trunc", "--filter", "dangling=true", "--filter", f"label={label}").stdout.split()

    def plain_build(value):  # the docker client alone: no clean-up of its own
        docker("build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}", "--label", f"{other_key}={value}",
               "--tag", other, str(tmp_path), env=docker_env() | {"DOCKER_BUILDKIT": "0"}, timeout=300)

    left = []
    try:
        plain_build("1")
        plain_build("2")
        left = untagged(other_key)  # another kind's, left by a build that is not the lab's
        assert len(left) == 1
        images.build([tag], tmp_path, base, {key: "1"})
        images.build([tag], tmp_path, base, {key: "2"})  # a new image: the tag moves off the first
        assert untagged(key) == [] and untagged(other_key) == left
    finally:
        for name in (tag, other, *left):
            docker("image", "rm", "--force", name, check=False)
