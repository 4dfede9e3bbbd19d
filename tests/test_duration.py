"""harness.models.duration: how a step's wall time and requests are put together (each executor, the services it
starts, postgres's template, k6's processes, redeploys, writing), and the check against step data. The calibration
is judged by `python -m harness.models.duration_check` on the committed data, not here: no measured total below."""
import json
import shutil
from pathlib import Path

import pytest

from harness import LabError
from harness.lab.load.options import batch_vus
from harness.lab.load.recording import AUTO_MAX_REQUESTS
from harness.lab.runner import TAIL_SAMPLES
from harness.lab.services.base import SERVER
from harness.lab.spec import parse_spec
from harness.lab.units import duration_ms
from harness.models import duration as d
from harness.models import expected_step_ms
from harness.models.closed_loop import predict_throughput
from harness.models.spike import predict_spike
from harness.models.duration_check import as_run_ms, before_ms, measured_steps, report

from conftest import FROZEN_DATA, LIMITS

NETTY = {"api": {"kind": "netty", "port": 8600, "management_port": 8599}}
PROXY = NETTY | {"edge": {"kind": "nginx", "upstream": "api", "port": 8580, "status_port": 8581}}
DB = {"db": {"kind": "postgres", "rows": 1000}}


def steps(*tables, defaults=None):
    raw = {"step": [{"id": f"s{n}", **t} for n, t in enumerate(tables)]} | ({"defaults": defaults} if defaults else {})
    return parse_spec("t", raw, Path("t.toml"), LIMITS).steps


def step(**table):
    return steps(table)[0]


def load_ms(**load):
    return d.estimate(step(load=load)).parts["load"]


def test_the_mirrored_lab_constants_are_the_labs():
    assert (d.TAIL_SAMPLES, d.SERVER, d.ROWS_LIMIT) == (TAIL_SAMPLES, SERVER, AUTO_MAX_REQUESTS)
    for load in ({"vus": 50}, {"vus": 5000}, {"vus": 50_000}, {"vus": 900, "batch_vus": 7}):
        assert d.batch_vus(load) == batch_vus(load)


def test_the_estimate_is_its_phases_and_expected_step_ms_is_it():
    s = step(load={"vus": 100})
    e = d.estimate(s)
    assert e.duration_ms == sum(e.parts.values()) == expected_step_ms(s)
    assert set(e.parts) == {"start", "load", "stop"} and all(v > 0 for v in e.parts.values())
    json.dumps(e.as_dict())


def test_a_spike_lasts_its_waves_plus_k6s_start_and_grows_with_the_users():
    """per-vu-iterations, one request each: 1000 users on 100 threads sleeping 1 s are 10 waves."""
    e = d.estimate(step(server={"SLEEP_MS": 1000, "TOMCAT_MAX_THREADS": 100}, load={"vus": 1000}))
    assert e.requests == 1000
    assert 10_000 < e.parts["load"] < 10_000 + 2000  # + k6's start, its users' spread, 100 threads started
    small, large = load_ms(vus=1000), load_ms(vus=10_000)
    assert large - small >= 9000 * d.K6_INIT_MS_PER_VU  # k6 initialises every VU first


def test_tomcat_starts_a_thread_per_user_of_a_spike_virtual_threads_none():
    """1000 users, one wave either way: on platform threads the last response also waits for 1000 thread starts."""
    platform, virtual = steps({"server": {"TOMCAT_MAX_THREADS": 1000}, "load": {"vus": 1000}},
                              {"server": {"VIRTUAL_THREADS": True}, "load": {"vus": 1000}})
    assert d.threads_started(platform, 1000) == 1000 and d.threads_started(virtual, 1000) == 0
    assert d.spike_ms(platform, 1000) - d.spike_ms(virtual, 1000) == 1000 * d.THREAD_START_MS


