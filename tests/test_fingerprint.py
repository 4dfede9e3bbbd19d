"""Results belong to their spec: fingerprints, what changed, step states, and the checks made before a run starts."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import LIMITS
from harness import DATA, EXPERIMENTS, LabError
from harness.lab import fingerprint, interrupts, preflight, store
from harness.lab.spec import chapters, load_spec, parse_spec

SMOKE = {"defaults": {"server": {"SLEEP_MS": 1000}, "load": {"vus": 10}},
         "step": [{"id": "waves", "load": {"connection_reuse": False}}]}


def step_of(raw: dict, chapter: str = "t"):
    return parse_spec(chapter, raw, Path(f"{chapter}.toml"), LIMITS).steps[0]


def versions(k6="v1.8.1", ab="2.3"):
    return {"k6": k6, "ab": ab}.get


def record(data_dir: Path, step, chapter="t", status="complete", fingerprinted=True, spec="", **extra) -> dict:
    """Write a step.json the way the runner does (fingerprint and spec included unless `fingerprinted` is false)."""
    meta = {"id": step.id, "status": status, "config": fingerprint.step_config(step, "local"),
            "versions": {"k6": "v1.8.1"}, "files": {}} | extra  # no tables: these tests are about the configuration
    if fingerprinted:
        fingerprint.stamp(meta, step, spec)
    meta = fingerprint.normal(meta)
    folder = data_dir / chapter / step.id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "step.json").write_text(json.dumps(meta))
    return meta


@pytest.mark.parametrize("chapter", [c for c in chapters() if (DATA / c).is_dir()])
def test_committed_data_is_up_to_date_with_its_spec(chapter, monkeypatch):
    """Every committed step is complete, intact and still its spec's: measured with today's configuration, load tool,
    scripts and inputs (the services' code and data files)."""
    monkeypatch.setenv("LAB_DATA_DIR", str(DATA))
    for step in load_spec(chapter).steps:
        state = fingerprint.state(chapter, step, None, versions())
        assert state.status == "complete", (step.id, state)


@pytest.mark.parametrize("chapter", [c for c in chapters() if (DATA / c).is_dir()])
def test_committed_data_comes_from_committed_code(chapter):
    """A step measured from uncommitted code (git_commit ending in +dirty) cannot be checked out by anyone."""
    dirty = [p.parent.name for p in sorted((DATA / chapter).glob("*/step.json"))
             if json.loads(p.read_text()).get("git_commit", "").endswith("+dirty")]
    assert not dirty, f"{chapter}: measured from uncommitted code: {', '.join(dirty)}"


def test_an_edited_knob_makes_the_step_stale_naming_the_key(data_dir):
    record(data_dir, step_of(SMOKE))
    edited = step_of(SMOKE | {"defaults": {"server": {"SLEEP_MS": 2000}, "load": {"vus": 10}}})
    state = fingerprint.state("t", edited, None, versions())
    assert state.status == "stale"
    assert state.changes == ["server.SLEEP_MS: 1000 → 2000"]
    assert fingerprint.state("t", step_of(SMOKE), None, versions()).status == "complete"


def test_keys_a_step_recorded_before_they_existed_count_only_off_their_default(data_dir):
    step = step_of(SMOKE)
    meta = record(data_dir, step, fingerprinted=False)
    for key in ("sampling", "launch"):  # chapter 1's steps were recorded before these system keys
        del meta["config"]["system"][key]
    del meta["config"]["container"]
    (data_dir / "t" / "waves" / "step.json").write_text(json.dumps(meta))
    not_vouched = fingerprint.input_changes(None, {})  # no fingerprint: its inputs were not recorded
    assert fingerprint.state("t", step, None, versions()).changes == not_vouched
    unsampled = step_of(SMOKE | {"step": [{"id": "waves", "system": {"sampling": False}, "load": {"connection_reuse": False}}]})
    assert fingerprint.state("t", unsampled, None, versions()).changes == ["system.sampling: (unset) → false", *not_vouched]


def test_an_edited_input_makes_the_step_stale_naming_the_service(data_dir, tmp_path):
    """A database's SQL file edited since the step ran: stale, naming the service (its knobs did not change)."""
    import shutil

    sql = tmp_path / "sql"
    shutil.copytree(Path(__file__).parent / "samples" / "postgres", sql)
    raw = {"defaults": {"load": {"vus": 1}, "services": {"db": {"kind": "postgres", "template": "standin",
                                                               "sql_dir": str(sql), "port": 38199}}},
           "step": [{"id": "waves"}]}
    step = parse_spec("t", raw, Path("t.toml"), LIMITS).steps[0]
    record(data_dir, step)
    assert fingerprint.state("t", step, None, versions()).status == "complete"
    (sql / "standin-data.sql").write_text((sql / "standin-data.sql").read_text() + "\n-- edited\n")
    state = fingerprint.state("t", step, None, versions())
    assert state.status == "stale" and state.changes == ["inputs: db.cluster changed since the step ran"]


def test_new_sections_are_compared_key_by_key():
    old = {"server": {}, "services": {"proxy": {"kind": "nginx", "workers": 1}}, "placement": {"k6": [0]}}
    new = {"server": {}, "services": {"proxy": {"kind": "nginx", "workers": 2}}, "placement": {"k6": [1]}}
    assert fingerprint.config_changes(old, new) == ["placement.k6: [0] → [1]", "services.proxy.workers: 1 → 2"]
    assert fingerprint.config_changes(old, old) == []
    assert fingerprint.config_changes({"server": {}}, {"server": {}, "services": {}, "placement": {}}) == []


def test_the_fingerprint_covers_config_tool_scripts_and_record_format():
    step = step_of(SMOKE)
    meta = fingerprint.of(step, fingerprint.step_config(step, "local"), "k6", "v1.8.1")
    parts = meta["parts"]
    assert parts["load_tool"] == "k6 v1.8.1" and parts["record"] == "requests"
    assert set(parts["scripts"]) == {p.relative_to(EXPERIMENTS.parent).as_posix() for p in (EXPERIMENTS / "k6").rglob("*") if p.is_file()}
    assert len(meta["sha256"]) == 64
    again = fingerprint.of(step, fingerprint.normal(fingerprint.step_config(step, "local")), "k6", "v1.8.1")
    assert again == meta  # the same after step.json's JSON round trip
    other = fingerprint.of(step, fingerprint.step_config(step, "docker"), "k6", "v1.8.1")
    assert other["parts"]["config"] != parts["config"]


def test_a_changed_load_script_or_tool_version_makes_the_step_stale(data_dir, tmp_path, monkeypatch):
    scripts = tmp_path / "experiments" / "k6"
    scripts.mkdir(parents=True)
    (scripts / "spike.js").write_text("// v1")
    monkeypatch.setattr(fingerprint, "SCRIPTS_DIR", scripts)
    step = step_of(SMOKE)
    record(data_dir, step)
    assert fingerprint.state("t", step, None, versions()).status == "complete"
    assert fingerprint.state("t", step, None, versions(k6="v1.9.0")).changes == ["load tool: k6 v1.8.1 → k6 v1.9.0"]
    assert fingerprint.state("t", step, None, versions(k6=None)).status == "complete"  # k6 missing: not judged by it
    (scripts / "spike.js").write_text("// v2")
    (scripts / "lab.js").write_text("//")
    assert fingerprint.state("t", step, None, versions()).changes == [
        "experiments/k6/lab.js: added since the step ran", "experiments/k6/spike.js: edited since the step ran"]


def test_another_backend_is_another_configuration(data_dir):
    step = step_of(SMOKE)
    record(data_dir, step)
    assert fingerprint.state("t", step, "local", versions()).status == "complete"
    assert fingerprint.state("t", step, "docker", versions()).changes == ['backend: "local" → "docker"']


def test_states_tell_complete_stale_failed_and_never_run_apart(data_dir):
    steps = parse_spec("t", {"defaults": {"load": {"vus": 2}}, "step": [{"id": i} for i in "abcd"]},
                       Path("t.toml"), LIMITS).steps
    record(data_dir, steps[0])
    record(data_dir, steps[1], status="failed", reason="the server exited during the step")
    record(data_dir, step_of({"defaults": {"load": {"vus": 3}}, "step": [{"id": "c"}]}))
    failed = data_dir / "t" / ".a.failed"
    failed.mkdir()
    (failed / "step.json").write_text(json.dumps({"status": "failed", "reason": "interrupted by the user"}))
    states = {s.id: fingerprint.state("t", s, None, versions()) for s in steps}
    assert {k: v.status for k, v in states.items()} == {"a": "complete", "b": "failed", "c": "stale", "d": "never run"}
    assert states["a"].failed_attempt == "interrupted by the user"
    assert states["b"].reason == "the server exited during the step"
    assert states["c"].changes == ["load.vus: 3 → 2"]


def test_a_run_refuses_stale_steps_naming_the_changes_and_the_fix(data_dir):
    steps = parse_spec("t", {"defaults": {"load": {"vus": 2}}, "step": [{"id": i} for i in "abc"]},
                       Path("t.toml"), LIMITS).steps
    record(data_dir, steps[0])
    record(data_dir, step_of({"defaults": {"load": {"vus": 3}}, "step": [{"id": "b"}]}))
    with pytest.raises(LabError) as err:
        fingerprint.todo("t", "t", steps, "local", force=False)
    text = str(err.value)
    assert "1 complete step(s)" in text and "  b:\n    load.vus: 3 → 2" in text
    assert "`invoke run t --force --step b`" in text
    assert [s.id for s in fingerprint.todo("t", "t", steps, "local", force=True)] == ["a", "b", "c"]
    record(data_dir, steps[1])
    assert [s.id for s in fingerprint.todo("t", "t", steps, "local", force=False)] == ["c"]


# ---- before anything starts ------------------------------------------------------------------------

def test_a_data_dir_that_is_a_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "file"))
    with pytest.raises(LabError, match=rf"LAB_DATA_DIR={tmp_path}/file is a file, not a directory"):
        preflight.check_data_root()
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "file" / "data"))
    with pytest.raises(LabError, match="cannot be created: .*/file is a file"):
        preflight.check_data_root()
    monkeypatch.setenv("LAB_DATA_DIR", "/proc/sys/data")  # read-only, even for root
    with pytest.raises(LabError, match="LAB_DATA_DIR=/proc/sys/data is not writable"):
        preflight.check_data_root()
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "new" / "data"))
    assert preflight.check_data_root() == tmp_path / "new" / "data" and not (tmp_path / "new").exists()


