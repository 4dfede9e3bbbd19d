"""F001-a … F001-g on hand-made step tables: each rule reproduces when the numbers say what the article says and does
not when they do not. The article's side comes from data/chapter5/article-*.csv, as in the chapter."""
import numpy as np
import pandas as pd

from harness.book.chapters.ch5_steps import API, COLUMNS, SCENARIO, TOMCAT
from harness.book.chapters.ch5_verdicts import (apis_verdict, article_apis, article_runs, f001_verdicts, final_verdict,
                                                flat_verdict, gc_verdict, goal_verdict, pool_verdict)
from harness.book.verdict import NOT_REPRODUCED, REPRODUCED


def row(step, kind, findings, **values):
    base = dict.fromkeys(COLUMNS, np.nan) | {"step": step, "kind": kind, "findings": findings, "pool": 10,
                                             "threads_max": 200, "max_connections": 8192, "accept_count": 100,
                                             "db_quota": 0.1, "open_in_view": True, "indexes": True, "success": 1.0,
                                             "tps": 100.0, "peak_tps": 120.0, "pending_max": 0.0, "db_cpu_cores": 0.05}
    return base | values


def table(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=COLUMNS)


def test_the_goal_is_the_articles_division_and_its_slip_is_within_rounding():
    verdict = goal_verdict(table(row("final", SCENARIO, "F001-g", peak_tps=300.0)))
    assert verdict.verdict == REPRODUCED
    assert "220.83" in verdict.measured and "883" in verdict.measured and "300/s" in verdict.measured


def test_single_apis_reproduce_only_when_the_database_is_saturated_and_requests_wait():
    saturated = [row(f"api-{n}", API, "F001-b", db_cpu_cores=0.095, pending_max=120.0) for n in range(3)]
    assert apis_verdict(table(*saturated), article_apis()).verdict == REPRODUCED
    idle = [row(f"api-{n}", API, "F001-b", db_cpu_cores=0.02, pending_max=0.0) for n in range(3)]
    verdict = apis_verdict(table(*idle), article_apis())
    assert verdict.verdict == NOT_REPRODUCED and "0 of 3" in verdict.measured


def test_pool_ten_must_beat_five_and_twenty_beyond_noise():
    def steps(tps5, tps10, tps20):
        return table(*(row(f"pool-{p}", SCENARIO, "F001-c", pool=p, tps=t) for p, t in ((5, tps5), (10, tps10), (20, tps20))))
    assert pool_verdict(steps(80, 100, 79), article_runs()).verdict == REPRODUCED
    assert pool_verdict(steps(96, 100, 97), article_runs()).verdict == NOT_REPRODUCED  # within 10 %: no best
    only_small = steps(80, 100, 79)
    larger = row("pool-large-10", SCENARIO, "F001-c", pool=10, tps=500.0, db_quota=1.0)
    assert pool_verdict(pd.concat([only_small, table(larger)]), article_runs()).verdict == REPRODUCED  # the small db only


def test_flat_knobs_reproduce_within_noise_and_not_beyond():
    flat = table(*(row(f"threads-{t}", TOMCAT, "F001-d", threads_max=t, tps=100 + i) for i, t in enumerate((100, 150, 200))))
    assert flat_verdict(flat, "F001-d", "threads_max", article_runs()).verdict == REPRODUCED
    steep = table(*(row(f"threads-{t}", TOMCAT, "F001-d", threads_max=t, tps=t) for t in (100, 150, 200)))
    assert flat_verdict(steep, "F001-d", "threads_max", article_runs()).verdict == NOT_REPRODUCED


def test_gc_pauses_must_rise_beyond_the_run_to_run_spread():
    def runs(pauses):
        return table(*(row(f"max-connections-{m}-{r}", TOMCAT, "F001-e", max_connections=m, gc_pause_max_ms=p)
                       for m, pair in pauses.items() for r, p in enumerate(pair, start=1)))
    assert gc_verdict(runs({4000: (13, 14), 6000: (16, 17), 8000: (60, 66)}), article_runs()).verdict == REPRODUCED
    noisy = gc_verdict(runs({4000: (10, 60), 6000: (20, 50), 8000: (30, 55)}), article_runs())
    assert noisy.verdict == NOT_REPRODUCED and "50.0 ms" in noisy.measured


def test_the_final_run_must_reach_the_goal_with_nearly_every_request_answered():
    runs = article_runs()
    assert final_verdict(table(row("final", SCENARIO, "F001-g", peak_tps=230.0)), runs).verdict == REPRODUCED
    assert final_verdict(table(row("final", SCENARIO, "F001-g", peak_tps=150.0)), runs).verdict == NOT_REPRODUCED
    assert final_verdict(table(row("final", SCENARIO, "F001-g", peak_tps=300.0, success=0.6)), runs).verdict == NOT_REPRODUCED
    assert final_verdict(table(row("other", SCENARIO, "F001-c")), runs).measured == "not run"


def test_every_finding_gets_one_verdict():
    steps = table(row("api-a", API, "F001-b"), row("pool-10", SCENARIO, "F001-c"),
                  row("threads-100", TOMCAT, "F001-d", threads_max=100),
                  row("max-connections-4000-1", TOMCAT, "F001-e", max_connections=4000, gc_pause_max_ms=10.0),
                  row("accept-count-100", TOMCAT, "F001-f"), row("final", SCENARIO, "F001-g, F001-a"))
    assert [v.finding for v in f001_verdicts(steps)] == [f"F001-{c}" for c in "abcdefg"]


def test_the_articles_files_hold_its_numbers():
    apis = article_apis().set_index("api")
    assert len(apis) == 7 and apis.loc["todo-read", "tps"] == 5.30 and apis["hikari_pending_max"].max() == 179
    runs = article_runs().set_index(["experiment", "value"])
    assert runs.loc[("final", "db.m6gd.large"), "tps"] == 220.47
    assert runs.loc[("max_connections", "8000"), "gc_stop_the_world_ms"] == 66.1
