"""Parsers of ss, nstat, Actuator and k6 output, on samples captured from the real tools."""
import pytest

from harness.lab.samplers import next_tick, parse_nstat, parse_prometheus, parse_ss

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


# ---- the kernel read directly (harness.lab.kernel): the same values as ss and nstat -----------------------

def test_sock_diag_reply_counts_what_ss_showed_at_the_same_moment():
    from harness.lab.kernel import count_diag, ss_row
    from harness.lab.samplers import SS_STATES

    counts, listener = [0] * 16, [0, 0]
    # A listener with backlog 3 holding one unaccepted connection, a CLOSE-WAIT, an ESTAB and a TIME-WAIT.
    assert count_diag((SAMPLES / "sock_diag.bin").read_bytes(), counts, listener)
    assert ss_row(counts, listener, SS_STATES) == parse_ss((SAMPLES / "sock_diag_ss.txt").read_text(), 48090) == {
        "accept_queue": 1, "accept_backlog": 3, "estab": 1, "syn_recv": 0, "time_wait": 1, "close_wait": 1,
        "other_states": 0}


def test_sock_diag_filter_is_sport_ge_then_le_and_a_failed_test_jumps_past_the_end():
    from harness.lab.kernel import diag_request, port_filter

    assert port_filter(8080) == bytes([2, 8, 20, 0, 0, 0]) + (8080).to_bytes(2, "little") + \
        bytes([3, 8, 12, 0, 0, 0]) + (8080).to_bytes(2, "little")
    request = diag_request(2, 8080)
    assert int.from_bytes(request[:4], "little") == len(request) == 16 + 56 + 4 + 16
    assert port_filter(8080, remote=True) == bytes([4, 8, 20, 0, 0, 0]) + (8080).to_bytes(2, "little") + \
        bytes([5, 8, 12, 0, 0, 0]) + (8080).to_bytes(2, "little")  # dport: the sockets connected to the port


def test_the_socket_counter_counts_a_ports_own_sockets_or_those_connected_to_it():
    import socket

    from harness.lab.kernel import LISTEN, SocketCounter

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        accepted = [server.accept()[0] for _ in clients]
        own, connected = SocketCounter(port), SocketCounter(port, remote=True)
        try:
            (mine, queues), (theirs, _) = own.counts(), connected.counts()
        finally:
            own.close(), connected.close()
            for sock in clients + accepted:
                sock.close()
    assert mine[1] == 3 and mine[LISTEN] == 1 and queues[0] == 0  # the accepted three, the listener (queue empty)
    assert theirs[1] == 3 and theirs[LISTEN] == 0  # the clients' three, each on its own ephemeral port


def test_proc_net_counters_are_nstats():
    from harness.lab.kernel import parse_net_counters
    from harness.lab.samplers import NSTAT_COUNTERS

    values = parse_net_counters((SAMPLES / "proc_net_netstat.txt").read_text(), (SAMPLES / "proc_net_snmp.txt").read_text())
    assert {column: values[name] for name, column in NSTAT_COUNTERS.items()} == \
        parse_nstat((SAMPLES / "nstat_same_moment.txt").read_text())


def test_proc_stat_gives_each_cpus_busy_and_idle_seconds():
    from harness.lab.kernel import CLOCK_TICKS, parse_proc_stat

    rows = parse_proc_stat((SAMPLES / "proc_stat.txt").read_text())
    assert [r["cpu"] for r in rows] == [0, 1]  # the all-CPU line is left out
    # cpu1 515530 2026 68005 461774 7073 0 3058 18851: busy = user + nice + system + irq + softirq
    assert rows[1]["busy_seconds"] == pytest.approx((515530 + 2026 + 68005 + 0 + 3058) / CLOCK_TICKS)
    assert rows[1]["idle_seconds"] == pytest.approx((461774 + 7073) / CLOCK_TICKS)
    assert rows[1]["steal_seconds"] == 18851 / CLOCK_TICKS


def test_open_fds_counted_from_the_size_of_proc_fd():
    import os

    from harness.lab.kernel import count_fds

    before = count_fds(os.getpid())
    opened = [os.open("/dev/null", os.O_RDONLY) for _ in range(5)]
    try:
        assert count_fds(os.getpid()) - before == 5
    finally:
        for fd in opened:
            os.close(fd)


def test_a_run_of_alike_sock_diag_messages_counts_as_the_message_by_message_walk(monkeypatch):
    import harness.lab.kernel as kernel

    # The captured reply's messages, repeated: 200 copies of its ESTAB, then the whole reply (LISTEN, TIME-WAIT, …, DONE).
    reply = (SAMPLES / "sock_diag.bin").read_bytes()
    offset, messages = 0, []
    while offset < len(reply):
        length = int.from_bytes(reply[offset:offset + 4], "little")
        messages.append(reply[offset:offset + length])
        offset += (length + 3) & ~3
    estab = next(m for m in messages if m[kernel.DIAG_STATE_AT] == 1)
    data = estab * 200 + reply
    fast, fast_listener = [0] * 16, [0, 0]
    assert kernel.count_diag(data, fast, fast_listener)
    monkeypatch.setattr(kernel, "_count_uniform", lambda *args: 0)
    slow, slow_listener = [0] * 16, [0, 0]
    assert kernel.count_diag(data, slow, slow_listener)
    assert (fast, fast_listener) == (slow, slow_listener) and fast[1] == 201


def test_the_compat_request_dumps_both_families_of_one_port():
    from harness.lab.kernel import TCPDIAG_GETSOCK, compat_request

    request = compat_request(8080)
    assert int.from_bytes(request[:4], "little") == len(request) == 16 + 60 + 4 + 16
    assert int.from_bytes(request[4:6], "little") == TCPDIAG_GETSOCK and request[16] == 0  # AF_UNSPEC


def test_a_sampler_without_budget_keeps_its_schedule_and_catches_up_a_late_tick():
    assert next_tick(0, 0.0, 0.01, 0.01, 0.5, None) == 1
    assert next_tick(3, 1.5, 2.2, 0.7, 0.5, None) == 4  # 0.7 s late: tick 4 (2.0 s) is taken at once


def test_a_costly_sample_under_a_cpu_budget_skips_ticks_until_its_cost_is_spread_thin():
    # 25 ms of CPU under a 2 % budget: the next sample no sooner than 1.25 s after this one began → tick 3 (1.5 s)
    assert next_tick(0, 0.0, 0.03, 0.025, 0.5, 0.02) == 3
    assert next_tick(0, 0.0, 0.001, 0.0005, 0.5, 0.02) == 1  # a cheap sample keeps the schedule
    assert next_tick(4, 2.0, 2.01, 0.01, 0.5, 0.02) == 5  # exactly on the budget: the next tick


def test_a_process_whose_executable_root_may_not_read_is_named_by_its_command(monkeypatch):
    """Root without CAP_SYS_PTRACE (a container's default) may not read the exe link of another user's process, and
    the servers run as users of their own: the placement check failed on every sample. Its command name answers."""
    import os

    from harness.lab import kernel

    assert kernel.executable_name(os.getpid()) == os.path.basename(os.readlink("/proc/self/exe"))

    def refused(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(kernel.os, "readlink", refused)
    assert kernel.executable_name(os.getpid()) == open("/proc/self/comm").read().strip()
