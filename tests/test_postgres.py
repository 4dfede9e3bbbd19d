"""The postgres kind without a database: its knobs and the spec checks made before anything starts, the start order
around the server, the argv that runs it as `nobody` under root, the sampler's rows from a captured query result, the
process-tree reading on real processes, and a stale postmaster.pid. The real PostgreSQL runs in
tests/test_e2e_postgres.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import ROOT, TOOLS, LabError
from harness.lab import preflight
from harness.lab.backends.docker.container import run_argv as container_argv
from harness.lab.services import deploy, graph, pgbinaries, pgcluster, postgres
from harness.lab.services.tomcat import container as tomcat_container, process as tomcat_process
from harness.lab.services.base import RunningService, StepFailed
from harness.lab.services.graph import start_order
from harness.lab.services.tomcat.knobs import server_env
from harness.lab.spec import parse_spec

from conftest import LIMITS

DB = {"kind": "postgres", "port": 38192, "template": "standin", "sql_dir": "tests/samples/postgres"}


def parse(raw):
    return parse_spec("t", raw, Path("t.toml"), LIMITS)


def run_argv(step, image: str, nofile: int, given: dict | None = None) -> list[str]:
    """The sample server's `docker run` for a step (the container module's part and the tomcat kind's options)."""
    options = tomcat_container.options(step, server_env(step.services["server"], given), nofile)
    command = tomcat_container.command(step.server)
    if command:
        options += ["--entrypoint", command[0]]
    return container_argv(step, "server", image, options, command[1:])


def spec_with(services: dict, server: dict | None = None) -> dict:
    return {"defaults": {"load": {"vus": 2}, "services": services, "server": server or {}}, "step": [{"id": "s"}]}


def problems_of(raw) -> str:
    with pytest.raises(LabError) as err:
        parse(raw)
    return str(err.value)


def test_knobs_have_their_defaults():
    db = parse(spec_with({"db": DB})).steps[0].services["db"]
    assert db == {"kind": "postgres", "port": 38192, "max_connections": 100, "shared_buffers": "128MB",
                  "template": "standin", "sql_dir": "tests/samples/postgres", "rows": 1000, "indexes": True}


def test_unknown_and_mistyped_knobs_are_listed_together():
    text = problems_of(spec_with({"db": {**DB, "colour": "blue", "rows": "many", "indexes": 1}}))
    assert "services.db: unknown knob 'colour' (allowed: indexes, max_connections, port, rows, shared_buffers, sql_dir, template)" in text
    assert "services.db.rows must be int, got 'many'" in text and "services.db.indexes must be bool, got 1" in text


def test_a_pool_larger_than_the_connections_left_is_refused_naming_both():
    raw = spec_with({"db": {**DB, "max_connections": 20}}, {"PAIR_ROOM": True, "HIKARI_MAX_POOL_SIZE": 17})
    assert ("HIKARI_MAX_POOL_SIZE 17 exceeds what services.db.max_connections 20 leaves the server (16: 3 are "
            "reserved for superusers, 1 for the harness's sampler)") in problems_of(raw)
    raw = spec_with({"db": {**DB, "max_connections": 20}}, {"PAIR_ROOM": True, "HIKARI_MAX_POOL_SIZE": 16})
    assert parse(raw).steps[0].server["HIKARI_MAX_POOL_SIZE"] == 16


def test_hikaris_default_pool_counts_too():
    raw = spec_with({"db": {**DB, "max_connections": 12}}, {"PAIR_ROOM": True})
    assert "HIKARI_MAX_POOL_SIZE 10 exceeds what services.db.max_connections 12 leaves the server (8" in problems_of(raw)


def test_pair_room_needs_exactly_one_postgres():
    text = problems_of(spec_with({}, {"PAIR_ROOM": True}))
    assert "PAIR_ROOM = true needs exactly one service of kind postgres" in text and "the step has 0" in text
    two = {"db": DB, "other": {**DB, "port": 38193}}
    assert "the step has 2 (db, other)" in problems_of(spec_with(two, {"PAIR_ROOM": True}))
    assert "at most one database per step" in problems_of(spec_with(two))


