"""Chapter 2's checks of its lab (harness.book.chapters.ch2.lab_checks): each statistic on synthetic data on both sides of
its rule, the comparison of two settings in σ of their difference, and every check judged on the reference data."""
import math

import pandas as pd
import pytest

from harness.book.chapters import ch2
from harness.book.chapters.ch2 import lab_checks as ch
from harness.book.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, judge
from harness.lab.store import ChapterData

from ch2_synthetic import again, chapter, meta, on_machine, repeated, replace, with_batch, with_overflows  # noqa: I001

STEADY = {"noise": [(10, 0.0), (12, 0.1), (11, 0.2), (10, 0.1), (12, 0.0)], "unsampled": [(11, 0.1), (10, 0.0), (12, 0.2)]}


def with_repeats(data: ChapterData, runs=None) -> ChapterData:
    return repeated(runs or STEADY, data)


def outcome(data: ChapterData, check: str) -> str:
    return ch2.by_id(ch.checks(data))[check].judgement.outcome


def test_every_rule_is_declared_once_with_a_source():
    ids = [r.claim for r in ch.RULES]
    assert len(ids) == len(set(ids)) and all(r.source and r.measure and r.quote for r in ch.RULES)
    goals = ("batch", "k6-memory", "redeploy", "samplers-1000", "samplers-15000")
    assert all(ch.rules()[goal].source.startswith("a goal of the lab") for goal in goals)  # labelled as goals


@pytest.mark.parametrize("largest_s, expected", [(0.3, REPRODUCED), (8.0, NOT_REPRODUCED), (1.05, INCONCLUSIVE)])
def test_spike_check_reads_the_largest_spike_against_one_second(largest_s, expected):
    data = with_repeats(chapter({300: 0.2, 3000: largest_s}, {}))
    measured = ch.spike(data)
    assert measured.value == pytest.approx(largest_s) and measured.sigma > 0  # σ borrowed from the repeats
    assert judge(ch.rules()["spike"], measured).outcome == expected


def test_batch_check_against_the_labs_goal():
    fast = with_repeats(with_batch(chapter({3000: 4.0}, {}), {3000: 0.5}))
    slow = with_repeats(with_batch(chapter({3000: 4.0}, {}), {3000: 6.0}))
    assert outcome(fast, "batch") == REPRODUCED and outcome(slow, "batch") == NOT_REPRODUCED


def test_a_spike_check_without_repeats_has_no_spread_and_decides_nothing():
    assert outcome(chapter({300: 0.2, 3000: 0.3}, {}), "spike") == INCONCLUSIVE


@pytest.mark.parametrize("spread_s, expected", [(10000 / 3000, REPRODUCED), (1.0, NOT_REPRODUCED)])
def test_constant_vus_check_compares_issued_with_users_started_within_a_second(spread_s, expected):
    data = with_repeats(again(chapter({10000: spread_s}, {10000: 3000}), 10000, [3100, 2900, 3050]))
    assert outcome(data, "constant-vus") == expected


def test_two_settings_agree_within_three_sigma_of_their_difference():
    measured, shown = ch.z_measured([10.0, 12.0, 11.0], [11.0, 10.0, 12.0, 11.0], "a and b")
    assert abs(measured.value) < 3 and shown == "+0"
    assert judge(ch.rules()["sampling-failures"], measured).outcome == REPRODUCED
    apart, shown = ch.z_measured([40.0, 41.0, 42.0], [11.0, 10.0, 12.0, 11.0], "a and b")
    assert apart.value > 3 and shown == "+30" and judge(ch.rules()["sampling-failures"], apart).outcome == NOT_REPRODUCED
    assert not ch.z_measured([], [1.0], "a and b")[0].values  # nothing to compare: not measured
    assert judge(ch.rules()["sampling-failures"], ch.z_measured([], [1.0], "a and b")[0]).outcome == INCONCLUSIVE


def test_sampling_checks_read_every_run_with_and_without_samplers():
    base = chapter({300: 0.1}, {})
    assert outcome(with_repeats(base), "sampling-failures") == REPRODUCED
    more = dict(STEADY, unsampled=[(40, 0.1), (41, 0.0), (42, 0.2)])
    assert outcome(with_repeats(base, more), "sampling-failures") == NOT_REPRODUCED
    later = dict(STEADY, unsampled=[(11, 2.0), (10, 2.1), (12, 2.2)])
    assert outcome(with_repeats(base, later), "sampling-waves") == NOT_REPRODUCED


def test_acceptor_check_holds_only_without_overflows():
    data = chapter({300: 0.1, 1000: 0.2, 3000: 0.4}, {})
    assert outcome(data, "acceptor") == REPRODUCED
    measured = ch.acceptor(with_overflows(data, {"hold-1000": 464, "hold-3000": 9}))
    assert measured.value == 473 and measured.exact and "overflows at 1,000 and 3,000 users" in measured.note
    gap = ch.acceptor(with_overflows(data, {"hold-1000": 464}))  # none at 3,000: no "from 1,000 users on"
    assert gap.note == "overflows at 1,000 users, none at the other N"
    assert judge(ch.rules()["acceptor"], measured).outcome == NOT_REPRODUCED
    assert ch.acceptor(with_overflows(data, {"queue-1000": 50})).value == 0  # another server's overflows do not count


