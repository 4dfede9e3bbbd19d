"""The capacity profile's logic (harness/lab/profile.py) without a server: each stage's steps sized from what the one
before measured and valid as a spec, the app's limits read from its metrics or said to be assumed, Little's law's
verdict on the plateau, and the summary's lines. tests/test_e2e_report.py runs it on real jars."""
from __future__ import annotations

import zipfile

import pandas as pd
import pytest

from harness import LabError
from harness.lab import profile as p


def settings(threads=8, max_connections=20, accept_count=5, pool=None) -> p.Settings:
    return p.Settings(threads, max_connections, accept_count, pool,
                      {"threads": p.FROM_METRICS, "max_connections": p.FROM_METRICS, "accept_count": p.FROM_DEFAULT})


def spring_jar(tmp_path) -> str:
    """A file the spring-jar kind takes for an executable Spring Boot jar: a zip whose manifest names a Start-Class."""
    jar = tmp_path / "app.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nStart-Class: com.example.App\r\n"
                                           "Spring-Boot-Version: 3.3.4\r\n")
    return str(jar)


def test_the_ramp_is_sized_by_threads_max():
    assert p.ramp_users(200) == [50, 100, 200, 400]
    assert p.ramp_users(2) == [1, 2, 4]  # a quarter of 2 threads is still one user


def test_the_ceiling_step_sends_more_users_than_the_app_can_hold():
    assert settings().ceiling == 26  # 20 + 5 + 1
    assert p.ceiling_users(settings()) == 26 + 20  # at least 20 more
    assert p.ceiling_users(settings(max_connections=8192, accept_count=100)) == 8293 + 830  # a tenth more


@pytest.mark.parametrize("stage", p.STAGES)
def test_each_stage_is_a_valid_spec_on_the_readers_jar_sent_to_the_path(stage, tmp_path):
    top, steps = p.template_steps()
    spec = p.stage_spec(p.TEMPLATE, top, p.stage_tables(steps, stage, "/api/x?y=1", settings()), spring_jar(tmp_path))
    assert spec.chapter == "report@app"
    assert all(s.services["server"]["kind"] == "spring-jar" for s in spec.steps)
    paths = [r["path"] for s in spec.steps for r in s.load.get("requests") or [{"path": s.load["path"]}]]
    assert set(paths) == {"/api/x?y=1"}
    if stage == "ramp":
        assert [s.id for s in spec.steps] == ["ramp-2", "ramp-4", "ramp-8", "ramp-16"]
        assert [s.load["vus"] for s in spec.steps] == [2, 4, 8, 16]
    if stage == "ceiling":
        assert spec.steps[0].load["vus"] == 46


def test_a_template_without_a_stage_is_refused(tmp_path):
    broken = tmp_path / "mine.toml"
    broken.write_text('[[step]]\nid = "service"\nload = { vus = 1 }\n')
    with pytest.raises(LabError, match=r"mine.toml: a profile has the steps service, ramp, ceiling, each once"):
        p.template_steps(str(broken))


def test_a_template_whose_steps_measure_otherwise_is_refused(tmp_path):
    loop = 'load = { executor = "constant-vus", vus = 1, duration = "1s" }'  # recorded as "auto": not per second
    steps = {"service": loop, "ramp": loop, "ceiling": 'load = { vus = 1, requests = [{ path = "/" }] }'}
    other = tmp_path / "other.toml"
    other.write_text("".join(f'[[step]]\nid = "{k}"\n{v}\n' for k, v in steps.items()))
    with pytest.raises(LabError, match=r"other.toml: a profile's service and ramp steps are constant-vus loads .* "
                                       r"recorded per second"):
        p.template_steps(str(other))


def meta(duration="4s", server=None) -> dict:
    return {"config": {"load": {"duration": duration, "path": "/x"}, "server": server or {}}}


def outcomes(per_second: list[int], failed: int = 0) -> pd.DataFrame:
    """Per-second tables as the lab records them: answered (200) and failed (503) requests in each second."""
    rows = [(s, 200, 0, n) for s, n in enumerate(per_second)] + [(s, 503, 0, failed) for s in range(len(per_second))]
    return pd.DataFrame(rows, columns=["second", "status", "error_code", "requests"])


def test_the_rate_counts_the_steady_seconds_only():
    # 4 s: seconds 1-3 count; second 0 (users starting) and second 4 (the requests in flight at the end) do not.
    assert p.steady_rate(outcomes([5, 40, 40, 40, 16], failed=3), 4) == 40
    assert p.steady_rate(outcomes([5, 5, 5]), 3) == 5  # shorter than 4 s: every second counts


def test_service_time_is_littles_law_with_one_user():
    assert p.service_ms(meta("3s"), outcomes([5, 5, 5, 1])) == pytest.approx(200.0)
    with pytest.raises(LabError, match="no request to /x was answered .* give --path an endpoint your app answers"):
        p.service_ms(meta("3s"), outcomes([0, 0, 0], failed=9))


def test_the_apps_limits_come_from_its_metrics_then_its_configuration_then_the_profile_then_spring_boots_defaults():
    actuator = pd.DataFrame({"ts_ms": [1, 2, 2], "metric": ["tomcat.threads.config.max"] * 2 + ["hikaricp.connections.max"],
                             "value": [100.0, 120.0, 10.0]})
    found = p.settings_of(meta(server={"TOMCAT_ACCEPT_COUNT": 5}), actuator)
    assert (found.threads, found.max_connections, found.accept_count, found.pool) == (120, 8192, 5, 10)
    assert found.sources == {"threads": p.FROM_METRICS, "max_connections": p.FROM_DEFAULT,
                             "accept_count": p.FROM_PROFILE, "pool": p.FROM_METRICS}
    # configprops, as step.json's server_info recorded it, is what the app ran with: the profile's settings on its own
    configured = meta(server={"TOMCAT_ACCEPT_COUNT": 5}) | {"server_info": {"tomcat": {
        "TOMCAT_MAX_THREADS": 64, "TOMCAT_MAX_CONNECTIONS": 500, "TOMCAT_ACCEPT_COUNT": 7}}}
    found = p.settings_of(configured, actuator)
    assert (found.threads, found.max_connections, found.accept_count) == (120, 500, 7)
    assert found.sources == {"threads": p.FROM_METRICS, "max_connections": p.FROM_CONFIG,
                             "accept_count": p.FROM_CONFIG, "pool": p.FROM_METRICS}
    bare = p.settings_of(meta(), pd.DataFrame(columns=["ts_ms", "metric", "value"]))
    assert (bare.threads, bare.pool) == (200, None) and "pool" not in bare.sources


def test_what_the_profile_assumed_is_said_with_why_the_configuration_was_not_read():
    unread = meta() | {"server_info": {"tomcat": {"unread": "http://x/actuator/configprops/server does not answer"}}}
    notes = p.assumed(p.settings_of(unread, pd.DataFrame(columns=["ts_ms", "metric", "value"])), unread)
    assert notes[0] == ("threads: the app reports none (http://x/actuator/configprops/server does not answer); "
                        "Spring Boot's default (200) is assumed")
    assert len(notes) == 4 and notes[-1].startswith("HikariCP: the app reports no pool")
    reported = p.Settings(8, 20, 5, 4, {"threads": p.FROM_METRICS, "accept_count": p.FROM_CONFIG, "pool": p.FROM_METRICS})
    assert p.assumed(reported, meta()) == []  # every limit reported, a pool: nothing assumed


def test_the_pools_mean_wait_is_the_waits_gained_over_the_acquisitions_gained():
    def samples(counts, totals):
        ts = list(range(len(counts)))
        return pd.DataFrame({"ts_ms": ts * 2, "value": [*counts, *totals],
                             "metric": ["hikaricp.connections.acquire.count"] * len(ts)
                             + ["hikaricp.connections.acquire.total"] * len(ts)})
    assert p.pool_wait_ms(samples([100, 150, 300], [1.0, 2.0, 11.0])) == pytest.approx(10 * 1000 / 200)
    assert p.pool_wait_ms(samples([100, 100], [1.0, 1.0])) is None  # no connection taken: no wait to average
    assert p.pool_wait_ms(pd.DataFrame(columns=["ts_ms", "metric", "value"])) is None


