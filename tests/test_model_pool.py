import pytest

from harness.models import pool


def test_the_articles_goal_and_the_peak_it_left_out():
    # 19,080,000 / 86,400 is 220.83; the article writes 220.69 (its page views would be 19,067,616)
    assert pool.tps_goal(19_080_000) == pytest.approx(220.833, abs=0.001)
    assert pool.peak_tps(19_080_000) == pytest.approx(883.33, abs=0.01)  # 80 % of the views in 20 % of the day
    assert pool.peak_tps(19_080_000, share=0.5, time_share=0.5) == pytest.approx(pool.tps_goal(19_080_000))


def test_hikaris_rule_of_thumb():
    assert pool.hikari_pool_size(2) == 4
    assert pool.hikari_pool_size(0.25, spindles=1) == 1.5


def test_littles_law_and_the_two_bounds_meet_at_the_useful_pool():
    assert pool.busy_connections(200, 25) == 5
    assert pool.pool_bound_tps(10, 50) == 200
    assert pool.db_bound_tps(0.5, 5) == 100
    size = pool.useful_pool(0.5, hold_ms=50, db_cpu_ms=5)
    assert size == 5 and pool.pool_bound_tps(size, 50) == pool.db_bound_tps(0.5, 5)