def test_a_spike_past_its_ceiling_also_counts_the_users_admitted_late():
    """One thread, one connection, a queue of one: ten users of 5 s each. The model drops seven SYNs, which give up
    at k6's 30 s dial timeout; admitted late instead, the ten are served one after another for 50 s."""
    s = step(server={"TOMCAT_MAX_THREADS": 1, "TOMCAT_MAX_CONNECTIONS": 1, "TOMCAT_ACCEPT_COUNT": 1},
             load={"vus": 10, "connection_reuse": False})
    assert predict_spike(s).min_duration_ms == 30_000
    assert 50_000 <= d.spike_ms(s, 10) < 50_000 + 100


def test_batch_mode_starts_users_sooner_than_one_vu_each():
    server = {"TOMCAT_MAX_THREADS": 10_000, "TOMCAT_MAX_CONNECTIONS": 16_000}
    vus, batch = steps({"server": server, "load": {"vus": 10_000}},
                       {"server": server, "load": {"vus": 10_000, "spike_mode": "batch"}})
    assert d.spread_ms(batch, 10_000) < d.spread_ms(vus, 10_000)
    assert d.estimate(batch).parts["load"] < d.estimate(vus).parts["load"]


def test_a_closed_loop_lies_between_the_models_two_bounds():
    s = step(server={"TOMCAT_MAX_THREADS": 100},
             load={"executor": "shared-iterations", "vus": 10, "iterations": 1000, "path": "/every-nth?n=10&sleepMs=500"})
    model = predict_throughput(s)
    run, requests = d.executor_ms(s)
    assert requests == 1000
    assert model.duration_ms < run <= 1000 / model.rps_low * 1000 + 100 * d.REQUEST_MS


def test_ab_and_wrk_start_without_k6s_start_up():
    ab = step(load={"tool": "ab", "executor": "shared-iterations", "vus": 10, "iterations": 100})
    assert d.estimate(ab).parts["load"] == d.executor_ms(ab)[0] + d.PROCESS_MS
    wrk = step(load={"tool": "wrk", "executor": "constant-vus", "vus": 200, "duration": "20s", "target": "api"},
               services=NETTY)
    assert d.estimate(wrk).parts["load"] == 20_000 + d.PROCESS_MS
    assert d.estimate(wrk).requests is None  # no model of the netty service's speed


def test_constant_vus_runs_its_duration_and_the_iterations_in_flight():
    sustained = {"executor": "constant-vus", "vus": 200, "target": "api", "graceful_stop": "5s"}
    short, long = steps({"load": sustained | {"duration": "20s"}, "services": NETTY},
                        {"load": sustained | {"duration": "60s"}, "services": NETTY})
    assert d.estimate(long).parts["load"] - d.estimate(short).parts["load"] == 40_000
    # on the sample server, the requests in flight at the end (Little's law: 200 users on 100 threads, 1 s each)
    tomcat = step(server={"SLEEP_MS": 1000, "TOMCAT_MAX_THREADS": 100},
                  load={"executor": "constant-vus", "vus": 200, "duration": "20s", "graceful_stop": "30s"})
    run, requests = d.executor_ms(tomcat)
    assert run == 20_000 + 2000 and requests == 100 * 20


def test_a_loops_requests_follow_the_latency_a_model_gives():
    """A webflux service waits its sleep on a timer (no pool): 100 users × 10 s / 0.5 s; a scenario's API: unknown."""
    flux = step(load={"executor": "constant-vus", "vus": 100, "duration": "10s", "target": "flux", "path": "/sleep"},
                services={"flux": {"kind": "webflux", "port": 8790, "management_port": 8791, "sleep_ms": 500}})
    assert d.executor_ms(flux) == (10_000 + 500, 2000)
    scenario = step(load={"executor": "constant-vus", "vus": 100, "duration": "10s",
                          "requests": [{"path": "/api/x", "think_time": "1s"}]})
    assert d.latency_ms(scenario) is None and d.executor_ms(scenario) == (10_000 + 1000, None)


