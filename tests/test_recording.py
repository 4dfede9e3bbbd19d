"""Compact recording (issue 13): k6's CSV streamed into per-request rows or per-second series, the small
requests.parquet format, the latency histogram's error bound, and reading both the old and the new format."""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.lab import histogram, store
from harness.lab.load import recording
from harness.lab.load.k6 import request_counts
from harness.lab.load.recording import read_recording, read_seconds, record_mode, write_recording

from conftest import FROZEN_DATA, SAMPLES
from test_spec import one_step, problems_of

# tests/samples/k6-lab.js against the sample server: constant-arrival-rate 40/s for 3 s on at most 3 VUs (51 dropped
# iterations), two requests per iteration (`req` 0 and 1, tags name=hello/second): 70 answered, 55 × 404, 15 refused.
LAB_CSV = SAMPLES / "k6-lab.csv.gz"
LAB_SUMMARY = json.loads((SAMPLES / "k6-lab-summary.json").read_text())["metrics"]


def test_auto_records_requests_up_to_20k_then_seconds():
    assert record_mode("auto", 20_000) == "requests" and record_mode("auto", 20_001) == "seconds"
    assert record_mode("seconds", 10) == "seconds" and record_mode("requests", 10**6) == "requests"
    assert "system.record must be one of auto, requests, seconds, got 'all'" in problems_of(one_step(system={"record": "all"}))


def test_a_scenario_with_several_requests_per_iteration_gives_one_row_each():
    recorded = read_recording(LAB_CSV)
    rows = recorded.requests
    assert len(rows) == LAB_SUMMARY["http_reqs"]["count"] == 140
    assert not rows.duplicated(["vu", "iteration", "req"]).any()
    assert rows["start_ms"].is_monotonic_increasing and (rows["duration_ms"] > 0).all()
    assert rows.groupby("req")["name"].unique().map(list).to_dict() == {0: ["hello"], 1: ["second"]}
    assert (rows.loc[rows.req == 0, "status"] == 200).all()
    assert rows.loc[rows.req == 1, "error_code"].value_counts().to_dict() == {1404: 55, 1212: 15}
    assert recorded.totals["dropped_iterations"] == LAB_SUMMARY["dropped_iterations"]["count"] == 51
    counts = request_counts(recorded, asked=240)
    assert counts | {"errors": None} == {"asked": 240, "issued": 140, "succeeded": 70, "failed": 70, "interrupted": 0,
                                         "errors": None, "dropped_iterations": 51}


def test_a_single_request_scenario_keeps_todays_columns():
    rows = read_recording(SAMPLES / "k6.csv.gz").requests
    assert list(rows.columns) == ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error",
                                  *recording.PHASES.values()]


@pytest.mark.parametrize("csv", [LAB_CSV, SAMPLES / "k6.csv.gz"])
def test_chunks_do_not_change_the_result(csv, monkeypatch):
    whole = read_recording(csv).requests
    seconds = read_seconds(csv)
    monkeypatch.setattr(recording, "CHUNK_ROWS", 7)  # a request's rows land in different chunks
    pd.testing.assert_frame_equal(read_recording(csv).requests, whole)
    chunked = read_seconds(csv)
    assert chunked.t0_ms == seconds.t0_ms and chunked.totals == seconds.totals
    for name, table in seconds.tables.items():
        pd.testing.assert_frame_equal(chunked.tables[name], table, check_categorical=False)


def test_per_second_counts_add_up_to_k6s_totals():
    recorded = read_seconds(LAB_CSV)
    series, outcomes, latency = (recorded.tables[n] for n in store.SERIES_TABLES)
    assert outcomes["requests"].sum() == series["requests"].sum() == LAB_SUMMARY["http_reqs"]["count"]
    assert latency["count"].sum() == LAB_SUMMARY["http_reqs"]["count"]
    assert series["started"].sum() == LAB_SUMMARY["lab_request_started"]["count"]
    assert series["dropped_iterations"].sum() == LAB_SUMMARY["dropped_iterations"]["count"]
    assert series["vus"].max() == LAB_SUMMARY["vus"]["max"]
    assert series["max_ms"].max() == pytest.approx(LAB_SUMMARY["http_req_duration"]["max"], abs=1e-6)
    per_request = read_recording(LAB_CSV)
    assert request_counts(recorded, 240) == request_counts(per_request, 240)


def test_per_second_percentiles_match_the_requests_within_one_percent(data_dir):
    rows = read_recording(LAB_CSV).requests
    recorded = read_seconds(LAB_CSV)
    writer = store.StepWriter("ch", "s")
    assert write_recording(writer, recorded) == {"format": "seconds", "t0_ms": recorded.t0_ms}
    writer.finish({"id": "s", "status": "complete", "recording": writer.recording})
    whole = store.latency_percentiles("ch", "s", by=None).iloc[0]
    durations = np.sort(rows["http_req_duration_ms"].to_numpy())
    for name, q in histogram.QUANTILES.items():
        exact = durations[int(np.ceil(q * len(durations))) - 1]  # nearest rank
        assert whole[name] == pytest.approx(exact, rel=histogram.ALPHA, abs=histogram.MIN_MS)
    assert whole["max_ms"] == pytest.approx(durations.max()) and whole["requests"] == len(rows)
    per_second = store.latency_percentiles("ch", "s")
    assert per_second["requests"].sum() == len(rows)
    assert (per_second["ts_ms"] == recorded.t0_ms + 1000 * per_second["second"]).all()
    data = store.load("ch")
    assert data.requests.empty and data.series["requests"].sum() == data.outcomes["requests"].sum() == len(rows)


