"""End to end with the real PostgreSQL (the pinned binaries `invoke setup` unpacks) beside the real sample server.

tests/profiles/postgres-scaled.toml's two short steps through the command line (the first builds the template, the
second reuses it), then Ctrl-C in the middle of its long step; and the kind driven directly through a Deployment, as
the harness's user and (when that is root) as `nobody`, the path a non-root user takes: there postgres runs as the
user itself, with no setpriv. Each test's clusters live in a directory of its own (LAB_PG_CLUSTERS), so the first
step really loads the template.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # also run as a script, by `nobody` (below)

from harness.lab.services import pgauth, pgbinaries, pgcluster, pgshm  # noqa: E402
from harness.lab.services.deploy import Deployment  # noqa: E402
from harness.lab.spec import parse_spec  # noqa: E402

# The machine's only lab run (invoke test runs it beside its jobs, which start none): any run's start-up sweep
# would remove the segments its tests leave on purpose, before they check the next run removes them.
pytestmark = [pytest.mark.e2e, pytest.mark.sole]
PROFILE = ROOT / "tests" / "profiles" / "postgres-scaled.toml"
STANDIN = {"kind": "postgres", "template": "standin", "sql_dir": "tests/samples/postgres", "rows": 1000}


def postgres_pids(clusters: Path) -> list[int]:
    """Live postgres processes of clusters under `clusters` (the postmaster names its data directory; its
    backends are its children)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() != "postgres":
                continue
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        parent = Path(f"/proc/{stat[stat.rindex(')') + 2:].split()[1]}/cmdline")
        cmdlines = [(proc / "cmdline").read_bytes(), parent.read_bytes() if parent.exists() else b""]
        if any(str(clusters).encode() in c for c in cmdlines) and stat[stat.rindex(")") + 2] != "Z":
            found.append(int(proc.name))
    return found


@pytest.fixture
def clusters():
    """A directory of its own for the test's clusters, one `nobody` can enter (postgres runs as nobody under root)."""
    with own_clusters() as path:
        yield path


@contextmanager
def own_clusters():
    """LAB_PG_CLUSTERS set to a new directory inside the block; no postgres of it may outlive the block."""
    path = Path(tempfile.mkdtemp(prefix="lab-pg-clusters-"))
    path.chmod(0o755)
    before = os.environ.get("LAB_PG_CLUSTERS")
    os.environ["LAB_PG_CLUSTERS"] = str(path)
    try:
        yield path
    finally:
        os.environ.pop("LAB_PG_CLUSTERS") if before is None else os.environ.update(LAB_PG_CLUSTERS=before)
        left = postgres_pids(path)
        shutil.rmtree(path, ignore_errors=True)  # also when the test failed
        assert left == [], f"a postgres outlived the test: {left}"


@contextmanager
def running_db(workdir: Path, port: int):
    """The kind on its own, through a Deployment: started (template loaded or reused, cloned), stopped at the end."""
    raw = {"defaults": {"load": {"vus": 1}, "services": {"db": {**STANDIN, "port": port}}}, "step": [{"id": "s"}]}
    limits = {"nofile": 4096, "somaxconn": 4096, "can_raise_somaxconn": False, "cores": 2}
    step = parse_spec("t", raw, workdir / "t.toml", limits).steps[0]
    deployment = Deployment(step, workdir)
    try:
        deployment.start(only=["db"])
        yield deployment, deployment.running["db"]
    finally:
        deployment.stop()


def drive(workdir: Path, port: int, delete: bool) -> dict:
    """The clone's rows counted and, with `delete`, all its messages deleted. Returns the service's step.json entry
    and what was seen."""
    with running_db(workdir, port) as (deployment, service):
        with service.cluster.connect(port, service.database, pgauth.LAB_USER) as conn:
            messages = conn.execute("SELECT count(*) FROM message").fetchone()[0]
            if delete:
                conn.execute("DELETE FROM message")
        owner = Path(f"/proc/{service.pid}/status").read_text().split("Uid:")[1].split()[0]
        env = deployment.given_to("server")
    return {"meta": deployment.meta["db"], "messages": messages, "owner_uid": int(owner), "env": env}


