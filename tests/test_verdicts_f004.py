"""Chapter 4's verdicts (seed 004) on synthetic steps, and F004-e on the article's own table: each can come out
either way."""
import numpy as np
import pandas as pd
import pytest

from harness.book.chapters.ch4_verdicts import (
    ARTICLE_TABLE,
    STEP_COLUMNS,
    article_table,
    f004_a,
    f004_b,
    f004_c,
    f004_d,
    f004_e,
    f004_verdicts,
    little_table,
)
from harness.book.verdict import NOT_REPRODUCED, REPRODUCED
from harness.models.bounds import predict_bounds

WORK = {"cpu_ms": 4.0, "wait_ms": 40.0}  # the chapter's endpoint: the CPU saturates at 11 users per core
JVM_OWN_THREADS = 30  # threads a JVM runs besides Tomcat's pool (GC, compilers, Actuator's server)
MEASURED_SHARE = 0.96  # a real server reaches a little less than the bound


def row(users, threads_max, min_spare=10, quota=1.0, kind="sustained", tps=None, live=None, **extra) -> dict:
    """A step as the chapter's table gives it: by default what the bounds model predicts, a little lower, with the
    pool grown to the users (or min-spare) and the JVM's own threads on top."""
    model = predict_bounds(users, threads_max, cores=quota, **WORK).tps
    tps = model * MEASURED_SHARE if tps is None else tps
    mean_ms = users * 1000 / tps
    pool = min(max(users, min_spare), threads_max)
    return {"step": f"{kind}-{threads_max}-{min_spare}-{users}-{quota:g}", "kind": kind, "users": users,
            "threads_max": threads_max, "min_spare": min_spare, "cpu_quota": quota, "tps": tps, "mean_ms": mean_ms,
            "p50_ms": mean_ms, "p99_ms": 2 * mean_ms, "errors": 0, "server_cpu_cores": min(quota, tps * 4 / 1000),
            "k6_cpu_cores": 0.3, "live_threads_peak": pool + JVM_OWN_THREADS, "current_threads_peak": pool if live is None else live,
            "busy_threads_peak": min(users, threads_max), "model_tps": model,
            "first_seconds_p99_ms": np.nan, "first_seconds_errors": np.nan, **extra}


def table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows)


SWEEP = [row(n, 200) for n in (2, 5, 10, 20, 50, 100, 200, 400, 800)]
MORE_THREADS = [row(n, t, spare) for t, spare in ((400, 100), (800, 200)) for n in (100, 400, 800)]
FEW_THREADS = [row(100, t, t) for t in (4, 8)]
QUOTAS = [row(300, 400, 200, quota=0.5), row(300, 800, 200, quota=0.5), row(300, 400, 200, quota=1.0)]


def burst(min_spare, p99_ms, errors=0) -> dict:
    return row(400, 400, min_spare, kind="burst", first_seconds_p99_ms=p99_ms, first_seconds_errors=errors)


ARTICLE_LIKE = table(SWEEP + MORE_THREADS + FEW_THREADS + QUOTAS + [burst(10, 2400, 12), burst(400, 1500, 0)])


def test_the_table_the_chapter_gives_has_the_columns_named():
    assert set(STEP_COLUMNS) <= set(ARTICLE_LIKE.columns)


def test_a_cpu_bound_server_reproduces_f004_a_to_d():
    verdicts = {v.finding: v.verdict for v in f004_verdicts(ARTICLE_LIKE)}
    assert verdicts == dict.fromkeys(["F004-a", "F004-b", "F004-c", "F004-d", "F004-e"], REPRODUCED)


def test_f004_a_measured_text_comes_from_the_data():
    verdict = f004_a(ARTICLE_LIKE)
    best = ARTICLE_LIKE[ARTICLE_LIKE.cpu_quota == 1.0].groupby("threads_max")["tps"].max()
    assert f"{best[200]:,.0f}/s at 200" in verdict.measured
    assert "below the knee threads.max 4" in verdict.measured


def test_more_threads_raising_the_plateau_is_not_f004_a():
    faster = table(SWEEP + [row(n, 800, 200, tps=predict_bounds(n, 800, cores=1.0, **WORK).tps * 1.2) for n in (400, 800)])
    verdict = f004_a(faster)
    assert verdict.verdict == NOT_REPRODUCED and "more threads raised the plateau" in verdict.why


def test_latency_that_does_not_grow_past_saturation_is_not_f004_a():
    flat = [dict(r, mean_ms=50.0) for r in SWEEP]
    verdict = f004_a(table(flat + MORE_THREADS))
    assert verdict.verdict == NOT_REPRODUCED and "latency did not grow" in verdict.why


def test_f004_a_needs_two_pools_past_the_knee():
    verdict = f004_a(table(SWEEP))
    assert verdict.verdict == NOT_REPRODUCED and verdict.measured.startswith("no ")


def test_a_quota_that_moves_nothing_is_not_f004_b():
    # A server whose pool, not its CPU, is the limit: half a core serves as much as a whole one.
    stuck = [dict(r, tps=QUOTAS[2]["tps"]) for r in QUOTAS]
    verdict = f004_b(table(stuck))
    assert verdict.verdict == NOT_REPRODUCED and "more CPU gained less" in verdict.why
    assert "quota 0.5 → 1 core (" in verdict.measured


def test_threads_that_raise_throughput_at_a_fixed_quota_are_not_f004_b():
    more = [QUOTAS[0], dict(QUOTAS[1], tps=QUOTAS[0]["tps"] * 1.3), QUOTAS[2]]
    assert f004_b(table(more)).verdict == NOT_REPRODUCED


