"""Chapter 2 scaled down, end to end: redeploy steps, a step copied from chapter 3, samplers off, the analysis."""
import pytest

from harness import ROOT
from harness.lab.spec import load_spec

from test_e2e import profile_run
from harness.book.chapters.ch2_lab import memory_table, noise_summary, noise_table, start_table
from harness.book.chapters.ch2_checks import check_constant_vus, check_spike, checks
from harness.book.chapters.ch3.compat import f000_f

pytestmark = pytest.mark.e2e
PROFILE = ROOT / "tests" / "profiles" / "chapter2-scaled.toml"


@pytest.fixture(scope="module")
def chapter2(tmp_path_factory):
    with profile_run(tmp_path_factory, PROFILE) as data:
        yield data


def test_every_step_completes(chapter2):
    assert sorted(chapter2.steps) == sorted(s.id for s in load_spec(str(PROFILE)).steps)


def test_redeploy_steps_time_each_start_with_the_launch_asked_for(chapter2):
    for step, launch in (("redeploy-cds", "cds"), ("redeploy-jar", "jar")):
        starts = chapter2.startup[chapter2.startup.step == step]
        assert list(starts["start"]) == [1, 2]
        assert starts["startup_ms"].between(200, 90_000).all()
        assert (starts["rss_bytes"] > 50 * 2**20).all()  # a JVM with Spring in it
        meta = chapter2.steps[step]
        assert (meta["launch"], meta["requests"]["issued"], meta["config"]["kind"]) == (launch, 0, "redeploy")
        assert meta["versions"]["spring_boot"] and meta["startup_ms"] == pytest.approx(starts["startup_ms"].median(), abs=1)
    assert (chapter2.requests.step.str.startswith("redeploy")).sum() == 0


def test_copied_steps_run_chapter3s_configuration(chapter2):
    source = load_spec(str(ROOT / "tests" / "profiles" / "chapter3-scaled.toml")).select(["a-waves"])[0]
    for step in ("noise-1", "noise-2", "unsampled-1"):
        config = chapter2.steps[step]["config"]
        assert config["same_as"] == "chapter3-scaled.toml:a-waves"
        assert config["server"]["TOMCAT_MAX_THREADS"] == source.knob("TOMCAT_MAX_THREADS")
        assert config["load"]["vus"] == source.load["vus"]


def test_sampling_off_leaves_no_samples_but_the_requests(chapter2):
    meta = chapter2.steps["unsampled-1"]
    assert meta["samplers"]["enabled"] is False and meta["samplers"]["cpu_seconds"] == 0
    for table in (chapter2.ss, chapter2.actuator, chapter2.process):
        assert not (table.step == "unsampled-1").any()
    assert (chapter2.requests.step == "unsampled-1").sum() == meta["requests"]["asked"]
    assert (chapter2.ss.step == "noise-1").any()  # the sampled twin has them


def test_start_and_memory_tables_from_real_runs(chapter2):
    starts = start_table(chapter2).set_index("step")
    assert (starts["issued"] == starts["users"]).all()
    assert (starts.loc[["hold-20", "hold-60"], "spread_s"] < 2).all()  # tens of users start at once
    memory = memory_table(chapter2).set_index("step")
    assert list(memory.loc[["hold-20", "hold-60"], "connections"]) == [20, 60]  # all held at once
    assert list(memory.loc[["queue-20", "queue-60"], "threads"]) == [4, 4]
    assert (memory["k6_mib"] > 5).all() and (memory["server_mib"] > memory["server_idle_mib"] * 0.9).all()


def test_waves_and_checks_from_real_runs(chapter2):
    table = noise_table(chapter2)
    waves = noise_summary(table)
    assert list(waves["wave"]) == [1]  # 6 users on 4 threads: one full wave of 4
    assert waves["median_s"].iloc[0] == pytest.approx(1.0, abs=0.3)
    found = checks(chapter2, f000_f)
    assert len({c.claim for c in found}) == len(found) and all(c.measured for c in found)
    starts = start_table(chapter2)
    assert check_spike(starts).holds  # tens of users start within a second
    assert check_constant_vus(starts).holds  # so constant-vus issues one request each
