"""Who may connect to a cached cluster, and how: the app role by password (SCRAM-SHA-256) over loopback TCP; the
superuser only as the harness's own user over the postgres's Unix socket (peer); nobody else, and no other way.

`lab` owns the template's objects and is the sample server's login. Its password is generated per cluster
(`Credentials`) and kept beside the cluster's data in `<cluster>/credentials.json`, mode 0600 and the harness's user's
(as root the cluster's files are `nobody`'s, who cannot read it), and handed to the server through the service's
`server_env`. PostgreSQL stores its SCRAM verifier, given to `CREATE ROLE` instead of the password, so no password is
in SQL text that PostgreSQL could log.

`postgres`, the superuser (the template load, the clone, the sampler, the drop), has no password at all. It logs in
over the Unix socket only, where the kernel tells PostgreSQL which user connects, and pg_ident.conf (ident_map) admits
one: the harness's. The socket is the cluster user's, mode 0700 (`unix_socket_permissions`: connecting needs write
permission on it), in a folder of its own (pgcluster.socket_folder), so no other user can even connect, root aside:
not the lab's JVMs and nginx either, who as root may enter every folder and read every file (CAP_DAC_READ_SEARCH,
with a clone in /root: process.without_privileges), credentials.json included. No password among those files makes a server the superuser, who could
change the cluster's files through PostgreSQL.

pg_hba.conf (PG_HBA) and pg_ident.conf are written into the cluster's data directory at each start
(pgcluster.Cluster.write_access_rules), so a cluster made by an earlier lab, whose superuser had a password and logged
in with it over TCP, follows today's rules; that password is then removed, from PostgreSQL and from credentials.json
(pgcluster.Cluster.forget_superuser_password). No `trust`, nothing over replication.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import pwd
import secrets
from dataclasses import dataclass
from pathlib import Path

from harness import LabError

SUPERUSER = "postgres"
LAB_USER = "lab"
CREDENTIALS = "credentials.json"
SCRAM_ITERATIONS = 4096  # PostgreSQL's scram_iterations default
PG_HBA = f"""\
# Written by the lab at each start (harness.lab.services.pgauth): the superuser over the Unix socket as the harness's
# own user only (peer, mapped in pg_ident.conf), the app role by password over loopback; nothing else.
# TYPE  DATABASE  USER         ADDRESS        METHOD
local   all       {SUPERUSER}                     peer map=harness
host    all       {LAB_USER}          127.0.0.1/32   scram-sha-256
"""


def ident_map() -> str:
    """pg_ident.conf: the harness's user, and no other, logs in as the superuser."""
    return (f"# Written by the lab at each start (harness.lab.services.pgauth).\n"
            f"# MAPNAME  SYSTEM-USERNAME  PG-USERNAME\nharness    {harness_user()}  {SUPERUSER}\n")


def harness_user() -> str:
    """The harness's user's name, which PostgreSQL's peer check compares (a uid without a name cannot log in)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        raise LabError(f"the lab's PostgreSQL admits its superuser as the harness's user by name, and this user (uid "
                       f"{os.geteuid()}) has none in /etc/passwd: run the lab as a user that has one") from None


@dataclass(frozen=True)
class Credentials:
    """The cluster's one password: the app role's."""

    app: str

    @classmethod
    def generate(cls) -> Credentials:
        return cls(secrets.token_urlsafe(24))

    def save(self, cluster_dir: Path, replace: bool = False) -> None:
        """Written 0600 from its creation (never readable by others, even for a moment); refuses to overwrite unless
        told to `replace` (what an earlier lab kept beside it)."""
        path, text = cluster_dir / CREDENTIALS, json.dumps({LAB_USER: self.app})
        if replace:
            write_replacing(path, text, 0o600)
            return
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(text)

    @classmethod
    def load(cls, cluster_dir: Path) -> Credentials:
        """The app role's password (a file of an earlier lab also names the superuser's, which nothing admits now)."""
        path = cluster_dir / CREDENTIALS
        try:
            return cls(json.loads(path.read_text())[LAB_USER])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise LabError(f"cannot read the PostgreSQL cluster's credentials {path} ({err}): remove the cluster "
                           f"({cluster_dir}) and the next step makes a new one") from None

    def __repr__(self) -> str:  # never printed, not even in a traceback's locals
        return "Credentials(***)"


def write_replacing(path: Path, text: str, mode: int, owner: int | None = None) -> None:
    """`text` as `path`'s whole content, by one rename of a new file made beside it: whatever another user left in its
    place, in a folder of theirs (the cluster's data is nobody's), a link, a hard link or a FIFO, is replaced, never
    written through. The file has `mode` whatever the umask, is `owner`'s when given (root only), and is on disk
    before the rename."""
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    try:
        with os.fdopen(os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode), "w") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), mode)
            if owner is not None:
                os.fchown(out.fileno(), owner, -1)
            os.fsync(out.fileno())
        os.replace(fresh, path)
    except BaseException:
        fresh.unlink(missing_ok=True)
        raise


def names_superuser(cluster_dir: Path) -> bool:
    """Whether the cluster's credentials.json still holds a superuser's password (an earlier lab's)."""
    try:
        return SUPERUSER in json.loads((cluster_dir / CREDENTIALS).read_text())
    except (OSError, ValueError, TypeError):
        return False


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