def test_k6_memory_check_against_the_machine():
    data = with_repeats(chapter({300: 0.1, 15000: 0.1}, {}))
    assert outcome(data, "k6-memory") == INCONCLUSIVE  # the repeats' k6 peaks: none sampled, so no spread
    peaks = pd.concat([data.process, *(pd.DataFrame({"step": run, "ts_ms": [1], "process": ["k6"],
                                                     "rss_bytes": [rss], "cpu_seconds": 0.0})
                                       for run, rss in (("noise", 1.00e9), ("noise.2", 1.02e9), ("noise.3", 0.99e9)))])
    sampled = replace(data, process=peaks)
    assert outcome(sampled, "k6-memory") == REPRODUCED  # 15,000 × 150 KiB ≈ 2.2 GiB of 24
    assert outcome(on_machine(sampled, memory_bytes=4 * 2**30), "k6-memory") == NOT_REPRODUCED


def test_files_first_check_follows_the_measured_costs():
    noisy = chapter({300: 0.1, 1000: 0.1, 3000: 0.1}, {})
    process = noisy.process.copy()
    process.loc[(process.step == "hold-1000") & (process.process == "server") & (process.ts_ms == 2), "rss_bytes"] += 2**20
    noisy = replace(noisy, process=process)  # a small residual: the fits get a standard error
    assert outcome(noisy, "files-first") == REPRODUCED  # 24 GiB hold ≈ 86,000 users at 290 KiB
    assert outcome(on_machine(noisy, memory_bytes=2**30), "files-first") == NOT_REPRODUCED  # ≈ 3,600 users


@pytest.mark.parametrize("shift_ms, expected", [(0, REPRODUCED), (1500, NOT_REPRODUCED)])
def test_redeploy_check_against_the_labs_goal(shift_ms, expected):
    startup = pd.DataFrame({"step": "redeploy-cds", "start": range(1, 6), "started_ms": 0,
                            "startup_ms": [1900 + shift_ms + d for d in (0, 30, -20, 10, 40)], "rss_bytes": 2**20})
    data = replace(chapter({}, {}), steps={"redeploy-cds": meta("redeploy-cds", 0) | {"launch": "cds"}}, startup=startup)
    assert judge(ch.rules()["redeploy"], ch.redeploy(data)).outcome == expected


def test_sampler_budget_checks():
    cheap = with_repeats(chapter({300: 0.1, 15000: 0.1}, {}, sampler_cpu_s=0.2))  # 2 % of a core
    assert outcome(cheap, "samplers-1000") == REPRODUCED and outcome(cheap, "samplers-15000") == REPRODUCED
    costly = with_repeats(chapter({300: 0.1, 15000: 0.1}, {}, sampler_cpu_s=1.0))  # 10 %: over 5 %, under 15 %
    assert outcome(costly, "samplers-1000") == NOT_REPRODUCED and outcome(costly, "samplers-15000") == REPRODUCED
    assert not ch.samplers(chapter({300: 0.1}, {}), 15000).values  # no step above 1,000 connections: not measured


def test_the_face_judges_no_finding_and_names_no_server_limit():
    assert ch2.judge() == [] and ch2.limits() == []


def test_every_check_is_measured_and_judged_on_the_reference_data():
    checked = ch.checks(ch2.load())
    assert [c.rule.claim for c in checked] == [r.claim for r in ch.RULES]
    for check in checked:
        measured = check.judgement.measured
        assert measured.values and all(math.isfinite(v) for v in measured.values), check.rule.claim
        assert check.judgement.outcome in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)


def test_runs_that_all_give_one_number_show_no_change_and_a_constant_gap_is_not_called_noise():
    same, shown = ch.z_measured([1707.0, 1707.0, 1707.0], [1707.0, 1707.0], "a and b")
    assert same.values == (0.0,) and shown == "±0" and same.note.startswith(ch.IDENTICAL)
    gap, _ = ch.z_measured([1707.0, 1707.0], [1706.0, 1706.0], "a and b")
    assert gap.values == ()  # no spread to measure the gap in: the rule cannot decide, it does not pass
    one, _ = ch.z_measured([1707.0], [1707.0, 1707.0], "a and b")
    assert one.values == ()  # one run is no evidence of "every run the same"


def test_a_check_whose_runs_all_gave_one_number_shows_no_sigma_and_no_margin():
    from harness.book.chapters.ch2 import tables

    rule = next(r for r in ch.RULES if r.claim == "sampling-failures")
    same = ch._check(rule, *ch.z_measured([1707.0] * 3, [1707.0] * 5, "unsampled and noise"))
    apart = ch._check(rule, *ch.z_measured([1700.0, 1710.0, 1705.0], [1707.0] * 5, "unsampled and noise"))
    assert same.identical and not apart.identical
    assert tables.measured_text(same) == "no difference: every run gave the same number"
    assert tables.margin_text(same) == "–" and "σ" in tables.margin_text(apart)
