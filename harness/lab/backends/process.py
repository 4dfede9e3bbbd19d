"""The lab's child processes, whatever they run (the server, k6, a service such as nginx): each gets its own session,
so the user's Ctrl-C reaches only the harness, which then stops them; and PR_SET_PDEATHSIG, so they die even if the
harness itself is killed. Also: who listens on a port, and refusing a busy one before a start.
"""
from __future__ import annotations

import ctypes
import errno
import functools
import grp
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from harness import LabError, say
from harness.lab.kernel import proc_stat_fields

STOP_GRACE_S = 10


PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "JAVA_HOME", "TMPDIR")


def passed_env() -> dict[str, str]:
    """The variables of the user's shell that every child gets (PASSED_ENV), those set."""
    return {k: os.environ[k] for k in PASSED_ENV if k in os.environ}


class StepFailed(Exception):
    """The step could not be measured; its reason goes into step.json and the run goes on."""


def _die_with(parent: int):
    def in_the_child() -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the harness died between fork and prctl: no signal will come
            os._exit(1)
    return in_the_child


def spawn(cmd: list[str], env: dict, log: Path, cwd: Path | None = None) -> subprocess.Popen:
    """Start a child in its own session (in `cwd`, else the harness's), output appended to `log`, killed if the
    harness dies."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_die_with(os.getpid()),
        )


def setpriv() -> str:
    """util-linux's setpriv, which runs a command with other credentials in the same pid (exec)."""
    return shutil.which("setpriv") or "/usr/bin/setpriv"


# The users the JVMs run as when root runs the lab (`invoke setup` makes them): a step's first JVM runs as the first,
# its second as the second … (deploy.Deployment), so no JVM can write another's folder. Each owns nothing but the
# folder of the JVM it runs, and none is PostgreSQL's user (nobody) or nginx's (www-data).
SERVER_USERS = ("lab-server", "lab-server-2", "lab-server-3", "lab-server-4")
SERVER_USER = SERVER_USERS[0]  # a step's first JVM's, and the one the checks run as (all have the same rights)
CAPABILITY_BITS = {"dac_read_search": 2, "net_bind_service": 10, "sys_admin": 21}


def as_user(user: str, group: str, keep: tuple[str, ...] = (), under_unshare: bool = False) -> list[str]:
    """The argv prefix (root only) that runs a command as `user`:`group`, in no other group, with no capability but
    those of `keep` that this root holds (ambient, so they survive its exec; a container may lack them), and no way to
    gain more (no-new-privs). The change of uid clears the parent-death signal: setpriv sets it again, and the command
    does not run if its parent died in between (still_a_child). setpriv and sh exec: the pid stays the command's."""
    kept = "".join(f",+{name}" for name in keep if bounded(name))
    ambient = [f"--ambient-caps={kept[1:]}"] if kept else []
    switch = [setpriv(), f"--reuid={user}", f"--regid={group}", "--clear-groups", f"--inh-caps=-all{kept}", *ambient,
              f"--bounding-set=-all{kept}", "--no-new-privs", "--pdeathsig", "keep"]
    if under_unshare:  # its parent, unshare, is noted by root before the switch (no /proc of root's to read after it)
        return ["sh", "-c", f'{_PARENT}; export LAB_PARENT="$p"; exec "$@"', "sh", *switch, *still_a_child("")]
    return [*switch, *still_a_child(str(os.getpid()))]


def bounded(capability: str) -> bool:
    """Whether this process may still hold `capability` (its bounding set: Docker's default lacks dac_read_search)."""
    return _in_set("CapBnd", capability)


