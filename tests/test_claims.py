"""The verdict machinery (harness.book.claims, noise): a claim's outcome from its rule and the runs' values with their
spread, the honest middle, nearby windows, a machine fact the data must show, a finding composed from its parts, the
stray failures. Kept passes and their pooling: test_passes.py."""
from __future__ import annotations

import pytest

from harness.book import claims, noise, passes
from harness.book.claims import (DIFFERS, INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, Measured, Rule, compose,
                                 judge)


def rule(shape="above", threshold=10.0, machine="", k=3.0, core=True, claim="F000-a.1"):
    return Rule(claim, claim.split(".")[0], "000", "q", "m", shape, threshold, "s", k=k, machine=machine, core=core)


@pytest.mark.parametrize("values, expected", [
    ((20, 21, 19), REPRODUCED),  # 20 ± 0.58: 17σ above 10
    ((0, 1, -1), NOT_REPRODUCED),
    ((11, 9, 13), INCONCLUSIVE),  # 11 ± 1.15: under 3σ from 10
])
def test_an_outcome_needs_k_sigma_on_its_side_of_the_threshold(values, expected):
    assert judge(rule(), Measured(values)).outcome == expected


def test_a_miss_differs_on_this_hardware_only_when_the_data_shows_the_machine_fact():
    assert judge(rule(machine="2 cores"), Measured((0, 1, -1), busy=0.97)).outcome == DIFFERS
    assert judge(rule(machine="2 cores"), Measured((0, 1, -1), busy=0.55)).outcome == NOT_REPRODUCED  # cores half idle
    assert judge(rule(machine="2 cores"), Measured((0, 1, -1))).outcome == NOT_REPRODUCED  # the fact never read
    assert judge(rule(), Measured((0, 1, -1), busy=0.99)).outcome == NOT_REPRODUCED  # the rule names no machine fact


def test_a_borrowed_spread_of_zero_is_no_spread():
    """One run with a spread borrowed from repeats that never varied is not exact (chapter 7's F000-k.2 read 6,835 and
    2,205 failures in two passes while its borrowed σ was 0)."""
    j = judge(rule(), Measured((6835,), borrowed_sigma=0.0))
    assert j.measured.sigma is None and j.outcome == INCONCLUSIVE


def test_exact_means_every_run_gave_the_same_value():
    assert Measured((3, 3, 3), exact=True).sigma == 0
    assert Measured((3, 5), exact=True).sigma == pytest.approx(1.0)  # not exact after all: the runs' spread judges
    assert judge(rule(threshold=4), Measured((3, 5), exact=True)).outcome == INCONCLUSIVE


def test_one_run_without_a_measured_spread_is_inconclusive_and_says_what_it_takes():
    j = judge(rule(), Measured((50,)))
    assert j.outcome == INCONCLUSIVE and "repeats" in j.why
    assert judge(rule(), Measured((50,), borrowed_sigma=5, sigma_source="chapter 2's repeats")).outcome == REPRODUCED
    assert judge(rule(), Measured((10.5,), exact=True)).outcome == REPRODUCED  # exact: any margin counts


def test_a_few_runs_never_claim_less_spread_than_the_borrowed_one():
    tight = Measured((20, 20, 20), borrowed_sigma=6)
    assert tight.sigma == pytest.approx(6 / 3 ** 0.5)
    assert judge(rule(), tight).outcome == INCONCLUSIVE  # 10 above, 3σ = 10.4


@pytest.mark.parametrize("shape, threshold, value, expected", [
    ("below", 10.0, 2.0, REPRODUCED), ("below", 10.0, 18.0, NOT_REPRODUCED),
    ("band", (5.0, 15.0), 10.0, REPRODUCED), ("band", (5.0, 15.0), 30.0, NOT_REPRODUCED),
    ("within", 10.0, -2.0, REPRODUCED), ("within", 10.0, 25.0, NOT_REPRODUCED),
])
def test_every_shape(shape, threshold, value, expected):
    assert judge(rule(shape, threshold), Measured((value,), borrowed_sigma=0.5)).outcome == expected


def test_an_outcome_that_depends_on_the_window_is_inconclusive():
    j = judge(rule(), Measured((20, 21, 19), nearby=(20.5, 5.0)))
    assert j.outcome == INCONCLUSIVE and j.why.startswith("depends on the window")


def test_runs_needed_shrink_the_interval_with_the_square_root():
    j = judge(rule(), Measured((11, 9, 13)))  # margin 1, σ of a run 2: 3·2/1 → 36 runs
    assert "about 36 runs" in j.why


def test_a_finding_is_composed_from_its_parts():
    yes = judge(rule(claim="F000-f.1"), Measured((20, 21, 19)))
    no = judge(rule(claim="F000-f.2"), Measured((0, 1, -1)))
    machine = judge(rule(claim="F000-f.3", machine="loopback"), Measured((0, 1, -1), busy=0.95))
    open_ = judge(rule(claim="F000-f.4"), Measured((11, 9, 13)))
    assert compose([yes])[0] == REPRODUCED
    assert compose([yes, no])[0] == PARTLY and compose([yes, no])[1] == "m: yes; m: no"
    assert compose([no, machine])[0] == NOT_REPRODUCED and compose([machine])[0] == DIFFERS
    assert compose([open_])[0] == INCONCLUSIVE
    # An inconclusive core part leaves the finding inconclusive, unless a core part is decided against it.
    assert compose([yes, open_])[0] == INCONCLUSIVE
    assert compose([yes, open_, no])[0] == PARTLY and compose([open_, no])[0] == NOT_REPRODUCED
    side = judge(rule(claim="F000-f.5", core=False), Measured((11, 9, 13)))
    assert compose([yes, side])[0] == PARTLY  # a side part inconclusive: the core held


def test_only_a_move_between_reproduced_and_not_is_a_flip():
    assert passes.flips({"a": REPRODUCED, "b": REPRODUCED, "c": NOT_REPRODUCED},
                        {"a": NOT_REPRODUCED, "b": INCONCLUSIVE, "c": REPRODUCED}) == ["a", "c"]


def test_failures_a_model_predicts_are_not_strays():
    assert noise.predicts_every_answer({"failed": 0, "interrupted": 0, "over_ceiling": 0})
    assert not noise.predicts_every_answer({"failed": 0, "interrupted": 800})  # cut off when k6 stops, as predicted
    assert not noise.predicts_every_answer({"failed": 0, "over_ceiling": 1707})  # beyond the ceiling: SYN retries
    assert not noise.predicts_every_answer({"failed": 3})


def test_the_most_stray_failures_follow_poisson(monkeypatch):
    assert noise.most_stray(10, rate=1e-4) == 0  # 0.001 expected: none
    assert noise.most_stray(15000, rate=1.1e-4) == 7  # 1.65 expected: up to 7 at 3σ
    assert noise.most_stray(100000, rate=1.1e-4) > noise.most_stray(15000, rate=1.1e-4)


def test_rules_files_are_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "CLAIMS_DIR", tmp_path)
    claims._rules.cache_clear()
    (tmp_path / "chapter9.toml").write_text('[[claim]]\nclaim = "F000-a.1"\nfinding = "F000-a"\nshape = "sideways"\n')
    with pytest.raises(claims.LabError, match=r"missing .*'quote'"):
        claims.rules("chapter9")
    claims._rules.cache_clear()
