"""Chapter 7's verdicts F002-d and F000-k and its sentences on made-up step tables: each verdict can come out
reproduced or not, the limit is named from the numbers, and the sentences carry the table's numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.book.chapters.ch7_sentences import ch7_limit_sentence, ch7_memory_sentence, ch7_model_sentence, \
    ch7_queue_sentence, ch7_waves_sentence
from harness.book.chapters.ch7_steps import ACCEPTOR, COLUMNS, LOAD, MODELS, NONE, OPEN_FILES, THREADS, limit_of
from harness.book.chapters.ch7_verdicts import held_users, ways_out_verdict, twenty_k_verdict
from harness.book.verdict import DIFFERS, NOT_REPRODUCED, REPRODUCED

NOFILE = 20_000


def row(model: str, users: int, **values) -> dict:
    held = min(users, NOFILE - 200)
    base = dict.fromkeys(COLUMNS, np.nan) | {
        "step": f"{model.split()[0]}-{users // 1000}k", "model": model, "users": users, "processes": 1 + users // 19_000,
        "asked": users, "issued": users, "succeeded": held, "failed": users - held, "dial_timeouts": users - held,
        "request_timeouts": 0, "other_errors": 0, "predicted_ok": held, "arrivals_ok": held, "emfile_logged": 0, "start_spread_s": 8.0, "last_start_s": 9.0,
        "first_ok_s": 7.0, "last_ok_s": 16.0 if model != "platform threads" else 44.0, "peak_connections": held,
        "peak_open_files": min(users + 50, NOFILE - 1), "nofile": NOFILE, "backlog": 4096, "accept_queue_max": 100.0, "sleep_s": 5.0, "rss_before": 200 * 2**20,
        "rss_peak": 800 * 2**20, "per_connection_bytes": 40_000.0, "k6_rss_peak": users * 250_000.0,
        "per_user_k6_bytes": 250_000.0, "peak_threads": 2026.0 if model == "platform threads" else 21.0}
    merged = base | values
    merged["limit"] = limit_of(merged)
    return merged


def table(*rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows or [row(m, u) for u in (15_000, 30_000) for m in MODELS], columns=COLUMNS)
    frame["model"] = pd.Categorical(frame["model"], MODELS, ordered=True)
    return frame


def test_the_limit_is_named_from_the_data():
    assert row("virtual threads", 30_000)["limit"] == OPEN_FILES
    assert row("platform threads", 15_000)["limit"] == THREADS
    assert row("event loop", 15_000)["limit"] == NONE
    assert row("event loop", 15_000, issued=14_000)["limit"] == LOAD
    assert row("event loop", 15_000, failed=900, accept_queue_max=4097.0)["limit"] == ACCEPTOR


def test_the_ways_out_answer_everyone_after_one_wait_with_few_threads():
    verdict = ways_out_verdict(table())
    assert held_users(table()) == 15_000
    assert verdict.verdict == REPRODUCED
    assert "virtual threads answered 15,000 of 15,000, the last at second 16 with 21 JVM threads" in verdict.measured
    assert "Above 15,000 users the limits the models reached: open files (most open files: 19,999 of 20,000)" in verdict.measured


def test_virtual_threads_answering_in_waves_is_not_reproduced():
    rows = [row(m, 15_000) for m in MODELS]
    rows[1] |= {"last_ok_s": 30.0}  # the last user waited for more than one wait after it started
    assert ways_out_verdict(table(*rows)).verdict == NOT_REPRODUCED
    rows = [row(m, 15_000) for m in MODELS]
    rows[2] |= {"peak_threads": 400.0}  # a thread per 40 users is not "without a thread per user"
    assert ways_out_verdict(table(*rows)).verdict == NOT_REPRODUCED


def test_twenty_k_errors_above_twenty_thousand_are_reproduced_with_open_files_named():
    verdict = twenty_k_verdict(table())
    assert verdict.verdict == REPRODUCED
    assert "15,000 of 15,000 answered at 15,000 users; 30,000 users: 10,200 failed (10,200 could not connect" in verdict.measured
    assert "the limit the data names is open files" in verdict.why


def test_twenty_k_differs_when_the_server_holds_everyone_above_twenty_thousand():
    rows = [row(m, 15_000) for m in MODELS] + [row("platform threads", 30_000, succeeded=30_000, failed=0,
                                                   peak_open_files=12_000.0)]
    assert twenty_k_verdict(table(*rows)).verdict == DIFFERS
    rows = [row("platform threads", 15_000, succeeded=14_000, failed=1_000), row("platform threads", 30_000)]
    assert twenty_k_verdict(table(*rows)).verdict == DIFFERS


def test_sentences_carry_the_tables_numbers():
    frame = table()
    assert ("At 15,000 users every server answered every user: platform threads 15,000, the last at second 44"
            in ch7_waves_sentence(frame))
    assert "event loop 39 KiB (800 MiB at its peak)" in ch7_memory_sentence(frame)
    limit = ch7_limit_sentence(frame)
    assert limit.startswith("At 30,000 users (2 k6 processes): platform threads answered 19,800 of 30,000")
    assert "is the process's open files: at 20,000" in limit
    assert "in 6 of 6 steps" in ch7_model_sentence(frame)
    queue = ch7_queue_sentence(table(*[row(m, 15_000) for m in MODELS], *[row(m, 30_000, accept_queue_max=4097.0)
                                                                         for m in MODELS]))
    assert "filled to its backlog (4,096, and one more) in 3 of 3 steps" in queue and "against 24,097" in queue
