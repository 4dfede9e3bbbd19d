"""The system packages the book needs, each with why, found by their commands (a machine may have node or java from
elsewhere than Debian: what counts is that the command is there, not the package). `invoke setup` installs the missing
ones with one `apt-get install` where it can (Debian or Ubuntu, as root or with passwordless sudo); elsewhere it stops
before building anything, with one message listing what to install and why, and the apt-get line to copy.

Not here: Go (k6 v1.8.1 needs 1.25+, newer than Debian's: harness.lab.gotoolchain fetches it when k6 must be built),
k6, the PostgreSQL binaries, the chart libraries and Java 21 for virtual threads, which setup brings itself without
root; Python with venv, which comes before setup; Quarto, which no package registry has. Nothing calls ps or sysctl
(the samplers read /proc), so procps is not needed.
"""
from __future__ import annotations

import grp
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from harness import LabError, say
from harness.lab.backends.process import SERVER_USERS, has_user
from harness.lab.jdk import java_command, java_major

MIN_JAVA = 17
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")  # ip, tc, nginx and dockerd live there, off a user's PATH
APT_INSTALL = ["apt-get", "install", "-y", "--no-install-recommends"]
UBUNTU_NAMES = {"chromium": "chromium-browser"}  # Ubuntu has no `chromium` package; this one installs its snap


@dataclass(frozen=True)
class Package:
    name: str  # Debian's (and Ubuntu's) package name
    commands: tuple[str, ...]  # what shows it is there: commands ("a|b": either), or files (an absolute path)
    why: str
    docker: bool = False  # only for the docker backend: `invoke setup --docker`
    present: Callable[[], bool] | None = None  # a check of its own, instead of the commands'


def jdk_present() -> bool:
    """A java 17+ with its javac (Maven builds the servers). With JAVA_HOME set, the user chose a JDK: no package
    replaces it (setup's java check judges it)."""
    if os.environ.get("JAVA_HOME"):
        return True
    try:
        java = java_command()
        return java_major(java) >= MIN_JAVA and find(os.path.join(os.path.dirname(os.path.realpath(java)), "javac"))
    except (LabError, OSError):
        return False


PACKAGES = (
    Package("openjdk-17-jdk-headless", ("java", "javac"),
            "the servers (Spring Boot, Netty, WebFlux) run on it, and Maven builds them with it", present=jdk_present),
    Package("iproute2", ("ss", "nstat", "ip", "tc"),
            "the samplers read sockets (ss) and kernel counters (nstat); chapter 6's hosts are network namespaces "
            "(ip, tc)"),
    Package("util-linux", ("taskset", "setpriv", "unshare", "mountpoint"),
            "a spec's `[placement]` pins CPUs (taskset); as root, postgres runs as nobody, the JVMs as "
            "lab-server … and nginx as www-data (setpriv); as root with CAP_SYS_ADMIN, nginx in its own pid namespace, "
            "the JVMs and nginx in mount namespaces of their own (unshare, mountpoint)"),
    Package("mount", ("mount",), "as root with CAP_SYS_ADMIN, the JVMs and nginx see the clone and the data "
            "directory read-only (bind mounts in a mount namespace of their own)"),
    Package("passwd", ("useradd",), "as root, setup makes the system users the JVMs run as (lab-server …) with it",
            present=lambda: os.geteuid() != 0 or find("useradd")),
    Package("apache2-utils", ("ab",), "chapter 1 cross-checks k6 with ab, the article's tool"),
    Package("nginx", ("nginx",), "chapter 6 and every spec with an nginx service (the lab starts its own)"),
    Package("wrk", ("wrk",), "chapter 6 cross-checks k6 with wrk"),
    Package("nodejs", ("node",), "the chart tests run the book's chart libraries (vega) in node"),
    Package("npm", ("npm",), "`npm ci` installs the pinned chart libraries, so the book's charts draw offline"),
    Package("chromium", ("chromium|chromium-browser|google-chrome",),
            "the book tests draw every chart and check every page headless (Ubuntu's package: chromium-browser)"),
    Package("git", ("git",), "step.json records the commit that measured it; the tests check the data's commits"),
    Package("xz-utils", ("xz",), "tar unpacks .tar.xz archives with it: the offline Quarto that CI renders the book "
            "with (../shared/quarto/install.sh)"),
    Package("ca-certificates", ("/etc/ssl/certs/ca-certificates.crt",),
            "HTTPS to the registries setup downloads from (Maven Central, the Go module proxy, npm)"),
    Package("docker.io", ("docker", "dockerd"), "the docker backend runs each step's server in a container",
            docker=True),
    Package("debootstrap", ("debootstrap",), "`invoke image --base debootstrap` builds the containers' Debian base "
            "from your apt mirror", docker=True),
)


def find(command: str) -> bool:
    """A command on PATH or in an sbin directory (either of "a|b"), or an existing file (an absolute path)."""
    if command.startswith("/"):
        return os.path.exists(command)
    path = os.pathsep.join([os.environ.get("PATH", os.defpath), *SBIN])
    return any(shutil.which(name, path=path) for name in command.split("|"))