def test_f004_b_ratio_is_reported_against_the_model():
    verdict = f004_b(ARTICLE_LIKE)
    assert verdict.verdict == REPRODUCED and "×2.00 (model ×2.00)" in verdict.measured


def test_a_pool_started_full_is_not_f004_c():
    full = [dict(r, current_threads_peak=r["threads_max"]) for r in SWEEP + MORE_THREADS]
    verdict = f004_c(table(full))
    assert verdict.verdict == NOT_REPRODUCED and "reached threads.max with fewer users" in verdict.why


def test_a_pool_that_does_not_grow_with_users_is_not_f004_c():
    stuck = [dict(r, current_threads_peak=min(40, r["threads_max"])) for r in SWEEP]
    verdict = f004_c(table(stuck))
    assert verdict.verdict == NOT_REPRODUCED and "grew by less" in verdict.why


def test_f004_d_needs_a_named_margin():
    same = f004_d(table([burst(10, 2000, 3), burst(400, 1900, 3)]))  # 5 % better: inside the burst's scatter
    assert same.verdict == NOT_REPRODUCED and "−5%" in same.measured
    assert f004_d(table([burst(10, 2000, 10), burst(400, 1990, 2)])).verdict == REPRODUCED  # errors down by 80 %
    assert f004_d(table([burst(10, 2000, 0), burst(400, 1000, 5)])).verdict == NOT_REPRODUCED  # faster, but errors


def test_f004_d_needs_two_settings():
    assert f004_d(table([burst(10, 2000)])).verdict == NOT_REPRODUCED


def test_the_article_table_as_committed():
    article = article_table()
    assert list(article["run"]) == list(range(1, 12))
    assert article.loc[article.run == 11, ["vus_claimed", "vus_setup"]].values.tolist() == [[2800, 1200]]
    assert (article["vus_claimed"] != article["vus_setup"]).sum() == 1
    assert ARTICLE_TABLE.with_suffix(".md").exists()  # its source, named


def test_littles_law_on_the_article_numbers():
    little = little_table(article_table()).set_index("run")
    assert little.loc[1, "little_ms"] == pytest.approx(100 / 1831 * 1000)  # 55 ms, reported 48.44
    assert little.loc[2, "little_ms"] == pytest.approx(300 / 2730 * 1000)  # 110 ms, reported 108.59
    assert little.loc[11, "little_setup_ms"] == pytest.approx(1200 / 2678 * 1000)
    assert np.isnan(little.loc[1, "little_setup_ms"])
    assert little.loc[11, "users_in_flight"] == pytest.approx(2678 * 337.75 / 1000)


def test_f004_e_on_the_committed_table_is_reproduced():
    verdict = f004_e(article_table())
    assert verdict.verdict == REPRODUCED
    assert "1,046 ms for the 2,800 VUs" in verdict.measured and "448 ms for the 1,200" in verdict.measured


def test_f004_e_fails_when_a_run_breaks_littles_law(tmp_path):
    article = article_table()
    article.loc[article.run == 2, "mean_latency_ms"] = 200.0  # 300 / 2730 is 110 ms
    path = tmp_path / "article-table.csv"
    article.to_csv(path, index=False)
    verdict = f004_e(article_table(path))
    assert verdict.verdict == NOT_REPRODUCED and "run 2 (182%)" in verdict.measured


def test_f004_e_fails_when_run_11_fits_its_claimed_users():
    article = article_table()
    article.loc[article.run == 11, "mean_latency_ms"] = 1040.0  # what 2800 users at 2678/s would wait
    verdict = f004_e(article)
    assert verdict.verdict == NOT_REPRODUCED and "setup's VUs" in verdict.why


def test_f004_c_counts_tomcats_pool_not_the_jvms_threads():
    # the management port's Tomcat takes the same min-spare: the JVM's live threads pass threads.max, Tomcat's pool not
    crowded = [dict(r, live_threads_peak=r["threads_max"] + 200) for r in SWEEP + MORE_THREADS]
    assert f004_c(table(crowded)).verdict == REPRODUCED


def test_repeats_of_a_pair_count_by_their_median():
    noisy = [row(300, 400, 200, quota=0.5, tps=64), row(300, 400, 200, quota=0.5, tps=71), row(300, 400, 200, quota=0.5, tps=70),
             row(300, 800, 200, quota=0.5, tps=71.5), row(300, 800, 200, quota=0.5, tps=69), row(300, 800, 200, quota=0.5, tps=70),
             row(300, 400, 200, quota=1.0, tps=140)]
    verdict = f004_b(table(SWEEP + MORE_THREADS + noisy))
    assert "70/s → 70/s" in verdict.measured  # medians, not the first run of each


def test_a_gain_within_the_run_to_run_spread_of_repeats_is_noise_for_f004_b():
    # threads.max 400 → 800 on half a core gains 8 %; one setting's three runs spread over 12 %: noise, not an effect
    runs = [row(300, 400, 200, quota=0.5, tps=t) for t in (60, 64, 67.5)] + [row(300, 800, 200, quota=0.5, tps=69)]
    verdict = f004_b(table(SWEEP + MORE_THREADS + runs + [row(300, 400, 200, quota=1.0, tps=140)]))
    assert verdict.verdict == REPRODUCED and "one setting's runs spread over up to 12% of their median" in verdict.measured
    alone = [row(300, 400, 200, quota=0.5, tps=64), row(300, 800, 200, quota=0.5, tps=69),
             row(300, 400, 200, quota=1.0, tps=140)]  # the same gain without repeats: more than the 5 % allowed
    assert f004_b(table(SWEEP + MORE_THREADS + alone)).verdict == NOT_REPRODUCED

