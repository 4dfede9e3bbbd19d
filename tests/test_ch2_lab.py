"""Chapter 2's measurements (harness.book.chapters.ch2.lab) on synthetic steps whose answers are known: start spreads,
memory costs with their standard errors, overflows per way of sending, redeploys, the samplers, every run of a
repeated step."""
import pandas as pd
import pytest

from harness.book.chapters.ch2 import lab
from harness.lab.store import ChapterData

from ch2_synthetic import (  # noqa: I001
    BATCH_USER_KIB, BATCH_VUS, K6_PER_USER, KIB, PER_CONNECTION, PER_THREAD, again, chapter, meta, repeated,
    with_batch, with_overflows)


def test_start_spread_and_users_started_within_a_second():
    table = lab.start_table(chapter({300: 0.2, 3000: 4.0}, {})).set_index("step")
    assert table.loc["hold-300", "spread_s"] == pytest.approx(0.2)
    assert table.loc["hold-3000", "spread_s"] == pytest.approx(4.0)
    assert table.loc["hold-3000", "started_1s"] == pytest.approx(3000 / 4, abs=2)
    assert table.loc["hold-3000", "p50_s"] == pytest.approx(2.0, abs=0.01)
    assert table.loc["queue-3000", "series"] == lab.SERIES[lab.QUEUE]


def test_spike_limit_is_the_last_n_before_the_first_slow_start():
    assert lab.spike_limit(lab.start_table(chapter({300: 0.2, 1000: 0.9, 3000: 4.0, 6000: 0.5}, {}))) == 1000
    assert lab.spike_limit(lab.start_table(chapter({300: 1.5}, {}))) is None


def test_memory_costs_recover_the_per_unit_costs_with_small_errors():
    costs = lab.memory_costs(lab.memory_table(chapter({300: 0.1, 1000: 0.1, 3000: 0.1, 6000: 0.1}, {})))
    for key, kib in (("k6_per_user", K6_PER_USER / KIB), ("server_per_connection", PER_CONNECTION / KIB),
                     ("server_per_thread", PER_THREAD / KIB), ("server_per_connection_and_thread",
                                                               (PER_CONNECTION + PER_THREAD) / KIB)):
        value, error = costs[key]
        assert value == pytest.approx(kib) and error == pytest.approx(0, abs=1e-6), key


def test_a_noisy_peak_gives_the_slope_a_standard_error():
    data = chapter({300: 0.1, 1000: 0.1, 3000: 0.1, 6000: 0.1}, {})
    process = data.process.copy()
    bump = (process.step == "hold-1000") & (process.process == "server") & (process.ts_ms == 2)
    process.loc[bump, "rss_bytes"] += 50 * 2**20
    table = lab.memory_table(ChapterData(data.chapter, data.steps, data.requests, data.ss, data.actuator, process))
    value, error = lab.memory_costs(table)["server_per_connection_and_thread"]
    assert error > 0 and abs(value - (PER_CONNECTION + PER_THREAD) / KIB) < 4 * error


def test_too_few_sizes_for_a_line_give_no_cost():
    assert lab.slope(pd.Series([1, 2]), pd.Series([3, 4])) != lab.slope(pd.Series([1, 2]), pd.Series([3, 4]))  # NaN


def test_overflows_are_counted_per_step_and_the_first_per_way_of_sending():
    data = with_batch(chapter({300: 0.1, 1000: 0.2, 3000: 0.4}, {}), {300: 0.1, 1000: 0.1})
    data = with_overflows(data, {"hold-3000": 9, "queue-1000": 226})
    table = lab.overflow_table(data).set_index("step")
    assert table.loc["hold-3000", "listen_overflows"] == 9 and table.loc["queue-1000", "listen_overflows"] == 226
    assert lab.first_overflow(lab.overflow_table(data)) == 3000
    assert lab.first_overflow(lab.overflow_table(data), lab.QUEUE) == 1000
    assert lab.first_overflow(lab.overflow_table(data), lab.BATCH) is None


def test_in_batch_mode_every_request_is_a_user_and_its_own_first_start():
    data = with_batch(chapter({3000: 8.0}, {}), {3000: 1.5})
    row = lab.batch_table(data).iloc[0]
    assert row["batch_spread_s"] == pytest.approx(1.5) and row["vus_spread_s"] == pytest.approx(8.0)
    assert row["batch_k6_vus"] == BATCH_VUS
    assert len(lab.first_starts_s(data, "batch-3000")) == 3000  # not one start per VU
    assert lab.start_table(data).set_index("step").loc["batch-3000", "started_1s"] == pytest.approx(2000, abs=2)


