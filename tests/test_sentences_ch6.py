"""Chapter 6's sentences on made-up step tables: their numbers are the table's, and a step that did not run leaves
its sentence out rather than failing."""
from __future__ import annotations

import pandas as pd

from harness.book.chapters.ch6_sentences import (bottleneck_sentence, header_sentence, hosts_sentence, stall_sentence,
                                                 sweep_sentence, workers_sentence, wrk_sentence)
from harness.book.chapters.ch6_steps import COLUMNS

from test_verdicts_f003 import row, table


def test_the_stall_sentence_reads_the_table():
    text = stall_sentence(table(), prefix="")
    assert "With k6, straight to the service, 200 connections got 4,000 answers a second; nginx answering by itself 8,000/s" in text
    assert "Through nginx with its defaults, 1,800/s: 45% of the slower" in text
    assert "from 0.220 ms to 0.420 ms" in text


def test_the_sweep_lists_each_keepalive_in_order():
    text = sweep_sentence(table())
    assert text.index("keepalive 8: 2,600/s, 1,000 new connections/s") < text.index("keepalive 256: 3,200/s, 0 new")


def test_steps_that_did_not_run_leave_their_sentence_out():
    assert header_sentence(table()) == workers_sentence(table()) == hosts_sentence(table()) == wrk_sentence(table()) == ""


def test_the_hosts_sentence_says_whose_side_holds_the_time_waits():
    rows = pd.concat([table(), pd.DataFrame([
        row("hosts-proxied", tps=1700, network="hosts", new_connections_per_s=1700, upstream_time_wait_max=9000),
        row("hosts-keepalive-8", tps=1600, keepalive=8, network="hosts", new_connections_per_s=800,
            upstream_time_wait_max=16000),
        row("hosts-keepalive-256", tps=3000, keepalive=256, network="hosts", new_connections_per_s=0.2)],
        columns=COLUMNS)], ignore_index=True)
    text = hosts_sentence(rows)
    assert "answered 1,700/s (loopback: 1,800/s) and held at most 9,000 sockets in TIME_WAIT" in text
    assert "every TIME_WAIT is nginx's: 16,000 after 20 s, of 28,232 ephemeral ports, and 1,600/s answered" in text
    assert "With keepalive 256 nothing is closed: 3,000/s, 0.2 new connections/s" in text


def test_the_bottleneck_is_the_full_cpu():
    rows = table().assign(service_cpu=0.8, nginx_cpu=0.15, k6_cpu=0.4)
    rows.loc[rows.step == "alone", ["service_cpu", "k6_cpu"]] = [0.5, 0.97]
    rows.loc[rows.step == "keepalive-8", ["service_cpu", "nginx_cpu"]] = [0.3, 0.1]
    text = bottleneck_sentence(rows)
    assert "the load generator (k6) in alone;" in text
    assert "nginx and the service (CPU 1) in nginx-alone, proxied, keepalive-256" in text
    assert "the round trips in keepalive-8" in text