def _in_set(field: str, capability: str) -> bool:
    """Whether `capability` is in this process's capability set `field` of /proc/self/status (CapEff, CapBnd …)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return bool(int(line.split()[1], 16) >> CAPABILITY_BITS[capability] & 1)
    return False


# A process's parent, $p, from its own /proc/self/stat: in a pid namespace of its own $PPID is 0. After the last ')'
# come the state and the parent's pid (the command's name before it may hold spaces or ')').
_PARENT = 'read -r p < /proc/self/stat; p=${p##*) }; p=${p#* }; p=${p%% *}'


def still_a_child(parent: str) -> list[str]:
    """What runs a command only if its parent is still `parent` (the harness's pid: each wrapper before it execs, so
    its parent is the harness until the harness dies), or "" for the one as_user noted in LAB_PARENT (unshare's, in a
    pid namespace of its own); else it says so and exits 1. See as_user."""
    return ["sh", "-c", f'{_PARENT}; [ "$p" = "${{1:-$LAB_PARENT}}" ] || {{ echo "not started: the harness that '
            f'started it is gone" >&2; exit 1; }}; unset LAB_PARENT; shift; exec "$@"', "sh", parent]


def without_privileges(cmd: list[str], user: str = SERVER_USER, reads: list[Path] = ()) -> list[str]:
    """`cmd` as `user` (one of SERVER_USERS) when the harness is root: it writes only its own folder (server_owned)
    and what every user may; it cannot change root's files (/etc, /proc/sys, cgroups), signal root's processes or
    connect to root's sockets (Docker's), nor write the files of the services that run as other users. It reads what
    every user may, and everything (CAP_DAC_READ_SEARCH) only where `reads` (what it must read: the clone, the data
    directory, the JDK, the jar) has a folder closed to other users on its way, or a file they may not read: a clone
    in /root. Elsewhere it cannot read root's own files (its keys, /etc/shadow)."""
    if os.geteuid() != 0:
        return cmd
    return [*as_user(user, user, keep=read_all_if_needed(reads)), *cmd]


def executable(command: str) -> Path:
    """A command's file: as named when it has a folder, else the one on PATH."""
    return Path(command if "/" in command else shutil.which(command) or command).absolute()


def read_all_if_needed(reads: list[Path]) -> tuple[str, ...]:
    """("dac_read_search",) when a server could not read `reads` as any user may (closed_to_others), else ()."""
    return ("dac_read_search",) if closed_to_others(reads) else ()


def give_to(path: Path, user: str, group: str) -> None:
    """Make `path` `user`:`group`'s when the harness is root (a service's own folder; otherwise it is already ours)."""
    if os.geteuid() == 0:
        shutil.chown(path, user, group)


def has_user(name: str) -> bool:
    """Whether this machine has a user and a group called `name`."""
    try:
        pwd.getpwnam(name), grp.getgrnam(name)
    except KeyError:
        return False
    return True


def server_owned(folder: Path, user: str = SERVER_USER) -> None:
    """Give `folder` (a JVM's own) to `user`, the JVM's, when the harness is root: the one place it may write."""
    check_server_users(SERVER_USERS.index(user) + 1)
    give_to(folder, user, user)


def check_server_users(count: int = 1) -> None:
    """Before anything starts, as root: the first `count` of SERVER_USERS exist, one for each JVM of a step (`invoke
    setup` makes them all; a machine set up before there were four still runs steps of one JVM)."""
    needed = SERVER_USERS[:count]
    missing = [user for user in needed if not has_user(user)] if os.geteuid() == 0 else []
    if missing:
        raise LabError(f"as root, the lab runs its JVMs as the system user{'s' if count > 1 else ''} "
                       f"{', '.join(needed)}{' (one for each JVM of a step)' if count > 1 else ''}, and this machine "
                       f"has no user or group {', '.join(missing)}: run `invoke setup`, which makes them")


