"""The /work endpoint's prediction from a step: the knobs, the quota, the executor."""
import math

import pytest

from harness.lab.spec import load_spec
from harness.models import predict
from harness.models.work import WorkPrediction

SPEC = """
title = "work"
[defaults.server]
WORK_CPU_MS = 4.0
WORK_WAIT_MS = 40
[defaults.placement]
server = { cpus = "0", quota = 0.5 }
[[step]]
id = "ramp"
load = { executor = "ramping-vus", path = "/work", stages = [{ duration = "10s", target = 300 }, { duration = "30s", target = 300 }] }
[[step]]
id = "few"
server = { TOMCAT_MAX_THREADS = 2 }
load = { executor = "constant-vus", vus = 50, duration = "20s", path = "/work?cpuMs=2&waitMs=18" }
[[step]]
id = "open-below"
load = { executor = "constant-arrival-rate", rate = 100, duration = "30s", pre_allocated_vus = 10, path = "/work" }
[[step]]
id = "open-above"
load = { executor = "constant-arrival-rate", rate = 200, duration = "30s", pre_allocated_vus = 10, path = "/work" }
"""


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "work.toml"
    path.write_text(SPEC)
    return {s.id: s for s in load_spec(str(path)).steps}


def test_a_ramp_is_bounded_by_the_quota(steps):
    p = predict(steps["ramp"])
    assert isinstance(p, WorkPrediction)
    assert (p.cores, p.cpu_ms, p.wait_ms, p.users) == (0.5, 4.0, 40.0, 300)
    assert p.tps == pytest.approx(125) and p.binding == "cpu" and p.mean_latency_ms == pytest.approx(2400)
    assert p.knee_threads == pytest.approx(5.5) and p.min_duration_ms == 40_000


def test_the_path_overrides_the_knobs_and_few_threads_bind(steps):
    p = predict(steps["few"])
    assert (p.cpu_ms, p.wait_ms) == (2.0, 18.0)
    assert p.binding == "threads" and p.tps == pytest.approx(100)  # 2 threads / 20 ms


def test_an_open_model_answers_what_arrives_up_to_capacity(steps):
    below, above = predict(steps["open-below"]), predict(steps["open-above"])
    assert below.tps == 100 and below.binding == "arrivals" and below.mean_latency_ms == 44
    assert above.tps == pytest.approx(125) and above.binding == "cpu" and math.isnan(above.mean_latency_ms)


def test_the_progress_line_leaves_out_an_asked_count_a_ramp_does_not_have(steps):
    from harness.lab.runner import Outcome, _result_line
    ramp = Outcome(steps["ramp"], "complete", "", 45.0, {"asked": 0, "issued": 5921, "succeeded": 5921, "failed": 0})
    assert _result_line(ramp) == "issued 5,921, ok 5,921, failed 0"
    open_model = Outcome(steps["open-below"], "complete", "", 35.0, {"asked": 3000, "issued": 2990, "succeeded": 2990,
                                                                       "failed": 0, "dropped_iterations": 10})
    assert _result_line(open_model).startswith("issued 2,990 of 3,000 asked, ok 2,990, failed 0, DROPPED 10 iterations")
