"""Spec validation: every kind of bad input gives a message naming it, all problems at once."""
from pathlib import Path

import pytest

from harness import LabError
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
        assert load_spec(chapter, LIMITS).steps


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
    (one_step(load={"path": "hello"}), "load.path must start with '/'"),
    (one_step(load={"tool": "gatling"}), "load.tool must be one of k6, ab, wrk"),
    (one_step(load={"tool": "ab"}), "ab can only run shared-iterations"),
    (one_step(load={"tool": "ab", "executor": "shared-iterations", "iterations": 20, "request_timeout": "1500ms"}),
     "ab takes whole seconds"),
    (one_step(server={"SERVER_ADDRESS": "10.0.0.5"}), "SERVER_ADDRESS must be a loopback address"),
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


@pytest.mark.parametrize("text, ms", [("1s", 1000), ("5m", 300000), ("500ms", 500), ("1m30s", 90000), ("2h", 7200000)])
def test_durations(text, ms):
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "5", "s", "1x", "m5"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        duration_ms(text)


# ---- chapter 2's step kinds: repeat, same_as, redeploy, sampling, launch --------------------------------

def test_repeat_makes_numbered_copies():
    spec = parse({"defaults": {"load": {"vus": 10}}, "step": [{"id": "noise", "repeat": 3}, {"id": "other"}]})
    assert [s.id for s in spec.steps] == ["noise-1", "noise-2", "noise-3", "other"]
    assert problems_of(one_step(repeat=0)).count("repeat must be a whole number from 1 to 100") == 1


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
    step = load_spec("chapter2", LIMITS).select(["noise-1"])[0]
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