def test_a_template_is_loaded_once_and_no_step_changes_it(clusters, tmp_path):
    first = drive(tmp_path, 26292, delete=True)  # a step that writes to its clone
    second = drive(tmp_path, 26292, delete=False)
    assert first["meta"]["template_reused"] is False and first["meta"]["template_load_ms"] > 0
    assert second["meta"]["template_reused"] is True and second["meta"]["template_load_ms"] == 0
    assert first["messages"] == second["messages"] == 1000  # the first step's DELETE went to its clone only
    for run in (first, second):
        meta = run["meta"]
        assert meta["clone_ms"] > 0 and meta["clone_dropped"] and meta["exit"] == 0 and meta["version"] == "17.6"
        assert run["env"]["SPRING_DATASOURCE_URL"] == "jdbc:postgresql://127.0.0.1:26292/step_1"
    assert first["owner_uid"] == (65534 if os.geteuid() == 0 else os.geteuid())  # root: postgres runs as nobody


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"), reason="runs the non-root path as nobody: needs root")
def test_the_non_root_path_runs_postgres_as_the_user_itself(tmp_path):
    """What a user who is not root gets: no setpriv, initdb and postgres as that user, the cluster theirs."""
    home = Path(tempfile.mkdtemp(prefix="lab-pg-nobody-"))
    try:
        shutil.chown(home, "nobody", "nogroup")
        python, path = python_for_nobody()
        env = {"PATH": os.environ["PATH"], "LAB_PG_CLUSTERS": str(home / "clusters"), "PYTHONPATH": path}
        cmd = ["runuser", "-u", "nobody", "--", python, __file__, str(home), "26293"]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout.splitlines()[-1])
        assert result["owner_uid"] == 65534 and result["meta"]["os_user"] is None  # itself, not via setpriv
        assert result["messages"] == 1000 and result["meta"]["template_reused"] is False
        assert postgres_pids(home) == []
    finally:
        shutil.rmtree(home, ignore_errors=True)


