"""The postgres kind's cluster and template database, made once and reused by every step that asks for the same data.

A cluster lives in the cache `.tools/postgres/clusters/<key>/` (`LAB_PG_CLUSTERS` moves it; outside data/: it is a
means, not a result): `data/` is the initdb'd cluster, `credentials.json` the app role's generated password (harness.lab.
services.pgauth: who may connect, and how), `ready.json` is written once the template is loaded. The key
holds the PostgreSQL version, the template's name, its row count and a hash of its SQL files (and of LOAD_FORMAT, the
making and loading procedure below), so a change to any of them builds a new cluster; a cluster without `ready.json`
(a load killed half-way) is rebuilt from scratch.

The template `<template>_template` is loaded as the lab's user: <template>-schema.sql, then <template>-data.sql with
`SET lab.rows = <rows>` (the data file reads `current_setting('lab.rows')::int`), then <template>-indexes.sql when
there is one, then ANALYZE; it is then marked a template that accepts no connections, so no step can write to it.
A step works on a clone, `CREATE DATABASE step_<n> TEMPLATE …`, dropped when the step ends (a clone a killed run
left is dropped at the next start).

One run at a time uses a cluster: a step holds an exclusive lock (`<key>.lock` beside the cluster, flock, with the
holder's pid in it) from before it looks at the cluster until its postgres has stopped. Without it, a second run
would see a cluster still loading as half-built and delete it under the first. The kernel drops the lock when its
holder dies, so a killed run leaves nothing to clear. `invoke clean --clusters` removes every cluster no run holds.

A running postgres's Unix socket, the superuser's only way in, lies in a folder of its own in /tmp (socket_folder:
a socket's path holds at most 107 bytes, which a cluster's folder may exceed), removed when that postgres stops; the
next run removes those a killed run left (remove_leftover_sockets).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from harness import ROOT, LabError
from harness.lab.services import pgauth, pgbinaries
from harness.lab.store import clusters_root, home_expanded
from harness.lab.services.pgauth import LAB_USER, PG_HBA, SUPERUSER, Credentials, ident_map, scram_verifier

# Bump when making or loading a cluster changes: every cluster is rebuilt (outdated ones are replaced). 2: password
# authentication, so no cluster made with 1's `trust` is ever used again. Who may connect is not part of it: the
# access rules are written at each start (write_access_rules), so no fingerprint moves when they change.
LOAD_FORMAT = 2
PARTS = ("schema", "data", "indexes", "drop-indexes")
REQUIRED = ("schema", "data")


def is_cluster(folder: Path) -> bool:
    """Whether `folder` is named as cluster_key names a cluster: `invoke clean --clusters` removes nothing else
    (LAB_PG_CLUSTERS may name a folder that holds other things too)."""
    return folder.is_dir() and CLUSTER_NAME.fullmatch(folder.name) is not None


def sql_files(sql_dir: str, template: str) -> dict[str, Path]:
    """The template's SQL files that exist, by part (schema, data, indexes, drop-indexes)."""
    folder = ROOT / home_expanded(Path(sql_dir))  # relative to the clone (an absolute path stays as it is)
    return {part: folder / f"{template}-{part}.sql" for part in PARTS if (folder / f"{template}-{part}.sql").is_file()}


CLUSTER_NAME = re.compile(r"pg[0-9.]+-[\w.-]+-\d+-[0-9a-f]{12}")  # cluster_key's names, whatever the version


def cluster_key(template: str, rows: int, files: dict[str, Path]) -> str:
    digest = hashlib.sha256(f"{LOAD_FORMAT}".encode())
    for part in PARTS:
        digest.update(f"\0{part}\0".encode() + (files[part].read_bytes() if part in files else b""))
    return f"pg{pgbinaries.PG_VERSION}-{template}-{rows}-{digest.hexdigest()[:12]}"


