"""Chapter 2's analysis on synthetic steps whose answers are known: start spreads, memory costs, waves, checks."""
import numpy as np
import pandas as pd
import pytest

from harness.book.chapters.ch2_sentences import batch_sentence

from harness.lab.store import COLUMNS, ChapterData
from harness.book.chapters.ch2_lab import batch_table, first_overflow, first_starts_s, issued_runs, memory_costs, memory_table, model_wave_times_s, noise_summary, noise_table, overflow_table, redeploy_table, spike_limit, start_table, wave_times
from harness.book.chapters.ch2_checks import as_step, check_acceptor, check_batch_spike, memory_sentence, check_constant_vus, check_files_before_memory, check_k6_memory, check_redeploy, check_sampler_cost, check_sampling_changes_nothing, check_spike, memory_bound_users

MIB, KIB = 2**20, 1024
MACHINE = {"cores": 2, "memory_bytes": 24 * 2**30, "nofile_limit": 20000}
K6_BASE, K6_PER_USER = 40 * MIB, 150 * KIB
SERVER_BASE, PER_CONNECTION, PER_THREAD = 180 * MIB, 40 * KIB, 100 * KIB


def meta(step, vus, issued=None, executor="per-vu-iterations", **extra):
    return {"id": step, "started_ms": 0, "machine": MACHINE, "load_started_ms": 0, "load_ended_ms": 10_000,
            "config": {"load": {"vus": vus, "executor": executor}, "server": {}},
            "requests": {"asked": vus, "issued": vus if issued is None else issued}, **extra}


def spike(step, users, spread_s, t0=1_000_000):
    """One request per user, first requests spread evenly over `spread_s`."""
    starts = t0 + np.linspace(0, spread_s * 1000, users)
    return pd.DataFrame({"step": step, "vu": range(1, users + 1), "iteration": 0, "start_ms": starts,
                         "end_ms": starts + 25_000, "status": 200, "error_code": 0})


def memory_rows(step, users, threads):
    k6 = K6_BASE + K6_PER_USER * users
    server = SERVER_BASE + PER_CONNECTION * users + PER_THREAD * threads
    process = pd.DataFrame({"step": step, "ts_ms": [1, 2, 1, 2], "process": ["k6", "k6", "server", "server"],
                            "rss_bytes": [K6_BASE, k6, SERVER_BASE, server], "cpu_seconds": 0.0})
    ss = pd.DataFrame({"step": step, "ts_ms": [1, 2], "estab": [0, users]})
    actuator = pd.DataFrame({"step": step, "ts_ms": [2], "metric": ["tomcat.threads.current"], "value": [threads]})
    return process, ss, actuator


def chapter(spreads: dict[int, float], cv_issued: dict[int, int], sampler_cpu_s: float = 0.1) -> ChapterData:
    metas, requests, process, ss, actuator = {}, [], [], [], []
    for users, spread in spreads.items():
        for prefix, threads in (("hold-", users), ("queue-", 200)):
            step = f"{prefix}{users}"
            metas[step] = meta(step, users, samplers={"enabled": True, "cpu_seconds": sampler_cpu_s, "ss": {"cpu_seconds": 0},
                                                      "actuator": {"cpu_seconds": 0}, "process": {"cpu_seconds": 0}})
            requests.append(spike(step, users, spread))
            for frames, frame in zip((process, ss, actuator), memory_rows(step, users, threads), strict=True):
                frames.append(frame)
    for users, issued in cv_issued.items():
        metas[f"cv-{users}"] = meta(f"cv-{users}", users, issued=issued, executor="constant-vus")
        requests.append(spike(f"cv-{users}", issued, 0.9))
    return ChapterData("chapter2", metas, pd.concat(requests, ignore_index=True), pd.concat(ss), pd.concat(actuator),
                       pd.concat(process), pd.DataFrame(columns=COLUMNS["startup"] + ["step"]))


def test_start_spread_and_users_started_within_a_second():
    data = chapter({300: 0.2, 3000: 4.0}, {})
    table = start_table(data).set_index("step")
    assert table.loc["hold-300", "spread_s"] == pytest.approx(0.2)
    assert table.loc["hold-3000", "spread_s"] == pytest.approx(4.0)
    assert table.loc["hold-3000", "started_1s"] == pytest.approx(3000 / 4, abs=2)
    assert table.loc["hold-3000", "p50_s"] == pytest.approx(2.0, abs=0.01)


def test_spike_limit_is_the_last_n_before_the_first_slow_start():
    assert spike_limit(start_table(chapter({300: 0.2, 1000: 0.9, 3000: 4.0, 6000: 0.5}, {}))) == 1000
    assert spike_limit(start_table(chapter({300: 1.5}, {}))) is None


