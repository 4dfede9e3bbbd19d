"""Chapter 4's words that follow the data (harness.book.chapters.ch4.words), each branch on synthetic values, and the
values they read against the article's table and the step files read on their own."""
from __future__ import annotations

import pandas as pd
import pytest

from harness.book.chapters import ch4
from harness.book.chapters.ch4 import words
from harness.book.chapters.ch4.claims import COLD, REPEATED, WARM
from harness.book.chapters.ch4.values import ThreadPair
from harness.book.claims import Measured
from harness.book.prose import MINUS


def pair(users: int, before: int, after: int, tps_from: int, tps_to: int, spare=(10, 100)) -> ThreadPair:
    return ThreadPair(users, before, after, 200, 400, spare[0], spare[1], tps_from, tps_to)


def test_more_threads_are_said_to_raise_throughput_only_where_they_did():
    up, down = pair(100, 1, 3, 1831, 2612), pair(300, 2, 4, 2730, 2532, spare=(10, 10))
    mixed = words.threads_effect([up, down])
    assert mixed.startswith("More threads raised it at 100 users: 1,831 to 2,612 (+43%) in runs 1 and 3, threads.max "
                            "200 to 400 and min-spare 10 to 100.")
    assert mixed.endswith(f"At 300 users they did not: 2,730 to 2,532 ({MINUS}7%) in runs 2 and 4, threads.max 200 to 400.")
    assert words.threads_effect([up]).startswith("More threads raised it too: ")
    assert words.threads_effect([down]).startswith("More threads did not: ")
    assert words.threads_effect([]) == "None of the article's runs raised threads.max and changed nothing else but the pool."


def test_the_articles_thread_pairs_are_its_runs_that_changed_only_the_pool():
    article = ch4.article_table()
    for p in ch4.thread_pairs(article):
        runs = article.set_index("run").loc[[p.before, p.after]]
        assert runs.vus_claimed.nunique() == 1 and runs.pod_cores.nunique() == 1 and runs.heap_gb.nunique() == 1
        assert p.threads_to > p.threads_from and (p.tps_from, p.tps_to) == tuple(runs.tps)
    table = pd.DataFrame({"run": [1, 2, 3], "vus_claimed": [100, 100, 300], "pod_cores": [2, 2, 2],
                          "threads_max": [200, 400, 200], "min_spare": [10, 100, 10], "tps": [10, 12, 20]})
    assert ch4.thread_pairs(table) == [ThreadPair(100, 1, 2, 200, 400, 10, 100, 10, 12)]


def test_the_cpu_gain_says_which_ratio_is_this_datas_and_which_the_verdicts():
    pooled = Measured(values=(1.97,), pooled_value=2.1948, pooled_sigma=0.1, passes=3)
    assert words.cpu_gain(1.9726, pooled) == "×1.97 in these runs, ×2.19 pooled over the book's three kept passes"
    assert words.cpu_gain(1.9726, Measured(values=(1.97,))) == "×1.97 in these runs"


def test_the_measured_knee_is_set_against_the_models():
    assert words.knee_text(8.625, 11) == ("about 8.6 requests in progress at once keep the core busy, fewer than the "
                                          "model's 11")
    assert "more than the model's 11" in words.knee_text(12.3, 11)
    assert "as many as the model's 11" in words.knee_text(11.04, 11)


def test_the_measured_knee_is_the_answer_pages():
    data = ch4.load()
    table, runs = ch4.steps_table(data), ch4.run_table(data)
    (limit,) = ch4.limits()
    assert round(ch4.busy_at_once(ch4.setup(data, table), ch4.plateau(runs)), 1) == pytest.approx(limit.value)


def test_lambda_is_set_against_what_one_user_can_send():
    above = words.lambda_text(25.44, 1000 / 44, 44)
    assert above.startswith("That λ is more than the 22.7 requests a second one user can send at most (1,000 / 44 ms)")
    assert words.lambda_text(20.0, 1000 / 44, 44) == ("That λ is within the 22.7 requests a second one user can send at "
                                                      "most (1,000 / 44 ms).")


def test_the_runs_table_holds_every_sustained_step_that_ran_several_times_and_the_burst_figure_the_rest():
    """The page says @tbl-runs gives every run of the sustained steps that ran several times and @fig-burst each run
    of the burst steps: the data's repeated steps are exactly those."""
    runs = ch4.run_table(ch4.load())
    counts = runs[runs.window == ch4.PLATEAU].groupby(["kind", "step"]).run.nunique()
    repeated = counts[counts > 1]
    assert set(repeated.loc["sustained"].index) == set(REPEATED)
    assert set(repeated.drop("sustained").index.get_level_values("step")) == {COLD, WARM}
