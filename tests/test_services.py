"""Services as kinds (harness.lab.services): `[services.<name>]` validation, start order, nginx's generated config and
its stub_status parser, and the checks made before anything starts. No process is started here (see
tests/test_e2e_services.py for nginx in front of the real sample server)."""
import os
import time
from pathlib import Path

import pytest

from harness import LabError
from harness.lab.services import deploy, nginx
from harness.lab.services.base import RunningService, StepFailed
from harness.lab.services.graph import endpoints, start_order
from harness.lab.spec import parse_spec

from conftest import LIMITS

SAMPLES = Path(__file__).parent / "samples"
PROXY = {"kind": "nginx", "port": 38092, "status_port": 38093}


def parse(raw):
    return parse_spec("t", raw, Path("t.toml"), LIMITS)


def spec_with(services=None, step_services=None, **load):
    defaults = {"load": {"vus": 2, **load}} | ({"services": services} if services is not None else {})
    step = {"id": "s"} | ({"services": step_services} if step_services is not None else {})
    return {"defaults": defaults, "step": [step]}


def problems_of(raw) -> str:
    with pytest.raises(LabError) as err:
        parse(raw)
    return str(err.value)


def test_stub_status_parser_reads_nginx_page():
    assert nginx.parse_stub_status((SAMPLES / "stub_status.txt").read_text()) == {
        "active": 1, "accepts": 5, "handled": 5, "requests": 5, "reading": 0, "writing": 1, "waiting": 0}
    page = "Active connections: 291 \nserver accepts handled requests\n 16630948 16630948 31070465 \nReading: 6 Writing: 179 Waiting: 106 \n"
    assert nginx.parse_stub_status(page)["requests"] == 31070465
    with pytest.raises(ValueError, match="not a stub_status page"):
        nginx.parse_stub_status("<html>404</html>")


def test_the_sample_server_declared_long_is_the_step_its_short_form_gives():
    """[services.server] kind = "tomcat" is [server] written long: in [defaults] or in a step, the same Step."""
    short = parse({"defaults": {"load": {"vus": 2}, "server": {"TOMCAT_MAX_THREADS": 3}}, "step": [{"id": "s"}]})
    for raw in ({"defaults": {"load": {"vus": 2}, "services": {"server": {"kind": "tomcat", "TOMCAT_MAX_THREADS": 3}}},
                 "step": [{"id": "s"}]},
                {"defaults": {"load": {"vus": 2}},
                 "step": [{"id": "s", "services": {"server": {"kind": "tomcat", "TOMCAT_MAX_THREADS": 3}}}]}):
        long = parse(raw)
        assert long.steps == short.steps and long.steps[0].config() == short.steps[0].config()
    assert long.steps[0].services == {"server": {"kind": "tomcat", "TOMCAT_MAX_THREADS": 3}}
    both = {"defaults": {"load": {"vus": 2}}, "step": [{"id": "s", "server": {"SLEEP_MS": 1},
                                                         "services": {"server": {"kind": "tomcat"}}}]}
    assert "set by [server] or by [services.server] kind = \"tomcat\", not both" in problems_of(both)
    wrong = {"defaults": {"load": {"vus": 2}}, "step": [{"id": "s", "services": {"server": {"kind": "tomcat",
                                                                                             "THREADS": 3}}}]}
    assert "unknown key 'THREADS'" in problems_of(wrong)


def test_a_step_s_own_sample_server_replaces_a_default_jar(tmp_path):
    jar = {"kind": "spring-jar", "path": str(tmp_path / "app.jar")}
    raw = {"defaults": {"load": {"vus": 2}, "services": {"server": jar}},
           "step": [{"id": "s", "services": {"server": {"kind": "tomcat", "SLEEP_MS": 7}}}]}
    assert parse(raw).steps[0].services == {"server": {"kind": "tomcat", "SLEEP_MS": 7}}


def test_a_same_as_step_runs_the_server_its_own_table_sets(tmp_path):
    """same_as copies another chapter's step; the copy's [server] changes the server that runs, not only the record."""
    (tmp_path / "source.toml").write_text('[[step]]\nid = "a"\nserver = { TOMCAT_MAX_THREADS = 40 }\nload = { vus = 2 }\n')
    raw = {"step": [{"id": "b", "same_as": f"{tmp_path / 'source.toml'}:a", "server": {"TOMCAT_MAX_THREADS": 7}}]}
    step = parse_spec("t", raw, tmp_path / "t.toml", LIMITS).steps[0]
    assert step.server["TOMCAT_MAX_THREADS"] == step.services["server"]["TOMCAT_MAX_THREADS"] == 7
    assert step.knobs()["server"]["TOMCAT_MAX_THREADS"] == 7


