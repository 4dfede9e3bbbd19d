"""Spec validation: every kind of bad input gives a message naming it, all problems at once."""
import json
from pathlib import Path

import pytest

from harness import ROOT, LabError
from harness.lab.spec import load_spec, parse_spec
from harness.lab.units import duration_ms, memory_bytes

from conftest import LIMITS


def parse(raw, **limits):
    return parse_spec("t", raw, Path("t.toml"), LIMITS | limits)


def one_step(**sections):
    return {"defaults": {"load": {"vus": 10}}, "step": [{"id": "s", **sections}]}


def problems_of(raw, **limits) -> str:
    with pytest.raises(LabError) as err:
        parse(raw, **limits)
    return str(err.value)


def test_every_committed_experiment_is_valid():
    from harness.lab.spec import chapters

    assert "smoke" in chapters()
    for chapter in chapters():
        steps = load_spec(chapter, LIMITS).steps
        assert steps
        # system.jvm = "quick" is for the tests: the book measures the JDK's own JVM
        assert [s.id for s in steps if s.system["jvm"] != "standard"] == [], chapter


def test_defaults_merge_into_steps():
    spec = parse({"defaults": {"server": {"TOMCAT_MAX_THREADS": 2}, "load": {"vus": 10}},
                  "step": [{"id": "a"}, {"id": "b", "server": {"TOMCAT_MAX_THREADS": 5}}]})
    assert [s.knob("TOMCAT_MAX_THREADS") for s in spec.steps] == [2, 5]
    assert spec.steps[0].knob("TOMCAT_ACCEPT_COUNT") == 100  # Spring's default when unset
    assert spec.steps[0].load["executor"] == "per-vu-iterations"
    assert (spec.steps[1].index, spec.steps[1].total) == (2, 2)


@pytest.mark.parametrize("raw, expected", [
    ({"bogus": 1, **one_step()}, "unknown key 'bogus'"),
    (one_step(colour="red"), "step s: unknown key 'colour'"),
    (one_step(server={"TOMCAT_MAX_THREAD": 5}), "unknown key 'TOMCAT_MAX_THREAD'"),
    (one_step(load={"vus": "10"}), "load.vus must be int, got '10'"),
    (one_step(load={"vus": True}), "load.vus must be int, got True"),
    (one_step(load={"vus": 0}), "load.vus must be ≥ 1, got 0"),
    (one_step(server={"TOMCAT_MAX_THREADS": -3}), "TOMCAT_MAX_THREADS must be ≥ 1, got -3"),
    (one_step(server={"TOMCAT_ACCEPT_COUNT": 0}), "TOMCAT_ACCEPT_COUNT must be ≥ 1"),
    (one_step(load={"executor": "ramping"}), "load.executor must be one of"),
    (one_step(load={"executor": "constant-vus"}), "load.duration is required with constant-vus"),
    (one_step(load={"duration": "1s"}), "load.duration does not apply to per-vu-iterations"),
    (one_step(load={"request_timeout": "soon"}), "load.request_timeout: 'soon' is not a duration"),
    (one_step(load={"path": "hello"}), "load.path must be a URL path: '/' then printable ASCII without spaces"),
    (one_step(load={"path": "/hello world"}), "load.path must be a URL path: '/' then printable ASCII without spaces (percent-encode the rest), got '/hello world'"),
    (one_step(load={"tool": "gatling"}), "load.tool must be one of k6, ab, wrk"),
    (one_step(load={"tool": "ab"}), "ab can only run shared-iterations"),
    (one_step(load={"tool": "ab", "executor": "shared-iterations", "iterations": 20, "request_timeout": "1500ms"}),
     "ab takes whole seconds"),
    (one_step(server={"SERVER_ADDRESS": "10.0.0.5"}), "SERVER_ADDRESS must be an IPv4 loopback address"),
    (one_step(server={"SERVER_ADDRESS": "::1"}), "SERVER_ADDRESS must be an IPv4 loopback address (127.0.0.0/8: the lab's load, samplers and URLs are IPv4), got '::1'"),
    (one_step(server={"SERVER_PORT": 8081}), "SERVER_PORT and MANAGEMENT_PORT must differ"),
    (one_step(server={"TOMCAT_MAX_THREADS": 2, "TOMCAT_MIN_SPARE_THREADS": 5}), "MIN_SPARE_THREADS 5 exceeds"),
    (one_step(findings=["F0-a"]), "findings must be a list of IDs"),
    ({"step": []}, "no [[step]] table"),
    ({"defaults": {"load": {"vus": 1}}, "step": [{"id": "a"}, {"id": "a"}]}, "id is used twice"),
    ({"defaults": {"load": {"vus": 1}}, "step": [{"id": "Not OK"}]}, "id must be lower-case"),
])
def test_bad_input_is_named(raw, expected):
    assert expected in problems_of(raw)