def test_memory_costs_recover_the_per_unit_costs():
    costs = memory_costs(memory_table(chapter({300: 0.1, 1000: 0.1, 3000: 0.1, 6000: 0.1}, {})))
    assert costs["k6_per_user_kib"] == pytest.approx(150)
    assert costs["server_per_connection_kib"] == pytest.approx(40)
    assert costs["server_per_thread_kib"] == pytest.approx(100)
    assert costs["server_per_connection_and_thread_kib"] == pytest.approx(140)


def test_constant_vus_check_compares_issued_with_users_started_in_a_second():
    spreads = {300: 0.2, 3000: 3.0}
    agrees = check_constant_vus(start_table(chapter(spreads, {300: 300, 3000: 1000})))
    assert agrees.holds and "3,000: issued 1,000, started in 1 s 1,000" in agrees.measured
    assert not check_constant_vus(start_table(chapter(spreads, {300: 300, 3000: 3000}))).holds


def test_spike_check_holds_only_when_every_n_starts_within_a_second():
    assert check_spike(start_table(chapter({300: 0.2, 1000: 0.5}, {}))).holds
    failing = check_spike(start_table(chapter({300: 0.2, 1000: 2.5}, {})))
    assert not failing.holds and "a spike up to N = 300" in failing.measured


def test_files_before_memory_follows_the_measured_costs():
    data = chapter({300: 0.1, 3000: 0.1}, {})
    assert memory_bound_users(data) == pytest.approx(24 * 2**20 / (150 + 140), rel=1e-6)
    assert check_files_before_memory(data).holds
    small = ChapterData(data.chapter, {s: m | {"machine": MACHINE | {"memory_bytes": 2**30}} for s, m in data.steps.items()},
                        data.requests, data.ss, data.actuator, data.process, data.startup)
    assert not check_files_before_memory(small).holds  # 1 GiB holds ~3600 users: memory first


def test_sampler_cost_budget():
    cheap = check_sampler_cost(chapter({300: 0.1, 15000: 0.1}, {}, sampler_cpu_s=0.2))  # 2 % of a core
    assert cheap.holds
    assert not check_sampler_cost(chapter({300: 0.1, 15000: 0.1}, {}, sampler_cpu_s=1.0)).holds  # 10 % > 5 %
    assert not check_sampler_cost(chapter({300: 0.1}, {}, sampler_cpu_s=0.2)).holds  # no step above 1000: unproven


def test_wave_times_are_medians_of_full_waves():
    assert wave_times([5.1, 4.9, 5.0, 10.0, 10.2, 9.9, 14], 3) == [5.0, 10.0]
    model = {"threads": 2, "completions": [[5000, 2], [10000, 1]]}
    assert model_wave_times_s(model) == [5.0]


def noise_data(failed: dict[str, int], shift_s: dict[str, float]) -> ChapterData:
    metas, frames = {}, []
    model = {"threads": 2, "failed": 1, "completions": [[5000, 2], [10000, 2]]}
    for step, lost in failed.items():
        metas[step] = meta(step, 5) | {"model": model, "requests": {"asked": 100, "issued": 100, "succeeded": 4, "failed": lost}}
        ends = np.array([5.0, 5.0, 10.0, 10.0]) + shift_s.get(step, 0.0)
        frames.append(pd.DataFrame({"step": step, "vu": range(1, 5), "start_ms": 0.0, "end_ms": ends * 1000, "status": 200,
                                    "error_code": 0}))
    empty = pd.DataFrame(columns=["step", "ts_ms"])
    return ChapterData("chapter2", metas, pd.concat(frames, ignore_index=True), empty, empty, empty)


def test_noise_table_and_summary():
    data = noise_data({"noise-1": 10, "noise-2": 14, "unsampled-1": 12}, {"noise-2": 0.2})
    table = noise_table(data)
    assert list(table[table.step == "noise-2"]["t_s"]) == pytest.approx([5.2, 10.2])
    assert list(table["model_s"].unique()) == [5.0, 10.0]
    summary = noise_summary(table).set_index("wave")
    assert summary.loc[1, "range_s"] == pytest.approx(0.2)
    assert summary.loc[1, "unsampled_min_s"] == pytest.approx(5.0)


def test_sampling_check_fails_when_unsampled_runs_leave_the_range():
    inside = noise_data({"noise-1": 10, "noise-2": 14, "unsampled-1": 12}, {})
    assert check_sampling_changes_nothing(inside).holds
    more_failures = noise_data({"noise-1": 10, "noise-2": 14, "unsampled-1": 20}, {})  # slack: 1 % of 100 = 1
    assert not check_sampling_changes_nothing(more_failures).holds
    later_waves = noise_data({"noise-1": 10, "noise-2": 14, "unsampled-1": 12}, {"unsampled-1": 0.5})
    assert not check_sampling_changes_nothing(later_waves).holds
    assert not check_sampling_changes_nothing(noise_data({"noise-1": 10}, {})).holds  # nothing to compare