def test_a_step_without_services_is_as_before():
    step = parse(spec_with()).steps[0]
    assert step.services == {"server": {"kind": "tomcat"}} and "services" not in step.config()  # the sample server alone
    assert step.target == "server"


def test_services_merge_per_name_with_defaults_filled_in():
    step = parse(spec_with({"proxy": PROXY}, {"proxy": {"keepalive": 16}}, target="proxy")).steps[0]
    proxy = step.services["proxy"]
    assert proxy["kind"] == "nginx" and proxy["port"] == 38092 and proxy["keepalive"] == 16
    assert proxy["upstream"] == "server" and proxy["worker_processes"] == 1
    assert (proxy["proxy_http_version"], proxy["connection_header"]) == ("1.1", "")  # pooled: keep-alive upstream
    assert step.config()["services"] == {"proxy": proxy}  # the sample server's knobs are config.server
    assert step.target == "proxy"
    assert endpoints(step.services) == {"server": ("127.0.0.1", 8080), "proxy": ("127.0.0.1", 38092)}
    plain = parse(spec_with({"proxy": PROXY})).steps[0].services["proxy"]
    assert (plain["proxy_http_version"], plain["connection_header"]) == ("1.0", "close")  # nginx's own defaults


def test_return_mode_needs_no_upstream():
    step = parse(spec_with({"edge": {**PROXY, "mode": "return"}}, target="edge")).steps[0]
    assert "upstream" not in step.services["edge"]
    assert start_order(step.services) == ["edge"]  # nothing needs the sample server: the step does not start it


@pytest.mark.parametrize("services, load, expected", [
    ({"proxy": {"port": 38092}}, {}, "services.proxy.kind must be one of netty, nginx, postgres, webflux, got None"),
    ({"proxy": {**PROXY, "kind": "haproxy"}}, {}, "services.proxy.kind must be one of netty, nginx, postgres, webflux, got 'haproxy'"),
    ({"app": {"kind": "tomcat"}}, {}, "the sample server is the service 'server', set by [server]"),
    ({"proxy": {**PROXY, "workers": 2}}, {}, "unknown knob 'workers' (allowed: address, backlog"),
    ({"proxy": {**PROXY, "worker_processes": 0}}, {}, "services.proxy.worker_processes must be ≥ 1, got 0"),
    ({"proxy": {**PROXY, "keepalive": "8"}}, {}, "services.proxy.keepalive must be int, got '8'"),
    ({"proxy": {**PROXY, "mode": "cache"}}, {}, "services.proxy.mode must be one of proxy, return"),
    ({"proxy": {**PROXY, "upstream": "db"}}, {}, "services.proxy needs 'db', which is neither 'server' nor a service"),
    ({"proxy": {**PROXY, "keepalive": 4, "connection_header": "close"}}, {}, "keepalive 4 needs proxy_http_version"),
    ({"proxy": {**PROXY, "port": 8081}}, {}, "services.proxy.port 8081 is also [server] MANAGEMENT_PORT"),
    ({"proxy": {**PROXY, "status_port": 38092}}, {}, "port and status_port must differ"),
    ({"proxy": {**PROXY, "address": "10.0.0.1"}}, {}, "services.proxy.address must be an IPv4 loopback address"),
    ({"proxy": {**PROXY, "address": "::1"}}, {}, "services.proxy.address must be an IPv4 loopback address (127.0.0.0/8: the lab's load, samplers and URLs are IPv4), got '::1'"),
    ({"ss": PROXY}, {}, "service name 'ss' must be"),
    ({"proxy": PROXY}, {"target": "nginx"}, "load.target must be 'server' or one of the step's services (proxy), got 'nginx'"),
    ({}, {"target": "proxy"}, "load.target must be 'server' or one of the step's services (none declared)"),
    ({"a": {**PROXY, "upstream": "b"}, "b": {"kind": "nginx", "port": 38094, "status_port": 38095, "upstream": "a"}}, {},
     "services depend on each other in a cycle: a, b"),
])
def test_bad_services_get_one_clear_message(services, load, expected):
    assert expected in problems_of(spec_with(services, **load))