def test_k6_memory_per_batch_user_is_fitted_apart_from_a_vu_per_user():
    data = with_batch(chapter({300: 0.1, 3000: 0.1, 6000: 0.1}, {}), {300: 0.1, 3000: 0.1, 6000: 0.1})
    costs = lab.memory_costs(lab.memory_table(data))
    assert costs["k6_per_user"][0] == pytest.approx(K6_PER_USER / KIB)
    assert costs["k6_per_batch_user"][0] == pytest.approx(BATCH_USER_KIB)


def test_memory_bound_users_follow_the_measured_costs():
    users, error = lab.memory_bound_users(chapter({300: 0.1, 1000: 0.1, 3000: 0.1}, {}))
    assert users == pytest.approx(24 * 2**20 / ((K6_PER_USER + PER_CONNECTION + PER_THREAD) / KIB), rel=1e-6)
    assert error == pytest.approx(0, abs=1e-3)


def test_every_run_of_a_repeated_step_is_read_in_order():
    data = repeated({"noise": [(10, 0.0), (14, 0.2), (12, 0.1)], "unsampled": [(12, 0.5)]})
    assert lab.run_ids(data, "noise") == ["noise", "noise.2", "noise.3"]
    assert lab.run_ids(data, "absent") == []
    table = lab.noise_table(data)
    assert list(table[table.run == "noise.2"]["t_s"]) == pytest.approx([5.2, 10.2])
    assert list(table["model_s"].unique()) == [5.0, 10.0]
    runs = lab.runs_table(table).set_index("run")
    assert list(runs.failed) == [10, 14, 12, 12] and list(runs.sampled) == [True, True, True, False]
    assert runs.loc["unsampled", "lag_s"] == pytest.approx(0.5)
    summary = lab.noise_summary(table).set_index("wave")
    assert summary.loc[1, "range_s"] == pytest.approx(0.2) and summary.loc[1, "unsampled_min_s"] == pytest.approx(5.5)


def test_wave_times_are_medians_of_full_waves():
    assert lab.wave_times([5.1, 4.9, 5.0, 10.0, 10.2, 9.9, 14], 3) == [5.0, 10.0]
    assert lab.model_wave_times_s({"threads": 2, "completions": [[5000, 2], [10000, 1]]}) == [5.0]


def test_issued_runs_list_cv_n_and_every_run_of_again_cv_n():
    data = again(chapter({300: 0.1}, {10000: 3000}), 10000, [5000, 4000])
    runs = lab.issued_runs(data)
    assert list(runs["run"]) == ["cv-10000", "again-cv-10000", "again-cv-10000.2"]
    assert list(runs["issued"]) == [3000, 5000, 4000]
    assert list(runs["last_start_s"]) == pytest.approx([0.9, 0.8, 0.8])


def test_redeploy_table():
    startup = pd.DataFrame({"step": ["redeploy-cds"] * 3 + ["redeploy-jar"] * 3, "start": [1, 2, 3] * 2,
                            "started_ms": 0, "startup_ms": [2000, 2100, 2900, 3600, 3700, 3800], "rss_bytes": 2**20})
    metas = {"redeploy-cds": meta("redeploy-cds", 0) | {"launch": "cds"},
             "redeploy-jar": meta("redeploy-jar", 0) | {"launch": "jar"}}
    empty = pd.DataFrame(columns=["step"])
    table = lab.redeploy_table(ChapterData("chapter2", metas, empty, empty, empty, empty, startup)).set_index("launch")
    assert table.loc["cds", "median_ms"] == 2100 and table.loc["cds", "mean_ms"] == pytest.approx(2333.3, abs=0.1)
    assert table.loc["jar", "max_ms"] == 3800


def test_sampler_cost_skips_steps_without_samplers():
    data = repeated({"noise": [(10, 0.0)], "unsampled": [(12, 0.0)]}, chapter({300: 0.1}, {}, sampler_cpu_s=0.5))
    table = lab.sampler_cost_table(data).set_index("step")
    assert "unsampled" not in table.index and table.loc["hold-300", "core_share"] == pytest.approx(0.05)