def python_for_nobody() -> tuple[str, str]:
    """This interpreter when nobody may run it; else (a pyenv under /root) the system's of the same version, with
    this environment's packages on its path."""
    probe = ["runuser", "-u", "nobody", "--", sys.executable, "-c", "import psycopg"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return sys.executable, ""
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not system.exists():
        pytest.skip(f"nobody cannot run {sys.executable} and there is no {system}")
    return str(system), sysconfig.get_paths()["purelib"]


@pytest.fixture(scope="module")
def runs(lab_ready, tmp_path_factory):  # noqa: F811 — lab_ready: the fixture from test_e2e
    """Two steps run once for the tests that read them: their step.json, data root and clusters' directory."""
    from test_e2e import finish, invoke

    data = tmp_path_factory.mktemp("postgres")
    with own_clusters() as clusters:
        code, out = finish(invoke(data, "run", str(PROFILE), "--step", "first", "--step", "second"), timeout=300)
        print(out)
        assert code == 0, out
        yield {s: json.loads((data / PROFILE.stem / s / "step.json").read_text()) for s in ("first", "second")}, data, \
            clusters


from test_e2e import command_name, lab_ready  # noqa: E402, F401 — lab_ready: a fixture


def test_steps_with_a_database_clone_the_template_and_sample_it(runs):
    metas, data, clusters = runs
    first, second = metas["first"]["services"]["db"], metas["second"]["services"]["db"]
    assert (first["template_reused"], second["template_reused"]) == (False, True)
    assert first["template_load_ms"] > 0 and second["clone_ms"] > 0 and second["clone_dropped"]
    assert metas["first"]["server_env"]["SPRING_DATASOURCE_URL"] == "jdbc:postgresql://127.0.0.1:8192/step_1"
    assert metas["second"]["server_env"]["SPRING_DATASOURCE_URL"] == "jdbc:postgresql://127.0.0.1:8192/step_2"
    assert first["version"] == "17.6" and first["settings"]["max_connections"] == "20"
    pg = pd.read_parquet(data / PROFILE.stem / "first" / "db.parquet")
    assert list(pg.columns) == ["ts_ms", "metric", "value"]
    metrics = set(pg["metric"])
    assert {"pg.activity.connections", "pg.activity.active", "pg.activity.wait.Lock", "pg.database.xact_commit",
            "pg.database.blks_hit", "pg.cpu_seconds", "pg.rss_bytes"} <= metrics
    cpu = pg[pg["metric"] == "pg.cpu_seconds"]["value"]
    # A counter that never goes back; not necessarily above 0: the server never connects, and an idle cluster can
    # spend less than one clock tick (10 ms) in the step (0.0 in all 18 samples on one CI run).
    assert len(cpu) >= 10 and cpu.is_monotonic_increasing and (cpu >= 0).all()
    assert pg[pg["metric"] == "pg.activity.connections"]["value"].max() == 0  # the server never connects (no PAIR_ROOM)
    assert (data / PROFILE.stem / "first" / "db.log.gz").exists()
    assert metas["first"]["requests"]["issued"] > 0 and postgres_pids(clusters) == []


def test_ctrl_c_mid_step_leaves_no_postgres_and_the_template_intact(lab_ready, clusters, tmp_path):  # noqa: F811
    from test_e2e import descendants, finish, invoke, wait_for

    proc = invoke(tmp_path, "run", str(PROFILE), "--step", "held", start_new_session=True)
    try:
        wait_for(lambda: {"java", "k6", "postgres"} <= {command_name(p) for p in descendants(proc.pid)}, 120,
                 "postgres, the server and k6 to run")
        assert postgres_pids(clusters)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal
        code, out = finish(proc, timeout=90)
        print(out)
    assert code == 130, out
    assert postgres_pids(clusters) == [], out
    failed = json.loads((tmp_path / PROFILE.stem / "held" / "step.json").read_text())
    assert failed["status"] == "failed" and "interrupted" in failed["reason"]
    assert failed["services"]["db"]["exit"] == 0 and failed["services"]["db"]["clone_dropped"]
    again = drive(tmp_path, 8192, delete=False)  # the next step: the template reused, whole
    assert again["meta"]["template_reused"] is True and again["messages"] == 1000




# ---- authentication ------------------------------------------------------------------------------

def attempt(port: int, database: str, user: str, password: str | None) -> str:
    """A connection tried the way any local user could, with no password file or PGPASSWORD to fall back on;
    returns the user the server says it is."""
    import psycopg

    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    with mock.patch.dict(os.environ, env, clear=True), psycopg.connect(host="127.0.0.1", port=port, dbname=database, user=user, password=password,
                                            passfile=os.devnull, connect_timeout=5) as conn:
        return conn.execute("SELECT current_user").fetchone()[0]


def test_the_users_libpq_settings_change_nothing(clusters, tmp_path, monkeypatch):
    """libpq reads PG* variables for what a connection does not name: from a shell with PGSSLMODE=require the cluster
    was "not ready after 30 s", with PGOPTIONS's statement timeout the step's database could not be prepared."""
    monkeypatch.setenv("PGSSLMODE", "require")
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=1")
    with running_db(tmp_path, 26294) as (_, service):
        with service.cluster.connect(26294, service.database) as conn:
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
            assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()[0] is False
    assert "PGSSLMODE" not in os.environ and "PGOPTIONS" not in os.environ


def through_the_socket(sockets: Path, port: int, as_user: list[str], python: tuple[str, str] = (sys.executable, "")
                       ) -> subprocess.CompletedProcess:
    """The superuser's login tried over the step's postgres's Unix socket by a process of another user (`as_user`:
    an argv prefix; `python`: an interpreter it may run, and its PYTHONPATH), with no password (none exists)."""
    script = ("import psycopg, sys; c = psycopg.connect(host=sys.argv[1], port=int(sys.argv[2]), dbname='postgres', "
              "user='postgres', passfile='/dev/null', connect_timeout=5); print(c.execute('SELECT current_user').fetchone()[0])")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"PYTHONPATH": python[1]}
    return subprocess.run([*as_user, python[0], "-c", script, str(sockets), str(port)], capture_output=True,
                          text=True, env=env, cwd="/")


