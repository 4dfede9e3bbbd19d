"""Derived numbers on small synthetic chapter data."""
import pandas as pd
import pytest

from harness.book.analysis import latency_percentiles, metric_series, per_second, throughput_table
from harness.lab.store import ChapterData


def chapter(step_requests: dict[str, list[tuple[float, float]]], rps_model: float = 10) -> ChapterData:
    """Steps whose requests are (start_ms, end_ms) pairs; every step has C = 2 and a model RPS."""
    frames, metas = [], {}
    for step, spans in step_requests.items():
        frames.append(pd.DataFrame({"step": step, "start_ms": [s for s, _ in spans], "end_ms": [e for _, e in spans],
                                    "duration_ms": [e - s for s, e in spans], "status": 200, "error_code": 0}))
        metas[step] = {"config": {"load": {"executor": "shared-iterations", "vus": 2, "tool": "k6"}},
                       "requests": {"asked": len(spans), "issued": len(spans), "succeeded": len(spans)},
                       "model": {"rps": rps_model, "threads": 2}, "load_started_ms": 0, "findings": []}
    actuator = pd.DataFrame({"step": "a", "ts_ms": [0, 500, 1000], "metric": "tomcat.threads.busy", "value": [0, 2, 1]})
    empty = pd.DataFrame()
    return ChapterData("t", metas, pd.concat(frames, ignore_index=True), empty, actuator, empty)


def test_throughput_and_littles_law():
    # 2 clients, each 10 back-to-back requests of 200 ms: 20 requests in 2 s = 10/s, mean 200 ms.
    spans = [(k * 200, (k + 1) * 200) for k in range(10)] * 2
    table = throughput_table(chapter({"a": spans}))
    row = table.iloc[0]
    assert row["rps"] == pytest.approx(10)
    assert row["mean_latency_ms"] == pytest.approx(200)
    assert row["littles_concurrency"] == pytest.approx(2)  # = the two clients


def test_a_slow_step_shows_as_a_model_error():
    spans = [(k * 200, (k + 1) * 200) for k in range(50)]  # 5/s against a model of 10/s
    assert throughput_table(chapter({"a": spans})).iloc[0]["rps_error"] == pytest.approx(-0.5)


def test_percentiles_and_max():
    spans = [(0, d) for d in (100, 100, 100, 2000, 4000)]
    row = latency_percentiles(chapter({"a": spans})).iloc[0]
    assert (row["p50_ms"], row["max_ms"]) == (100, 4000)
    assert row["p66_ms"] > 100


def test_per_second_and_metric_series():
    counts = per_second(chapter({"a": [(0, 500), (0, 900), (0, 1500)]}), "a")
    assert counts.to_dict("list") == {"second": [0, 1], "requests": [2, 1]}
    series = metric_series(chapter({"a": [(0, 1)]}), "a", "tomcat.threads.busy")
    assert series["t_s"].tolist() == [0, 0.5, 1] and series["value"].max() == 2