def check_server_can_run(java: str) -> None:
    """Before anything starts, as root: SERVER_USER can run `java` (a JDK unpacked with umask 077 it cannot)."""
    if os.geteuid() != 0:
        return
    check_server_users()
    done = subprocess.run(without_privileges([java, "-version"], reads=[executable(java)]), capture_output=True,
                          text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise LabError(f"{SERVER_USER}, a user the lab runs its JVMs as, cannot run {java} ({last}): let every user "
                       f"run that JDK (chmod -R o+rX on its folder), or set JAVA_HOME to one they can")


def check_servers_reach(paths: list[Path]) -> None:
    """Before anything starts, as root without CAP_DAC_READ_SEARCH (a container without --cap-add DAC_READ_SEARCH):
    the servers, which then read only what every user may, can enter `paths` (the clone, the data directory) and
    read those that are files (your jar)."""
    if os.geteuid() != 0 or bounded("dac_read_search"):
        return
    if closed := closed_to_others(paths):
        raise LabError("root here lacks CAP_DAC_READ_SEARCH (a container without --cap-add DAC_READ_SEARCH), so the "
                       f"lab's servers read only what every user may, and {closed}, or give root that capability")


def closed_to_others(paths: list[Path]) -> str:
    """What keeps a user other than root from `paths` ("" when nothing): a folder on the way to one, as named and
    where its links lead, that they may not enter, or a file of them they may not read; with the fix."""
    for path in paths:
        ways = {Path(os.path.abspath(path)), Path(path).resolve()}  # as named, and where its links lead
        for above in [step for way in ways for step in (*reversed(way.parents), way)]:
            if above.is_dir() and not above.stat().st_mode & 0o001:
                return f"{above} is closed to them (on the way to {path}): chmod o+x {above}"
        if Path(path).is_file() and not Path(path).stat().st_mode & 0o004:
            return f"{path} is not readable by them: chmod o+r {path}"
    return ""


# Run by root in the service's own mount namespace, before it execs the service: every protected folder bound onto
# itself (recursively, so what is mounted below it stays visible), then each of them and every mount below them made
# read-only (those still mounts in the view: not hidden by a later mount, nor unbindable, nor gone since), then the
# service's own folder bound writable again and made its working directory (entered through the new mounts: a
# directory entered before them would still reach the writable ones below by relative paths).
# Arguments: mount, the writable folder, the protected folders, "--", the mounts to make read-only, "--", the command.
_READ_ONLY_VIEW = ('mount=$1 writable=$2; shift 2; '
                   'while [ "$1" != -- ]; do "$mount" --rbind "$1" "$1" || exit 125; shift; done; shift; '
                   'while [ "$1" != -- ]; do '
                   'if mountpoint -q "$1"; then "$mount" -o remount,bind,ro "$1" || exit 125; fi; shift; done; shift; '
                   '"$mount" --bind "$writable" "$writable" && "$mount" -o remount,bind,rw "$writable" || exit 125; '
                   'cd "$writable" || exit 125; '
                   'exec "$@"')
def may_make_namespaces() -> bool:
    """Root with CAP_SYS_ADMIN, which mount and pid namespaces need (root in an unprivileged container has not)."""
    return os.geteuid() == 0 and _in_set("CapEff", "sys_admin")


def may_make_view() -> bool:
    """Whether read_only_view can be made here: mount namespaces, and a machine that lets root mount in them."""
    return may_make_namespaces() and mounts_work()


@functools.cache
def mounts_work() -> bool:
    """Whether a read-only bind mount can be made in a new mount namespace, tried once: a Linux security module may
    refuse it to root with CAP_SYS_ADMIN (Docker's default AppArmor profile does, in a container run with `--cap-add
    SYS_ADMIN`), and every service would then end at its start. Refused, the servers run without the view (the JVMs
    still as SERVER_USERS, who own none of the book's files), and this is said once."""
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run([shutil.which("unshare") or "/usr/bin/unshare", "--mount", "--propagation", "private",
                                "sh", "-c", _PROBE, shutil.which("mount") or "/usr/bin/mount", folder],
                               capture_output=True, text=True)
    if probe.returncode != 0:
        reason = " ".join(probe.stderr.split()) or f"exit {probe.returncode}"
        say(f"note: this machine refuses the mounts that make each server's read-only view of the book ({reason}): "
            f"the servers run without it")
    return probe.returncode == 0


# As _READ_ONLY_VIEW mounts. Arguments: mount, a folder.
_PROBE = '"$0" --bind "$1" "$1" && "$0" -o remount,bind,ro "$1"'


def mounts_below(folders: list[str]) -> list[str]:
    """The mount points inside `folders` (a volume mounted in the clone, say), from this process's mount table."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])  # \040 is a space
        if any(point.startswith(folder.rstrip("/") + "/") for folder in folders):
            points.append(point)
    return list(dict.fromkeys(points))


def read_only_view(cmd: list[str], writable: Path, protected: list[Path]) -> list[str]:
    """`cmd` in a mount namespace of its own when the harness is root, where the `protected` folders (the clone, the
    data directory, PostgreSQL's clusters) and whatever is mounted below them are read-only but for `writable` (the
    service's own folder, its working directory): no service, whatever its user, can change the book's code, tools
    or data, by absolute or relative paths. Root makes the view, then the shell execs `cmd` (same pid); a
    service without CAP_SYS_ADMIN (without_privileges, nginx's as_nginx_user) cannot mount them writable again.
    Nothing changes on the host: the namespace's mounts are private to it and end with it. A mount that fails ends the
    service with exit 125, the reason in its log. Without CAP_SYS_ADMIN (root in an unprivileged container) there is
    no view: `cmd` as it is."""
    if not may_make_view():
        return cmd
    folders = [str(p) for p in dict.fromkeys(p.resolve() for p in protected if p.is_dir())]
    return [shutil.which("unshare") or "/usr/bin/unshare", "--mount", "--propagation", "private",
            "sh", "-c", _READ_ONLY_VIEW, "sh", shutil.which("mount") or "/usr/bin/mount", str(writable.resolve()),
            *folders, "--", *folders, *mounts_below(folders), "--", *cmd]


def process_running(pid: int) -> bool:
    """A process that is neither gone nor a zombie (for processes the harness did not start: a container's)."""
    try:
        state = proc_stat_fields(pid)[0]
    except (FileNotFoundError, ProcessLookupError):  # gone; or going: its stat opened, then read as it exits (ESRCH)
        return False
    return pid > 0 and state != "Z"


def terminate(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int:
    """SIGTERM the child's process group, SIGKILL after `grace_s`; returns its exit code."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def check_port_free(address: str, port: int, what: str) -> None:
    """Refuse a port another process listens on (TIME-WAIT leftovers are fine, as for Tomcat)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                raise
            raise LabError(
                f"{what} port {port} on {address} is in use{_listener(port)}: stop that process, "
                f"or give the experiment another SERVER_PORT / MANAGEMENT_PORT"
            ) from None


def _listener(port: int) -> str:
    found = listener(port)
    return f" by {found[0]} (pid {found[1]})" if found else ""


def listener(port: int) -> tuple[str, int] | None:
    """The command name and pid of the process listening on a TCP port, when `ss -p` may see it (None without ss:
    the port is still refused as busy, only its holder goes unnamed)."""
    try:
        out = subprocess.run(["ss", "-Hltnp", f"( sport = :{port} )"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return None
    match = re.search(r'users:\(\("([^"]+)",pid=(\d+)', out)
    return (match.group(1), int(match.group(2))) if match else None


# The lab's own requests to its services (readiness, Actuator, stub_status) go straight to them: urllib would send
# them through a proxy of the user's shell (HTTP_PROXY …), loopback addresses included. Downloads keep the proxy.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, timeout: float):
    """GET `url` directly, never through a proxy; the response, to use as a context manager (urllib's urlopen)."""
    return _DIRECT.open(url, timeout=timeout)


def http_json(url: str, timeout: float = 2.0) -> dict:
    with http_get(url, timeout) as reply:
        return json.loads(reply.read())
