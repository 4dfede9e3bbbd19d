"""Your own server under test, end to end: a chapter-1 style step through `invoke run … --server <jar> --path …`
against a Spring Boot jar the lab's sample-server build does not make (the WebFlux service's), through the spring-jar
kind: it is started where the step says, ready on Actuator, really the process started, sampled, and its results kept
apart from the chapter's. Without Actuator's Prometheus endpoint the run says what to add (unit test below)."""
from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from harness import ROOT
from harness.lab import store
from harness.lab.services import springjar

from test_e2e import finish, invoke, lab_ready  # noqa: F401 — lab_ready: a fixture

PROFILE = ROOT / "tests" / "profiles" / "springjar-scaled.toml"
JAR = ROOT / "webflux-server" / "target" / "webflux-server.jar"
pytestmark = pytest.mark.alongside  # its end-to-end tests run two at a time (invoke test)


@pytest.fixture(scope="module")
def run(lab_ready, tmp_path_factory):  # noqa: F811 — the fixture imported from test_e2e
    assert JAR.exists(), "the WebFlux jar is missing: run `invoke setup`"
    data_dir = tmp_path_factory.mktemp("springjar") / "data"
    code, out = finish(invoke(data_dir, "run", str(PROFILE), "--server", str(JAR), "--path", "/sleep?ms=200"),
                       timeout=180)
    assert code == 0, out
    return data_dir / f"{PROFILE.stem}@{JAR.stem}" / "c4", out


@pytest.mark.e2e
def test_the_readers_jar_answers_the_chapters_load(run):
    step, _ = run
    meta = json.loads((step / "step.json").read_text())
    assert meta["status"] == "complete" and meta["requests"]["succeeded"] == 20 and meta["requests"]["failed"] == 0
    requests = store.read_parquet(step / "requests.parquet", "requests")
    assert requests["duration_ms"].min() >= 200  # /sleep?ms=200: the --path the load asked for
    assert meta["config"]["services"]["server"]["kind"] == "spring-jar"
    assert meta["config"]["load"]["path"] == "/sleep?ms=200"


@pytest.mark.e2e
def test_what_ran_is_recorded_and_sampled(run):
    step, _ = run
    meta = json.loads((step / "step.json").read_text())
    info = meta["server_info"]
    assert info["jar_sha256"] == hashlib.sha256(JAR.read_bytes()).hexdigest()
    assert info["start_class"] and info["spring_boot"].startswith("3.")
    assert info["applied"] == {"TOMCAT_MAX_THREADS": 4} and info["environment_only"] == ["SLEEP_MS"]
    assert info["tomcat"] == {"unread": "the app does not run on Tomcat (no tomcat-embed-core among its libraries)"}
    assert meta["versions"]["spring_boot"] == info["spring_boot"] and meta["startup_ms"] > 0
    assert set(pd.read_parquet(step / "process.parquet")["process"]) == {"server", "k6"}
    actuator = pd.read_parquet(step / "actuator.parquet")  # its Prometheus endpoint, as the sample server's
    assert {"jvm.threads.live", "reactor.netty.http.server.connections"} <= set(actuator["metric"])
    assert meta["model"]["reason"].startswith("no model")  # the models know the sample server's times, not yours


def test_a_jar_that_is_not_spring_boot_is_refused_before_anything_starts(tmp_path):
    from harness.lab.spec import load_spec
    from harness.lab.steps import with_own_server
    from harness import LabError

    plain = tmp_path / "plain.jar"
    plain.write_bytes(b"not a zip")
    with pytest.raises(LabError, match=r"plain.jar is not an executable Spring Boot jar \(its manifest names no Start-Class"):
        with_own_server(load_spec(str(PROFILE)), str(plain))
    with pytest.raises(LabError, match=r"no such file"):
        with_own_server(load_spec(str(PROFILE)), str(tmp_path / "missing.jar"))


@pytest.mark.parametrize("path", ["hello world", "/hello world", "", "/x\n"])
def test_a_path_that_is_no_url_path_is_refused_before_anything_starts(tmp_path, path):
    from harness.lab.spec import load_spec
    from harness.lab.steps import with_own_server
    from harness import LabError

    with pytest.raises(LabError, match=r"  - --path must be a URL path: '/' then printable ASCII without spaces"):
        with_own_server(load_spec(str(PROFILE)), str(tmp_path / "missing.jar"), path)


def test_an_app_without_prometheus_is_measured_without_its_metrics_and_says_what_to_add(tmp_path, capsys):
    knobs = springjar.KIND.defaults | {"path": str(JAR), "port": 1, "management_port": 9}  # nothing listens on 9
    running = springjar.RunningJar("server", None, tmp_path / "server.log", 0.0, knobs, {}, "java")
    assert springjar.KIND.sampler(running, 500) is None
    assert "add spring-boot-starter-actuator and micrometer-registry-prometheus" in running.metrics
    assert "your app's metrics are not sampled" in capsys.readouterr().out


def test_the_apps_own_tomcat_settings_are_read_from_its_configprops():
    # Captured from the sample server's jar (Spring Boot 3.5) started as the spring-jar kind starts a reader's, with
    # --server.tomcat.accept-count=7: GET /actuator/configprops/server.
    answer = json.loads((ROOT / "tests" / "samples" / "configprops-server.json").read_text())
    assert springjar.tomcat_settings(answer) == {"TOMCAT_MAX_THREADS": 200, "TOMCAT_MAX_CONNECTIONS": 8192,
                                                 "TOMCAT_ACCEPT_COUNT": 7}

    def masked(value):  # what Spring Boot 3 answers unless show-values says otherwise
        return {k: masked(v) for k, v in value.items()} if isinstance(value, dict) else "******"
    beans = answer["contexts"]["application"]["beans"]
    assert springjar.tomcat_settings({"contexts": {"application": {"beans": {
        name: bean | {"properties": masked(bean["properties"])} for name, bean in beans.items()}}}}) == {}
    for odd in ({}, [], {"contexts": None}, {"contexts": []}, {"contexts": {"a": None}}, {"contexts": {"a": {"beans": []}}},
                {"contexts": {"a": {"beans": {"b": 1}}}}):
        assert springjar.tomcat_settings(odd) == {}


def test_tomcats_settings_are_read_only_from_an_app_that_runs_on_tomcat(tmp_path):
    import zipfile

    def jar(*libraries: str):
        path = tmp_path / f"app{len(libraries)}.jar"
        with zipfile.ZipFile(path, "w") as z:
            for name in ("META-INF/MANIFEST.MF", *(f"BOOT-INF/lib/{lib}" for lib in libraries)):
                z.writestr(name, "")
        return path
    assert springjar.embeds_tomcat(jar("spring-web-6.2.jar", "tomcat-embed-core-10.1.48.jar"))
    assert not springjar.embeds_tomcat(jar("reactor-netty-http-1.2.jar"))
    assert not springjar.embeds_tomcat(tmp_path / "missing.jar")
    knobs = springjar.KIND.defaults | {"path": str(jar("tomcat-embed-core-10.1.48.jar", "x")), "management_port": 9}
    running = springjar.RunningJar("server", None, tmp_path / "server.log", 0.0, knobs, {}, "java")
    assert running.info()["tomcat"]["unread"].startswith("http://127.0.0.1:9/actuator/configprops/server does not answer")