def test_services_table_must_be_tables():
    assert "services must be tables [services.<name>]" in problems_of(spec_with({"proxy": 3}))


def test_a_redeploy_step_takes_no_services():
    raw = {"defaults": {"services": {"proxy": PROXY}}, "step": [{"id": "r", "kind": "redeploy"}]}
    assert "a redeploy step starts only the sample server" in problems_of(raw)


def test_start_order_puts_each_service_after_its_upstream():
    services = {"edge": {"kind": "nginx", "mode": "proxy", "upstream": "inner"},
                "inner": {"kind": "nginx", "mode": "proxy", "upstream": "server"}, "server": {"kind": "tomcat"}}
    assert start_order(services) == ["server", "inner", "edge"]


def test_generated_config_proxies_with_keepalive_and_serves_stub_status(tmp_path):
    knobs = parse(spec_with({"proxy": {**PROXY, "keepalive": 8, "worker_processes": 2}})).steps[0].services["proxy"]
    conf = nginx.render_config("proxy", knobs, ("127.0.0.1", 38080), tmp_path)
    for line in ("worker_processes 2;", "access_log off;", "error_log stderr notice;", f"pid {tmp_path}/nginx.pid;",
                 "server 127.0.0.1:38080;", "keepalive 8;", "proxy_http_version 1.1;", 'proxy_set_header Connection "";',
                 "listen 127.0.0.1:38092 backlog=511;", "listen 127.0.0.1:38093;", "stub_status;"):
        assert line in conf, line
    assert "user " not in conf  # as root, master and workers start as www-data (as_nginx_user): none to switch
    edge = parse(spec_with({"edge": {**PROXY, "mode": "return"}})).steps[0].services["edge"]
    conf = nginx.render_config("edge", edge, None, tmp_path)
    assert 'return 200 "ok\\n";' in conf and "upstream" not in conf and "proxy_pass" not in conf


def test_a_missing_nginx_is_named_before_anything_starts(monkeypatch):
    step = parse(spec_with({"proxy": PROXY})).steps[0]
    monkeypatch.setattr(nginx, "nginx_binary", lambda: None)
    with pytest.raises(LabError, match=r"nginx is not installed: install the Debian package `nginx`"):
        deploy.check_services([step], "local")


def test_a_step_none_of_whose_services_runs_on_the_backend_is_refused_before_anything_starts(monkeypatch):
    """`invoke run chapter3 --server app.jar --backend docker`: your jar runs as a local process (spring-jar has no
    container), so nothing ran in docker while step.json said backend docker; so did a step of nginx and Netty in a
    chapter whose other steps run the sample server in a container. Now one line names those steps; a step with one
    service that runs there (the sample server, a database) still runs on it, the others beside it."""
    from types import SimpleNamespace

    from harness.lab.services.kinds import KINDS

    def step(id, **kinds):
        return SimpleNamespace(id=id, services={name: {"kind": kind} for name, kind in kinds.items()},
                               system={"network": "hosts"})

    yours = step("a-300", server="spring-jar", proxy="nginx")
    with pytest.raises(LabError, match=r"^--backend docker: no service of step\(s\) a-300 runs there \(kinds nginx, "
                                       r"spring-jar run as local processes only\): run them without --backend docker$"):
        deploy.check_services([yours], "docker")
    many = [step(f"s{n}", api="netty") for n in range(7)]
    with pytest.raises(LabError, match=r"step\(s\) s0, s1, s2, s3, s4 and 2 more runs there"):
        deploy.check_services([step("tomcat", server="tomcat"), *many], "docker")
    checked = []
    for kind in ("spring-jar", "postgres"):
        monkeypatch.setattr(KINDS[kind], "check_tools", lambda where, kind=kind: checked.append((kind, where)))
        monkeypatch.setattr(KINDS[kind], "check_steps", lambda steps, where: None)
    deploy.check_services([step("db", server="spring-jar", db="postgres")], "docker")
    assert checked == [("postgres", "docker"), ("spring-jar", "local")]