def test_paths_from_home_are_expanded_where_a_shell_did_not(tmp_path, monkeypatch):
    """A quoted "~/…" reaches the lab as is: it means the home folder, not a folder named ~ in the working one."""
    from harness.lab.services import pgcluster
    from harness.lab.spec import spec_path

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LAB_DATA_DIR", "~/lab-data")
    monkeypatch.setenv("LAB_PG_CLUSTERS", "~/clusters")
    (tmp_path / "mine.toml").write_text("")
    assert preflight.check_data_root() == tmp_path / "lab-data"
    assert pgcluster.clusters_root() == tmp_path / "clusters"
    assert spec_path("~/mine.toml") == tmp_path / "mine.toml"
    monkeypatch.setenv("LAB_DATA_DIR", "~no-such-user-here/lab-data")  # left as is, then named
    with pytest.raises(LabError, match="starts with ~no-such-user-here, and no user of that name has a home folder"):
        preflight.check_data_root()


def test_a_path_spec_may_not_mix_its_steps_into_another_specs_data(data_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "smoke.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((EXPERIMENTS / "smoke.toml").read_text())
    spec = load_spec(str(elsewhere), LIMITS)
    preflight.check_spec_home(spec)  # nothing there yet
    record(data_dir, spec.steps[0], chapter="smoke", fingerprinted=False)  # as committed: experiments/smoke.toml's
    with pytest.raises(LabError) as err:
        preflight.check_spec_home(spec)
    assert f"{data_dir}/smoke holds the steps of experiments/smoke.toml (waves)" in str(err.value)
    assert "rename smoke.toml" in str(err.value)
    preflight.check_spec_home(load_spec("smoke", LIMITS))  # the experiment itself is at home
    record(data_dir, spec.steps[0], chapter="smoke", spec=preflight.spec_file(elsewhere))
    preflight.check_spec_home(spec)  # now its own


@pytest.mark.quiet  # its sweep is machine-wide: not while other runs are killed and checked (invoke test's quiet phase)
def test_leftovers_of_dead_runs_are_removed_and_a_live_runs_kept(data_dir, capsys):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        for name in (f".waves.partial-{dead.pid}", f".waves.partial-{live.pid}", f"..waves.failed.old-{dead.pid}"):
            (data_dir / "t" / name).mkdir(parents=True)
        (data_dir / "t" / "waves").mkdir()
        (data_dir / "t" / ".waves.failed").mkdir()  # its successor got into place: the old one is garbage
        assert {p.name for p, _ in store.leftovers("t")} == {f".waves.partial-{dead.pid}", f".waves.partial-{live.pid}",
                                                              f"..waves.failed.old-{dead.pid}"}
        preflight.clean_leftovers("t")
        assert sorted(p.name for p in (data_dir / "t").iterdir()) == [".waves.failed", f".waves.partial-{live.pid}", "waves"]
        out = capsys.readouterr().out
        assert f"belongs to a run still going (pid {live.pid}); left alone" in out and "removed" in out
        (data_dir / "t" / f".other.old-{dead.pid}").mkdir()  # killed between moving `other` aside and renaming its successor
        preflight.clean_leftovers("t")
        assert (data_dir / "t" / "other").is_dir() and "restored" in capsys.readouterr().out
    finally:
        live.kill()
        live.wait()


def test_java_home_without_java_is_named(tmp_path, monkeypatch):
    from harness.lab.services.tomcat import KIND as tomcat
    from harness.lab.jdk import java_command

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nope"))
    with pytest.raises(LabError, match=f"JAVA_HOME={tmp_path}/nope is not a directory"):
        java_command()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(LabError, match=f"JAVA_HOME={tmp_path} has no executable bin/java"):
        tomcat.check_tools("local")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\"' >&2\n")
    (tmp_path / "bin" / "java").chmod(0o755)
    with pytest.raises(LabError, match=rf"\(JAVA_HOME={tmp_path}\) is Java 11; the sample server needs JDK 17"):
        tomcat.check_tools("local")


