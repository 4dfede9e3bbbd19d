"""The postgres kind's authentication without a database: the pg_hba.conf and pg_ident.conf every cluster gets, the
generated password and where it is kept, the superuser's socket folder and its leftovers, and the SCRAM verifier
checked against RFC 7677's worked example. A real PostgreSQL refusing wrong passwords and other users is in
tests/test_e2e_postgres.py."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import pwd
import re
import stat
from pathlib import Path

import pytest

from harness import LabError
from harness.lab.services import pgauth, pgbinaries, pgcluster
from harness.lab.services.pgauth import Credentials, scram_verifier

from test_postgres import DB


def hba_rules() -> list[list[str]]:
    return [line.split() for line in pgauth.PG_HBA.splitlines() if line.strip() and not line.startswith("#")]


def test_pg_hba_admits_the_app_role_by_password_and_the_superuser_as_the_harnesss_user_only():
    assert hba_rules() == [["local", "all", pgauth.SUPERUSER, "peer", "map=harness"],  # the socket: no password
                           ["host", "all", pgauth.LAB_USER, "127.0.0.1/32", "scram-sha-256"]]  # loopback only
    rules = "\n".join(" ".join(rule) for rule in hba_rules())
    assert not re.search(r"\b(trust|ident|password|md5|replication)\b", rules)
    mapped = [line.split() for line in pgauth.ident_map().splitlines() if line and not line.startswith("#")]
    assert mapped == [["harness", pwd.getpwuid(os.geteuid()).pw_name, pgauth.SUPERUSER]]  # no other user


def test_a_harness_user_without_a_name_is_refused_before_anything_starts(monkeypatch):
    monkeypatch.setattr(pgauth.os, "geteuid", lambda: 54321)
    monkeypatch.setattr(pgauth.pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid)))
    with pytest.raises(LabError, match=r"this user \(uid 54321\) has none in /etc/passwd"):
        pgauth.ident_map()


def test_credentials_are_generated_per_cluster_and_readable_by_their_owner_only(tmp_path):
    first, second = Credentials.generate(), Credentials.generate()
    assert first.app != second.app and len(first.app) >= 32
    first.save(tmp_path)
    saved = (tmp_path / pgauth.CREDENTIALS).stat()
    assert stat.S_IMODE(saved.st_mode) == 0o600 and saved.st_uid == os.geteuid()
    assert Credentials.load(tmp_path) == first and pgauth.exists(tmp_path)
    assert json.loads((tmp_path / pgauth.CREDENTIALS).read_text()) == {"lab": first.app}  # no superuser's: it has none
    with pytest.raises(FileExistsError):  # a cluster's password is never replaced under it
        second.save(tmp_path)
    assert first.app not in repr(first)


def test_an_earlier_labs_credentials_still_give_the_app_roles_password(tmp_path):
    (tmp_path / pgauth.CREDENTIALS).write_text(json.dumps({"postgres": "old-superuser", "lab": "app"}))
    assert Credentials.load(tmp_path) == Credentials("app")


def test_a_cluster_without_its_credentials_is_not_ready_and_unreadable_ones_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_PG_CLUSTERS", str(tmp_path))
    cluster = pgcluster.Cluster(DB["template"], 1000, pgcluster.sql_files(DB["sql_dir"], DB["template"]))
    cluster.dir.mkdir()
    cluster.marker.write_text("{}")
    assert not cluster.ready()  # made before passwords (or lost them): rebuilt
    (cluster.dir / pgauth.CREDENTIALS).write_text("{}")
    assert cluster.ready()
    with pytest.raises(LabError, match=rf"cannot read the PostgreSQL cluster's credentials {cluster.dir}/credentials"
                                       rf".*remove the cluster"):
        cluster.connect(5432, user=pgauth.LAB_USER)
    with pytest.raises(LabError, match=rf"no postgres of the cluster {cluster.dir} runs for this harness"):
        cluster.connect(5432)  # the superuser: only through a running postgres's socket


def test_a_socket_folder_is_short_and_the_cluster_users_alone(tmp_path, monkeypatch):
    assert pgcluster.SOCKETS_IN == Path("/tmp")  # whatever TMPDIR says
    monkeypatch.setattr(pgcluster, "SOCKETS_IN", tmp_path)
    folder = pgcluster.socket_folder()
    info = folder.stat()
    assert folder.parent == tmp_path and folder.name.startswith(f"lab-pg-socket-{os.getpid()}-")
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == pgbinaries.runner_uid()
    assert len(f"/tmp/{folder.name}/.s.PGSQL.65535".encode()) <= 107  # what sockaddr_un holds


def test_the_socket_folders_of_gone_harnesses_are_removed_and_no_other(tmp_path, monkeypatch):
    monkeypatch.setattr(pgcluster, "SOCKETS_IN", tmp_path)
    gone = 1
    while Path(f"/proc/{gone + 100000}").exists():
        gone += 1
    gone += 100000
    dead, live = tmp_path / f"lab-pg-socket-{gone}-a1", tmp_path / f"lab-pg-socket-{os.getpid()}-b2"
    for folder in (dead, live):
        folder.mkdir()
        (folder / ".s.PGSQL.5432.lock").write_text(f"{gone}\n")
        pgbinaries.give_to_runner(folder)
    (tmp_path / f"lab-pg-socket-{gone}-link").symlink_to(dead)  # a link is no folder of ours
    (tmp_path / f"lab-pg-socket-{gone}-file").write_text("")  # nor is a file
    unlike = tmp_path / f"lab-pg-clusters-{gone}"  # nor one of another name
    unlike.mkdir()
    ours = tmp_path / f"lab-pg-socket-{gone}-d4"  # one a harness killed before it gave the folder away
    ours.mkdir()
    other = tmp_path / f"lab-pg-socket-{gone}-c3"
    other.mkdir()
    root = os.geteuid() == 0
    if root:
        os.chown(other, pgbinaries.runner_uid() + 1, -1)
    removed = [dead.name, ours.name] + ([] if root else [other.name])  # as root, another user's is left alone
    assert sorted(pgcluster.remove_leftover_sockets()) == sorted(removed)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {live.name, f"lab-pg-socket-{gone}-link", f"lab-pg-socket-{gone}-file", unlike.name, other.name} - set(removed))


@pytest.mark.skipif(os.geteuid() != 0, reason="the cluster's files are another user's only as root")
def test_the_access_rules_replace_whatever_the_clusters_user_left_in_their_place(tmp_path, monkeypatch):
    """The data directory is nobody's: a link in pg_hba.conf's place to a file of root's, or a hard link to it, would
    have had root truncate that file, write the rules into it and give it to nobody; a FIFO would have hung the run."""
    monkeypatch.setenv("LAB_PG_CLUSTERS", str(tmp_path))
    cluster = pgcluster.Cluster(DB["template"], 1000, pgcluster.sql_files(DB["sql_dir"], DB["template"]))
    cluster.data.mkdir(parents=True)
    roots = tmp_path / "roots-file"
    roots.write_text("root's\n")
    for plant in (lambda path: path.symlink_to(roots), lambda path: os.link(roots, path), os.mkfifo, None):
        for name in ("pg_hba.conf", "pg_ident.conf"):
            (cluster.data / name).unlink(missing_ok=True)
            if plant:
                plant(cluster.data / name)
        cluster.write_access_rules()
        for name in ("pg_hba.conf", "pg_ident.conf"):
            info = (cluster.data / name).lstat()
            assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) == 0o600
            assert info.st_uid == pgbinaries.runner_uid()
        assert (cluster.data / "pg_hba.conf").read_text() == pgauth.PG_HBA
        assert roots.read_text() == "root's\n" and roots.stat().st_uid == 0
    assert sorted(p.name for p in cluster.data.iterdir()) == ["pg_hba.conf", "pg_ident.conf"]  # no file half-made


def test_an_earlier_labs_credentials_are_replaced_by_the_app_roles_alone(tmp_path):
    (tmp_path / pgauth.CREDENTIALS).write_text(json.dumps({"postgres": "old-superuser", "lab": "app"}))
    assert pgauth.names_superuser(tmp_path)
    Credentials.load(tmp_path).save(tmp_path, replace=True)
    assert json.loads((tmp_path / pgauth.CREDENTIALS).read_text()) == {"lab": "app"}
    assert stat.S_IMODE((tmp_path / pgauth.CREDENTIALS).stat().st_mode) == 0o600
    assert not pgauth.names_superuser(tmp_path) and sorted(p.name for p in tmp_path.iterdir()) == [pgauth.CREDENTIALS]


def test_the_cluster_key_changes_with_password_authentication(tmp_path):
    """Clusters made with `trust` (LOAD_FORMAT 1) are never reused: the key moved on, so they are replaced."""
    files = pgcluster.sql_files(DB["sql_dir"], DB["template"])
    assert pgcluster.LOAD_FORMAT >= 2
    now = pgcluster.cluster_key(DB["template"], 1000, files)
    before = pgcluster.LOAD_FORMAT
    try:
        pgcluster.LOAD_FORMAT = 1
        assert pgcluster.cluster_key(DB["template"], 1000, files) != now
    finally:
        pgcluster.LOAD_FORMAT = before


def test_the_scram_verifier_checks_rfc_7677s_example_exchange():
    """A server holding the verifier for "pencil" accepts the RFC's client proof and answers its server signature."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    verifier = scram_verifier("pencil", salt)
    match = re.fullmatch(r"SCRAM-SHA-256\$4096:(?P<salt>[^$]+)\$(?P<stored>[^:]+):(?P<server>.+)", verifier)
    assert match and base64.b64decode(match["salt"]) == salt
    stored, server = base64.b64decode(match["stored"]), base64.b64decode(match["server"])
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r={nonce}".encode()
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_key = bytes(a ^ b for a, b in zip(proof, hmac.digest(stored, auth, "sha256"), strict=True))
    assert hashlib.sha256(client_key).digest() == stored
    assert base64.b64encode(hmac.digest(server, auth, "sha256")).decode() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert scram_verifier("pencil") != scram_verifier("pencil")  # a fresh salt each time