def test_vus_beyond_the_open_files_limit():
    assert "open-files limit is 20000" in problems_of(one_step(load={"vus": 19900}))


def test_server_connections_beyond_the_open_files_limit_unless_probing_it():
    raw = one_step(load={"vus": 15000}, server={"TOMCAT_MAX_CONNECTIONS": 50000}, system={"raise_somaxconn": True})
    assert "the server would hold up to 15000" in problems_of(raw, nofile=15000)
    raw["step"][0]["system"]["allow_fd_exhaustion"] = True
    assert "the server would hold" not in problems_of(raw, nofile=15000)  # only the k6 side remains
    assert parse(raw)  # and within this machine's 20000 it is fine


def test_accept_count_above_somaxconn():
    raw = one_step(server={"TOMCAT_ACCEPT_COUNT": 5000})
    assert "exceeds net.core.somaxconn 4096" in problems_of(raw)
    raw["step"][0]["system"] = {"raise_somaxconn": True}
    assert parse(raw).steps[0].system["raise_somaxconn"]
    assert "cannot write /proc/sys/net/core/somaxconn" in problems_of(raw, can_raise_somaxconn=False)


def test_every_service_that_asks_a_backlog_is_checked_against_somaxconn():
    proxy = {"kind": "nginx", "upstream": "server", "port": 38092, "status_port": 38093, "backlog": 5000}
    raw = one_step(services={"proxy": proxy}, load={"target": "proxy"})
    assert "services.proxy.backlog 5000 exceeds net.core.somaxconn 4096" in problems_of(raw)
    assert "TOMCAT_ACCEPT_COUNT" not in problems_of(raw)  # the sample server behind it asks its default 100
    raw["step"][0]["system"] = {"raise_somaxconn": True}
    from harness.lab.limits import backlogs
    assert sorted(backlogs(parse(raw).steps[0])) == [("proxy", 5000, "services.proxy.backlog"),
                                                     ("server", 100, "TOMCAT_ACCEPT_COUNT")]


def test_all_problems_in_one_message():
    raw = {"junk": 1, "defaults": {"load": {"vus": 0}}, "step": [{"id": "a", "server": {"NOPE": 1}}]}
    message = problems_of(raw)
    assert message.startswith("t.toml has ")
    for part in ("'junk'", "load.vus must be ≥ 1", "'NOPE'"):
        assert part in message


def test_unknown_experiment_and_step():
    with pytest.raises(LabError, match="no experiment 'nope'"):
        load_spec("nope", LIMITS)
    with pytest.raises(LabError, match="no step zzz"):
        load_spec("smoke", LIMITS).select(["zzz"])