def test_missing_sql_files_and_port_conflicts_are_named_before_anything_starts(tmp_path):
    raw = spec_with({"db": {**DB, "sql_dir": str(tmp_path), "indexes": False, "port": 8080}})
    text = problems_of(raw)
    for part in ("schema", "data", "drop-indexes"):
        assert f"template 'standin' needs {tmp_path}/standin-{part}.sql, which is missing" in text
    assert "services.db.port 8080 is also [server] SERVER_PORT" in text


def test_the_database_starts_before_the_server_and_a_proxy_after_it():
    services = {"proxy": {"kind": "nginx", "mode": "proxy", "upstream": "server"}, "db": {"kind": "postgres"},
                "server": {"kind": "tomcat"}}
    assert start_order(services) == ["db", "server", "proxy"]
    step = parse(spec_with({"db": DB, "proxy": {"kind": "nginx", "port": 38094, "status_port": 38095}})).steps[0]
    assert start_order(step.services) == ["db", "server", "proxy"]


def test_a_service_the_server_needs_cannot_need_the_server():
    class NeedsServer(postgres.PostgresKind):
        def depends_on(self, knobs):
            return ["server"]

    kinds = dict(graph.KINDS)
    graph.KINDS["needy"] = NeedsServer()
    try:
        with pytest.raises(LabError, match=r"services depend on each other in a cycle: db, server"):
            start_order({"db": {"kind": "needy"}, "server": {"kind": "tomcat"}})
    finally:
        graph.KINDS.clear()
        graph.KINDS.update(kinds)


def test_teardown_stops_the_proxy_then_the_server_then_the_database_each_even_after_a_failure(tmp_path):
    stopped = []

    class Stub(RunningService):
        def __init__(self, name, fails=False):
            super().__init__(name, None, tmp_path / f"{name}.log", 0.0)
            self.fails = fails

        def stop(self):
            stopped.append(self.name)
            if self.fails:
                raise RuntimeError(f"{self.name} would not stop")
            return 0

    step = parse(spec_with({"db": DB, "proxy": {"kind": "nginx", "port": 38094, "status_port": 38095}})).steps[0]
    services = deploy.Deployment(step, tmp_path)
    services.running = {"db": Stub("db"), "server": Stub("server", fails=True), "proxy": Stub("proxy")}
    services.meta = {"db": {}, "proxy": {}}
    services.stop()
    assert stopped == ["proxy", "server", "db"]
    assert services.server_meta["server_exit"] == "not stopped cleanly: server would not stop"


def test_the_server_gets_the_databases_address_on_both_backends():
    step = parse(spec_with({"db": DB})).steps[0]
    extra = {"SPRING_DATASOURCE_URL": "jdbc:postgresql://127.0.0.1:38192/step_1", "SPRING_DATASOURCE_USERNAME": "lab",
             "SPRING_DATASOURCE_PASSWORD": "lab"}
    assert server_env(step.services["server"], extra).items() >= extra.items()
    argv = run_argv(step, "img", 1024, extra)
    assert "SPRING_DATASOURCE_URL=jdbc:postgresql://127.0.0.1:38192/step_1" in argv and "host" in argv


def test_the_pair_room_api_runs_its_own_jar_on_both_backends(monkeypatch):
    from harness.lab.services.tomcat.process import JAR, PAIR_ROOM_JAR

    local = tomcat_process
    room = parse(spec_with({"db": DB}, {"PAIR_ROOM": True})).steps[0]
    assert local.launch_of(room.server, room.system) == "jar"  # the CDS archive belongs to the plain jar
    assert local.server_command("jar", "java", PAIR_ROOM_JAR)[-1] == str(PAIR_ROOM_JAR) != str(JAR)
    argv = run_argv(room, "img", 1024)
    assert argv[-5:] == ["--entrypoint", "java", "img", "-jar", "/app/sample-server-pair-room.jar"]
    plain = parse(spec_with({"db": DB})).steps[0]
    assert run_argv(plain, "img", 1024)[-1] == "img"  # the image's own entrypoint: CDS on the plain jar
    monkeypatch.setattr(local, "PAIR_ROOM_JAR", Path("/nonexistent/sample-server-pair-room.jar"))
    monkeypatch.setattr(local, "SERVER_DIR", Path("/nonexistent/sample-server"))
    with pytest.raises(LabError, match=r"step\(s\) s run the pair-room API, but .* is missing: run `invoke setup`"):
        local.check_launches([room])
    cds = parse({**spec_with({"db": DB}, {"PAIR_ROOM": True}), "step": [{"id": "c", "system": {"launch": "cds"}}]}).steps[0]
    with pytest.raises(LabError, match="from its own jar, which the CDS archive .* does not fit"):
        local.check_launches([cds])


def test_on_docker_the_steps_postgres_runs_in_the_labs_image_as_the_clusters_owner(tmp_path):
    from harness.lab.services import pgcontainer
    from harness.lab.services.pgcontainer import POSTGRES_TAG

    raw = spec_with({"db": DB})
    raw["defaults"]["placement"] = {"db": {"cpus": "1", "quota": 0.5}}
    step = parse(raw).steps[0]
    data = tmp_path / "cluster" / "data"
    data.mkdir(parents=True)
    sockets = tmp_path / "lab-pg-socket-1-x"
    argv = pgcontainer.run_argv(step, "db", data, sockets, ["-D", str(data), "-c", "port=38192"])
    owner = data.stat()
    assert argv[argv.index("--user") + 1] == f"{owner.st_uid}:{owner.st_gid}"  # never root when the harness is
    assert flag_values(argv, "--network") == flag_values(argv, "--pid") == ["host"]
    assert flag_values(argv, "--volume") == [f"{data}:{data}", f"{sockets}:{sockets}",  # not the credentials beside it
                                             f"{data.parent}/container-passwd:/etc/passwd:ro"]
    assert argv[argv.index("--cpuset-cpus") + 1] == "1" and argv[argv.index("--cpus") + 1] == "0.5"
    assert argv[argv.index(POSTGRES_TAG) + 1:] == ["-D", str(data), "-c", "port=38192"]
    assert argv[argv.index("--name") + 1] == "lab-t-s-db"


def test_on_docker_a_missing_or_outdated_postgres_image_is_named_before_anything_starts(monkeypatch):
    from harness.lab.services import pgcontainer

    monkeypatch.setattr(pgcontainer, "check_daemon", lambda: None)
    monkeypatch.setattr(pgcontainer, "image_labels", lambda tag: None)
    with pytest.raises(LabError, match=r"the PostgreSQL image concurrency-lab/postgres:17.6.0 is missing: run `invoke image`"):
        pgcontainer.check_image()
    monkeypatch.setattr(pgcontainer, "image_labels", lambda tag: {pgcontainer.POSTGRES_LABEL: "other"})
    with pytest.raises(LabError, match="holds other binaries than `invoke setup` pins"):
        pgcontainer.check_image()


def test_the_plain_server_jar_leaves_the_database_stack_out():
    """Chapters 1-4 and 6-7 run sample-server.jar: none of chapter 5's JPA stack may be on its classpath."""
    import zipfile

    from harness.lab.services.tomcat.process import JAR, PAIR_ROOM_JAR

    assert JAR.exists() and PAIR_ROOM_JAR.exists(), "the server jars are missing: run `invoke setup`"
    def libs(jar):
        return {n.rsplit("/", 1)[1].rsplit("-", 1)[0] for n in zipfile.ZipFile(jar).namelist()
                if n.startswith("BOOT-INF/lib/") and n.endswith(".jar")}
    stack = {"hibernate-core", "HikariCP", "postgresql", "spring-data-jpa", "jakarta.persistence-api", "spring-jdbc"}
    assert stack <= libs(PAIR_ROOM_JAR)
    assert not stack & libs(JAR) and libs(JAR) < libs(PAIR_ROOM_JAR)
    for jar in (JAR, PAIR_ROOM_JAR):  # repackaged from the original jar, not from one repackaged already
        manifest = zipfile.ZipFile(jar).read("META-INF/MANIFEST.MF").decode()
        assert "Start-Class: lab.SampleServerApplication" in manifest, jar


def test_as_root_postgres_runs_as_nobody_without_a_new_process():
    import os

    from harness.lab.backends.process import still_a_child

    prefix = pgbinaries.run_as_prefix(root=True)
    assert prefix[1:4] == ["--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    assert "--inh-caps=-all" in prefix and "--bounding-set=-all" in prefix and "--no-new-privs" in prefix
    assert Path(prefix[0]).name == "setpriv"  # changes the user and execs: the pid started is postgres's
    guard = still_a_child(str(os.getpid()))
    assert prefix[-len(guard):] == guard  # which execs too, if the harness is still its parent
    assert pgbinaries.run_as_prefix(root=False) == []


@pytest.mark.skipif(not shutil.which("setpriv") or not pgbinaries.as_root(), reason="needs root and setpriv")
def test_the_prefix_really_runs_a_command_as_nobody_keeping_the_parent_death_signal():
    """setpriv's change of user clears the parent-death signal (the kernel does on any change of credentials);
    `--pdeathsig keep` sets it again, so a postgres started this way still dies with the harness."""
    probe = ("import ctypes, os; sig = ctypes.c_int(); ctypes.CDLL('libc.so.6').prctl(2, ctypes.byref(sig)); "
             "print(os.geteuid(), os.getegid(), sig.value)")
    out = subprocess.run(pgbinaries.run_as_prefix() + ["/usr/bin/python3", "-c", probe],
                         capture_output=True, text=True, preexec_fn=_pdeathsig_kill, check=True).stdout
    assert out.split() == ["65534", "65534", "9"]


def _pdeathsig_kill():
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)


def test_missing_binaries_name_invoke_setup(monkeypatch, tmp_path):
    monkeypatch.setattr(pgbinaries, "TOOLS", tmp_path)
    with pytest.raises(LabError, match=r"the PostgreSQL 17.6.0 binaries are missing .*: run `invoke setup`"):
        pgbinaries.check_runnable(tmp_path / "clusters")
    with pytest.raises(LabError, match=r"no pinned PostgreSQL binaries for this machine's architecture 'riscv64'"):
        pgbinaries.artifact("riscv64")


def test_the_cluster_key_changes_with_the_sql_the_rows_and_the_version(tmp_path):
    for part in ("schema", "data"):
        (tmp_path / f"t-{part}.sql").write_text(f"-- {part}\n")
    files = pgcluster.sql_files(str(tmp_path), "t")
    key = pgcluster.cluster_key("t", 1000, files)
    assert key.startswith("pg17.6.0-t-1000-") and key != pgcluster.cluster_key("t", 1001, files)
    (tmp_path / "t-data.sql").write_text("-- other data\n")
    assert pgcluster.cluster_key("t", 1000, files) != key


def test_sampler_rows_from_a_captured_query_result():
    activity = [("active", "Lock", 2), ("active", None, 3), ("active", "IO", 1), ("idle", "Client", 5),
                ("idle in transaction", "Client", 1), ("idle in transaction (aborted)", "Client", 1)]
    database = (120, 3, 5000, 400, 10, 7, 30, 9000)
    rows = postgres.metric_rows(1700000000000, activity, database, {"pg.cpu_seconds": 1.5, "pg.rss_bytes": 2e6})
    values = {r["metric"]: r["value"] for r in rows}
    assert {r["ts_ms"] for r in rows} == {1700000000000}
    assert values["pg.activity.connections"] == 13 and values["pg.activity.active"] == 6
    assert values["pg.activity.idle"] == 5 and values["pg.activity.idle_in_transaction"] == 1
    assert values["pg.activity.idle_in_transaction_aborted"] == 1
    assert values["pg.activity.wait.Lock"] == 2 and values["pg.activity.wait.IO"] == 1
    assert values["pg.activity.wait.Client"] == 0  # idle sessions wait on the client; only active ones are counted
    assert values["pg.database.xact_commit"] == 120 and values["pg.database.blks_hit"] == 9000
    assert values["pg.cpu_seconds"] == 1.5 and all(isinstance(v, float) for v in values.values())
    empty = {r["metric"]: r["value"] for r in postgres.metric_rows(0, [], None, {})}
    assert empty["pg.activity.connections"] == 0 and empty["pg.activity.wait.LWLock"] == 0
    assert not any(m.startswith("pg.database.") for m in empty)  # the clone gone: no counters, not zeros


