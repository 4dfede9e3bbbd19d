"""Chapter 4's sentences on synthetic step tables whose story is known, each worded from its numbers."""
import numpy as np
import pandas as pd

from harness.book.chapters import ch4_sentences as ch4
from harness.book.chapters.ch4_steps import COLUMNS
from harness.book.chapters.ch4_verdicts import article_table
from harness.models.bounds import predict_bounds

CPU_MS, WAIT_MS = 4.0, 40.0


def row(step, users, threads=200, quota=1.0, kind="sustained", spare=10, **extra):
    model = predict_bounds(users, threads, CPU_MS, WAIT_MS, quota)
    tps = 0.8 * model.tps  # the framework's share of the CPU: 20 %
    base = {c: np.nan for c in COLUMNS} | {
        "step": step, "kind": kind, "users": users, "threads_max": threads, "min_spare": spare, "cpu_quota": quota,
        "tps": tps, "mean_ms": users * 1000 / tps, "p50_ms": users * 900 / tps, "p99_ms": users * 1500 / tps, "errors": 0,
        "dropped": 0, "server_cpu_cores": tps * CPU_MS / 800, "k6_cpu_cores": 0.1, "live_threads_peak": min(users, threads) + 30,
        "busy_threads_peak": min(users, threads), "current_threads_peak": max(spare, min(users, threads)),
        "cpu_ms_per_request": CPU_MS / 0.8, "model_tps": model.tps, "model_mean_ms": model.mean_latency_ms}
    return base | extra


def table(*extra_rows):
    rows = [row(f"sweep-{n}", n) for n in (2, 5, 10, 20, 50, 100, 200)]
    rows += [row(f"threads-800-{n}", n, threads=800) for n in (100, 400)]
    rows += [row("quota-half", 300, threads=400, quota=0.5), row("quota-one", 300, threads=400)]
    return pd.DataFrame(rows + list(extra_rows), columns=COLUMNS)


def test_saturation_names_who_was_busy():
    text = ch4.saturation_sentence(table())
    assert "k6 never used more than 0.10 of its own core" in text


def test_quota_sentence_against_the_articles_scale_up():
    text = ch4.quota_sentence(table(), article_table())
    assert "×2.00 for ×2 the CPU" in text and "from 2,506 to 3,356 requests per second" in text


def test_threads_growth_follows_the_users_not_the_setting():
    text = ch4.threads_growth_sentence(table())
    assert "With threads.max 800 Tomcat created 100 threads for 100 users, 400 threads for 400 users" in text


def test_the_usl_sees_no_coherence_cost_in_a_flat_plateau():
    text = ch4.usl_sentence(table())
    assert "α = " in text and ("nothing makes throughput fall" in text or "would peak at" in text)


def test_burst_sentence_follows_the_verdict():
    cold = row("burst-spare-10", 400, threads=400, kind="burst", spare=10, first_seconds_p99_ms=2000.0, first_seconds_errors=0)
    same = row("burst-spare-400", 400, threads=400, kind="burst", spare=400, first_seconds_p99_ms=1950.0, first_seconds_errors=0)
    text = ch4.burst_sentence(table(cold, same))
    assert "p99 latency was 2,000 ms with min-spare 10 and 1,950 ms with 400" in text
    assert "the queue for the CPU, not the missing threads" in text
    warm = same | {"first_seconds_p99_ms": 500.0}
    assert "The warm pool helped" in ch4.burst_sentence(table(cold, warm))


def test_open_sentence_below_and_above_capacity():
    below = row("open-125", 100, kind="open", rate=125.0, tps=125.0, p99_ms=60.0)
    above = row("open-300", 3000, kind="open", rate=300.0, tps=200.0, p99_ms=9000.0, dropped=1234)
    text = ch4.open_sentence(table(below, above))
    assert "125 arriving per second: 125 answered, p99 60 ms; 300 arriving per second: 200 answered, p99 9,000 ms, 1,234 dropped" in text
    assert "k6 dropped what it had no free VU for (300 per second)" in text


def test_threads_growth_names_the_pool_with_most_steps_and_the_jvms_count():
    text = ch4.threads_growth_sentence(table(row("many", 2000, threads=2000)))
    assert text.startswith("With threads.max 800 Tomcat created")


def test_a_pool_short_of_threads_max_with_as_many_users_is_named_and_not_explained_away():
    assert "stopped short" not in ch4.threads_growth_sentence(table())
    short = row("many-threads", 2000, threads=2000, current_threads_peak=91)
    text = ch4.threads_growth_sentence(table(short))
    assert "stopped short in one step (furthest: many-threads, 91 threads of 2,000 for 2,000 users)" in text
    assert "We have not isolated why" in text


def test_the_articles_setup_comes_from_its_table():
    from harness.book.chapters.ch4_tables import article_intro
    text = article_intro(article_table())
    assert "on four Kubernetes pods" in text and "for three minutes at 100 to 2,800 virtual users. Its 11 runs" in text