def test_constant_vus_shorter_than_its_service_is_one_request_per_started_user():
    """The articles' 1-second constant-vus: each user one request, as many as k6 starts within the second."""
    s = step(server={"TOMCAT_MAX_THREADS": 10_000, "TOMCAT_MAX_CONNECTIONS": 16_000},
             load={"executor": "constant-vus", "vus": 10_000, "duration": "1s"})
    run, requests = d.executor_ms(s)
    assert requests == d.K6_ITERATIONS_PER_S < 10_000
    assert run >= 5000  # the default SLEEP_MS: the started users' responses end the step
    few = step(load={"executor": "constant-vus", "vus": 10, "duration": "1s"})
    assert d.executor_ms(few)[1] == 10


def test_ramping_vus_waits_for_iterations_in_flight_at_most_graceful_stop():
    stages = [{"duration": "10s", "target": 50}, {"duration": "20s", "target": 50}]
    scenario = [{"path": "/a", "think_time": "1s"}, {"path": "/b", "think_time": "1s"}]
    short, long = steps({"load": {"executor": "ramping-vus", "stages": stages, "graceful_stop": "10s",
                                  "requests": scenario}},
                        {"load": {"executor": "ramping-vus", "stages": stages, "graceful_stop": "10s",
                                  "requests": scenario * 10}})
    assert d.executor_ms(short) == (30_000 + 2000, None)  # two think times; no model of the scenario's requests
    assert d.executor_ms(long)[0] == 30_000 + 10_000  # twenty think times: k6 stops them at gracefulStop


def test_ramping_vus_on_work_counts_the_bounds_throughput_over_the_stages():
    s = step(server={"WORK_CPU_MS": 4.0, "WORK_WAIT_MS": 40},
             load={"executor": "ramping-vus", "path": "/work", "graceful_stop": "5s", "start_vus": 0,
                   "stages": [{"duration": "10s", "target": 2}, {"duration": "30s", "target": 2}]})
    run, requests = d.executor_ms(s)
    per_s = 2 * 1000 / 44  # two users, 44 ms a request, far below the threads' and CPU's bounds
    assert requests == pytest.approx(per_s * (5 + 30), rel=0.05)  # the ramp counts half
    assert run == 40_000 + 44  # the last requests in flight


def test_arrival_rates_ask_rate_times_duration_and_an_overload_waits_graceful_stop():
    below, above = steps(*({"server": {"WORK_CPU_MS": 4.0, "WORK_WAIT_MS": 40, "TOMCAT_MAX_THREADS": 200},
                            "load": {"executor": "constant-arrival-rate", "rate": rate, "duration": "30s",
                                     "path": "/work", "graceful_stop": "5s", "pre_allocated_vus": 100,
                                     "max_vus": 3000}} for rate in (100, 1000)))
    assert d.executor_ms(below) == (30_000 + 44, 3000)
    assert d.executor_ms(above) == (30_000 + 5000, 30_000)  # above the CPU's 500/s the queue never drains
    ramp = step(load={"executor": "ramping-arrival-rate", "start_rate": 0, "pre_allocated_vus": 10,
                      "stages": [{"duration": "10s", "target": 100}]})
    assert d.executor_ms(ramp)[1] == 500


def test_k6_processes_share_the_machine_so_vus_cost_the_same():
    one, two = steps({"load": {"vus": 10_000}}, {"load": {"vus": 10_000, "processes": 2}})
    assert d.estimate(two).parts["load"] - d.estimate(one).parts["load"] == d.PROCESS_MS


def test_the_sample_server_starts_only_when_the_step_needs_it():
    direct = step(load={"target": "api", "executor": "constant-vus", "vus": 1, "duration": "1s"}, services=PROXY)
    proxied = step(load={"target": "edge", "executor": "constant-vus", "vus": 1, "duration": "1s"}, services=PROXY)
    to_server = step(load={"target": "edge", "executor": "constant-vus", "vus": 1, "duration": "1s"},
                     services={"edge": PROXY["edge"] | {"upstream": "server"}})
    assert not d.needs_server(direct) and not d.needs_server(proxied)
    assert d.needs_server(to_server) and d.needs_server(step(load={"vus": 1}))
    services = d.service_start_ms(direct, "api") + d.service_start_ms(direct, "edge")
    assert d.start_phase(direct) == d.start_phase(proxied) == d.SAMPLERS_START_MS + services
    assert d.start_phase(to_server) == d.SAMPLERS_START_MS + d.NGINX_START_MS + d.server_start_ms(to_server)


