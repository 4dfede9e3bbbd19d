"""Chapter 3 scaled down, end to end: waves, timeouts past waves × sleep, the connection ceiling."""
import pytest

from harness import ROOT
from harness.lab.spec import load_spec

from test_e2e import assert_in_the_models_waves, profile_run
from harness.models import predict

pytestmark = pytest.mark.e2e
PROFILE = ROOT / "tests" / "profiles" / "chapter3-scaled.toml"


@pytest.fixture(scope="module")
def chapter3(tmp_path_factory):
    with profile_run(tmp_path_factory, PROFILE) as data:
        yield data


def step_data(chapter3, step_id):
    step = load_spec(str(PROFILE)).select([step_id])[0]
    requests = chapter3.requests[chapter3.requests.step == step_id]
    return step, predict(step), requests, requests["start_ms"].min()


def test_every_user_sends_its_request(chapter3):
    for step_id, meta in chapter3.steps.items():
        assert meta["requests"]["issued"] == meta["requests"]["asked"], step_id


def test_waves_of_threads_max(chapter3):
    step, model, requests, t0 = step_data(chapter3, "a-waves")
    ends = sorted((requests["end_ms"] - t0).tolist())
    predicted = [t for t, count in model.completions for _ in range(count)]
    assert_in_the_models_waves(ends, predicted)  # 4 at 0.5 s, 2 at 1 s


def test_timeouts_when_waves_outlast_the_client(chapter3):
    """6 waves of 0.5 s against a 2 s timeout: 12 answered in 3 waves; the 4th, due exactly at the
    timeout, and the rest time out at 2 s."""
    step, model, requests, t0 = step_data(chapter3, "d-timeouts")
    ok, failed = requests[requests.status == 200], requests[requests.status != 200]
    assert (len(ok), len(failed)) == (model.succeeded, model.failed) == (12, 12)
    assert set(failed["error"]) == {"request timeout"}
    assert ((failed["end_ms"] - t0) / 1000).between(2, 2.5).all()
    assert ((ok["end_ms"] - t0) / 1000).max() < 2


def test_the_connection_ceiling(chapter3):
    """The server side never holds more than max-connections + accept-count + 1; kept-alive slots stay taken."""
    step, model, requests, t0 = step_data(chapter3, "f-ceiling")
    ss = chapter3.ss[chapter3.ss.step == "f-ceiling"]
    # + 1: the kernel's unlocked full-queue check can let two racing handshakes in (verdicts.QUEUE_RACE)
    assert model.ceiling <= ss["estab"].max() <= model.ceiling + 1 == 182
    assert 31 <= ss["accept_queue"].max() <= 32  # accept-count 30, plus the kernel's one (plus a race)
    assert ss["listen_overflows"].sum() > 0
    actuator = chapter3.actuator[chapter3.actuator.step == "f-ceiling"]
    held = actuator[actuator.metric == "tomcat.connections.current"]["value"]
    assert held.max() <= 150 + 1  # Tomcat's own count (its acceptor reserves one while waiting)
    ok = requests[requests.status == 200]
    assert len(ok) == model.succeeded == 150  # keep-alive: the served connections keep Tomcat's slots