def test_redeploy_check():
    startup = pd.DataFrame({"step": ["redeploy-cds"] * 3 + ["redeploy-jar"] * 3, "start": [1, 2, 3] * 2,
                            "started_ms": 0, "startup_ms": [2000, 2100, 2900, 3600, 3700, 3800], "rss_bytes": MIB})
    metas = {"redeploy-cds": meta("redeploy-cds", 0) | {"launch": "cds"}, "redeploy-jar": meta("redeploy-jar", 0) | {"launch": "jar"}}
    empty = pd.DataFrame(columns=["step"])
    data = ChapterData("chapter2", metas, empty, empty, empty, empty, startup)
    table = redeploy_table(data).set_index("launch")
    assert table.loc["cds", "median_ms"] == 2100 and table.loc["jar", "max_ms"] == 3800
    assert check_redeploy(data).holds
    slow = ChapterData("chapter2", metas, empty, empty, empty, empty, startup.assign(startup_ms=startup["startup_ms"] + 1000))
    assert not check_redeploy(slow).holds


def test_issued_runs_lists_the_constant_vus_repeats():
    data = chapter({300: 0.1}, {10000: 3000})
    again = ChapterData(data.chapter, data.steps | {"again-cv-10000-1": meta("again-cv-10000-1", 10000, issued=5000)},
                        pd.concat([data.requests, spike("again-cv-10000-1", 5000, 0.8)]), data.ss, data.actuator,
                        data.process, data.startup)
    runs = issued_runs(again)
    assert list(runs["issued"]) == [3000, 5000]
    assert list(runs["last_start_s"]) == pytest.approx([0.9, 0.8])


def test_a_repeat_is_judged_as_the_step_it_copies():
    data = noise_data({"noise-1": 10, "noise-2": 14}, {})
    one = as_step(data, "noise-2", "f-10k-pv")
    assert list(one.steps) == ["f-10k-pv"] and one.steps["f-10k-pv"]["requests"]["failed"] == 14
    assert set(one.requests["step"]) == {"f-10k-pv"} and len(one.requests) == 4


def with_overflows(data: ChapterData, overflows: dict[str, int]) -> ChapterData:
    ss = data.ss.assign(listen_overflows=0, accept_queue=0)
    for step, count in overflows.items():
        ss.loc[(ss.step == step) & (ss.ts_ms == 2), "listen_overflows"] = count
    return ChapterData(data.chapter, data.steps, data.requests, ss, data.actuator, data.process, data.startup)


def test_acceptor_check_fails_on_the_first_overflow():
    data = chapter({300: 0.1, 1000: 0.2, 3000: 0.4}, {})
    assert check_acceptor(with_overflows(data, {})).holds
    overflowing = with_overflows(data, {"hold-1000": 464, "hold-3000": 9})
    assert first_overflow(overflow_table(overflowing)) == 1000
    failing = check_acceptor(overflowing)
    assert not failing.holds and "1,000: 464" in failing.measured


def test_k6_memory_check_against_the_machine():
    data = chapter({300: 0.1, 15000: 0.1}, {})
    assert check_k6_memory(data).holds  # 15,000 × 150 KiB ≈ 2.2 GiB of 24
    small = ChapterData(data.chapter, {s: m | {"machine": MACHINE | {"memory_bytes": 4 * 2**30}} for s, m in data.steps.items()},
                        data.requests, data.ss, data.actuator, data.process, data.startup)
    assert not check_k6_memory(small).holds  # the same on a 4 GiB machine: over a quarter


# ---- batch spike mode: a k6 VU carries many users, each user one request ----------------------------------------
BATCH_USER_KIB, BATCH_VUS = 30, 10


def with_batch(data: ChapterData, spreads: dict[int, float], cores: dict[str, float] | None = None) -> ChapterData:
    """`data` plus batch-N steps: N one-request users on BATCH_VUS VUs, starts spread over `spreads[N]`; k6's memory
    grows by BATCH_USER_KIB a user; k6 and the server use `cores` while the users start."""
    cores = cores or {"k6": 0.5, "server": 0.5}
    metas, requests, process = dict(data.steps), [data.requests], [data.process]
    for users, spread in spreads.items():
        step = f"batch-{users}"
        metas[step] = meta(step, users) | {"config": {"load": {"vus": users, "spike_mode": "batch"}, "server": {}}}
        rows = spike(step, users, spread)
        requests.append(rows.assign(vu=rows["vu"] % BATCH_VUS + 1))
        t0, t1 = rows["start_ms"].min() - 100, rows["start_ms"].max() + 100
        for name, base, used in (("k6", K6_BASE, cores["k6"]), ("server", SERVER_BASE, cores["server"])):
            rss = base + (BATCH_USER_KIB * KIB * users if name == "k6" else PER_CONNECTION * users + PER_THREAD * users)
            process.append(pd.DataFrame({"step": step, "process": name, "ts_ms": [t0, t1], "rss_bytes": [base, rss],
                                         "cpu_seconds": [10.0, 10.0 + used * (t1 - t0) / 1000]}))
    return ChapterData(data.chapter, metas, pd.concat(requests, ignore_index=True), data.ss, data.actuator,
                       pd.concat(process, ignore_index=True), data.startup)


