"""The operational bounds of chapter 4's model: which resource sets the plateau, and Little's law on it."""
import math

import pytest

from harness.models.bounds import CPU, THREADS, USERS, capacity_per_s, knee_threads, predict_bounds

# The chapter's endpoint: 4 ms of CPU and a 40 ms wait per request, on one core.
WORK = {"cpu_ms": 4.0, "wait_ms": 40.0}


def test_few_users_are_the_limit():
    p = predict_bounds(2, 200, cores=1.0, **WORK)
    assert p.binding == USERS
    assert p.tps == pytest.approx(2 * 1000 / 44)
    assert p.mean_latency_ms == pytest.approx(44)  # no queueing: one request's CPU plus its wait
    assert p.cpu_utilisation == pytest.approx(p.tps * 4 / 1000)
    assert p.busy_threads == 2


def test_past_the_knee_the_cpu_sets_the_plateau_and_latency_grows_with_users():
    low, high = predict_bounds(100, 200, cores=1.0, **WORK), predict_bounds(800, 200, cores=1.0, **WORK)
    assert low.binding == high.binding == CPU
    assert low.tps == high.tps == pytest.approx(250)  # 1 core / 4 ms
    assert low.cpu_utilisation == pytest.approx(1.0)
    assert high.mean_latency_ms == pytest.approx(800 / 250 * 1000)  # Little's law: N / X
    assert high.busy_threads == 200  # the other 600 wait for a thread


def test_a_pool_below_the_knee_caps_throughput():
    p = predict_bounds(100, 4, cores=1.0, **WORK)
    assert p.binding == THREADS and p.tps == pytest.approx(4 * 1000 / 44)
    assert p.cpu_utilisation < 0.5


def test_more_threads_past_the_knee_change_nothing():
    plateaus = {t: predict_bounds(1000, t, cores=1.0, **WORK).tps for t in (200, 400, 800, 2000)}
    assert len(set(plateaus.values())) == 1


def test_the_plateau_moves_with_the_cpu_quota():
    half, one = (predict_bounds(300, 400, cores=c, **WORK) for c in (0.5, 1.0))
    assert one.tps / half.tps == pytest.approx(2.0)


def test_goetz_knee_is_where_the_user_and_cpu_bounds_meet():
    knee = knee_threads(4.0, 40.0, 1.0)
    assert knee == pytest.approx(11)  # 1 × (1 + 40 / 4)
    at_knee = predict_bounds(11, 200, cores=1.0, **WORK)
    assert at_knee.binding == CPU and at_knee.tps == pytest.approx(11 * 1000 / 44)  # the two bounds meet: CPU wins a tie
    assert knee_threads(4.0, 40.0, 0.5) == pytest.approx(5.5)
    assert knee_threads(0.0, 40.0, 1.0) == math.inf


def test_capacity_is_what_an_open_model_can_ask_for():
    assert capacity_per_s(200, cores=1.0, **WORK) == pytest.approx(250)
    assert capacity_per_s(4, cores=1.0, **WORK) == pytest.approx(4000 / 44)


def test_a_request_without_cpu_is_bounded_by_threads_alone():
    p = predict_bounds(1000, 100, cpu_ms=0.0, wait_ms=50.0, cores=1.0)
    assert p.binding == THREADS and p.tps == pytest.approx(2000) and p.cpu_utilisation == 0


def test_nonsense_is_refused_with_every_problem_named():
    with pytest.raises(ValueError, match="users must be > 0.*cpu_ms must be ≥ 0"):
        predict_bounds(0, 200, cpu_ms=-1.0, wait_ms=40.0, cores=1.0)


def test_the_prediction_stores_as_a_plain_dict():
    stored = predict_bounds(100, 200, cores=1.0, **WORK).as_dict()
    assert stored["tps"] == pytest.approx(250) and stored["binding"] == CPU and stored["knee_threads"] == pytest.approx(11)
