"""PostgreSQL as a kind: the database the pair-room API (chapter 5) works on, started BEFORE the sample server (the
server connects to it at start-up and gets SPRING_DATASOURCE_URL/USERNAME/PASSWORD for the step's clone).

The pinned binaries (harness.lab.services.pgbinaries) run `postgres -D <cluster>` in the foreground as a child of the
harness (spawn/terminate/PR_SET_PDEATHSIG as for nginx; under the step's `[placement]` for the service's name, so its
cgroup and CPU list hold the postmaster and every backend it forks), as `nobody` when the harness is root. It
listens on 127.0.0.1, where the app role proves a password (SCRAM; generated per cluster), and on a Unix socket
closed to every other user, where the superuser, the harness's alone, logs in as the harness's user (peer):
harness.lab.services.pgauth. The server gets the app role's login. The cluster and its template database are
made once and cached (harness.lab.services.pgcluster); each step gets a clone, dropped at its end. Its dynamic shared
memory is kept in the data directory; what a killed postgres leaves in shared memory the next run removes
(harness.lab.services.pgshm). Readiness: psycopg connects and `SELECT 1` answers; identity: postmaster.pid names the
pid started, the backend answering on its socket is its child, and no other process listens on its port.
Metrics: pg_stat_activity, pg_stat_database and the process tree's CPU and memory in <name>.parquet.
On the docker backend the step's postgres runs in a container of the lab's own image, built offline by `invoke
image` from the same binaries (harness.lab.services.pgcontainer); the preparation stays local.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from harness import LabError, say
from harness.lab import placement
from harness.lab.kernel import proc_stat_fields
from harness.lab.samplers import CLOCK_TICKS, PAGE_SIZE, Sampler
from harness.lab.services import pgauth, pgbinaries, pgcluster, pgcontainer
from harness.lab.backends.docker import container as containers
from harness.lab.backends.process import listener, process_running, spawn
from harness.lab.services.base import Context, RunningService, ServiceKind, StepFailed, ppid

TEMPLATE_SQL_DIR = "sample-server/src/main/resources/db"  # <template>-schema.sql, -data.sql, -indexes.sql, -drop-indexes.sql
SUPERUSER_RESERVED = 3  # PostgreSQL's superuser_reserved_connections default
SHUTDOWN_S = 10  # a fast shutdown's wait before the process is terminated
SAMPLER_CONNECTIONS = 1  # the harness's own connection while the step runs
HIKARI_DEFAULT_POOL = 10
STATES = ("active", "idle", "idle in transaction")  # always reported (0 when none), others when seen
WAIT_TYPES = ("Activity", "BufferPin", "Client", "Extension", "InjectionPoint", "IO", "IPC", "Lock", "LWLock", "Timeout")
DATABASE_COUNTERS = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated",
                     "blks_read", "blks_hit")
ACTIVITY_SQL = ("SELECT state, wait_event_type, count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND datname = %s AND pid <> pg_backend_pid() GROUP BY 1, 2")
DATABASE_SQL = f"SELECT {', '.join(DATABASE_COUNTERS)} FROM pg_stat_database WHERE datname = %s"
PASSWORD_ENV = "SPRING_DATASOURCE_PASSWORD"


MIN_SHARED_BUFFERS = 16 * 8192  # PostgreSQL's least: 16 blocks
_UNITS = {"": 8192, "B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}  # its units, case and all


def shared_buffers_bytes(value: str) -> int | None:
    """shared_buffers in bytes, as PostgreSQL reads it ("128MB", "1GB", "2048": blocks of 8kB); None for what it
    would refuse at its start."""
    matched = re.fullmatch(r"\s*(\d+)\s*(B|kB|MB|GB|TB)?\s*", value, re.ASCII)
    return int(matched[1]) * _UNITS[matched[2] or ""] if matched else None


class PostgresKind(ServiceKind):
    name = "postgres"
    title = "PostgreSQL"
    before_server = True  # the server connects to it at start-up
    backends = ("local", "docker")
    secret_env = (PASSWORD_ENV,)  # in server_env: given to the server, never recorded (step.json shows "***")
    knobs = {
        "port": (int, 1),
        "max_connections": (int, 1),
        "shared_buffers": (str, None),  # PostgreSQL's own notation: "128MB", "1GB"
        "template": (str, None),  # the SQL set: <sql_dir>/<template>-{schema,data,indexes,drop-indexes}.sql
        "sql_dir": (str, None),  # where the template's files are (relative to the repository, or absolute)
        "rows": (int, 1),  # rows per table, given to the data file as lab.rows
        "indexes": (bool, None),  # false: the step's clone without the droppable indexes (<template>-drop-indexes.sql)
    }
    defaults = {"port": 5432, "max_connections": 100, "shared_buffers": "128MB", "template": "pair-room",
                "sql_dir": TEMPLATE_SQL_DIR, "rows": 1000, "indexes": True}

    def check(self, service: str, k: dict, where: str, problems: list[str]) -> None:
        at = f"{where}: services.{service}"
        if k["port"] > 65535:
            problems.append(f"{at}.port must be ≤ 65535, got {k['port']}")
        if k["max_connections"] <= SUPERUSER_RESERVED + SAMPLER_CONNECTIONS:
            problems.append(f"{at}.max_connections must exceed the {SUPERUSER_RESERVED} connections PostgreSQL "
                            f"reserves for superusers plus the harness's own, got {k['max_connections']}")
        if (size := shared_buffers_bytes(k["shared_buffers"])) is None or size < MIN_SHARED_BUFFERS:
            problems.append(f"{at}.shared_buffers must be a size of at least 128kB in PostgreSQL's notation (a number, "
                            f"then kB, MB, GB or TB; a bare number counts 8kB blocks), got {k['shared_buffers']!r}")
        if not k["template"] or not k["template"].replace("-", "").replace("_", "").isalnum():
            problems.append(f"{at}.template must be a name of letters, digits, '-' and '_', got {k['template']!r}")
            return
        try:
            files = pgcluster.sql_files(k["sql_dir"], k["template"])
        except OSError as err:  # a name too long for the filesystem
            problems.append(f"{at}: sql_dir and template name no readable files: {err.strerror}")
            return
        needed = [*pgcluster.REQUIRED] + ([] if k["indexes"] else ["drop-indexes"])
        for part in needed:
            if part not in files:
                problems.append(f"{at}: template '{k['template']}' needs {k['sql_dir']}/{k['template']}-{part}.sql, "
                                f"which is missing")

    def check_server(self, service: str, knobs: dict, server: dict, where: str, problems: list[str]) -> None:
        """The server's connection pool must fit into the connections PostgreSQL lets a non-superuser open."""
        pool = server.get("HIKARI_MAX_POOL_SIZE", HIKARI_DEFAULT_POOL)
        usable = knobs["max_connections"] - SUPERUSER_RESERVED - SAMPLER_CONNECTIONS
        if (server.get("PAIR_ROOM") or "HIKARI_MAX_POOL_SIZE" in server) and pool > usable:
            problems.append(f"{where}: HIKARI_MAX_POOL_SIZE {pool} exceeds what services.{service}.max_connections "
                            f"{knobs['max_connections']} leaves the server ({usable}: {SUPERUSER_RESERVED} are reserved "
                            f"for superusers, {SAMPLER_CONNECTIONS} for the harness's sampler); raise max_connections "
                            f"or lower the pool")

    def inputs(self, knobs: dict) -> dict[str, str]:
        """The cluster a step's clone comes from: the binaries' version, the template's SQL files, its row count and
        how it is loaded (pgcluster.cluster_key)."""
        files = pgcluster.sql_files(knobs["sql_dir"], knobs["template"])
        return {"cluster": pgcluster.cluster_key(knobs["template"], knobs["rows"], files)}

    def endpoint(self, knobs: dict) -> tuple[str, int]:
        return "127.0.0.1", knobs["port"]

    def ports(self, knobs: dict) -> dict[str, int]:
        return {"port": knobs["port"]}

    def kept_folders(self) -> list[Path]:
        return [pgcluster.clusters_root()]  # read-only to the other services, whatever their user

    def check_tools(self, backend: str) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise LabError("psycopg is missing (the postgres kind's client): pip install -r requirements.lock") from None
        pgcluster.forget_users_libpq_settings()  # before anything starts, samplers' threads included
        pgauth.harness_user()  # the superuser's login: a user without a name is refused here
        pgbinaries.check_runnable(pgcluster.clusters_root())
        if backend == "docker":
            pgcontainer.check_image()

    def build_image(self, base: str) -> str:
        return pgcontainer.build_image(base)

    def start(self, service: str, knobs: dict, ctx: Context) -> RunningPostgres:
        files = pgcluster.sql_files(knobs["sql_dir"], knobs["template"])
        cluster = pgcluster.Cluster(knobs["template"], knobs["rows"], files)
        try:
            lock = pgcluster.ClusterLock(cluster.dir).acquire()  # held until this step's postgres has stopped
        except LabError as err:
            raise StepFailed(f"postgres '{service}': {err}") from None
        try:
            cluster.sockets = pgcluster.socket_folder()
            return self._start_locked(service, knobs, ctx, cluster, lock)
        except BaseException:
            let_go(cluster, lock)
            raise

    def _start_locked(self, service: str, knobs: dict, ctx: Context, cluster, lock) -> RunningPostgres:
        try:
            initdb_ms = 0.0 if cluster.ready() else cluster.initdb()
        except LabError as err:
            raise StepFailed(f"postgres '{service}': {err}") from None
        _clear_stale_pid(cluster.data)
        cluster.write_access_rules()
        cmd = pgbinaries.run_as_prefix() + [
            str(pgbinaries.binary("postgres")), "-D", str(cluster.data),
            "-c", f"port={knobs['port']}", "-c", "listen_addresses=127.0.0.1",
            # Connecting needs write permission on the socket: 0700 keeps out every user but the cluster's and root,
            # the JVMs too, who may enter its folder (CAP_DAC_READ_SEARCH); peer authentication admits the harness's
            # user alone.
            "-c", f"unix_socket_directories={cluster.sockets}", "-c", "unix_socket_permissions=0700",
            "-c", f"max_connections={knobs['max_connections']}", "-c", f"shared_buffers={knobs['shared_buffers']}",
            "-c", f"superuser_reserved_connections={SUPERUSER_RESERVED}",
            "-c", "dynamic_shared_memory_type=mmap"]  # in the data directory, not /dev/shm (pgshm)
        log = ctx.workdir / f"{service}.log"
        database = f"step_{getattr(ctx.step, 'index', 0)}"
        prepared = self._prepare(service, cmd, log, knobs, cluster, database, initdb_ms)
        started = time.monotonic()
        if ctx.backend == "docker":
            args = cmd[cmd.index(str(pgbinaries.binary("postgres"))) + 1:]
            container, pid, logs = pgcontainer.start(ctx.step, service, cluster.data, cluster.sockets, args, log)
            return RunningPostgresContainer(service, container, pid, logs, log, started, knobs, cluster, database,
                                            initdb_ms, prepared, lock)
        proc = spawn(placement.command(ctx.step, service, cmd), pgcluster.pg_env(), log)
        return RunningPostgres(service, proc, log, started, knobs, cluster, database, initdb_ms, prepared, lock)

    @staticmethod
    def _prepare(service, cmd, log, knobs, cluster, database, initdb_ms) -> dict:
        """The template (once per cluster) and the step's clone, made by a postgres outside the step's CPU placement:
        under a tenth of a CPU, loading a million rows a table or copying the template would take minutes that the
        step does not measure. Stopped once done, keeping the clone; the step's own postgres starts placed, so every
        process it forks is inside its quota. Returns the times for step.json."""
        if not cluster.ready():
            say(f"    {service}: loading the template '{knobs['template']}' ({knobs['rows']:,} rows a table) into "
                f"{cluster.dir}; once, later steps and runs clone it")
        preparing = RunningPostgres(service, spawn(cmd, pgcluster.pg_env(), log), log, time.monotonic(), knobs, cluster,
                                    database, initdb_ms)
        try:
            preparing.wait_ready()
            preparing.cloned = False  # the clone is the step's: kept when this postgres stops
        finally:
            preparing.stop()
        return preparing.times | {"prepare_ready_ms": round((time.monotonic() - preparing.started) * 1000)}

    def server_env(self, running: RunningPostgres) -> dict[str, str]:
        """The app role's login for the step's clone (never the superuser's); PASSWORD_ENV is a secret_env."""
        return {"SPRING_DATASOURCE_URL": f"jdbc:postgresql://127.0.0.1:{running.port}/{running.database}",
                "SPRING_DATASOURCE_USERNAME": pgauth.LAB_USER, PASSWORD_ENV: running.cluster.credentials.app}

    def sampler(self, running: RunningPostgres, interval_ms: int):
        return PgSampler(interval_ms, running.cluster, running.port, running.database, running.pid)


# What libpq says when the login itself is refused (its connection errors carry no SQLSTATE).
REFUSED = ("authentication failed", "no pg_hba.conf entry", "Permission denied", "does not exist")


def refused_login(err: Exception) -> bool:
    """A login PostgreSQL refused, or a socket the harness may not open: not a slow start."""
    return any(words in str(err) for words in REFUSED)


def let_go(cluster: pgcluster.Cluster, lock: pgcluster.ClusterLock) -> None:
    """Once the step's postgres has stopped (or failed to start): its socket folder removed, the cluster's lock
    released."""
    if cluster.sockets is not None:
        shutil.rmtree(cluster.sockets, ignore_errors=True)
        cluster.sockets = None
    lock.release()


def _clear_stale_pid(data: Path) -> None:
    """A postmaster.pid left by a postgres killed with the harness: removed when its pid is gone (or reused by
    another program); a postgres still running there is refused with its pid."""
    pid_file = data / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        comm = ""
    if comm == "postgres" and process_running(pid):  # a killed one's zombie, not yet reaped, runs nothing
        raise StepFailed(f"a postgres (pid {pid}) still runs on the cluster {data} (left by a killed run, or "
                         f"another run uses it): stop it (`kill {pid}`)")
    pid_file.unlink()


class RunningPostgres(RunningService):
    kind = "postgres"

    def __init__(self, name, proc, log, started, knobs, cluster, database: str, initdb_ms: float,
                 prepared: dict | None = None, lock: pgcluster.ClusterLock | None = None):
        super().__init__(name, proc, log, started, f"postgresql://127.0.0.1:{knobs['port']}/{database}")
        self.lock = lock  # the cluster's, released once this postgres has stopped (None: the preparing one's)
        self.knobs, self.cluster, self.database, self.port = knobs, cluster, database, knobs["port"]
        self.times = dict(prepared) if prepared else {"initdb_ms": round(initdb_ms)} if initdb_ms else {}
        self.prepared = prepared is not None  # the template and the clone exist already (PostgresKind._prepare)
        self.cloned = self.prepared

    def ready(self) -> bool:
        try:
            with self.cluster.connect(self.port, timeout_s=1) as conn:
                return conn.execute("SELECT 1").fetchone() == (1,)
        except Exception as err:  # psycopg.OperationalError while starting up ("the database system is starting up")
            if refused_login(err):  # no use waiting 30 s for what will not change
                raise StepFailed(f"postgres '{self.name}' does not let the harness in as its superuser: "
                                 f"{' '.join(str(err).split())}; its log ends:\n{self.log_tail()}") from None
            return False

    def check_identity(self) -> None:
        try:
            master = int((self.cluster.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            raise StepFailed(f"postgres '{self.name}' answers but its cluster has no postmaster.pid: not the one started") from None
        with self.cluster.connect(self.port) as conn:  # the backend's parent read while it lives
            parent = ppid(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        if master != self.pid or parent != self.pid:
            raise StepFailed(f"postgres '{self.name}': another postgres answers on its socket (postmaster.pid names "
                             f"{master}, the backend's parent is {parent}), not the one started ({self.pid})")
        found = listener(self.port)  # the port the server connects to, which the harness's socket does not prove
        if found and self.pid not in (found[1], ppid(found[1])):  # a backend just forked holds it for a moment
            raise StepFailed(f"another process ({found[0]}, pid {found[1]}) listens on {self.url}, not postgres "
                             f"'{self.name}' (pid {self.pid})")

    def wait_ready(self, timeout_s: float = 30) -> float:
        """Ready and ours, then the template (loaded once per cluster) cloned into the step's database."""
        ready_ms = super().wait_ready(timeout_s)
        if self.prepared:
            return ready_ms
        try:
            self._prepare()
        except Exception as err:  # psycopg's errors (an SQL file that fails) end the step, with the database's words
            raise StepFailed(f"postgres '{self.name}': preparing the step's database {self.database} failed: "
                             f"{type(err).__name__}: {err}; its log ends:\n{self.log_tail()}") from None
        return ready_ms

    def _prepare(self) -> None:
        reused = self.cluster.ready()
        if reused:
            self.cluster.forget_superuser_password(self.port)
        self.times |= {"template_reused": reused, "template_load_ms": 0 if reused else
                       round(self.cluster.load_template(self.port))}
        self.cloned = True  # from here on a clone may exist: stop() drops it
        self.times["clone_ms"] = round(self.cluster.clone(self.port, self.database), 1)
        if not self.knobs["indexes"]:
            self.times["drop_indexes_ms"] = round(self.cluster.drop_indexes(self.port, self.database), 1)

    def info(self) -> dict:
        with self.cluster.connect(self.port) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            settings = dict(conn.execute("SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
                                         "('max_connections', 'shared_buffers', 'superuser_reserved_connections', "
                                         "'dynamic_shared_memory_type')"))
            auth = sorted({m for (m,) in conn.execute("SELECT auth_method FROM pg_hba_file_rules")})
        return {"version": version, "database": self.database, "template": pgcluster.template_db(self.knobs["template"]),
                "auth": auth,
                "cluster": str(self.cluster.dir), "binaries": str(pgbinaries.home()), "settings": settings,
                "os_user": pgbinaries.RUN_AS[0] if pgbinaries.as_root() else None}

    def step_meta(self) -> dict:
        return dict(self.times)

    def stop(self) -> int:
        """The clone dropped (the next step starts from the template again), then a fast shutdown (SIGINT: sessions
        rolled back and closed), SIGTERM/SIGKILL to its process group if it does not end."""
        try:
            if self.cloned and self.alive():
                self.cluster.drop(self.port, self.database)
                self.times["clone_dropped"] = True
        finally:
            try:
                code = self.shut_down()
            finally:
                if self.lock is not None:
                    let_go(self.cluster, self.lock)
        return code

    def shut_down(self) -> int:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=SHUTDOWN_S)
            except subprocess.TimeoutExpired:
                pass
        return super().stop()


class RunningPostgresContainer(containers.InContainer, RunningPostgres):
    """The step's postgres in a container (harness.lab.services.pgcontainer): its postmaster's host pid stands for
    the process; a fast shutdown and the container removed stop it."""

    def __init__(self, name, container: str, host_pid: int, logs, log, started, knobs, cluster, database, initdb_ms,
                 prepared, lock):
        super().__init__(name, None, log, started, knobs, cluster, database, initdb_ms, prepared, lock)
        self.container, self.host_pid, self.logs = container, host_pid, logs

    def exit_reason(self) -> str:
        return f"the container's exit code {containers.exit_code(self.container)}"

    def info(self) -> dict:
        return super().info() | {"container": self.container[:12], "image": pgcontainer.POSTGRES_TAG}

    def shut_down(self) -> int:
        return pgcontainer.stop(self.container, self.host_pid, self.logs, SHUTDOWN_S)


# ---- the sampler ---------------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree_usage(root: int) -> dict[str, float]:
    """CPU seconds and RSS of a postmaster and every process below it. A backend that ended is counted through the
    postmaster's cutime/cstime (the times of the children it reaped), so the CPU total never goes back.
    RSS is summed, so shared_buffers pages are counted once per process that touched them (an upper bound)."""
    cpu, rss, count = 0.0, 0, 0
    todo = [(root, True)]
    while todo:
        pid, is_root = todo.pop()
        try:
            fields = proc_stat_fields(pid)
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
        ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if is_root else 0)
        cpu, rss, count = cpu + ticks / CLOCK_TICKS, rss + pages * PAGE_SIZE, count + 1
        todo += [(child, False) for child in children(pid)]
    return {"pg.cpu_seconds": cpu, "pg.rss_bytes": float(rss), "pg.processes": float(count)}


def metric_rows(ts_ms: int, activity: list[tuple], database: tuple | None, tree: dict[str, float]) -> list[dict]:
    """One tick's rows (long format) from pg_stat_activity's (state, wait_event_type, count) groups, the step's
    pg_stat_database row (DATABASE_COUNTERS, cumulative) and the process tree's usage."""
    states = dict.fromkeys(STATES, 0)
    waits = dict.fromkeys(WAIT_TYPES, 0)
    for state, wait, n in activity:
        states[state or "unknown"] = states.get(state or "unknown", 0) + n
        if state == "active" and wait:
            waits[wait] = waits.get(wait, 0) + n
    values = {"pg.activity.connections": sum(states.values())}
    values |= {f"pg.activity.{s.replace(' ', '_').replace('(', '').replace(')', '')}": n for s, n in states.items()}
    values |= {f"pg.activity.wait.{w}": n for w, n in waits.items()}
    if database is not None:
        values |= {f"pg.database.{c}": v for c, v in zip(DATABASE_COUNTERS, database, strict=True)}
    values |= tree
    return [{"ts_ms": ts_ms, "metric": m, "value": float(v)} for m, v in values.items()]


class PgSampler(Sampler):
    """pg_stat_activity, pg_stat_database and the process tree, on one connection held for the step. It connects to
    the `postgres` database, not the clone, so its own queries count in neither the clone's pg_stat_database nor its
    connections."""

    name_ = "pg"
    cpu_budget = 0.02  # two small queries and /proc per backend: it skips ticks rather than cost more

    def __init__(self, interval_ms: int, cluster: pgcluster.Cluster, port: int, database: str, postmaster: int):
        super().__init__(interval_ms)
        self.cluster, self.port, self.database, self.postmaster = cluster, port, database, postmaster
        self.conn = None

    def take(self, ts_ms: int) -> list[dict]:
        if self.conn is None or self.conn.closed:
            self.conn = self.cluster.connect(self.port)
        activity = self.conn.execute(ACTIVITY_SQL, [self.database]).fetchall()
        database = self.conn.execute(DATABASE_SQL, [self.database]).fetchone()
        return metric_rows(ts_ms, activity, database, tree_usage(self.postmaster))

    def stop(self) -> None:
        super().stop()
        if self.conn is not None:
            self.conn.close()


KIND = PostgresKind()
