"""Parsers of ss, nstat, Actuator and k6 output, on samples captured from the real tools."""
from harness.lab.samplers import parse_nstat, parse_prometheus, parse_ss

from conftest import SAMPLES
from harness.lab.load.k6 import INTERRUPTED_CODE, read_requests, request_counts
from harness.lab.load.ab import parse_ab_report, read_ab_requests


def test_ss_counts_states_of_the_server_port_and_reads_the_listener():
    row = parse_ss((SAMPLES / "ss.txt").read_text(), 18080)
    assert row == {"accept_queue": 0, "accept_backlog": 5, "estab": 2, "syn_recv": 0, "time_wait": 0,
                   "close_wait": 0, "other_states": 1}


def test_ss_shows_a_full_accept_queue_holding_backlog_plus_one():
    # A listener with backlog 1 that never accepts, five clients: the queue holds 2.
    row = parse_ss((SAMPLES / "ss_overflow.txt").read_text(), 18081)
    assert (row["accept_queue"], row["accept_backlog"], row["estab"]) == (2, 1, 2)


def test_ss_ignores_other_ports():
    assert parse_ss((SAMPLES / "ss.txt").read_text(), 9999)["estab"] == 0


def test_nstat_counters_and_their_deltas():
    before = parse_nstat((SAMPLES / "nstat_before.txt").read_text())
    after = parse_nstat((SAMPLES / "nstat_after.txt").read_text())
    assert after["listen_overflows"] - before["listen_overflows"] == 6
    assert after["syn_retrans"] - before["syn_retrans"] == 3
    assert set(after) >= {"listen_overflows", "listen_drops", "syncookies_sent"}


def test_prometheus_keeps_the_main_connector_and_sums_heap():
    # Captured with threads 2, max-connections 4 on port 18090 (management 18091), one request in flight.
    values = parse_prometheus((SAMPLES / "prometheus.txt").read_text(), 18090)
    assert values["tomcat.threads.config.max"] == 2
    assert values["tomcat.connections.config.max"] == 4
    assert values["jvm.memory.used"] == 16777216 + 17018368 + 4678960  # heap pools only
    assert values["tomcat.threads.busy"] == 1
    assert values["jvm.threads.live"] > 0
    assert {"tomcat.threads.busy", "tomcat.connections.current", "process.cpu.usage", "jvm.gc.pause.count"} <= set(values)


def test_prometheus_without_the_connector_has_no_tomcat_metrics():
    values = parse_prometheus((SAMPLES / "prometheus.txt").read_text(), 1)
    assert not [m for m in values if m.startswith("tomcat.")]


def test_k6_csv_becomes_one_row_per_request():
    # 3 successes, then constant-vus with 2 successes and 2 iterations cut by gracefulStop 0s,
    # then one refused connection.
    requests = read_requests(SAMPLES / "k6.csv.gz")
    assert len(requests) == 8
    assert requests["start_ms"].is_monotonic_increasing
    ok = requests[requests.status == 200]
    assert len(ok) == 5 and ok["duration_ms"].between(1000, 1100).all()
    assert (ok["end_ms"] - ok["start_ms"] == ok["duration_ms"]).all()
    cut = requests[requests.error_code == INTERRUPTED_CODE]
    assert len(cut) == 2 and cut["end_ms"].isna().all()
    refused = requests[requests.error_code == 1212]
    assert refused["error"].tolist() == ["dial: connection refused"]
    counts = request_counts(requests, asked=7)
    assert counts | {"errors": None} == {"asked": 7, "issued": 8, "succeeded": 5, "failed": 3, "interrupted": 2, "errors": None}


def test_ab_report():
    # ab -n 6 -c 3 against a 1 s endpoint.
    summary = parse_ab_report((SAMPLES / "ab.txt").read_text())
    assert summary == {"time_taken_s": 3.005, "complete_requests": 6, "failed_requests": 0,
                       "requests_per_s": 2.0, "time_per_request_ms": 1502.261}


def test_ab_per_request_rows():
    requests = read_ab_requests(SAMPLES / "ab.tsv")
    assert len(requests) == 6 and requests["start_ms"].is_monotonic_increasing
    assert requests["duration_ms"].between(1001, 1002).all()
    assert (requests["start_ms"] % 1000 == 0).all()  # ab gives starts to the second only
    assert (requests["end_ms"] - requests["start_ms"] == requests["duration_ms"]).all()
