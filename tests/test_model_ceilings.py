"""Chapter 7's ceilings model on numbers of this machine's kind: the open-files limit binds before memory with
virtual threads, memory before open files with a platform thread each; the load needs one k6 process per limit."""
from __future__ import annotations

import pytest

from harness.models.ceilings import (MEMORY, OPEN_FILES, USERS, ceiling, load_processes, memory_ceiling,
                                     open_files_ceiling)

KIB, GIB = 1024, 1024**3


def test_the_open_files_limit_binds_first_without_a_thread_each():
    p = ceiling(30_000, nofile=20_000, reserve=100, memory_bytes=2 * GIB, per_connection_bytes=26 * KIB)
    assert p.open_files_ceiling == 19_900 and p.memory_ceiling == 80_659
    assert (p.held, p.refused, p.binding) == (19_900, 10_100, OPEN_FILES)
    assert p.load_processes == 2


def test_a_platform_thread_per_connection_makes_memory_bind():
    p = ceiling(30_000, nofile=20_000, reserve=100, memory_bytes=2 * GIB, per_connection_bytes=26 * KIB,
                per_thread_bytes=228 * KIB)
    assert p.memory_ceiling == 8_256 and (p.held, p.binding) == (8_256, MEMORY)


def test_users_below_both_limits_are_all_held_and_accepted_in_time():
    p = ceiling(10_000, nofile=20_000, reserve=100, memory_bytes=2 * GIB, per_connection_bytes=26 * KIB,
                accept_per_s=5_000)
    assert (p.held, p.refused, p.binding, p.load_processes) == (10_000, 0, USERS, 1)
    assert p.accept_s == pytest.approx(2.0)


def test_each_limit_alone():
    assert open_files_ceiling(20_000, 20_500) == 0
    assert memory_ceiling(1 * GIB, 512 * KIB, 512 * KIB) == 1024
    assert load_processes(50_000, 20_000, 100) == 3 and load_processes(1, 20_000, 100) == 1


@pytest.mark.parametrize("call", [lambda: open_files_ceiling(0, 1), lambda: memory_ceiling(GIB, 0),
                                  lambda: load_processes(10, 100, 100), lambda: ceiling(-1, 10, 1, GIB, KIB)])
def test_impossible_inputs_are_refused(call):
    with pytest.raises(ValueError):
        call()


def test_the_spike_model_drops_the_pool_for_virtual_threads_and_the_event_loop_and_caps_connections_at_open_files():
    from pathlib import Path

    from harness.lab.spec import FD_RESERVE, parse_spec
    from harness.models import spike

    from conftest import LIMITS

    flux = {"kind": "webflux", "port": 8292, "management_port": 8293, "sleep_ms": 5000}
    raw = {"defaults": {"server": {"SLEEP_MS": 5000, "TOMCAT_MAX_THREADS": 2000, "TOMCAT_MAX_CONNECTIONS": 50_000,
                                   "TOMCAT_ACCEPT_COUNT": 4096, "TOMCAT_CONNECTION_TIMEOUT": 20_000},
                        "load": {"vus": 30_000, "processes": 2}, "system": {"allow_fd_exhaustion": True}},
           "step": [{"id": "platform"}, {"id": "virtual", "server": {"VIRTUAL_THREADS": True}},
                    {"id": "loop", "services": {"flux": flux}, "load": {"target": "flux", "path": "/sleep"}}]}
    platform, virtual, loop = parse_spec("t", raw, Path("t.toml"), LIMITS).steps  # nofile 20,000, somaxconn 4096
    held = 20_000 - FD_RESERVE
    for step in (platform, virtual, loop):
        server = spike.server_of(step)
        assert (server.max_connections, server.accept_count, server.service_ms) == (held, 4096, 5000)
    assert spike.server_of(platform).threads == 2000
    assert spike.server_of(virtual).threads == spike.server_of(loop).threads == spike.UNBOUNDED
    p = spike.predict_spike(virtual)
    assert p.waves == 1 and p.ceiling == held + 4096 + 1
    # The held answered after one sleep; the queued once keep-alive frees their slots (20 s); the rest time out.
    assert p.succeeded == held + 4096 + 1 and p.completions == [[5000, held], [30_000, 4097]]
    assert spike.predict_spike(loop).succeeded == held  # Reactor Netty closes no idle connection: no slot frees
    assert spike.predict_spike(platform).waves == 15