def test_as_root_nginx_runs_as_www_data_guarded_against_a_parent_gone_while_its_uid_changed(monkeypatch):
    """Master and workers as www-data; the guard that stops a command whose parent died while its uid changed checks
    the harness where that is its parent, and `unshare` in a pid namespace of its own (where $PPID is 0)."""
    from harness.lab.backends.process import still_a_child

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    plain, isolated = (nginx.as_nginx_user(["nginx"], in_own_pid_namespace=flag) for flag in (False, True))
    for cmd in (plain, isolated[isolated.index("sh", 1) + 1:]):  # after the note of the parent
        assert cmd[1:4] == ["--reuid=www-data", "--regid=www-data", "--clear-groups"] and cmd[-1] == "nginx"
    guard, noted = still_a_child(str(os.getpid())), still_a_child("")
    assert plain[-1 - len(guard):-1] == guard and isolated[-1 - len(noted):-1] == noted
    assert isolated[:2] == ["sh", "-c"] and "export LAB_PARENT" in isolated[2]  # noted by root, before setpriv


def test_a_busy_service_port_names_the_service_and_port(monkeypatch):
    step = parse(spec_with({"proxy": PROXY})).steps[0]
    monkeypatch.setattr(nginx, "nginx_binary", lambda: "/usr/sbin/nginx")
    monkeypatch.setattr(deploy, "port_in_use", lambda address, port: port == 38093)
    monkeypatch.setattr(deploy, "listener", lambda port: ("python3", 4242))
    with pytest.raises(LabError, match=r"service 'proxy' needs port 38093 \(status_port\), which is in use by python3 \(pid 4242\)"):
        deploy.check_services([step], "local")


def test_a_service_never_ready_fails_the_step_with_its_log_tail(tmp_path):
    class Never(RunningService):
        kind = "nginx"

        def alive(self):
            return True

        def ready(self):
            return False

    log = tmp_path / "edge.log"
    log.write_text("line 1\nbind() to 127.0.0.1:38094 failed\n")
    service = Never("edge", None, log, time.monotonic())
    with pytest.raises(StepFailed, match=r"(?s)nginx 'edge' not ready after 0 s; its log ends:\nline 1\nbind\(\) to"):
        service.wait_ready(timeout_s=0.2)


# ---- nginx's upstream side: sockets by state and its error log --------------------------------------------------

NGINX_ERRORS = """\
2026/11/24 15:47:31 [notice] 1#1: start worker processes
2026/11/24 15:47:32 [crit] 7#7: *5678 connect() to 127.0.0.1:8232 failed (99: Cannot assign requested address) while connecting to upstream, client: 127.0.0.1, server: , request: "GET /hello HTTP/1.1", upstream: "http://127.0.0.1:8232/hello", host: "127.0.0.1:8234"
2026/11/24 15:47:32 [error] 7#7: *5679 upstream prematurely closed connection while reading response header from upstream, client: 127.0.0.1, server: , request: "GET /hello HTTP/1.1", upstream: "http://127.0.0.1:8232/hello", host: "127.0.0.1:8234"
2026/11/24 15:47:33 [warn] 7#7: *5680 an upstream response is buffered to a temporary file
"""


def test_error_lines_are_counted_by_level_and_eaddrnotavail():
    from harness.lab.services.nginx import count_error_lines

    assert count_error_lines(NGINX_ERRORS) == {"errors.logged": 2, "errors.eaddrnotavail": 1}
    assert count_error_lines("") == {"errors.logged": 0, "errors.eaddrnotavail": 0}


def test_the_error_log_is_read_as_it_grows_whole_lines_only(tmp_path):
    from harness.lab.services.nginx import ErrorLogCounter

    log = tmp_path / "edge.log"
    counter = ErrorLogCounter(tmp_path / "missing.log")
    assert counter.read() == {"errors.logged": 0, "errors.eaddrnotavail": 0}
    counter = ErrorLogCounter(log)
    first, second = NGINX_ERRORS.splitlines(keepends=True)[:2], NGINX_ERRORS.splitlines(keepends=True)[2:]
    log.write_text("".join(first) + second[0][:40])  # the third line half-written
    assert counter.read() == {"errors.logged": 1, "errors.eaddrnotavail": 1}
    log.write_text("".join(first) + "".join(second))
    assert counter.read() == {"errors.logged": 2, "errors.eaddrnotavail": 1}  # each line counted once
    assert counter.read() == {"errors.logged": 2, "errors.eaddrnotavail": 1}


def test_upstream_sockets_by_state_count_every_socket_once():
    from harness.lab.services.nginx import UPSTREAM_METRICS, upstream_values

    counts = [0] * 16
    counts[1], counts[2], counts[6], counts[8] = 5, 1, 40, 2  # ESTAB, SYN-SENT, TIME-WAIT, CLOSE-WAIT
    values = upstream_values(counts)
    assert set(values) == set(UPSTREAM_METRICS)
    assert values == {"upstream.estab": 5, "upstream.syn_sent": 1, "upstream.time_wait": 40, "upstream.other": 2,
                      "upstream.sockets": 48}