def template_db(template: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", template) + "_template"


class Cluster:
    """One cached cluster: its directories, whether it is ready, and building it."""

    def __init__(self, template: str, rows: int, files: dict[str, Path]):
        self.template, self.rows, self.files = template, rows, files
        self.dir = (clusters_root() / cluster_key(template, rows, files)).absolute()  # initdb runs inside it
        self.data = self.dir / "data"
        self.marker = self.dir / "ready.json"
        self._credentials: Credentials | None = None
        self.sockets: Path | None = None  # the socket folder of this cluster's running postgres (socket_folder)

    def ready(self) -> bool:
        """The template loaded (and the app role's password kept: a cluster without it is rebuilt too)."""
        return self.marker.is_file() and pgauth.exists(self.dir)

    @property
    def credentials(self) -> Credentials:
        if self._credentials is None:
            self._credentials = Credentials.load(self.dir)
        return self._credentials

    def connect(self, port: int, dbname: str = "postgres", user: str = SUPERUSER, timeout_s: int = 2):
        """The harness's psycopg connection to this cluster's postgres on `port`, in autocommit: the superuser over its
        Unix socket, with no password (pgauth: peer), the app role over loopback TCP with its generated one."""
        try:
            import psycopg
        except ImportError:
            raise LabError("psycopg is missing: pip install -r requirements.lock") from None
        forget_users_libpq_settings()
        if user == SUPERUSER:
            if self.sockets is None:
                raise LabError(f"no postgres of the cluster {self.dir} runs for this harness: nothing to connect to")
            where = {"host": str(self.sockets)}
        else:
            where = {"host": "127.0.0.1", "password": self.credentials.app}
        return psycopg.connect(**where, port=port, dbname=dbname, user=user, connect_timeout=timeout_s,
                               autocommit=True, application_name="lab-harness")

    def initdb(self) -> float:
        """A fresh cluster (what a half-built one left is removed first, and outdated ones of the same template and
        rows that no run holds); returns milliseconds. The caller holds this cluster's lock."""
        began = time.monotonic()
        for old in self.replaced():
            shutil.rmtree(old, ignore_errors=True)
        self.data.mkdir(parents=True, mode=0o700)
        pgbinaries.give_to_runner(self.data)
        self._credentials = Credentials.generate()
        self._credentials.save(self.dir)
        # No password for the superuser: it logs in over the Unix socket only (write_access_rules, at each start).
        cmd = pgbinaries.run_as_prefix() + [
            str(pgbinaries.binary("initdb")), "-D", str(self.data), "-U", SUPERUSER, "--auth-local=peer",
            "--auth-host=reject", "--encoding=UTF8", "--locale=C", "--no-instructions"]
        done = subprocess.run(cmd, capture_output=True, text=True, env=pg_env(), cwd=self.dir)
        if done.returncode != 0:
            raise LabError(f"initdb failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
        return (time.monotonic() - began) * 1000

    def forget_superuser_password(self, port: int) -> None:
        """A cluster an earlier lab made gave its superuser a password, kept in credentials.json, which the servers
        may read as root. No rule admits it now; here it goes, from PostgreSQL first, then from the file."""
        if not pgauth.names_superuser(self.dir):
            return
        with self.connect(port) as admin:
            admin.execute(f"ALTER ROLE {SUPERUSER} PASSWORD NULL")
        self.credentials.save(self.dir, replace=True)

    def write_access_rules(self) -> None:
        """pg_hba.conf and pg_ident.conf as today's lab has them (pgauth), the cluster user's, before each start. The
        data directory is that user's: what it left in a file's place (a link to a file of root's, say) is replaced,
        not written through (pgauth.write_replacing)."""
        owner = pgbinaries.runner_uid() if os.geteuid() == 0 else None
        for name, text in (("pg_hba.conf", PG_HBA), ("pg_ident.conf", ident_map())):
            try:
                pgauth.write_replacing(self.data / name, text, 0o600, owner)
            except OSError as err:
                raise LabError(f"cannot write {self.data / name} ({err.strerror}): remove the cluster ({self.dir}) "
                               f"and the next step makes a new one") from None

    def replaced(self) -> list[Path]:
        """What initdb removes: this cluster half-built, and outdated ones (other SQL, another version) of the same
        template and rows, unless another run holds them."""
        same = self.dir.parent.glob(f"pg*-{self.template}-{self.rows}-*")
        return [old for old in same if old.is_dir() and (old == self.dir or not in_use(old))]

    def load_template(self, port: int) -> float:
        """The template database loaded, analysed and frozen as a template; returns milliseconds."""
        began = time.monotonic()
        name = template_db(self.template)
        with self.connect(port) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")
            # on a fresh cluster (initdb): the verifier, not the password, so nothing PostgreSQL could log holds it
            admin.execute(f"CREATE ROLE {LAB_USER} LOGIN PASSWORD '{scram_verifier(self.credentials.app)}'")
            admin.execute(f"CREATE DATABASE {name} OWNER {LAB_USER}")
        with self.connect(port, name, LAB_USER, timeout_s=10) as conn:  # the objects are the server's user's own
            conn.execute(self.files["schema"].read_text())
            conn.execute(f"SET lab.rows = '{self.rows}'")
            conn.execute(self.files["data"].read_text())
            if "indexes" in self.files:
                conn.execute(self.files["indexes"].read_text())
            conn.execute("ANALYZE")
        with self.connect(port) as admin:
            admin.execute(f"ALTER DATABASE {name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
            admin.execute("CHECKPOINT")  # the clones copy clean files
        self.marker.write_text(json.dumps({"template": self.template, "rows": self.rows, "database": name,
                                           "files": {p: str(f) for p, f in self.files.items()}}, indent=1))
        return (time.monotonic() - began) * 1000

    def clone(self, port: int, database: str) -> float:
        """The step's database, copied from the template (leftover step_* clones of a killed run dropped first)."""
        with self.connect(port) as admin:
            for (old,) in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'step\\_%'").fetchall():
                admin.execute(f'DROP DATABASE "{old}" WITH (FORCE)')
            began = time.monotonic()
            # FILE_COPY: copy the template's files after a checkpoint, rather than WAL-logging every block (PostgreSQL
            # 15+'s default), which at a million rows takes seconds longer.
            admin.execute(f"CREATE DATABASE {database} TEMPLATE {template_db(self.template)} OWNER {LAB_USER} "
                          f"STRATEGY FILE_COPY")
            return (time.monotonic() - began) * 1000

    def drop_indexes(self, port: int, database: str) -> float:
        began = time.monotonic()
        with self.connect(port, database, LAB_USER) as conn:
            conn.execute(self.files["drop-indexes"].read_text())
        return (time.monotonic() - began) * 1000

    def drop(self, port: int, database: str) -> None:
        with self.connect(port) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


class ClusterLock:
    """Exclusive use of one cluster directory by this process, until release() or the process's end."""

    def __init__(self, cluster_dir: Path):
        self.path = cluster_dir.with_name(cluster_dir.name + ".lock")
        self.file = None

    def acquire(self) -> ClusterLock:
        """Taken at once, or LabError naming the run that holds it (no waiting: that run may take an hour)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise LabError(f"the PostgreSQL cluster {self.path.with_suffix('')} is in use by another lab run (pid "
                           f"{holder}): wait for it to end, or give this run clusters of its own with "
                           f"LAB_PG_CLUSTERS=<another folder>") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self.file = handle
        return self

    def release(self) -> None:
        if self.file is not None:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file.close()
            self.file = None


def in_use(cluster_dir: Path) -> bool:
    """Whether a run holds the cluster now (its lock is taken)."""
    try:
        ClusterLock(cluster_dir).acquire().release()
    except LabError:
        return True
    return False


def remove_unused() -> tuple[list[Path], list[Path]]:
    """Every cached cluster that no run holds removed, with its lock file; returns (removed, kept because in use).
    Folders not named as clusters are left alone."""
    root = clusters_root()
    removed, kept = [], []
    for cluster_dir in sorted(filter(is_cluster, root.iterdir())) if root.is_dir() else []:
        lock = ClusterLock(cluster_dir)
        try:
            lock.acquire()
        except LabError:
            kept.append(cluster_dir)
            continue
        try:
            shutil.rmtree(cluster_dir)
            lock.path.unlink(missing_ok=True)
            removed.append(cluster_dir)
        finally:
            lock.release()
    return removed, kept


def forget_users_libpq_settings() -> None:
    """libpq fills what a connection does not name from the user's PG* variables: with PGSSLMODE=require every step's
    postgres was "not ready after 30 s", with PGOPTIONS its settings (a statement timeout, or anything that speeds or
    slows the template load) applied to the harness's sessions. The harness's connections name what they need and
    read none of them: gone from its environment, before anything starts (PostgresKind.check_tools, then again at
    each connection, where there is then nothing left to remove while a sampler's thread connects)."""
    for name in [name for name in os.environ if name.startswith("PG")]:
        del os.environ[name]


def pg_env() -> dict[str, str]:
    """A plain environment: the C locale whatever the user's (the binaries carry no locales), nothing else leaks in."""
    return {k: os.environ[k] for k in ("PATH", "TZ") if k in os.environ} | {"LC_ALL": "C", "LANG": "C"}


SOCKETS_IN = Path("/tmp")  # short whatever TMPDIR is: a Unix socket's path holds at most 107 bytes
_SOCKET_FOLDER = re.compile(r"lab-pg-socket-(\d+)-[^/]+")  # lab-pg-socket-<the harness's pid>-<random>


def socket_folder() -> Path:
    """A new folder for a postgres's Unix socket (`unix_socket_directories`), named after this harness's pid (so the
    next run knows it for a leftover once this one is gone), the cluster user's and closed to every other user (0700),
    as the socket in it is (unix_socket_permissions)."""
    folder = Path(tempfile.mkdtemp(prefix=f"lab-pg-socket-{os.getpid()}-", dir=SOCKETS_IN))
    try:
        pgbinaries.give_to_runner(folder)
    except BaseException:
        folder.rmdir()
        raise
    return folder


def remove_leftover_sockets() -> list[str]:
    """The socket folders of harnesses that are gone (a killed run's) removed, those that the cluster's user owns
    (or this harness's, killed before it gave one away) only; returns their names."""
    try:
        owners = {pgbinaries.runner_uid(), os.geteuid()}
    except KeyError:  # root, and no `nobody` on this machine: no postgres of the lab ever ran
        return []
    removed = []
    for folder in SOCKETS_IN.glob("lab-pg-socket-*"):
        match = _SOCKET_FOLDER.fullmatch(folder.name)
        try:
            info = folder.lstat()  # a symlink is no folder of ours
        except OSError:  # gone meanwhile
            continue
        if match and stat.S_ISDIR(info.st_mode) and info.st_uid in owners and not Path(f"/proc/{match[1]}").exists():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed
