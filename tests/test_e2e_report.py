"""`invoke report` end to end, scaled (tests/profiles/report-scaled.toml): the capacity profile of two jars the
profile was not written for, each given as a reader's jar. The sample server's: 8 threads and a 200 ms sleep, so
Little's law puts its plateau at 8 / 0.2 s = 40/s and the threads bind; max-connections 20 + accept-count 5 + 1 = 26
connections held in two samples in a row, or one more where two handshakes race past a full accept queue
(accept-count read back from the app's configprops). The WebFlux service's: no thread per request, so the plateau
passes Little's law's number for 8 threads, and Netty holds every connection it is offered (Tomcat's settings mean
nothing to it)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness import ROOT
from harness.book.verdict import QUEUE_RACE
from harness.lab import profile as p
from harness.lab import store
from harness.lab.services.tomcat.process import JAR as SAMPLE_JAR

from test_e2e import finish, invoke, lab_ready  # noqa: F401 — lab_ready: a fixture

PROFILE = ROOT / "tests" / "profiles" / "report-scaled.toml"
WEBFLUX_JAR = ROOT / "webflux-server" / "target" / "webflux-server.jar"
pytestmark = [pytest.mark.e2e, pytest.mark.alongside]


def start_report(tmp_path_factory, jar, path: str, profile: Path = PROFILE):
    assert jar.exists(), f"{jar} is missing: run `invoke setup`"
    data_dir = tmp_path_factory.mktemp("report") / "data"
    return invoke(data_dir, "report", "--server", str(jar), "--path", path, "--profile", str(profile)), data_dir


def on_other_ports(tmp_path_factory) -> Path:
    """The profile with the app's two ports moved, under the same name: the two reports run at once."""
    text = PROFILE.read_text()
    moved = text.replace("SERVER_PORT = 8750", "SERVER_PORT = 8752").replace("MANAGEMENT_PORT = 8751", "MANAGEMENT_PORT = 8753")
    assert moved.count("= 875") == text.count("= 875") and moved != text
    copy = tmp_path_factory.mktemp("profile") / PROFILE.name
    copy.write_text(moved)
    return copy


@pytest.fixture(scope="module")
def reports(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    """Both jars' profiles, measured at once (each a minute, mostly waiting on its app's sleeps): {jar: (profile,
    output, data dir)}."""
    started = {SAMPLE_JAR: start_report(tmp_path_factory, SAMPLE_JAR, "/hello?sleepMs=200"),
               WEBFLUX_JAR: start_report(tmp_path_factory, WEBFLUX_JAR, "/sleep?ms=200", on_other_ports(tmp_path_factory))}
    with ThreadPoolExecutor(len(started)) as pool:  # read both outputs at once: neither pipe may fill
        ended = {jar: pool.submit(finish, proc, 300) for jar, (proc, _) in started.items()}
    found = {}
    for jar, (_, data_dir) in started.items():
        code, out = ended[jar].result()
        assert code == 0, out
        found[jar] = p.read_profile(data_dir / f"{PROFILE.stem}@{jar.stem}"), out, data_dir
    return found


@pytest.fixture(scope="module")
def sample(reports):
    return reports[SAMPLE_JAR]


@pytest.fixture(scope="module")
def webflux(reports):
    return reports[WEBFLUX_JAR]


def test_the_sample_servers_limits_are_the_ones_its_settings_predict(sample):
    found, out, _ = sample
    assert 190 <= found.service_ms < 250  # the 200 ms sleep, give or take a request in the 3 s counted
    assert found.settings.sources["threads"] == p.FROM_METRICS and found.settings.threads == 8
    assert found.settings.sources["max_connections"] == p.FROM_METRICS and found.settings.max_connections == 20
    # accept-count is in no metric: read from the app's configuration as it ran (the profile's 5 on the command line)
    assert found.settings.sources["accept_count"] == p.FROM_CONFIG and found.settings.accept_count == 5
    assert not any(n.startswith("accept-count") for n in found.notes), found.notes
    assert [r.users for r in found.ramp] == [2, 4, 8, 16]
    assert found.binding == p.THREADS, found.ramp
    # the kernel may admit one past the ceiling (verdict.QUEUE_RACE): measured here once, 7 in an accept queue of 5
    assert found.ceiling_users == 46 and 26 <= found.ceiling_held <= 26 + QUEUE_RACE
    assert found.memory_per_connection_kib is not None
    assert "1. worker threads bind first: 8 requests in service at once" in out
    assert "report: stage 3 of 3, ceiling" in out


def test_the_webflux_service_is_not_bound_by_threads_nor_by_tomcats_connection_settings(webflux):
    found, out, _ = webflux
    assert found.settings.sources["threads"] == p.FROM_PROFILE  # Netty reports no Tomcat threads
    assert found.settings.sources["accept_count"] == p.FROM_PROFILE  # nor its configuration: no Tomcat to configure
    assert found.binding == p.BEYOND, found.ramp
    assert found.ceiling_held == found.ceiling_users == 46  # every user held: no max-connections in Netty
    assert "not one thread per request" in out


def test_the_book_page_finds_the_profile_and_draws_the_ceiling_it_measured(sample, monkeypatch):
    from harness.book.chapters.ch0 import your_server

    found, _, data_dir = sample
    monkeypatch.setenv("LAB_DATA_DIR", str(data_dir))
    folder = f"{PROFILE.stem}@{SAMPLE_JAR.stem}"
    assert your_server.profiles() == {folder: found}
    rows = next(d for d in your_server.ceiling_chart(folder, found).to_dict()["datasets"].values()
                if any(r.get("series") == "established" for r in d))
    drawn = max(r["value"] for r in rows if r.get("series") == "established")
    assert drawn == store.load_run(folder, "ceiling").ss["estab"].max() >= found.ceiling_held  # every sample, drawn
    assert any(r.get("series") == "ceiling (model)" and r["value"] == 26 for r in rows)


def test_a_path_that_is_no_url_path_is_refused_before_anything_starts(tmp_path):
    code, out = finish(invoke(tmp_path / "data", "report", "--server", str(SAMPLE_JAR), "--path", "no path"))
    assert code == 2 and "error: --path must be a URL path" in out
    assert not (tmp_path / "data").exists()
