"""The Universal Scalability Law fit: known λ, α, β come back from exact and noisy data; bad input is refused."""
import numpy as np
import pytest

from harness.models.usl import fit_usl, r_squared, usl_throughput

USERS = [1, 2, 4, 8, 16, 32, 64, 128]


def test_exact_data_gives_back_its_parameters():
    fit = fit_usl(USERS, usl_throughput(USERS, 100.0, 0.05, 0.001))
    assert fit.lambda_ == pytest.approx(100.0) and fit.alpha == pytest.approx(0.05) and fit.beta == pytest.approx(0.001)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.peak_users == pytest.approx(np.sqrt(0.95 / 0.001))
    assert fit.peak_tps == pytest.approx(usl_throughput(fit.peak_users, 100.0, 0.05, 0.001))
    assert fit.points == len(USERS)


def test_noisy_data_gives_back_its_parameters_roughly():
    rng = np.random.default_rng(4)
    users = np.repeat(USERS, 3)  # three runs per level, 3 % noise each, as steps of a chapter might scatter
    tps = usl_throughput(users, 100.0, 0.05, 0.001) * rng.normal(1, 0.03, len(users))
    fit = fit_usl(users, tps)
    assert fit.lambda_ == pytest.approx(100.0, rel=0.05)
    assert fit.alpha == pytest.approx(0.05, abs=0.01)
    assert fit.beta == pytest.approx(0.001, rel=0.15)
    assert fit.r_squared > 0.95


def test_linear_scaling_has_no_contention_nor_coherence():
    fit = fit_usl([1, 2, 5, 10], [50, 100, 250, 500])
    assert fit.lambda_ == pytest.approx(50) and fit.alpha == 0 and fit.beta == 0
    assert fit.peak_users is None and fit.peak_tps == np.inf


def test_a_plateau_is_contention_alone():
    users = [1, 10, 100, 1000]
    fit = fit_usl(users, usl_throughput(users, 40.0, 0.1, 0.0))
    assert fit.alpha == pytest.approx(0.1) and fit.beta == 0
    assert fit.peak_tps == pytest.approx(400)  # λ / α


def test_superlinear_data_is_held_at_zero_contention():
    # X grows faster than N (a cache warming up): unconstrained, α would come out negative.
    fit = fit_usl([1, 2, 4, 8], [10, 22, 48, 104])
    assert fit.alpha == 0 and fit.beta == 0 and fit.lambda_ > 0


def test_fewer_than_three_user_counts_are_refused():
    with pytest.raises(ValueError, match="at least 3 distinct user counts"):
        fit_usl([10, 10, 20, 20], [100, 101, 180, 182])


def test_bad_points_are_refused():
    with pytest.raises(ValueError, match="same length"):
        fit_usl([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="> 0"):
        fit_usl([1, 2, 3], [10, 0, 30])


def test_r_squared_of_a_flat_series():
    assert r_squared([5, 5, 5], [5, 5, 5]) == 1.0
    assert r_squared([5, 5, 5], [4, 5, 6]) == 0.0