# ---- interrupts --------------------------------------------------------------------------------------

def _signal_soon(sig=signal.SIGINT):
    os.kill(os.getpid(), sig)
    time.sleep(0.05)  # the handler runs between bytecodes of the main thread


def test_a_second_interrupt_does_not_abandon_the_save():
    saved = []
    with interrupts.handled():
        with pytest.raises(KeyboardInterrupt):
            try:
                _signal_soon()
            finally:
                with interrupts.saving():
                    _signal_soon()  # 50 ms later: noted, not raised
                    _signal_soon(signal.SIGTERM)
                    saved.append("tables")
                saved.append("step.json")
    assert saved == ["tables", "step.json"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped exception, as Python drops it
def test_an_interrupt_python_drops_is_raised_again_where_the_run_waits():
    """A signal handler's exception raised inside a callback whose errors Python ignores (here a __del__; in a run,
    logging's hook after every fork) is dropped with "Exception ignored in …": check() raises it again."""
    class Dropping:
        def __del__(self):
            _signal_soon()

    with interrupts.handled():
        Dropping()  # the Ctrl-C lands in __del__, and Python drops what the handler raised
        with pytest.raises(interrupts.Interrupted, match="Ctrl-C"):
            interrupts.check()
        interrupts.seen()  # the run caught it
        interrupts.check()  # nothing left to raise


def test_an_interrupt_during_a_save_waits_for_it_then_stops_the_run():
    saved, before = [], signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN if started in the background
    with interrupts.handled():
        with pytest.raises(KeyboardInterrupt):
            with interrupts.saving():
                _signal_soon()
                saved.append("tables")
            saved.append("never")
    assert saved == ["tables"]
    assert signal.getsignal(signal.SIGINT) is before  # the run's handler is gone


def test_invoke_list_marks_each_state(data_dir):
    smoke = {s.id: s for s in load_spec("smoke", LIMITS).steps}
    record(data_dir, smoke["waves"], chapter="smoke")
    record(data_dir, smoke["keep-alive"], chapter="smoke", status="failed", reason="the server exited during the step")
    (data_dir / "smoke" / ".waves.partial-999999999").mkdir()
    stale = load_spec("chapter1", LIMITS).steps[0]
    record(data_dir, stale, chapter="chapter1")
    meta_path = data_dir / "chapter1" / stale.id / "step.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["server"]["TOMCAT_MAX_THREADS"] = 7
    meta_path.write_text(json.dumps(meta))
    out = subprocess.run([sys.executable, "-m", "invoke", "list"], cwd=Path(__file__).parent.parent, text=True,
                         capture_output=True, env=os.environ | {"LAB_DATA_DIR": str(data_dir)}).stdout
    lines = out.splitlines()
    assert lines[0] == "(✓ complete, ! stale, ✗ failed, ✗ broken; blank: never run)"
    assert any(line.startswith("  ✓ waves ") for line in lines)
    assert any(line.startswith("  ✗ keep-alive ") for line in lines) and "      failed: the server exited during the step" in lines
    assert any(line.startswith(f"  ! {stale.id} ") for line in lines)
    assert f"      server.TOMCAT_MAX_THREADS: 7 → {stale.server['TOMCAT_MAX_THREADS']}" in lines
    assert any(line.startswith("    ") and "k6-c10 " in line for line in lines)  # never run: no mark
    assert "  half-written .waves.partial-999999999 (pid 999999999)" in out