def test_a_jvm_starts_in_its_cpu_work_over_the_cpus_it_may_use():
    two, one, half = steps({"load": {"vus": 1}}, {"load": {"vus": 1}, "placement": {"server": {"cpus": "1"}}},
                           {"load": {"vus": 1}, "placement": {"server": {"cpus": "1", "quota": 0.5}}})
    assert d.server_start_ms(one) == 2 * d.server_start_ms(two) == d.SERVER_CDS_CPU_MS
    assert d.server_start_ms(half) == 2 * d.SERVER_CDS_CPU_MS
    jar, virtual = steps({"load": {"vus": 1}, "system": {"launch": "jar"}},
                         {"load": {"vus": 1}, "server": {"VIRTUAL_THREADS": True}})
    assert d.server_start_ms(jar) == d.server_start_ms(virtual) > d.server_start_ms(two)


def test_postgres_pays_its_template_load_only_when_cold():
    s = step(load={"vus": 1}, services=DB, server={"PAIR_ROOM": True})
    cold, warm = d.estimate(s, template_cold=True), d.estimate(s)
    assert cold.parts["start"] - warm.parts["start"] == round(d.PG_INITDB_MS + 1000 * d.PG_LOAD_US_PER_ROW / 1000)
    assert d.server_start_ms(s) == d.PAIR_ROOM_CPU_MS / 2


def test_a_run_loads_each_uncached_template_once():
    small, again, large = steps(*({"load": {"vus": 1}, "services": {"db": {"kind": "postgres", "rows": rows}}}
                                  for rows in (1000, 1000, 5000)))
    cold = [e.parts["start"] for e in d.estimate_run([small, again, large], template_ready=lambda knobs: False)]
    warm = [e.parts["start"] for e in d.estimate_run([small, again, large])]
    assert cold[0] > warm[0] and cold[1] == warm[1] and cold[2] > warm[2]  # again: the cluster small loaded
    cached = d.estimate_run([small, large], template_ready=lambda knobs: knobs["rows"] == 1000)
    assert [e.parts["start"] for e in cached] == [warm[0], cold[2]]


def test_a_redeploy_step_is_its_starts():
    cds, jar, twice = steps({"kind": "redeploy", "starts": 5}, {"kind": "redeploy", "starts": 5, "system": {"launch": "jar"}},
                            {"kind": "redeploy", "starts": 10})
    assert d.estimate(cds).duration_ms == 5 * (d.server_start_ms(cds) + d.REDEPLOY_STOP_MS)
    assert d.estimate(twice).duration_ms == 2 * d.estimate(cds).duration_ms < 2 * d.estimate(jar).duration_ms
    assert d.estimate(cds).requests is None


def test_stopping_a_jvm_grows_with_the_square_of_its_threads():
    def stop(threads):
        s = step(server={"TOMCAT_MAX_THREADS": threads, "TOMCAT_MAX_CONNECTIONS": 16_000}, load={"vus": threads})
        return d.stop_phase(s, None)

    assert stop(10_000) - stop(100) == pytest.approx(d.JVM_EXIT_MS_PER_KTHREAD2 * (100 - 0.01), abs=1)
    virtual = step(server={"VIRTUAL_THREADS": True}, load={"vus": 10_000})
    assert d.stop_phase(virtual, None) == d.stop_phase(step(load={"vus": 1}), None)


