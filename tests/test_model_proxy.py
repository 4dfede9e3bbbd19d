"""Chapter 6's model (harness.models.proxy): a request's time with and without a new upstream connection, the closed
loop's throughput and its CPU bound, and the new-connection ceiling set by ephemeral ports and TIME_WAIT."""
from __future__ import annotations

import pytest

from harness.models import proxy


def test_a_new_connection_adds_one_round_trip_and_its_cpu():
    pooled = proxy.per_request_ms(0.05, 1.0, 0.2, 0.1, new_connection=False, connection_ms=0.3)
    fresh = proxy.per_request_ms(0.05, 1.0, 0.2, 0.1, new_connection=True, connection_ms=0.3)
    assert pooled == pytest.approx(1.35)
    assert fresh - pooled == pytest.approx(1.0 + 0.3)  # one upstream RTT for the handshake, and the connection's CPU


def test_the_article_counts_three_latencies_where_the_request_waits_one_round_trip():
    assert proxy.article_handshake_ms(10) == 30
    assert proxy.handshake_ms(10) == 10


def test_the_loop_is_bound_by_its_round_trips_until_a_cpu_saturates():
    slow = proxy.predict(200, 10.0)  # 10 ms a request: 200 clients send 20,000/s
    assert slow.tps == pytest.approx(20_000) and slow.binding == "clients" and slow.cpu_bound_tps is None
    busy = proxy.predict(200, 10.0, cpu_ms_per_request=0.1, cores=1)  # the CPU gives 10,000/s
    assert busy.bound_tps == pytest.approx(10_000) and busy.binding == "cpu"
    assert busy.new_connections_per_s == busy.bound_tps
    assert proxy.predict(200, 10.0, new_connection=False).new_connections_per_s == 0
    with pytest.raises(ValueError):
        proxy.predict(0, 1.0)


def test_the_new_connection_ceiling_is_ports_over_time_wait():
    assert proxy.ephemeral_ports((32768, 60999)) == 28232  # Linux's default range
    assert proxy.new_connection_ceiling((32768, 60999)) == pytest.approx(28232 / 60)
    with pytest.raises(ValueError):
        proxy.ephemeral_ports((60999, 32768))