def missing(docker: bool = False, packages: tuple[Package, ...] = PACKAGES) -> list[Package]:
    """The packages whose commands are not all there (the docker backend's only with `docker`)."""
    return [p for p in required(docker, packages) if not (p.present() if p.present else all(map(find, p.commands)))]


def required(docker: bool, packages: tuple[Package, ...] = PACKAGES) -> list[Package]:
    return [p for p in packages if docker or not p.docker]


def named_for(packages: list[Package], os_release: Path = Path("/etc/os-release")) -> list[Package]:
    """The packages under this distribution's names (Debian's, but for Ubuntu's few others)."""
    try:
        fields = dict(line.split("=", 1) for line in os_release.read_text().splitlines() if "=" in line)
    except OSError:
        fields = {}
    ids = f"{fields.get('ID', '')} {fields.get('ID_LIKE', '')}".replace('"', "").split()
    renames = UBUNTU_NAMES if "ubuntu" in ids else {}
    return [replace(p, name=renames.get(p.name, p.name)) for p in packages]


def apt_line(packages: list[Package], sudo: bool = False) -> str:
    return " ".join((["sudo"] if sudo else []) + APT_INSTALL + [p.name for p in packages])


def listing(packages: list[Package]) -> str:
    """One line per package: its name, the commands it gives, why the book needs it."""
    width = max(len(p.name) for p in packages)
    return "\n".join(f"  {p.name:<{width}}  {gives(p)}: {p.why}" for p in packages)


def gives(package: Package, quote: str = "") -> str:
    """Its commands as words: "ss, nstat", "chromium or chromium-browser or google-chrome"."""
    return ", ".join(" or ".join(f"{quote}{name}{quote}" for name in c.split("|")) for c in package.commands)


def missing_message(packages: list[Package], apt: bool) -> str:
    """What to install and why, for a machine where setup cannot install it itself."""
    head = f"{len(packages)} system package(s) the book needs are missing:\n{listing(packages)}\n"
    if not apt:
        return head + ("this machine has no apt-get: install what gives those commands with its package manager "
                       "(the names above are Debian's), then run `invoke setup` again")
    return head + ("run `invoke setup` as root (or with passwordless sudo) and it installs them, or install them "
                   f"yourself and run it again:\n  {apt_line(packages, sudo=True)}")


def installer() -> list[str] | None:
    """The prefix that runs apt-get as root ([] as root, sudo -n with passwordless sudo), or None when setup cannot."""
    if not shutil.which("apt-get"):
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


def ensure(docker: bool = False) -> str:
    """Install what is missing (one apt-get update, one apt-get install), or stop with the list; a line for setup."""
    wanted = named_for(missing(docker))
    if not wanted:
        return f"all {len(required(docker))} there" + ("" if docker else " (the docker backend's two: `invoke setup --docker`)")
    prefix = installer()
    if prefix is None:
        raise LabError(missing_message(wanted, apt=bool(shutil.which("apt-get"))))
    say(f"installing {len(wanted)} system package(s) with apt-get:\n{listing(wanted)}")
    env = ["env", "DEBIAN_FRONTEND=noninteractive"]  # through sudo too, which drops the environment
    for cmd in (["apt-get", "-q", "update"], APT_INSTALL + ["-q"] + [p.name for p in wanted]):
        done = subprocess.run(prefix + env + cmd, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise LabError(f"`{' '.join(prefix + cmd)}` failed (exit {done.returncode}; its output is above): fix what "
                           f"it says and run `invoke setup` again")
    still = missing(docker)
    if still:
        raise LabError(f"apt-get installed them, yet these commands are still missing:\n{listing(still)}")
    return f"installed {', '.join(p.name for p in wanted)}"


def make_server_users() -> str:
    """As root: the system users the JVMs run as (process.SERVER_USERS); what setup did."""
    if os.geteuid() != 0:
        return "none needed (not root: the servers run as you)"
    return ", ".join(make_server_user(name) for name in SERVER_USERS)


def make_server_user(name: str) -> str:
    """As root: the system user `name`, without home or login, and its group; what setup did."""
    if has_user(name):
        return f"{name} (there already)"
    try:
        grp.getgrnam(name)
        group = ["--gid", name]  # left by a removed user: useradd --user-group would refuse it
    except KeyError:
        group = ["--user-group"]
    useradd = shutil.which("useradd", path=os.pathsep.join([os.environ.get("PATH", os.defpath), *SBIN]))
    done = subprocess.run([useradd or "useradd", "--system", *group, "--no-create-home", "--home-dir", "/nonexistent",
                           "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"useradd could not make {name}, a user the JVMs run as: {done.stderr.strip()}")
    return f"{name} (made now)"


def markdown_table() -> str:
    """docs/reference.md's table of what setup installs, made from PACKAGES (a test keeps the two the same)."""
    rows = [f"| `{p.name}` | {gives(p, '`')} | {p.why}"
            f"{' (only with `invoke setup --docker`)' if p.docker else ''} |" for p in PACKAGES]
    return "\n".join(["| package | gives | why the book needs it |", "|---|---|---|", *rows])
