"""The queueing model, checked against the articles' own arithmetic."""
from pathlib import Path

from harness.model import connection_ceiling, little_concurrency, predict, waves
from harness.spec import parse_spec

from conftest import LIMITS


def step(server=None, **load):
    raw = {"step": [{"id": "s", "server": server or {}, "load": {"vus": 300, **load}}]}
    return parse_spec("t", raw, Path("t.toml"), LIMITS).steps[0]


def test_waves_of_the_article_F000_a():
    # 300 users, 200 threads, 5 s: 200 at 5 s, the other 100 at 10 s.
    assert waves(300, 200, 5000) == ([5000, 10000], [200, 100])


def test_waves_with_one_request_and_exact_multiples():
    assert waves(1, 200, 5000) == ([5000], [1])
    assert waves(400, 200, 5000) == ([5000, 10000], [200, 200])


def test_timeouts_when_waves_outlast_the_client_F000_d():
    # 3000 users at 200 threads need 15 waves (75 s); k6's 60 s timeout cuts waves 13-15.
    p = predict(step(vus=3000))
    assert p.waves == 15 and p.min_duration_ms == 60000
    assert p.timeouts == 600
    assert predict(step({"TOMCAT_MAX_THREADS": 500}, vus=3000)).timeouts == 0


def test_graceful_stop_cuts_constant_vus_F000_c():
    # 2000 users, 200 threads: waves at 5…50 s; constant-vus 1 s + 30 s gracefulStop ends at 31 s.
    p = predict(step(vus=2000, executor="constant-vus", duration="1s"))
    assert p.stop_ms == 31000 and p.interrupted == 800 and p.timeouts == 0
    assert predict(step(vus=2000, executor="constant-vus", duration="1s", graceful_stop="5m")).interrupted == 0


def test_connection_ceiling_F000_f():
    assert connection_ceiling(8192, 100) == 8293
    p = predict(step({"TOMCAT_MAX_THREADS": 1000}, vus=10000))
    assert p.ceiling == 8293 and p.over_ceiling == 1707


def test_sleep_from_the_path_wins():
    assert predict(step({"SLEEP_MS": 100}, path="/hello?sleepMs=250")).service_ms == 250
    assert predict(step({"SLEEP_MS": 100})).service_ms == 100


def test_littles_law():
    # 484 requests/s at a mean 206 ms keeps ~100 requests in the server.
    assert round(little_concurrency(484.1, 206.6)) == 100