@pytest.mark.parametrize("name", ["...", "..", ".hidden", "x" * 101])
def test_a_spec_file_whose_name_cannot_name_its_data_folder_is_refused(name, tmp_path):
    """`...toml` would be chapter `..`: its steps written outside the data folder, a step named like a chapter
    replacing that chapter's data."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text((ROOT / "experiments" / "smoke.toml").read_text())
    with pytest.raises(LabError, match="a spec's file name names its data folder"):
        load_spec(str(spec), LIMITS)


def test_a_step_id_longer_than_a_folder_name_may_be_is_refused():
    raw = {"step": [{"id": "a" * 101}]}
    with pytest.raises(LabError, match="at most 100"):
        parse_spec("t", raw, ROOT / "t.toml", LIMITS)


@pytest.mark.parametrize("text, ms", [("1s", 1000), ("5m", 300000), ("500ms", 500), ("1m30s", 90000), ("2h", 7200000)])
def test_durations(text, ms):
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "5", "s", "1x", "m5"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        duration_ms(text)


# ---- runs of a step, and chapter 2's step kinds: same_as, redeploy, sampling, launch -------------------------

def test_runs_measure_a_step_several_times_in_rounds():
    """runs = n: the step's id is its first run, <id>.<k> the others; every first run comes before any second run, so
    a step's runs are apart in time; naming a step selects all its runs."""
    spec = parse({"defaults": {"load": {"vus": 10}},
                  "step": [{"id": "noise", "runs": 3}, {"id": "other"}, {"id": "twice", "runs": 2}]})
    assert [s.id for s in spec.steps] == ["noise", "other", "twice", "noise.2", "twice.2", "noise.3"]
    assert [(s.base, s.run, s.runs) for s in spec.steps if s.base == "noise"] == [("noise", 1, 3), ("noise", 2, 3),
                                                                                ("noise", 3, 3)]
    assert [s.index for s in spec.steps] == [1, 2, 3, 4, 5, 6] and spec.steps[0].total == 6
    assert spec.steps[0].config() == spec.steps[3].config()  # the same measurement, again
    assert [s.id for s in spec.select(["noise"])] == ["noise", "noise.2", "noise.3"]
    assert [s.id for s in spec.select(["noise.2"])] == ["noise.2"]
    assert problems_of(one_step(runs=0)).count("runs must be a whole number from 1 to 100") == 1
    assert "unknown key 'repeat'" in problems_of(one_step(repeat=2))


def test_same_as_starts_from_the_other_chapters_step(tmp_path):
    (tmp_path / "source.toml").write_text(
        '[defaults.server]\nSLEEP_MS = 5000\n[[step]]\nid = "big"\nserver = { TOMCAT_MAX_THREADS = 1000 }\n'
        'load = { vus = 300, request_timeout = "20s" }\n')
    raw = {"defaults": {"server": {"SLEEP_MS": 1}, "load": {"vus": 1}},
           "step": [{"id": "copy", "same_as": "source.toml:big", "system": {"sampling": False}}]}
    step = parse_spec("t", raw, tmp_path / "t.toml", LIMITS).steps[0]
    assert step.server == {"SLEEP_MS": 5000, "TOMCAT_MAX_THREADS": 1000}  # the source's, not this chapter's defaults
    assert (step.load["vus"], step.load["request_timeout"], step.system["sampling"]) == (300, "20s", False)
    assert step.config()["same_as"] == "source.toml:big"


def test_same_as_names_a_step_that_exists(tmp_path):
    (tmp_path / "source.toml").write_text('[[step]]\nid = "big"\nload = { vus = 3 }\n')
    raw = {"step": [{"id": "a", "same_as": "source.toml:nope"}, {"id": "b", "same_as": "no-colon"},
                    {"id": "c", "same_as": "missing.toml:big"}, {"id": "d", "same_as": "t.toml:a"}]}
    (tmp_path / "t.toml").write_text("")
    with pytest.raises(LabError) as err:
        parse_spec("t", raw, tmp_path / "t.toml", LIMITS)
    text = str(err.value)
    assert "step a: same_as 'source.toml:nope': source.toml: no step nope; steps are: big" in text
    assert "same_as must be '<chapter>:<step id>'" in text
    assert "step c: same_as 'missing.toml:big': no spec file" in text
    assert "same_as must name another chapter's step" in text


def test_same_as_of_a_real_chapter_step():
    step = load_spec("chapter2", LIMITS).select(["noise.2"])[0]
    source = load_spec("chapter3", LIMITS).select(["f-10k-pv"])[0]
    assert (step.server, step.load) == (source.server, source.load)
    assert step.findings == ()


def test_redeploy_steps_take_starts_and_no_load():
    spec = parse({"defaults": {"load": {"vus": 10}}, "step": [{"id": "r", "kind": "redeploy", "starts": 4}]})
    step = spec.steps[0]
    assert (step.kind, step.starts, step.load, step.requests_asked) == ("redeploy", 4, {}, 0)
    assert step.config()["kind"] == "redeploy"
    text = problems_of({"step": [{"id": "a", "kind": "redeploy", "starts": 0}, {"id": "b", "kind": "bench"},
                                 {"id": "c", "starts": 2, "load": {"vus": 1}},
                                 {"id": "d", "kind": "redeploy", "load": {"vus": 1}}]})
    assert "starts must be a whole number from 1 to 100, got 0" in text
    assert "kind must be one of load, redeploy" in text
    assert 'starts applies to kind = "redeploy" steps only' in text
    assert "a redeploy step sends no load" in text


