"""Chapter 6's verdicts F003-a … F003-c on made-up step tables: each can come out reproduced or not, and says why with
the numbers of the table it was given."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.book.chapters.ch6_steps import COLUMNS
from harness.book.chapters.ch6_verdicts import (article_numbers, article_series, climb_verdict, f003_verdicts,
                                                handshake_verdict, stall_verdict)
from harness.book.verdict import DIFFERS, NOT_REPRODUCED, REPRODUCED


def row(step: str, route: str = "nginx → service", tps: float = 1000, keepalive: float = 0, users: int = 200,
        network: str = "loopback", **values) -> dict:
    base = dict.fromkeys(COLUMNS, np.nan) | {"step": step, "route": route, "tps": tps, "keepalive": keepalive,
                                             "users": users, "network": network, "tool": "k6", "workers": 1,
                                             "connection_header": "", "ports": "32768 60999", "seconds": 15,
                                             "duration_s": 20}
    return base | values


def table(alone=4000, nginx=8000, proxied=1800, kept=2600, kept_new=1000, full=3200, connect=0.6, reuse=0.3,
          prefix=""):
    return pd.DataFrame([
        row(f"{prefix}alone", "service alone", alone, service_cpu_ms=0.22),
        row(f"{prefix}nginx-alone", "nginx alone", nginx),
        row(f"{prefix}proxied", tps=proxied, new_connections_per_s=proxied, service_cpu_ms=0.42),
        row(f"{prefix}keepalive-8", tps=kept, keepalive=8, new_connections_per_s=kept_new),
        row(f"{prefix}keepalive-256", tps=full, keepalive=256, new_connections_per_s=0.5),
        row("connect", "service alone", 800, users=1, request_ms=connect, connect_ms=0.075),
        row("reuse", "service alone", 1300, users=1, request_ms=reuse, connect_ms=0.0),
    ], columns=COLUMNS)


def test_the_articles_files_are_read():
    numbers = article_numbers()
    assert numbers["proxied_without_keepalive"] == 9000 and numbers["upstream_keepalive"] == 8
    assert len(article_series()) == 68


def test_a_stall_below_the_slower_alone_is_reproduced():
    verdict = stall_verdict(table(prefix="wrk-"), article_numbers())
    assert verdict.verdict == REPRODUCED
    assert "wrk, 200 connections: 1,800/s proxied against 4,000/s for the service alone and 8,000/s for nginx alone: 45%" in verdict.measured


def test_no_stall_differs_on_this_hardware():
    verdict = stall_verdict(table(proxied=3900), article_numbers(), prefix="")
    assert verdict.verdict == DIFFERS and "98%" in verdict.measured


def test_keep_alive_that_does_not_climb_enough_differs_and_names_the_full_reuse_step():
    verdict = climb_verdict(table(), article_numbers(), prefix="")
    assert verdict.verdict == DIFFERS and verdict.measured.startswith("k6: keepalive 8")
    assert "×1.44 (the article: ×2.2)" in verdict.measured and "still opened 1,000 connections a second" in verdict.measured
    assert "keepalive 256 opened 0.5/s and answered 3,200/s: ×1.78" in verdict.measured


def test_keep_alive_that_doubles_throughput_is_reproduced():
    assert climb_verdict(table(kept=4000, prefix="wrk-"), article_numbers()).verdict == REPRODUCED


def test_a_handshake_that_costs_time_is_reproduced_and_one_that_does_not_is_not():
    assert handshake_verdict(table(), article_numbers()).verdict == REPRODUCED
    free = handshake_verdict(table(connect=0.31), article_numbers())
    assert free.verdict == NOT_REPRODUCED and "+0.01 ms" in free.measured
    both = pd.concat([table(), pd.DataFrame([row("hosts-connect", "service alone", 700, users=1, request_ms=0.5,
                                                 connect_ms=0.09, network="hosts"),
                                             row("hosts-reuse", "service alone", 1300, users=1, request_ms=0.49,
                                                 network="hosts")], columns=COLUMNS)])
    mixed = handshake_verdict(both, article_numbers())  # a cost on loopback, none across the switch
    assert mixed.verdict == NOT_REPRODUCED and "across the switch, one user: 0.50 ms" in mixed.measured


def test_the_model_counts_one_round_trip_where_the_article_counts_three_latencies():
    measured = handshake_verdict(table(), article_numbers()).measured
    assert "loopback, one user: 0.60 ms a request on a new connection against 0.30 ms on a kept one" in measured
    assert "across the switch" not in measured  # no hosts-connect step in this table
    assert "At 10 ms of latency the model adds 10 ms a request (one round trip), not 30 ms" in measured


@pytest.mark.parametrize("tool", ["wrk", "k6"])
def test_missing_steps_are_not_reproduced_with_nothing_measured(tool):
    empty = pd.DataFrame(columns=COLUMNS)
    verdicts = f003_verdicts(empty, tool)
    assert [v.finding for v in verdicts] == ["F003-a", "F003-b", "F003-c"]
    assert all(v.verdict == NOT_REPRODUCED and "not measured" in v.measured for v in verdicts)