def profile(rates: list[float], service_ms=50.0, threads=8) -> p.Profile:
    users = p.ramp_users(threads)
    return p.Profile("/x/app.jar", "/hello", service_ms, settings(threads=threads),
                     [p.RampPoint(u, r, min(u, threads) / (service_ms / 1000), f"ramp-{u}") for u, r in zip(users, rates, strict=True)])


@pytest.mark.parametrize(("rates", "binding"), [
    ([40, 80, 158, 160], p.THREADS),  # T / S = 160/s: the thread pool is the limit
    ([40, 80, 100, 101], p.BEFORE),  # flat at 101/s: the CPU or a pool first
    ([40, 80, 160, 320], p.BEYOND),  # 2T users in service at once: not one thread per request
])
def test_the_plateau_against_littles_law_says_what_binds(rates, binding):
    found = profile(rates)
    assert found.little == pytest.approx(160)
    assert found.binding == binding


def test_the_knee_is_the_fewest_users_within_a_tenth_of_the_plateau():
    found = profile([40, 150, 158, 160])
    assert (found.plateau.users, found.knee.users) == (16, 4)


def test_held_connections_are_the_most_seen_in_two_samples_in_a_row_not_one_passing():
    estab = lambda *counts: pd.DataFrame({"estab": list(counts)})  # noqa: E731
    assert p.held_connections(estab(10, 26, 27, 26, 26, 12)) == 26  # 27 in one sample only: a socket in passing
    assert p.held_connections(estab(10, 26, 27, 27, 26)) == 27
    assert p.held_connections(estab(float("nan"), 5)) == 5
    assert p.held_connections(estab(float("nan"))) is None


def test_memory_per_held_connection_is_the_servers_growth_over_them():
    idle = pd.DataFrame({"process": ["server", "server", "k6"], "rss_bytes": [100 * 2**20, 102 * 2**20, 9 * 2**30]})
    holding = pd.DataFrame({"process": ["server", "server"], "rss_bytes": [101 * 2**20, 111 * 2**20]})
    assert p.memory_per_connection_kib(idle, holding, 100) == pytest.approx(10 * 1024 / 100)
    assert p.memory_per_connection_kib(idle, holding, None) is None


def test_the_summary_gives_each_limit_with_its_prediction_and_says_what_was_assumed(tmp_path):
    found = profile([40, 80, 158, 160])
    found.ceiling_users, found.ceiling_held = 46, 26
    found.notes.append("accept-count: the app reports none; Spring Boot's default (100) is assumed")
    lines = p.summary(found)
    assert lines[0] == "How many concurrent requests can app.jar handle? (/hello)"
    assert "  1. worker threads bind first: 8 requests in service at once" in lines
    assert "  2. connections: max-connections 20 + accept-count 5 + 1 = 26 predicted, 26 held with 46 users" in lines
    assert lines[-1].startswith("  note: accept-count")
    assert p.read_profile(p.write_profile(found, tmp_path).parent) == found
    found.ceiling_held = 27  # the kernel let one more in (a race at its accept queue): said, not left to puzzle over
    assert "  2. connections: max-connections 20 + accept-count 5 + 1 = 26 predicted, 27 held with 46 users: one more, " \
           "as two handshakes that end at the same moment can both pass the kernel's check of a full accept queue" \
           in p.summary(found)
    found.ceiling_held = 46  # an event loop (WebFlux's Netty) holds every user: the predicted ceiling is not met
    assert "  2. connections: max-connections 20 + accept-count 5 + 1 = 26 predicted, 46 held with 46 users: every " \
           "user held, so no ceiling was reached" in p.summary(found)