def test_launch_and_sampling_are_checked():
    text = problems_of(one_step(system={"launch": "graal", "sampling": "no"}))
    assert "system.launch must be one of auto, cds, jar" in text
    assert "system.sampling must be bool" in text
    assert (parse(one_step()).steps[0].system["launch"], parse(one_step()).steps[0].system["sampling"]) == ("auto", True)


def test_the_jvm_is_standard_unless_a_step_asks_for_quick():
    assert "system.jvm must be one of standard, quick, got 'fast'" in problems_of(one_step(system={"jvm": "fast"}))
    assert parse(one_step()).steps[0].system["jvm"] == "standard"
    assert parse(one_step(system={"jvm": "quick"})).steps[0].system["jvm"] == "quick"


def test_container_limits_merge_and_whole_cpus_become_numbers():
    raw = one_step(container={"cpus": 2, "memory": "2g"})
    raw["defaults"]["container"] = {"nofile": 10000, "cpus": 1}
    step = parse(raw).steps[0]
    assert step.container == {"cpus": 2.0, "memory": "2g", "nofile": 10000}
    assert step.config()["container"] == step.container


@pytest.mark.parametrize("container, expected", [
    ({"cpus": 0}, "container.cpus must be > 0 and ≤ this machine's 2 cores, got 0"),
    ({"cpus": 2.5}, "container.cpus must be > 0 and ≤ this machine's 2 cores, got 2.5"),
    ({"cpus": "2"}, "container.cpus must be float, got '2'"),
    ({"cpus": True}, "container.cpus must be float, got True"),
    ({"memory": "2 GB"}, "container.memory: '2 GB' is not a size like '2g' or '512m'"),
    ({"memory": 2048}, "container.memory must be str, got 2048"),
    ({"memory": "5m"}, "container.memory must be at least 6m"),
    ({"nofile": 20001}, "container.nofile 20001 exceeds this machine's hard open-files limit 20000"),
    ({"nofile": 0}, "container.nofile must be ≥ 1, got 0"),
    ({"swap": "1g"}, "unknown key 'swap'"),
])
def test_bad_container_limits_are_named(container, expected):
    assert expected in problems_of(one_step(container=container))


@pytest.mark.parametrize("text, size", [("2g", 2 * 2**30), ("512m", 512 * 2**20), ("768M", 768 * 2**20), ("65536k", 2**26)])
def test_memory_sizes(text, size):
    assert memory_bytes(text) == size


# ---- issue 27: what used to end in a traceback ends in a listed problem (exit 2) ----------------------------------

VUS = '[defaults.load]\nvus = {}\n[[step]]\nid = "a"\n'
POSTGRES = '[defaults.load]\nvus = 1\n[[step]]\nid = "a"\nservices.db = { kind = "postgres" }\n'
# A step no disk holds: 99 k6 processes at a rate beyond them for 23 h (~250 TB of raw k6 output).
HUGE = ('[defaults.load]\nexecutor = "constant-arrival-rate"\nrate = 2000000\nduration = "23h"\npre_allocated_vus = 99\n'
        'processes = 99\n[[step]]\nid = "a"\n')


def lab_run(spec: str, folder: Path, env: dict | None = None, as_user: str | None = None, **popen):
    """`invoke run <spec>` on a spec file in `folder` (its data there too), as `as_user` when given (via setpriv)."""
    import os
    import subprocess
    import sys

    from harness import ROOT

    (folder / "spec.toml").write_text(spec)
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "JAVA_HOME", "TMPDIR")}
    cmd = [sys.executable, "-m", "invoke", "run", str(folder / "spec.toml")]
    if as_user:
        import pwd

        user = pwd.getpwnam(as_user)
        cmd = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", *cmd]
        base["HOME"] = str(folder)
    return subprocess.run(cmd, cwd=ROOT, env=base | {"LAB_DATA_DIR": str(folder / "data")} | (env or {}),
                          capture_output="stdout" not in popen, text=True, timeout=120, **popen)


@pytest.mark.parametrize("spec, env, expected", [
    (VUS.format(0), {}, "[defaults]: load.vus must be ≥ 1, got 0"),
    (VUS.format(-5), {}, "[defaults]: load.vus must be ≥ 1, got -5"),
    (VUS.format('"two"'), {}, "[defaults]: load.vus must be int, got 'two'"),
    (VUS.format(2.5), {}, "[defaults]: load.vus must be int, got 2.5"),
    (VUS.format("true"), {}, "[defaults]: load.vus must be int, got True"),
    ('step = "x"\n', {}, "step must be [[step]] tables, got 'x'"),
    ('defaults = 3\n[[step]]\nid = "a"\n', {}, "[defaults] must be a table"),
    ('[defaults.load]\nvus = 1\n[[step]]\nid = "a"\nload = "x"\n', {}, "step a: load must be a table"),
    ('[defaults.load]\nvus = 1\n[[step]]\nid = "a"\nserver = 5\n', {}, "step a: server must be a table"),
    ('[defaults.load]\nvus = 1\n[[step]]\nwhy = "no id"\n', {}, "step #1: id is missing"),
    (VUS.format(1).replace("[[step]]", 'executor = "constant-vus"\nduration = "100000h"\n[[step]]'), {},
     "step a: load.duration '100000h' is longer than 24 h"),
    (POSTGRES, {"LAB_PG_CLUSTERS": "{folder}/spec.toml"}, "LAB_PG_CLUSTERS={folder}/spec.toml is a file, not a directory"),
    (VUS.format(1), {"LAB_DATA_DIR": ""}, "LAB_DATA_DIR is set but empty"),
    (HUGE, {}, "MB free, and these 1 step(s) may need up to"),
], ids=["vus-0", "vus-negative", "vus-text", "vus-fraction", "vus-true", "step-text", "defaults-number", "load-text",
        "server-number", "no-id", "duration-100000h", "pg-clusters-a-file", "data-dir-empty", "disk-too-small"])
def test_the_issues_inputs_are_listed_problems_not_tracebacks(spec, env, expected, tmp_path):
    done = lab_run(spec, tmp_path, {k: v.format(folder=tmp_path) for k, v in env.items()})
    assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
    assert expected.format(folder=tmp_path) in done.stderr


def test_a_postgres_step_of_another_user_than_the_clusters_owner_is_refused_before_it_starts():
    """Run as nobody: the clusters' folder (default, under the repository) and a folder holding another user's lock
    file are refused with the way out, before anything starts."""
    import os
    import shutil
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root, to run the lab as another user (nobody) than the one owning the clusters")
    folder = Path(tempfile.mkdtemp(prefix="lab-nobody-"))  # /tmp/pytest-of-root is closed to nobody
    try:
        folder.chmod(0o777)
        done = lab_run(POSTGRES, folder, as_user="nobody")
        assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
        assert "postgres/clusters is not writable" in done.stderr and "LAB_PG_CLUSTERS=" in done.stderr
        clusters = folder / "clusters"
        clusters.mkdir(mode=0o777)
        clusters.chmod(0o777)
        (clusters / "pg17.6-pair-room-1000-abc.lock").write_text("1\n")  # root's, as a root run leaves it
        done = lab_run(POSTGRES, folder, {"LAB_PG_CLUSTERS": str(clusters)}, as_user="nobody")
        assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
        assert "pair-room-1000-abc.lock belong to root; run as root, or give this run clusters of its own" in done.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_full_disk_fails_the_step_with_its_reason(tmp_path, monkeypatch):
    """Each write of a step into a disk with no space left (/dev/full gives ENOSPC on every write) is a StepFailed
    naming the file and the full disk; when not even step.json can be written, the run stops with a LabError."""
    import pandas as pd

    from harness.lab.backends.process import StepFailed
    from harness.lab.store import StepWriter

    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    writer = StepWriter("t", "s")
    for name, write in [("ss", lambda: writer.table("ss", [{"ts_ms": 1}])),
                        ("requests", lambda: writer.table("requests", pd.DataFrame({"start_ms": [1.0]}))),
                        ("server.log", lambda: writer.gzip(tmp_path / "server.log", "server.log"))]:
        (tmp_path / "server.log").write_text("started\n" * 1000)
        (writer.path / f"{name.replace('.log', '.log.gz') if name.endswith('.log') else name + '.parquet'}").symlink_to(
            "/dev/full")
        with pytest.raises(StepFailed, match=rf"could not write {name}.* the disk is full \(no space left on device\)"):
            write()
    (writer.path / "step.json").symlink_to("/dev/full")
    with pytest.raises(LabError, match=r"could not write step.json of step s \(failed\).*the disk is full"):
        writer.finish({"status": "failed"})