def test_writing_rows_costs_more_than_per_second_tables_and_tail_samples_follow_the_interval():
    rows, seconds, slow = steps({"load": {"vus": 100}, "system": {"record": "requests"}},
                                {"load": {"vus": 100}, "system": {"record": "seconds"}},
                                {"load": {"vus": 100}, "system": {"record": "seconds", "sample_interval_ms": 1000}})
    assert d.stop_phase(rows, 100_000) - d.stop_phase(seconds, 100_000) == round(
        100_000 * (d.WRITE_US_PER_ROW - d.AGGREGATE_US_PER_REQUEST) / 1000)
    assert d.stop_phase(slow, None) - d.stop_phase(seconds, None) == d.TAIL_SAMPLES * 500


def test_hosts_and_services_add_their_start_and_stop():
    loopback, hosts = steps(
        {"load": {"target": "api", "executor": "constant-vus", "vus": 1, "duration": "1s"}, "services": NETTY},
        {"load": {"target": "api", "executor": "constant-vus", "vus": 1, "duration": "1s"}, "services": NETTY,
         "system": {"network": "hosts"}})
    assert d.start_phase(hosts) - d.start_phase(loopback) == d.HOSTS_MS
    flux = step(load={"target": "flux", "vus": 1, "path": "/sleep"},
                services={"flux": {"kind": "webflux", "port": 8790, "management_port": 8791, "sleep_ms": 100}})
    assert d.stop_phase(flux, 1) - d.stop_phase(step(load={"vus": 1}), 1) == d.SERVICE_STOP_MS["webflux"]


# ---- the check against step data ---------------------------------------------------------------------------

def test_a_step_is_estimated_as_it_ran():
    """A step.json that loaded its template, or started the sample server idle, gets that cost in its estimate."""
    db = step(load={"vus": 1}, services=DB)
    assert as_run_ms(db, {"services": {"db": {"template_reused": False}}}) == d.estimate(db, True).duration_ms
    assert as_run_ms(db, {"services": {"db": {"template_reused": True}}}) == d.estimate(db).duration_ms
    direct = step(load={"target": "api", "executor": "constant-vus", "vus": 1, "duration": "1s"}, services=NETTY)
    idle = as_run_ms(direct, {"startup_ms": 2000}) - as_run_ms(direct, {})
    assert idle == d.server_start_ms(direct)
    assert before_ms(direct, {"model": {"min_duration_ms": 5000}}) == d.STARTUP_ALLOWANCE_MS + 5000


def test_the_report_compares_a_chapters_steps(tmp_path):
    """On a copy of the frozen smoke run (the spec matches its steps by id): one row for the chapter, the fit and
    check groups, and a row per kind of step; a step the spec no longer has is left out."""
    shutil.copytree(FROZEN_DATA / "smoke", tmp_path / "smoke", ignore=shutil.ignore_patterns("*.parquet", "*.gz"))
    gone = json.loads((tmp_path / "smoke" / "waves" / "step.json").read_text()) | {"id": "gone"}
    (tmp_path / "smoke" / "gone").mkdir()
    (tmp_path / "smoke" / "gone" / "step.json").write_text(json.dumps(gone))
    assert [s.id for s, _ in measured_steps(tmp_path, "smoke")] == ["waves", "keep-alive"]
    lines = report(tmp_path)
    row = next(line for line in lines if line.startswith("smoke"))
    assert row.split()[1] == "2" and "%" in row
    assert any(line.startswith("check (smoke)") for line in lines)
    assert any(line.startswith("k6 per-vu-iterations ") for line in lines)


def test_the_report_names_a_folder_without_a_spec(tmp_path):
    (tmp_path / "nochapter" / "x").mkdir(parents=True)
    (tmp_path / "nochapter" / "x" / "step.json").write_text(json.dumps({"id": "x", "status": "complete", "machine": {
        "nofile_limit": 20000, "somaxconn": 4096, "cores": 2}}))
    assert any(line.startswith("nochapter") and "skipped" in line for line in report(tmp_path))
    with pytest.raises(LabError, match="no data directory"):
        report(tmp_path / "missing")


def test_duration_strings_are_read_as_the_lab_reads_them():
    s = step(load={"executor": "constant-vus", "vus": 1, "duration": "1m30s", "target": "api"}, services=NETTY)
    assert d.executor_ms(s)[0] == duration_ms("1m30s")
