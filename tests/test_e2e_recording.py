"""End to end: per-second recording of a real k6 run against the real sample server or a real nginx, through
`invoke run <spec path>`. Its per-second counts must add up to k6's own summary exactly. Ports 28080/28081 (none of
the other e2e tests')."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.lab import store

from test_e2e import finish, invoke, lab_ready  # noqa: F401 (lab_ready: a fixture)

pytestmark = pytest.mark.e2e
PORTS = '[defaults.server]\nSERVER_PORT = 28080\nMANAGEMENT_PORT = 28081\nSLEEP_MS = 0\n'
# Ramping-arrival-rate reaching 1200 requests/s in 4 s and holding it 8 s: eight seconds recorded at over 1000 a second.
# The target is nginx answering by itself (return 200), not the sample server: what this checks is the recording, and
# a slow 2-core machine's sample server answers about 1,100/s at most beside k6 (closed loop; at most 907-992/s under
# this open-model load), so the rate would test the machine. nginx answers it with room to spare; k6 is the cost.
RAMPING = '''
[defaults.services.edge]
kind = "nginx"
mode = "return"
port = 28080
status_port = 28081

[[step]]
id = "ramp"
why = "per-second recording at over 1000 requests/s"
system = { record = "seconds" }
[step.load]
executor = "ramping-arrival-rate"
target = "edge"
start_rate = 200
time_unit = "1s"
pre_allocated_vus = 50
max_vus = 400
stages = [{ duration = "4s", target = 1200 }, { duration = "8s", target = 1200 }]
request_timeout = "10s"
'''
# Today's executors: closed-loop saturation, recorded per second (~2000-5000 requests/s on 2 shared cores).
SATURATION = PORTS + '''
[[step]]
id = "saturate"
why = "per-second recording at saturation"
load = { executor = "constant-vus", vus = 50, duration = "8s", graceful_stop = "5s", request_timeout = "10s" }
system = { record = "seconds", jvm = "quick" }  # counts that add up, at whatever rate the server answers
'''

# A spike small enough for "auto" to keep one row per request, in the small format.
SPIKE = PORTS.replace("SLEEP_MS = 0", "SLEEP_MS = 500") + '''
[[step]]
id = "spike"
why = "per-request recording in the small format"
load = { vus = 40, iterations = 2 }
system = { jvm = "quick" }
'''


def run_spec(tmp_path: Path, name: str, text: str) -> tuple[str, dict, Path]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(text)
    data_dir = tmp_path / "data"
    code, out = finish(invoke(data_dir, "run", str(spec)), timeout=400)
    assert code == 0 and "1 complete, 0 failed" in out, out
    step = next((data_dir / name).iterdir())
    return out, json.loads((step / "step.json").read_text()), step


def check_totals(step_dir: Path, meta: dict, monkeypatch) -> dict:
    """Every per-second count adds up to k6's summary, and the CSV is gone."""
    summary = json.loads((step_dir / "k6-summary.json").read_text())["metrics"]
    monkeypatch.setenv("LAB_DATA_DIR", str(step_dir.parent.parent))
    chapter, step = step_dir.parent.name, step_dir.name
    series, outcomes, latency = (store.read_table(chapter, step, n) for n in store.SERIES_TABLES)
    total = summary["http_reqs"]["count"]
    assert int(outcomes["requests"].sum()) == int(series["requests"].sum()) == int(latency["count"].sum()) == total
    assert int(series["started"].sum()) == summary["lab_request_started"]["count"] == meta["requests"]["issued"]
    assert int(series["dropped_iterations"].sum()) == summary.get("dropped_iterations", {}).get("count", 0) \
        == meta["requests"]["dropped_iterations"]
    assert meta["requests"]["succeeded"] + meta["requests"]["failed"] == meta["requests"]["issued"]
    assert meta["recording"]["format"] == "seconds" and not (step_dir / "requests.parquet").exists()
    assert not list(step_dir.glob("k6.csv*")), "the raw CSV is deleted once aggregated"
    whole = store.latency_percentiles(chapter, step, by=None).iloc[0]
    for name, key in (("p90", "p(90)"), ("p99", "p(99)")):  # k6 interpolates between ranks: a looser bound
        assert whole[name] == pytest.approx(summary["http_req_duration"][key], rel=0.05, abs=0.05), name
    assert whole["max_ms"] == pytest.approx(summary["http_req_duration"]["max"], rel=1e-9)
    return {"total": total, "series": series, "summary": summary}


def test_saturation_recorded_per_second_adds_up_to_k6s_totals(lab_ready, tmp_path, monkeypatch):  # noqa: F811
    out, meta, step_dir = run_spec(tmp_path, "rec-saturate", SATURATION)
    got = check_totals(step_dir, meta, monkeypatch)
    assert got["total"] > 1000, f"only {got['total']} requests in 8 s"  # 2,800/s here on 2 shared cores: about 23,000
    print(f"saturation: {got['total']} requests, {got['summary']['http_reqs']['rate']:.0f}/s; step dir "
          f"{sum(p.stat().st_size for p in step_dir.iterdir())} bytes")


def test_ramping_arrival_rate_over_1000_per_second_adds_up_to_k6s_totals(lab_ready, tmp_path, monkeypatch):  # noqa: F811
    out, meta, step_dir = run_spec(tmp_path, "rec-ramp", RAMPING)
    got = check_totals(step_dir, meta, monkeypatch)
    series = got["series"]
    assert (series["requests"] >= 1000).sum() >= 5, (  # the hold, not one lucky second
        f"the lab answered at most {series['requests'].max()} requests in a second on this machine; the check needs "
        f"1,000 in five seconds of the hold (a slow 2-core machine's nginx answered 1,165-1,227 in each):"
        f"\n{series.to_string()}")
    assert series["dropped_iterations"].sum() == meta["requests"]["dropped_iterations"]


@pytest.mark.alongside  # counts, and durations no shorter than the sleep: two at a time (invoke test)
def test_a_small_step_keeps_one_row_per_request_in_the_small_format(lab_ready, tmp_path, monkeypatch):  # noqa: F811
    out, meta, step_dir = run_spec(tmp_path, "rec-spike", SPIKE)
    assert meta["recording"]["format"] == "requests" and not list(step_dir.glob("k6.csv*"))
    monkeypatch.setenv("LAB_DATA_DIR", str(step_dir.parent.parent))
    requests = store.load("rec-spike").requests
    assert len(requests) == meta["requests"]["issued"] == meta["requests"]["succeeded"] == 80
    assert requests[["vu", "iteration"]].drop_duplicates().shape[0] == 80 and requests["vu"].nunique() == 40
    assert (requests["duration_ms"] >= 500).all() and requests["start_ms"].min() >= meta["recording"]["t0_ms"]
    assert (requests["duration_ms"] >= requests["http_req_duration_ms"]).all()
    assert (requests["http_req_duration_ms"] >= requests["waiting_ms"]).all()
    assert (requests["blocked_ms"] >= requests["connecting_ms"]).all()
    assert meta["requests"]["dropped_iterations"] == 0
