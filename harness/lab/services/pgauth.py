"""Who may connect to a cached cluster, and with what: every connection proves a password (SCRAM-SHA-256).

Each cluster gets two generated passwords (`secrets`), kept beside its data in `<cluster>/credentials.json`, mode 0600
and owned by the harness's user: when the harness is root the cluster's files are `nobody`'s (PostgreSQL runs as
nobody), so nobody, like any other local user, cannot read them (but the JVMs' and nginx's, who read every file
where root holds CAP_DAC_READ_SEARCH: process.as_user). `postgres` (the superuser) is the harness's own: the
template load, the clone, the sampler and the drop. `lab` owns the template's objects and is the sample server's login,
handed to it through the service's `server_env`; the superuser's password never leaves the harness.

The server stores SCRAM verifiers, not passwords: initdb is given the superuser's verifier (in a file readable by the
cluster's user, removed once initdb is done) and `CREATE ROLE` the app role's, so no password is ever in SQL text
that PostgreSQL could log. pg_hba.conf (PG_HBA) admits scram-sha-256 only: no `trust`, no `peer`, and nothing over
replication.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from harness import LabError

SUPERUSER = "postgres"
LAB_USER = "lab"
CREDENTIALS = "credentials.json"
SCRAM_ITERATIONS = 4096  # PostgreSQL's scram_iterations default
PG_HBA = f"""\
# Written by the lab (harness.lab.services.pgauth): every connection proves a password; no trust, no peer.
# TYPE  DATABASE  USER                    ADDRESS        METHOD
local   all       {SUPERUSER},{LAB_USER}                  scram-sha-256
host    all       {SUPERUSER},{LAB_USER}  127.0.0.1/32   scram-sha-256
"""


@dataclass(frozen=True)
class Credentials:
    """The cluster's two passwords."""

    superuser: str
    app: str

    @classmethod
    def generate(cls) -> Credentials:
        return cls(secrets.token_urlsafe(24), secrets.token_urlsafe(24))

    def password(self, user: str) -> str:
        return {SUPERUSER: self.superuser, LAB_USER: self.app}[user]

    def save(self, cluster_dir: Path) -> None:
        """Written 0600 from its creation (never readable by others, even for a moment); refuses to overwrite."""
        fd = os.open(cluster_dir / CREDENTIALS, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({SUPERUSER: self.superuser, LAB_USER: self.app}, out)

    @classmethod
    def load(cls, cluster_dir: Path) -> Credentials:
        path = cluster_dir / CREDENTIALS
        try:
            saved = json.loads(path.read_text())
            return cls(saved[SUPERUSER], saved[LAB_USER])
        except (OSError, ValueError, KeyError) as err:
            raise LabError(f"cannot read the PostgreSQL cluster's credentials {path} ({err}): remove the cluster "
                           f"({cluster_dir}) and the next step makes a new one") from None

    def __repr__(self) -> str:  # never printed, not even in a traceback's locals
        return "Credentials(***)"


def exists(cluster_dir: Path) -> bool:
    return (cluster_dir / CREDENTIALS).is_file()


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    """What PostgreSQL stores for a password (RFC 5802/7677, as its `password_encryption = scram-sha-256` does): given
    instead of the password, it is stored as is."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored_key = hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
    server_key = hmac.digest(salted, b"Server Key", "sha256")
    b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"
