"""Chapter 4's step table on synthetic per-second recordings whose answers are known."""
import numpy as np
import pandas as pd
import pytest

from harness.book.chapters.ch4.runs import SETTLE_S, cpu_quota, kind_of, plateau, steps_table, windows
from harness.lab.load.options import peak_vus
from harness.lab import histogram
from harness.lab.store import COLUMNS, ChapterData

RAMP = {"executor": "ramping-vus", "start_vus": 1, "stages": [{"duration": "10s", "target": 50}, {"duration": "30s", "target": 50}]}
MACHINE = {"cores": 2}


def test_a_ramp_holds_from_its_ramp_plus_settling_to_its_last_second():
    assert plateau(RAMP) == (10 + SETTLE_S, 39)
    # the nearby windows the rules declare: seconds [12, 39), [20, 39), [15, 27) and [27, 39)
    assert sorted(windows(RAMP).values()) == sorted([(15, 39), (12, 39), (20, 39), (15, 27), (27, 39)])
    assert plateau({"executor": "constant-arrival-rate", "duration": "30s"}) == (SETTLE_S, 29)
    assert peak_vus(RAMP) == 50 and peak_vus({"executor": "constant-vus", "vus": 400}) == 400  # users, as the table has them
    assert [kind_of(RAMP), kind_of({"executor": "constant-vus"}), kind_of({"executor": "constant-arrival-rate"})] == \
        ["sustained", "burst", "open"]


def test_the_servers_cpu_is_its_quota_else_its_pinned_cpus_else_the_machine():
    assert cpu_quota({"placement": {"server": {"cpus": [1], "quota": 0.5}}}, MACHINE) == 0.5
    assert cpu_quota({"placement": {"server": {"cpus": [1]}}}, MACHINE) == 1
    assert cpu_quota({}, MACHINE) == 2


def recorded_step(step: str, tps: int, latency_ms: float, failed_per_s: int = 0, server_cores: float = 0.9):
    """40 s of a ramp step: `tps` answered and `failed_per_s` failed each second, every one taking `latency_ms`."""
    seconds = np.arange(40)
    outcomes = pd.concat([
        pd.DataFrame({"second": seconds, "status": 200, "error_code": 0, "error": "", "requests": tps}),
        pd.DataFrame({"second": seconds, "status": 0, "error_code": 1050, "error": "timeout", "requests": failed_per_s}),
    ]).assign(step=step, ts_ms=0)
    latency = pd.DataFrame({"second": seconds, "bucket": int(histogram.bucket_of([latency_ms])[0]),
                            "count": tps + failed_per_s, "step": step, "ts_ms": 0})
    series = pd.DataFrame({"second": seconds, "started": tps, "requests": tps, "vus": 50, "dropped_iterations": 0,
                           "max_ms": latency_ms, "step": step, "ts_ms": 0})
    t0 = 1_000_000
    ts = t0 + np.arange(0, 40_000, 500)
    process = pd.concat([pd.DataFrame({"process": "server", "ts_ms": ts, "cpu_seconds": (ts - t0) / 1000 * server_cores}),
                         pd.DataFrame({"process": "k6", "ts_ms": ts, "cpu_seconds": (ts - t0) / 1000 * 0.2})]
                        ).assign(step=step, rss_bytes=0)
    actuator = pd.DataFrame({"step": step, "ts_ms": [t0], "metric": ["jvm.threads.live"], "value": [61.0]})
    meta = {"config": {"load": RAMP, "server": {"TOMCAT_MAX_THREADS": 400}}, "recording": {"format": "seconds", "t0_ms": t0},
            "machine": MACHINE, "model": {"tps": 250.0, "mean_latency_ms": 200.0},
            "requests": {"issued": 40 * (tps + failed_per_s), "failed": 40 * failed_per_s},
            "during_load": {"server": {"voluntary": 1000, "involuntary": 300}}}
    return meta, outcomes, latency, series, process, actuator


def test_a_steps_plateau_numbers():
    meta, outcomes, latency, series, process, actuator = recorded_step("s", tps=240, latency_ms=200.0, failed_per_s=2)
    data = ChapterData("chapter4", {"s": meta}, pd.DataFrame(columns=COLUMNS["requests"] + ["step"]),
                       pd.DataFrame(columns=COLUMNS["ss"] + ["step"]), actuator, process,
                       series=series, outcomes=outcomes, latency=latency)
    row = steps_table(data).iloc[0]
    assert row["tps"] == pytest.approx(240) and row["errors"] == 2 * (39 - 15)
    assert row["mean_ms"] == pytest.approx(200, rel=0.01) and row["p99_ms"] == pytest.approx(200, rel=0.01)
    assert row["server_cpu_cores"] == pytest.approx(0.9) and row["k6_cpu_cores"] == pytest.approx(0.2)
    assert row["cpu_ms_per_request"] == pytest.approx(900 / 240)
    assert row["threads_max"] == 400 and row["min_spare"] == 10 and row["cpu_quota"] == 2
    assert row["live_threads_peak"] == 61 and row["model_tps"] == 250
    assert np.isnan(row["first_request_ms"])  # recorded per second: no request of its own
    assert (row["requests"], row["voluntary"], row["involuntary"]) == (40 * 242, 1000, 300)


def test_a_burst_recorded_per_request_reads_each_users_first_request():
    t0 = 1_000_000
    # two users: user 0's requests take 100 ms each, user 1's first takes 300 ms and then 100 ms; one fails
    requests = pd.DataFrame({"vu": [0, 0, 0, 1, 1, 1], "iteration": [0, 1, 2, 0, 1, 2],
                             "start_ms": t0 + np.array([0, 100, 200, 0, 300, 400]),
                             "duration_ms": [100.0, 100, 100, 300, 100, 100], "status": [200, 200, 200, 200, 200, 0],
                             "error_code": [0, 0, 0, 0, 0, 1050], "error": ["", "", "", "", "", "timeout"]})
    requests = requests.assign(end_ms=requests.start_ms + requests.duration_ms, step="b")
    meta = {"config": {"load": {"executor": "constant-vus", "vus": 2, "duration": "20s"}, "server": {}},
            "recording": {"format": "requests", "t0_ms": t0}, "machine": MACHINE, "model": {},
            "requests": {"issued": 6, "failed": 1}}
    empty = pd.DataFrame(columns=["step", "ts_ms", "metric", "value", "process", "cpu_seconds"])
    data = ChapterData("chapter4", {"b": meta}, requests, pd.DataFrame(columns=COLUMNS["ss"] + ["step"]), empty, empty)
    row = steps_table(data).iloc[0]
    assert row["kind"] == "burst" and row["first_request_ms"] == pytest.approx(200)  # (100 + 300) / 2
    assert row["failed"] == 1 and row["users"] == 2
