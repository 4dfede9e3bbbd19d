"""The postgres kind's authentication without a database: the pg_hba.conf every cluster gets, the generated
credentials and where they are kept, and the SCRAM verifier checked against RFC 7677's worked example. A real
PostgreSQL refusing wrong passwords is in tests/test_e2e_postgres.py."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import stat

import pytest

from harness import LabError
from harness.lab.services import pgauth, pgcluster
from harness.lab.services.pgauth import Credentials, scram_verifier

from test_postgres import DB


def hba_rules() -> list[list[str]]:
    return [line.split() for line in pgauth.PG_HBA.splitlines() if line.strip() and not line.startswith("#")]


def test_pg_hba_admits_each_connection_by_password_only():
    rules = hba_rules()
    assert [r[0] for r in rules] == ["local", "host"]  # both ways in are covered
    assert all(r[-1] == "scram-sha-256" for r in rules)
    assert not re.search(r"\b(trust|peer|ident|password|md5|replication)\b", pgauth.PG_HBA.split("\n", 2)[2])
    host = rules[1]
    assert host[3] == "127.0.0.1/32" and host[2].split(",") == [pgauth.SUPERUSER, pgauth.LAB_USER]


def test_credentials_are_generated_per_cluster_and_readable_by_their_owner_only(tmp_path):
    first, second = Credentials.generate(), Credentials.generate()
    assert len({first.superuser, first.app, second.superuser, second.app}) == 4
    assert min(len(p) for p in (first.superuser, first.app)) >= 32
    first.save(tmp_path)
    saved = (tmp_path / pgauth.CREDENTIALS).stat()
    assert stat.S_IMODE(saved.st_mode) == 0o600 and saved.st_uid == os.geteuid()
    assert Credentials.load(tmp_path) == first and pgauth.exists(tmp_path)
    with pytest.raises(FileExistsError):  # a cluster's passwords are never replaced under it
        second.save(tmp_path)
    assert first.password("postgres") == first.superuser and first.password("lab") == first.app
    assert first.superuser not in repr(first) and first.app not in repr(first)


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
        cluster.connect(5432)


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