def test_the_app_role_proves_its_password_and_the_superuser_is_the_harnesss_user_alone(clusters, tmp_path):
    import psycopg
    from harness.lab.backends.process import without_privileges

    with running_db(tmp_path, 26294) as (deployment, service):
        credentials, database, sockets = service.cluster.credentials, service.database, service.cluster.sockets
        user, right = pgauth.LAB_USER, credentials.app
        for wrong in ("lab", right[:-1]):  # the README's old password, a near miss
            with pytest.raises(psycopg.OperationalError, match=f'password authentication failed for user "{user}"'):
                attempt(26294, database, user, wrong)
        for missing in (None, ""):  # the server asks for one, where `trust` let anyone in
            with pytest.raises(psycopg.OperationalError, match="no password supplied"):
                attempt(26294, database, user, missing)
        assert attempt(26294, database, user, right) == user
        for password in (None, right, "postgres"):  # the superuser has no way in over TCP, with any password
            with pytest.raises(psycopg.OperationalError, match='no pg_hba.conf entry for host "127.0.0.1", user '
                                                               '"postgres"'):
                attempt(26294, database, pgauth.SUPERUSER, password)
        info = sockets.stat()
        assert oct(info.st_mode & 0o777) == "0o700" and info.st_uid == pgbinaries.runner_uid()
        assert through_the_socket(sockets, 26294, []).stdout.strip() == pgauth.SUPERUSER  # the harness's user
        if pgbinaries.as_root():
            # a JVM's user, who reads every file where the clone or data lie behind a closed folder (pytest's is)
            server = through_the_socket(sockets, 26294, without_privileges([], reads=[tmp_path]))
            assert f'connection to server on socket "{sockets}/.s.PGSQL.26294" failed: Permission denied' in server.stderr
            owner = through_the_socket(sockets, 26294, pgbinaries.run_as_prefix(), python_for_nobody())  # the cluster's
            assert owner.returncode != 0 and 'Peer authentication failed for user "postgres"' in owner.stderr
        env = deployment.given_to("server")
        assert env["SPRING_DATASOURCE_USERNAME"] == "lab" and env["SPRING_DATASOURCE_PASSWORD"] == credentials.app
        assert deployment.meta["db"]["auth"] == ["peer", "scram-sha-256"]  # what pg_hba_file_rules says, in step.json
        kept = service.cluster.dir / pgauth.CREDENTIALS
        assert oct(kept.stat().st_mode & 0o777) == "0o600" and kept.stat().st_uid == os.geteuid()
        if pgbinaries.as_root():  # the cluster's user (postgres's own) cannot read them
            peek = subprocess.run(pgbinaries.run_as_prefix() + ["cat", str(kept)], capture_output=True, text=True)
            assert peek.returncode != 0 and "Permission denied" in peek.stderr
    assert not sockets.exists()  # removed with its postgres
    log = (tmp_path / "db.log").read_text()
    assert log.count('FATAL:  password authentication failed for user "lab"') == 2, log
    assert log.count('no pg_hba.conf entry for host "127.0.0.1", user "postgres"') == 3, log
    assert credentials.app not in log


def test_a_cluster_an_earlier_lab_made_loses_its_superuser_password_at_its_next_start(clusters, tmp_path):
    """Earlier labs gave the superuser a password and kept it in credentials.json, which the servers may read as root:
    no rule admits it now, and the next start removes it, from PostgreSQL and from the file."""
    for run in ("earlier", "next"):
        (tmp_path / run).mkdir()
    with running_db(tmp_path / "earlier", 26294) as (_, service):
        cluster, app = service.cluster.dir, service.cluster.credentials.app
        with service.cluster.connect(26294) as admin:  # as an earlier lab's initdb left it
            admin.execute(f"ALTER ROLE postgres PASSWORD '{pgauth.scram_verifier('earlier')}'")
    (cluster / pgauth.CREDENTIALS).write_text(json.dumps({"postgres": "earlier", "lab": app}))
    with running_db(tmp_path / "next", 26294) as (deployment, service):
        assert deployment.meta["db"]["template_reused"] is True
        with service.cluster.connect(26294) as admin:
            assert admin.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'").fetchone() == (None,)
    assert json.loads((cluster / pgauth.CREDENTIALS).read_text()) == {"lab": app}


def test_a_start_that_fails_leaves_no_socket_folder(clusters, tmp_path, monkeypatch):
    from harness.lab.services.base import StepFailed

    def no_clone(self, port, database):
        raise RuntimeError("no clone today")

    monkeypatch.setattr(pgcluster.Cluster, "clone", no_clone)
    with pytest.raises(StepFailed, match="no clone today"), running_db(tmp_path, 26294):
        pass
    assert list(pgcluster.SOCKETS_IN.glob(f"lab-pg-socket-{os.getpid()}-*")) == []


def test_no_password_is_written_into_the_steps_data(runs):
    metas, data, _ = runs
    credentials = pgauth.Credentials.load(Path(metas["first"]["services"]["db"]["cluster"]))
    assert metas["first"]["server_env"]["SPRING_DATASOURCE_PASSWORD"] == "***"
    for path in (data / PROFILE.stem).rglob("*"):
        if path.is_file():
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            assert credentials.app.encode() not in raw, path


# ---- shared memory a killed postgres leaves ------------------------------------------------------

def sysv_of(data: Path) -> tuple[int, int]:
    """(key, shmid) of a running postmaster's SysV segment: line 7 of its postmaster.pid."""
    key, shmid = (data / "postmaster.pid").read_text().splitlines()[6].split()
    return int(key), int(shmid)


def maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # not started yet, or ended
        return ""


def kill_hard(pid: int, shmid: int) -> None:
    """SIGKILL to the postmaster, as when the harness dies; its children end on their own, detaching the segment."""
    os.kill(pid, signal.SIGKILL)
    from test_e2e import wait_for

    wait_for(lambda: [s.nattch for s in pgshm.segments() if s.shmid == shmid] == [0], 30, "the postmaster's children to end")


def swept(capsys, tmp_path) -> str:
    """What the next run (of any chapter) says when it cleans up before starting."""
    from harness.lab import preflight

    capsys.readouterr()
    with mock.patch.dict(os.environ, {"LAB_DATA_DIR": str(tmp_path / "data")}):
        preflight.clean_leftovers("chapter1")
    return capsys.readouterr().out


def test_a_killed_postgres_leaves_only_its_sysv_segment_which_the_next_run_removes(clusters, tmp_path, capsys):
    with running_db(tmp_path, 26295) as (_, service):
        mapped = maps(service.pid)
        assert "/dev/shm/" not in mapped and "pg_dynshmem/mmap." in mapped  # its DSM control segment in the data dir
        key, shmid = sysv_of(service.cluster.data)
        kill_hard(service.pid, shmid)
        shutil.rmtree(service.cluster.dir)  # as a rebuild or replacement would: postgres can no longer clean it up
    said = swept(capsys, tmp_path)
    assert f"killed PostgreSQL server(s) left: SysV segment(s) {shmid} (key {key})" in said, said
    assert shmid not in {s.shmid for s in pgshm.segments()}


def test_dev_shm_left_by_a_cluster_on_posix_dsm_is_removed_too(clusters, tmp_path, capsys):
    """Clusters of earlier versions of the lab kept their dynamic shared memory in /dev/shm (PostgreSQL's default)."""
    with running_db(tmp_path, 26296) as (_, service):
        cluster = service.cluster
    cmd = pgbinaries.run_as_prefix() + [str(pgbinaries.binary("postgres")), "-D", str(cluster.data), "-c", "port=26296",
                                        "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                                        "-c", "dynamic_shared_memory_type=posix"]
    with open(tmp_path / "posix.log", "w") as log:
        proc = subprocess.Popen(cmd, env=pgcluster.pg_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        from test_e2e import wait_for

        wait_for(lambda: "/dev/shm/PostgreSQL." in maps(proc.pid), 30, "postgres to start")
        dsm = {line.split()[-1] for line in maps(proc.pid).splitlines() if "/dev/shm/" in line}
        key, shmid = sysv_of(cluster.data)
        kill_hard(proc.pid, shmid)
    finally:
        proc.kill()
        proc.wait()
    assert all(Path(f).exists() for f in dsm)  # left behind
    said = swept(capsys, tmp_path)
    assert f"SysV segment(s) {shmid} (key {key})" in said and all(Path(f).name in said for f in dsm), said
    assert not any(Path(f).exists() for f in dsm) and shmid not in {s.shmid for s in pgshm.segments()}


if __name__ == "__main__":  # run by `nobody` in test_the_non_root_path_runs_postgres_as_the_user_itself
    workdir = Path(sys.argv[1]) / "step"
    workdir.mkdir()
    assert not pgbinaries.as_root()
    print(json.dumps(drive(workdir, int(sys.argv[2]), delete=False), default=str))