def test_histogram_relative_error_is_at_most_one_percent():
    rng = np.random.default_rng(13)
    values = np.concatenate([rng.lognormal(3, 2.5, 200_000), rng.uniform(0.001, 100_000, 50_000),
                             histogram.MIN_MS * histogram.GAMMA ** np.arange(1, 1200)])  # bucket edges too
    back = histogram.value_of(histogram.bucket_of(values))
    assert np.abs(back - values).max() / values.max() < histogram.ALPHA
    above = values > histogram.MIN_MS  # lognormal draws some below 1 µs: those read back as 0
    assert (np.abs(back - values)[above] / values[above]).max() <= histogram.ALPHA + 1e-12
    assert (back[~above] == 0).all() and np.abs(back - values)[~above].max() <= histogram.MIN_MS
    assert histogram.bucket_of(values).max() < 2**15 - 1
    assert (histogram.value_of(histogram.bucket_of([0, 0.0005, histogram.MIN_MS, np.nan])) == 0).all()  # ≤ 1 µs: 0
    table = histogram.counts(np.zeros(len(values), dtype=int), values)
    exact = np.sort(values)
    got = histogram.quantiles(table, by=None).iloc[0]
    for name, q in histogram.QUANTILES.items():
        assert got[name] == pytest.approx(exact[int(np.ceil(q * len(exact))) - 1], rel=histogram.ALPHA)


def equal_to_rounding(new: pd.DataFrame, old: pd.DataFrame):
    assert list(new.columns) == list(old.columns) and len(new) == len(old)
    for column in old:
        if column in ("start_ms", "end_ms"):
            assert np.allclose(new[column], old[column], atol=1.0, rtol=0, equal_nan=True), column  # ms start (+0.5 µs)
        elif old[column].dtype.kind == "f":
            assert np.allclose(new[column], old[column], atol=0.0006, rtol=0, equal_nan=True), column  # µs
        else:
            assert new[column].astype(object).tolist() == old[column].astype(object).tolist(), column
    assert (new["end_ms"] - new["start_ms"] - new["duration_ms"]).abs().max() < 1e-3  # float64 at 1.8e12 ms


def test_requests_round_trip_through_the_small_format(data_dir):
    rows = read_recording(LAB_CSV).requests
    writer = store.StepWriter("ch", "r")
    write_recording(writer, read_recording(LAB_CSV))
    writer.finish({"id": "r", "status": "complete", "recording": writer.recording})
    back = store.read_table("ch", "r", "requests")
    equal_to_rounding(back, rows)
    assert (back["start_ms"] % 1 == 0).all() and writer.recording["t0_ms"] == int(rows["start_ms"].min())
    assert back.dtypes.astype(str).to_dict() == {**rows.dtypes.astype(str).to_dict()}
    assert pd.read_parquet(store.step_dir("ch", "r") / "requests.parquet").columns.tolist()[:6] == \
        ["vu", "iteration", "req", "start", "duration_us", "status"]


def test_old_format_steps_read_as_before_and_re_encode_to_the_same_values(data_dir):
    shutil.copytree(FROZEN_DATA / "smoke", data_dir / "smoke")
    for step in ("keep-alive", "waves"):
        old = store.read_table("smoke", step, "requests")
        assert old.equals(pd.read_parquet(FROZEN_DATA / "smoke" / step / "requests.parquet"))
        store.write_requests(old, store.step_dir("smoke", step) / "requests.parquet")
        equal_to_rounding(store.read_table("smoke", step, "requests"), old)


def test_interrupted_requests_survive_the_small_format(data_dir):
    rows = read_recording(SAMPLES / "k6.csv.gz").requests
    store.write_requests(rows, Path(data_dir.mkdir(parents=True) or data_dir) / "requests.parquet")
    back = store.read_parquet(data_dir / "requests.parquet", "requests")
    equal_to_rounding(back, rows)
    assert back["end_ms"].isna().sum() == 2 and (back.loc[back["end_ms"].isna(), "error_code"] == -1).all()


def test_a_csv_cut_mid_line_still_reads(tmp_path):
    """k6 stopped hard (SIGKILL, a full disk) can leave half a line: what came before it is kept."""
    import gzip

    text = gzip.decompress(LAB_CSV.read_bytes()).decode()
    cut = text[: text.index("\n", len(text) // 2) + 30]  # half the file and 30 characters of the next line
    (tmp_path / "k6.csv").write_text(cut)
    rows = read_recording(tmp_path / "k6.csv").requests
    seconds = read_seconds(tmp_path / "k6.csv")
    assert 40 < len(rows) < 140 and seconds.totals["started"] == len(rows)
    assert seconds.totals["ended"] == int(rows["end_ms"].notna().sum())
    assert (tmp_path / "k6.csv").read_text() == cut[: cut.rindex("\n") + 1]  # the half line is gone