def test_in_batch_mode_every_request_is_a_user_and_its_own_first_start():
    data = with_batch(chapter({3000: 8.0}, {}), {3000: 1.5})
    row = batch_table(data).iloc[0]
    assert row["batch_spread_s"] == pytest.approx(1.5) and row["vus_spread_s"] == pytest.approx(8.0)
    assert row["batch_k6_vus"] == BATCH_VUS
    assert len(first_starts_s(data, "batch-3000")) == 3000  # not one start per VU
    assert start_table(data).set_index("step").loc["batch-3000", "started_1s"] == pytest.approx(2000, abs=2)


def test_batch_check_and_sentence_when_the_goal_is_met():
    data = with_batch(chapter({300: 0.2, 15000: 13.0}, {}), {300: 0.1, 15000: 1.8})
    assert check_batch_spike(data).holds
    text = batch_sentence(data, 2.0)
    assert "start faster at every N" in text and "after 1.8 s, against 13.0 s" in text
    assert "within the lab's goal of 2 s" in text


def test_batch_sentence_names_a_saturated_machine_when_the_goal_is_missed():
    busy = with_batch(chapter({15000: 13.0}, {}), {15000: 6.5}, cores={"k6": 0.7, "server": 1.2})
    check = check_batch_spike(busy)
    assert not check.holds and "15,000: 6.5 s (one VU per user: 13.0 s)" in check.measured
    text = batch_sentence(busy, 2.0)
    assert "k6 used 0.7 and the server 1.2 of the two cores. The machine was saturated" in text
    idle = with_batch(chapter({15000: 13.0}, {}), {15000: 6.5}, cores={"k6": 0.3, "server": 0.4})
    assert "The cores had room, so CPU is not what holds the start back" in batch_sentence(idle, 2.0)
    assert not check_batch_spike(chapter({300: 0.1}, {})).holds  # no batch step: nothing shown


def test_k6_memory_per_batch_user_is_fitted_apart_from_a_vu_per_user():
    data = with_batch(chapter({300: 0.1, 3000: 0.1, 6000: 0.1}, {}), {300: 0.1, 3000: 0.1, 6000: 0.1})
    costs = memory_costs(memory_table(data))
    assert costs["k6_per_user_kib"] == pytest.approx(150)
    assert costs["k6_per_batch_user_kib"] == pytest.approx(BATCH_USER_KIB)
    assert f"**{BATCH_USER_KIB} KiB** when `http.batch` carries the users" in memory_sentence(data)


def test_batch_sentence_names_the_sizes_where_batch_is_no_faster():
    data = with_batch(chapter({300: 0.2, 3000: 0.5, 15000: 13.0}, {}), {300: 0.1, 3000: 0.9, 15000: 6.0})
    assert "faster at 300 and 15,000 users and no faster at 3,000" in batch_sentence(data, 2.0)


def test_without_batch_steps_the_chapter_says_they_have_not_run_and_claims_nothing_of_them():
    data = chapter({300: 0.1, 3000: 0.5}, {})
    assert "has no batch-N steps yet" in batch_sentence(data, 2.0)
    from harness.book.chapters.ch2_checks import batch_checks
    assert batch_checks(data) == []
    assert [c.claim for c in batch_checks(with_batch(data, {300: 0.1}))] == [check_batch_spike(with_batch(data, {300: 0.1})).claim]
    assert not check_batch_spike(data).holds and check_batch_spike(data).measured.endswith("no batch step")


def test_sampler_sentence_names_the_budget_the_lab_keeps_when_no_step_ran_with_it():
    from harness.book.chapters.ch2_checks import budgeted_sampler_sentence
    from harness.book.chapters.ch2_lab import sampler_cost_table
    table = sampler_cost_table(chapter({300: 0.1, 15000: 0.1}, {}))
    assert set(table.socket_counts) == {"every tick"}
    assert "keeps the socket sampler within 2% of one core" in budgeted_sampler_sentence(table)
    budgeted = table.assign(socket_counts=["every tick"] * (len(table) - 1) + ["within 2% of a core"])
    assert "in the one step run that way" in budgeted_sampler_sentence(budgeted)
    assert "the samplers took at most" in budgeted_sampler_sentence(budgeted)