def test_tree_usage_counts_the_children_and_those_already_reaped():
    code = "import subprocess,sys,time; sum(range(3*10**7)); p=subprocess.Popen(['sleep','30']); print(p.pid, flush=True); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        parent.stdout.readline()
        usage = postgres.tree_usage(parent.pid)
        assert usage["pg.processes"] == 2 and usage["pg.rss_bytes"] > 0 and usage["pg.cpu_seconds"] > 0.1
    finally:
        parent.kill()
        parent.wait()
    assert postgres.tree_usage(parent.pid) == {"pg.cpu_seconds": 0.0, "pg.rss_bytes": 0.0, "pg.processes": 0.0}


def test_a_stale_postmaster_pid_is_removed_and_a_live_postgres_refused(tmp_path):
    (tmp_path / "postmaster.pid").write_text("999999999\n/data\n")
    postgres._clear_stale_pid(tmp_path)
    assert not (tmp_path / "postmaster.pid").exists()
    fake = tmp_path / "postgres"  # a process whose name is postgres, as a leftover postmaster's is
    shutil.copy(shutil.which("sleep"), fake)
    proc = subprocess.Popen([str(fake), "30"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/comm").read_text().strip() != "postgres" and time.monotonic() < deadline:
            time.sleep(0.01)  # forked, not exec'd yet
        (tmp_path / "postmaster.pid").write_text(f"{proc.pid}\n")
        with pytest.raises(StepFailed, match=rf"a postgres \(pid {proc.pid}\) still runs on the cluster .*`kill {proc.pid}`"):
            postgres._clear_stale_pid(tmp_path)
    finally:
        proc.kill()
        proc.wait()


LOCK_HOLDER = ("import sys, time; from pathlib import Path; from harness.lab.services.pgcluster import ClusterLock; "
               "held = ClusterLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)")


def hold_lock_in_another_process(cluster_dir: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(cluster_dir)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_cluster_held_by_another_run_is_refused_naming_its_pid_until_that_run_dies(tmp_path):
    cluster_dir = tmp_path / "pg17.6.0-t-1000-abc"
    holder = hold_lock_in_another_process(cluster_dir)
    try:
        with pytest.raises(LabError, match=rf"is in use by another lab run \(pid {holder.pid}\).*LAB_PG_CLUSTERS"):
            pgcluster.ClusterLock(cluster_dir).acquire()
        assert pgcluster.in_use(cluster_dir)
    finally:
        holder.kill()
        holder.wait()
    assert not pgcluster.in_use(cluster_dir)  # the kernel dropped a killed holder's lock: nothing to clear by hand
    mine = pgcluster.ClusterLock(cluster_dir).acquire()
    with pytest.raises(LabError, match=rf"pid {__import__('os').getpid()}"):  # one process, two steps: refused too
        pgcluster.ClusterLock(cluster_dir).acquire()
    mine.release()
    assert not pgcluster.in_use(cluster_dir)


def test_a_step_on_a_cluster_another_run_holds_fails_before_touching_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_PG_CLUSTERS", str(tmp_path))
    knobs = parse(spec_with({"db": DB})).steps[0].services["db"]
    files = pgcluster.sql_files(knobs["sql_dir"], knobs["template"])
    cluster = pgcluster.Cluster(knobs["template"], knobs["rows"], files)
    holder = hold_lock_in_another_process(cluster.dir)
    try:
        with pytest.raises(StepFailed, match=rf"postgres 'db': the PostgreSQL cluster .* in use by another lab run \(pid {holder.pid}\)"):
            postgres.PostgresKind().start("db", knobs, None)
        assert not cluster.dir.exists()  # no initdb, nothing removed or written
    finally:
        holder.kill()
        holder.wait()


def test_initdb_replaces_outdated_clusters_but_not_one_another_run_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_PG_CLUSTERS", str(tmp_path))
    files = pgcluster.sql_files(DB["sql_dir"], DB["template"])
    cluster = pgcluster.Cluster(DB["template"], 1000, files)
    outdated = tmp_path / f"pg17.5.0-{DB['template']}-1000-aaa"  # another version's
    held = tmp_path / f"pg17.6.0-{DB['template']}-1000-bbb"  # other SQL, and a run is on it
    other_rows = tmp_path / f"pg17.6.0-{DB['template']}-2000-ccc"  # not this cluster's kind: kept
    for d in (cluster.dir, outdated, held, other_rows):
        d.mkdir()
    holder = hold_lock_in_another_process(held)
    try:
        assert sorted(cluster.replaced()) == sorted([cluster.dir, outdated])
    finally:
        holder.kill()
        holder.wait()


def test_clean_clusters_removes_those_no_run_holds_and_keeps_the_held_one_and_whatever_is_no_cluster(tmp_path,
                                                                                                    monkeypatch):
    """LAB_PG_CLUSTERS may name a folder that holds more than clusters (a home folder, by mistake): only folders
    named as the lab names its clusters are removed."""
    monkeypatch.setenv("LAB_PG_CLUSTERS", str(tmp_path))
    free, held = tmp_path / "pg17.6.0-a-10-0123456789ab", tmp_path / "pg17.6.0-pair-room-10-ba9876543210"
    others = [tmp_path / name for name in ("Documents", "pg17.6.0-notes", "pg17.6.0-a-10-x", "src")]
    for d in (free, held, *others):
        (d / "data").mkdir(parents=True)
    holder = hold_lock_in_another_process(held)
    try:
        removed, kept = pgcluster.remove_unused()
    finally:
        holder.kill()
        holder.wait()
    assert removed == [free] and kept == [held]
    assert not free.exists() and not free.with_name(free.name + ".lock").exists() and (held / "data").is_dir()
    assert all((other / "data").is_dir() for other in others)


def flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_on_docker_the_container_knows_its_users_by_name(tmp_path):
    """PostgreSQL looks up its own user at start, and the peer check the user who connects: the image knows root
    only, so a harness of the docker group (not root) could not log in. The container's /etc/passwd names all three."""
    import pwd

    from harness.lab.services import pgcontainer

    data, sockets = tmp_path / "data", tmp_path / "sockets"
    data.mkdir()
    sockets.mkdir()
    users = tmp_path / pgcontainer.USERS_FILE
    users.symlink_to(tmp_path / "elsewhere")  # whatever lies in its place is replaced, not written through
    umask = os.umask(0o077)
    try:
        pgcontainer.users_file(data)
    finally:
        os.umask(umask)
    assert not users.is_symlink() and not (tmp_path / "elsewhere").exists()
    assert users.stat().st_mode & 0o777 == 0o644  # postgres, the data's owner, reads it whatever root's umask
    lines = users.read_text().splitlines()
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert lines[0] == "root:x:0:0::/:/usr/sbin/nologin"
    assert f"{me}:x:{os.geteuid()}:{os.getegid()}::/:/usr/sbin/nologin" in lines and len(lines) == len(set(lines))
    argv = pgcontainer.options(data, sockets)
    assert argv[argv.index(f"{users}:/etc/passwd:ro") - 1] == "--volume"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["data", "sockets", pgcontainer.USERS_FILE])


@pytest.mark.parametrize("said, refused", [
    ('connection to server on socket "/tmp/s/.s.PGSQL.5432" failed: Permission denied', True),
    ('connection to server on socket "/tmp/s/.s.PGSQL.5432" failed: FATAL:  Peer authentication failed for user '
     '"postgres"', True),
    ("FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"postgres\"", True),
    ('FATAL:  local user with ID 1000 does not exist', True),
    ("connection to server on socket \"/tmp/s/.s.PGSQL.5432\" failed: No such file or directory", False),
    ("FATAL:  the database system is starting up", False)])
def test_a_refused_login_ends_the_start_at_once_and_a_slow_start_is_waited_for(said, refused, tmp_path):
    from types import SimpleNamespace

    from harness.lab.services.postgres import RunningPostgres, refused_login

    assert refused_login(Exception(said)) is refused

    def connect(*args, **kwargs):
        raise Exception(said)

    service = RunningPostgres.__new__(RunningPostgres)
    service.name, service.port, service.cluster = "db", 5432, SimpleNamespace(connect=connect)
    service.log = tmp_path / "db.log"
    service.log.write_text("FATAL:  no match in usermap \"harness\" for user \"postgres\"\n")
    if refused:
        with pytest.raises(StepFailed, match=r"(?s)^postgres 'db' does not let the harness in as its superuser: .*; its "
                                             r"log ends:\nFATAL:  no match in usermap"):
            service.ready()
    else:
        assert service.ready() is False


@pytest.mark.parametrize("value, fits", [("128MB", True), ("1 GB", True), ("16", True), ("128kB", True),
                                         ("lots", False), ("1", False), ("127kB", False), ("128mb", False),
                                         ("１MB", False), ("", False)])
def test_shared_buffers_is_refused_where_postgresql_would_refuse_it_at_its_start(value, fits):
    """PostgreSQL's notation: a number, then B, kB, MB, GB or TB (case and all), a bare number counting 8 kB blocks,
    at least 16 of them; anything else it refuses with a FATAL once the step has begun."""
    raw = spec_with({"db": {**DB, "shared_buffers": value}})
    if fits:
        assert parse(raw).steps[0].services["db"]["shared_buffers"] == value
    else:
        assert "services.db.shared_buffers must be a size of at least 128kB in PostgreSQL's notation" in problems_of(raw)


def test_a_home_folder_in_sql_dir_and_lab_pg_clusters_is_expanded_and_a_relative_clusters_folder_made_absolute(
        tmp_path, monkeypatch):
    """initdb runs inside the cluster's folder: a relative LAB_PG_CLUSTERS would name a folder below it."""
    home = tmp_path / "home"
    (home / "sql").mkdir(parents=True)
    for part in ("schema", "data"):
        (home / "sql" / f"standin-{part}.sql").write_text((ROOT / DB["sql_dir"] / f"standin-{part}.sql").read_text())
    monkeypatch.setenv("HOME", str(home))
    assert set(pgcluster.sql_files("~/sql", "standin")) == {"schema", "data"}
    parse(spec_with({"db": {**DB, "sql_dir": "~/sql"}}))  # its files found: no problem
    monkeypatch.setenv("LAB_PG_CLUSTERS", "~/clusters")
    assert preflight.cluster_problems() == [] and pgcluster.clusters_root() == home / "clusters"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAB_PG_CLUSTERS", "relative")
    cluster = pgcluster.Cluster("standin", 10, pgcluster.sql_files(DB["sql_dir"], "standin"))
    assert cluster.dir.is_absolute() and cluster.dir.parent == tmp_path / "relative"
    monkeypatch.setenv("LAB_PG_CLUSTERS", " ")
    assert preflight.cluster_problems() == [f"LAB_PG_CLUSTERS is set but empty: unset it for {TOOLS / 'postgres' / 'clusters'}"
                                            ", or give this run clusters of its own with LAB_PG_CLUSTERS=<a directory you "
                                            "can write>"]