def test_every_service_is_given_the_book_and_each_kinds_kept_folders_to_see_read_only(tmp_path, monkeypatch):
    """What process.read_only_view protects, as a Deployment hands it to each service: the clone, the data directory
    in use and what a kind keeps between steps (PostgreSQL's clusters, wherever LAB_PG_CLUSTERS puts them)."""
    from harness import ROOT
    from harness.lab.services.base import book_folders
    from harness.lab.services.kinds import KINDS

    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LAB_PG_CLUSTERS", str(tmp_path / "clusters"))
    assert book_folders(KINDS.values()) == [ROOT, tmp_path / "data", tmp_path / "clusters"]
    assert book_folders() == [ROOT, tmp_path / "data"]


def test_a_steps_jvms_run_as_users_of_their_own_and_a_step_of_more_than_there_are_is_refused(monkeypatch):
    """As root the n-th JVM of a step (in start order) runs as the n-th of the servers' users; nginx and the
    database run as their own (www-data, nobody). More JVMs than users: one line before anything starts."""
    from types import SimpleNamespace

    from harness.lab.backends.process import SERVER_USERS

    def step(id, **kinds):
        return SimpleNamespace(id=id, services={name: {"kind": kind} for name, kind in kinds.items()},
                               system={"network": "hosts"})  # hosts: no port to check

    mixed = step("mixed", server="tomcat", edge="nginx", api="netty", db="postgres", flux="webflux")
    jvms = deploy.jvms_of(mixed, "local")
    assert sorted(jvms) == ["api", "flux", "server"]
    assert [deploy.server_user(jvms, name) for name in jvms] == list(SERVER_USERS[:3])
    assert deploy.server_user(jvms, "edge") == SERVER_USERS[0]  # not a JVM: the Context's default, unused
    needed = []
    monkeypatch.setattr(deploy, "check_server_users", needed.append)
    for kind in ("tomcat", "nginx", "netty", "postgres", "webflux"):
        monkeypatch.setattr(deploy.KINDS[kind], "check_tools", lambda where: None)
        monkeypatch.setattr(deploy.KINDS[kind], "check_steps", lambda steps, where: None)
    monkeypatch.setattr(deploy.os, "geteuid", lambda: 0)
    deploy.check_services([mixed, step("one", server="tomcat")], "local")
    assert needed == [3]  # as many of the users as the step with most JVMs needs (a machine set up before has one)
    crowded = step("crowded", **{f"j{n}": "netty" for n in range(len(SERVER_USERS) + 1)})
    with pytest.raises(LabError, match=rf"^as root, step\(s\) crowded \({len(SERVER_USERS) + 1}\) run more JVMs than "
                                       rf"the lab has users to run them as, each its own \({len(SERVER_USERS)}: "
                                       rf"lab-server, lab-server-2, .*\): split the step$"):
        deploy.check_services([mixed, crowded], "local")
    monkeypatch.setattr(deploy.os, "geteuid", lambda: 1000)  # as another user every JVM runs as that user
    deploy.check_services([crowded], "local")
    assert needed == [3]  # and no user is looked for


def test_a_jvm_in_a_container_takes_none_of_the_servers_users(monkeypatch):
    """On --backend docker the sample server runs in a container (as its image's user): the JVMs that run here as
    processes are counted without it."""
    from types import SimpleNamespace

    both = SimpleNamespace(id="both", services={"server": {"kind": "tomcat"}, "api": {"kind": "netty"}},
                           system={"network": "hosts"})
    assert deploy.jvms_of(both, "docker") == ["api"] and sorted(deploy.jvms_of(both, "local")) == ["api", "server"]


@pytest.mark.parametrize("path, said", [("~nosuchuser/app.jar", "~nosuchuser/app.jar: no such file"),
                                        ("/tmp", "/tmp: a folder, not a jar")])
def test_a_jar_path_that_names_no_jar_is_one_problem_not_a_traceback(path, said):
    """A home of no user made pathlib raise RuntimeError from inside the check."""
    with pytest.raises(LabError, match=f"services.server.path {said}"):
        parse({"step": [{"id": "a", "load": {"vus": 1}, "services": {"server": {"kind": "spring-jar", "path": path}}}]})