def test_a_reader_that_stops_early_still_gets_the_checks_error(tmp_path):
    """`invoke run … | head -1` with stdout's reader gone: the run still reaches its checks and says what stops it on
    stderr (exit 2, no traceback), and nothing is touched before the checks pass (the leftovers of dead runs are
    removed only by a run that goes on; tests/test_spec.py's next test: progress lines into a closed pipe)."""
    import os

    leftovers = [tmp_path / "data" / "spec" / f".{name}.partial-999999999" for name in ("a", "b", "c")]
    for path in leftovers:
        path.mkdir(parents=True)
    reader, writer = os.pipe()
    os.close(reader)  # the reader has gone before the first line
    try:
        done = lab_run(HUGE, tmp_path, stdout=writer, stderr=-1)
    finally:
        os.close(writer)
    assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
    assert "MB free" in done.stderr and all(path.exists() for path in leftovers)


def test_compare_into_a_reader_that_stopped_early_ends_quietly():
    """`invoke compare chapter1 | head -1`: the reader had what it wanted; no BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    from harness import ROOT

    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run([sys.executable, "-m", "invoke", "compare", "chapter1"], cwd=ROOT, stdout=writer,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(writer)
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr


@pytest.mark.parametrize("args, code", [(["list"], 2), (["compare", "chapter1"], 2), (["list", "--help"], 1)])
def test_output_redirected_into_a_full_disk_is_one_line_not_a_traceback(args, code):
    """`invoke list > out.txt` on a full disk (/dev/full fails every write): the listing is lost, and says so in one
    line on stderr, an error in a task (exit 2) and a failure in invoke's own help, printed outside any task (1).
    `compare chapter1` prints less than a buffer holds: it fails at the task's end, not at Python's exit."""
    import os
    import subprocess
    import sys

    from harness import ROOT

    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as a reader's shell has it
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=buffered)
    assert (done.returncode, done.stderr) == (code, "error: standard output could not be written (No space left on "
                                                    "device)\n")


@pytest.mark.parametrize("args", [["list"], ["compare", "chapter1"]])
def test_a_closed_output_is_one_line_for_a_command_whose_output_is_its_result(args):
    """`invoke list >&-`: Python starts with no sys.stdout, where print() drops every line without a word (exit 0).
    The listing is lost, and says so, as with a full disk."""
    import subprocess
    import sys

    from harness import ROOT

    done = subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=300, pass_fds=(),
                          preexec_fn=lambda: __import__("os").close(1))
    assert (done.returncode, done.stderr) == (2, "error: standard output could not be written (it was closed when the "
                                                 "command started)\n")


def test_progress_lines_to_a_closed_output_are_dropped_with_one_note_and_nothing_takes_its_descriptor(capsys,
                                                                                                    monkeypatch):
    """A run started with stdout closed (`invoke run … >&-`) goes on without its progress lines, and descriptor 1
    is /dev/null's: no file the run opens after takes it (a child started with the default stdout would write into
    it)."""
    import os

    from harness import ClosedOutput, GuardedOutput, say

    saved = os.dup(1)
    try:
        os.close(1)
        monkeypatch.setattr("sys.stdout", GuardedOutput(ClosedOutput()))
        say("step 1 of 2")
        say("step 2 of 2")
        assert os.path.realpath("/proc/self/fd/1") == os.devnull and not sys_stdout_isatty()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert capsys.readouterr().err == ("note: standard output could not be written (it was closed when the command "
                                       "started); going on without the progress lines\n")


def sys_stdout_isatty() -> bool:
    import sys

    return sys.stdout.isatty()  # the runner's pace of progress lines asks it


def test_progress_lines_into_a_full_disk_are_dropped_with_one_note_and_the_program_goes_on(capsys, monkeypatch):
    """say()'s promise, a step never aborted for its progress lines, holds for a full disk as for a closed pipe:
    one note on stderr, then silence, through the guarded stdout of `invoke` and a plain one alike; and with stderr
    on the full disk too (`> run.log 2>&1`), no note and no error, then or at exit (which would exit 120)."""
    from harness import GuardedOutput, say

    for guarded in (True, False):
        with open("/dev/full", "w") as full:
            monkeypatch.setattr("sys.stdout", GuardedOutput(full) if guarded else full)
            say("step 1 of 2")
            say("step 2 of 2")
        assert capsys.readouterr().err == ("note: standard output could not be written (No space left on device); "
                                           "going on without the progress lines\n")
    with open("/dev/full", "w") as full, open("/dev/full", "w") as full_too:  # closed (flushed) without an error
        monkeypatch.setattr("sys.stdout", GuardedOutput(full))
        monkeypatch.setattr("sys.stderr", full_too)
        say("step 1 of 2")
        say("step 2 of 2")


def test_progress_lines_into_a_closed_pipe_are_dropped_and_the_program_goes_on(tmp_path):
    import os
    import subprocess
    import sys

    from harness import ROOT

    reader, writer = os.pipe()
    os.close(reader)
    code = f"from harness import say\nfor n in range(50): say(str(n))\nopen({str(tmp_path / 'done')!r}, 'w').close()"
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, stdout=writer, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr, (tmp_path / "done").exists()) == (0, "", True)


def test_same_as_round_in_a_circle_is_a_problem(tmp_path):
    (tmp_path / "a.toml").write_text('[[step]]\nid = "x"\nsame_as = "b.toml:y"\n')
    (tmp_path / "b.toml").write_text('[[step]]\nid = "y"\nsame_as = "a.toml:x"\n')
    with pytest.raises(LabError, match="reached again through same_as: specs' same_as must not go round in a circle"):
        load_spec(str(tmp_path / "a.toml"), LIMITS)


def test_a_spec_nested_too_deep_to_read_is_named(tmp_path):
    (tmp_path / "deep.toml").write_text("x = " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(LabError, match=r"deep.toml: its arrays or inline tables nest too deep to read"):
        load_spec(str(tmp_path / "deep.toml"), LIMITS)


@pytest.mark.parametrize("raw, expected", [
    (one_step(load={"executor": "constant-vus", "duration": "23h", "graceful_stop": "2h"}),
     "the load would be scheduled for 25.0 h"),
    (one_step(load={"request_timeout": "0s"}), "load.request_timeout must be longer than 0"),
    (one_step(load={"processes": 100}), "load.processes must be ≤ 99, got 100"),
    (one_step(load={"iterations": 2**31}), "load.iterations must be ≤ 2,147,483,647, got 2147483648"),
    (one_step(server={"WORK_CPU_MS": float("nan")}), "server.WORK_CPU_MS must be a finite number, got nan"),
    (one_step(system={"sample_interval_ms": 10**6}), "system.sample_interval_ms must be ≤ 60,000"),
    (one_step(kind="redeploy", starts=1000), "starts must be a whole number from 1 to 100, got 1000"),
    (one_step(why=5), "step s: why must be a string, got 5"),
    ({"title": 3, **one_step()}, "top level: title must be a string, got 3"),
    ({"defaults": {"findings": "F000-a"}, "step": [{"id": "s", "load": {"vus": 1}}]}, "[defaults]: findings must be"),
    ({"step": [1, {"id": "s", "load": {"vus": 1}}]}, "step #1 must be a [[step]] table, got 1"),
    (one_step(id="s\n"), "id must be lower-case letters"),
    (one_step(load={"duration": "30s\n", "executor": "constant-vus"}), "is not a duration"),
    (one_step(same_as=["smoke", "waves"]), "same_as must be '<chapter>:<step id>'"),
    (one_step(same_as=("x" * 5000) + ".toml:a"), "no spec file"),
    (one_step(services={"db": {"kind": ["postgres"]}}), "services.db.kind must be one of"),
    (one_step(placement={"k6": "0-100000000"}), "goes past any Linux machine's CPUs"),
    ({"defaults": {"load": {"vus": 0}}, "step": [{"id": "a", "load": {"vus": 0}}, {"id": "b"}]},
     "[defaults]: load.vus must be ≥ 1"),
    ({"step": [{"id": "a", "load": {"vus": 0}}, {"id": "b"}]}, "step b: load.vus is missing"),
    ({"step": [{"id": "a", "load": {"pre_allocated_vus": 1, "vus": 1}}]}, "load.pre_allocated_vus does not apply"),
])
def test_more_values_that_used_to_crash_or_pass_are_named(raw, expected):
    assert expected in problems_of(raw)


def test_step_json_records_every_knob_defaults_included_and_the_book_reads_them():
    """A step records every knob it ran with (step.json's `knobs`), so its data reads the same after today's
    defaults change; a step recorded before `knobs` existed is read with its [server] over today's defaults."""
    from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS
    from harness.lab.steps import server_knob

    step = parse({"step": [{"id": "a", "server": {"TOMCAT_MAX_THREADS": 100}, "load": {"vus": 1}}]}).steps[0]
    knobs = step.knobs()["server"]
    assert knobs["TOMCAT_MAX_THREADS"] == 100 and knobs["kind"] == "tomcat"
    assert {k: knobs[k] for k in SERVER_DEFAULTS if k != "TOMCAT_MAX_THREADS"} == \
        {k: v for k, v in SERVER_DEFAULTS.items() if k != "TOMCAT_MAX_THREADS"}
    recorded = {"knobs": {"server": knobs | {"TOMCAT_ACCEPT_COUNT": 7}}, "config": {"server": {}}}
    assert server_knob(recorded, "TOMCAT_ACCEPT_COUNT") == 7  # what it ran with, not today's default of 100
    assert server_knob({"config": {"server": {"TOMCAT_MAX_THREADS": 5}}}, "TOMCAT_ACCEPT_COUNT") == 100


def test_a_readers_jar_run_is_read_with_what_the_step_gave_it_else_what_it_reported():
    """README's `invoke compare chapter3@shop` on a real run (tests/samples/own-server: chapter 3's a-300-pv run on the
    sample server's own jar as a reader's, from commit 9652e558): its step.json keeps the chapter's settings under
    `given` and the jar's Tomcat as reported, so a knob read as a sample server's (None) ended compare in a TypeError."""
    from harness.book.compare import compare
    from harness.lab.steps import server_knob

    folder = ROOT / "tests" / "samples" / "own-server"
    meta = json.loads((folder / "chapter3@sample-server" / "a-300-pv" / "step.json").read_text())
    assert (server_knob(meta, "SLEEP_MS"), server_knob(meta, "TOMCAT_MAX_THREADS")) == (5000, 200)  # given; reported
    assert server_knob(meta, "TOMCAT_MAX_KEEP_ALIVE_REQUESTS") is None  # neither: nobody knows
    report, _ = compare("chapter3@sample-server", folder)
    header, first = report.replace("\xa0", " ").splitlines()[:2]
    assert header.split()[-1] == "chapter3@sample-server"
    assert first.split() == ["F000-a.1a", "0", "answers:", "reproduced", "0", "answers:", "inconclusive"]


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in [*(ROOT / "experiments").glob("*.toml"),
                                                                              *(ROOT / "tests" / "profiles").glob("*.toml")]))
def test_every_spec_of_the_book_and_its_tests_is_valid(path):
    """Every spec the book or a test runs parses, whatever this machine's limits: a key removed from the spec language
    fails here, in the unit tests, not in the end-to-end test that runs the profile."""
    from harness.lab.spec import ANY_MACHINE

    assert load_spec(path, ANY_MACHINE).steps


def test_invoke_list_names_a_broken_spec_in_its_place(tmp_path, monkeypatch):
    from harness.lab import spec

    (tmp_path / "a.toml").write_text((ROOT / "tests" / "profiles" / "faults.toml").read_text())
    (tmp_path / "b.toml").write_text('[[step]]\nid = "x"\nload = { vus = -1 }\n')
    monkeypatch.setattr(spec, "EXPERIMENTS", tmp_path)
    listed = spec.list_chapters()
    assert [(name, [s.id for s in steps]) for name, steps, _ in listed] == [("a", ["waves"]), ("b", [])]
    assert listed[0][2] == "" and "vus" in listed[1][2]
