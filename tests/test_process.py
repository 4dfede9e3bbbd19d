"""The lab's child processes (harness/lab/backends/process.py): as root, a service's JVM runs as the servers' own user,
and a service sees the book's folders read-only."""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.lab.backends.process import (SERVER_USER, bounded, may_make_namespaces, process_running, read_only_view,
                                          server_owned, spawn, without_privileges)

CAP_DAC_READ_SEARCH = 2

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab drops privileges only as root (CI runs as root)")


def status_field(pid: int, name: str) -> str:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith(f"{name}:"))
    return line.split(":", 1)[1].strip()


@ROOT_ONLY
@pytest.mark.skipif(not bounded("dac_read_search"), reason="this root cannot lend CAP_DAC_READ_SEARCH (see the test "
                    "of a root without it)")
def test_a_jvms_command_runs_as_the_servers_user_who_reads_all_and_writes_only_its_own(tmp_path):
    """Started as the lab starts a JVM (spawn, its own session and parent-death signal): the same pid as the command,
    the servers' user with CAP_DAC_READ_SEARCH alone, no new privileges. So it reads root's file in a folder only root
    may enter (a clone in /root), and writes its own folder (server_owned); but it cannot write a file of root's, a
    folder of nobody's (as PostgreSQL's cluster is), signal a process of root's or connect to root's socket (as
    Docker's is), while the harness can do all of these."""
    import socket

    secret = tmp_path / "closed" / "secret"
    secret.parent.mkdir(mode=0o700)
    secret.write_text("read")
    secret.chmod(0o600)
    theirs, own = tmp_path / "cluster", tmp_path / "own"
    theirs.mkdir(mode=0o700)
    shutil.chown(theirs, "nobody", "nogroup")
    own.mkdir()
    server_owned(own)
    roots = tmp_path / "roots"
    roots.write_text("")
    roots.chmod(0o644)
    sock, open_sock = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    for listening, name, mode in ((sock, "docker.sock", 0o660), (open_sock, "open.sock", 0o666)):
        listening.bind(str(tmp_path / name))
        listening.listen()
        (tmp_path / name).chmod(mode)
    rootly = subprocess.Popen(["sleep", "30"])
    connect = '"$4" -c "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])"'
    script = ('cat "$1/closed/secret" > "$2/read"; a=$?; touch "$1/cluster/x" 2>/dev/null; b=$?; '
              'echo x 2>/dev/null >> "$1/roots"; c=$?; kill -0 "$3" 2>/dev/null; d=$?; '
              f'{connect} "$1/docker.sock" 2>/dev/null; e=$?; kill -0 $$; f=$?; {connect} "$1/open.sock"; g=$?; '
              'echo $a $b $c $d $e $f $g > "$2/rc"; exec sleep 30')
    args = [str(tmp_path), str(own), str(rootly.pid), sys.executable]
    proc = spawn(without_privileges(["sh", "-c", script, "sh", *args], reads=[secret]),  # behind a closed folder
                 dict(os.environ), tmp_path / "log")
    try:
        codes = wait_for_file(own / "rc").split()
        assert codes[0] == "0" and (own / "read").read_text() == "read", codes  # reads root's, writes its own
        assert all(code != "0" for code in codes[1:5]), codes  # nobody's folder, root's file, process, socket
        assert codes[5:] == ["0", "0"], codes  # its own process, a socket open to every user: the checks do run
        user = pwd.getpwnam(SERVER_USER)
        assert status_field(proc.pid, "Uid").split() == [str(user.pw_uid)] * 4
        assert status_field(proc.pid, "Gid").split() == [str(user.pw_gid)] * 4
        assert status_field(proc.pid, "Groups") == ""
        assert all(int(status_field(proc.pid, f"Cap{kind}"), 16) == 1 << CAP_DAC_READ_SEARCH
                   for kind in ("Inh", "Prm", "Eff", "Bnd", "Amb"))
        assert status_field(proc.pid, "NoNewPrivs") == "1"
        assert b"sleep" in Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # setpriv and sh exec'd: the pid is the command's
    finally:
        for child in (proc, rootly):
            child.kill()
            child.wait()
    (theirs / "y").write_text("")  # the harness itself keeps its privileges
    assert not (tmp_path / "roots").read_text()
    open_sock.close()
    with sock, socket.socket(socket.AF_UNIX) as client:
        client.connect(str(tmp_path / "docker.sock"))


@ROOT_ONLY
def test_a_server_whose_files_every_user_may_read_gets_no_capability_and_cannot_read_roots_own(tmp_path):
    """CAP_DAC_READ_SEARCH is lent only where what the server must read lies behind a folder closed to other users (a
    clone in /root): elsewhere (a clone in /work, /opt, a home open to others) the server reads only what every user
    may, and not root's own files: its keys, /etc/shadow, a run's secrets."""
    import tempfile

    secret = tmp_path / "secret"  # pytest's folders are root's alone: 0700
    secret.write_text("root's")
    secret.chmod(0o600)
    shared = Path(tempfile.mkdtemp(prefix="lab-open-"))
    try:
        shared.chmod(0o755)
        jar = shared / "app.jar"
        jar.write_text("PK")
        jar.chmod(0o644)
        own = shared / "own"
        own.mkdir()
        server_owned(own)
        script = 'cat "$1" > "$2/read" 2>/dev/null; a=$?; cat "$3" > /dev/null; echo $a $? > "$2/rc"; exec sleep 30'
        proc = spawn(without_privileges(["sh", "-c", script, "sh", str(secret), str(own), str(jar)], reads=[jar]),
                     dict(os.environ), shared / "log")
        try:
            assert wait_for_file(own / "rc").split() == ["1", "0"]  # root's secret refused; the open jar read
            assert all(int(status_field(proc.pid, f"Cap{kind}"), 16) == 0 for kind in ("Inh", "Prm", "Eff", "Bnd", "Amb"))
        finally:
            proc.kill()
            proc.wait()
    finally:
        shutil.rmtree(shared)


def mount_options(pid: int, path: Path) -> set[str]:
    """The options of the mount that holds `path` in the mount namespace of process `pid` (the innermost one listed
    last, as the kernel does)."""
    best = ("", "")
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        point, options = line.split()[4].replace("\\040", " "), line.split()[5]
        inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, options)
    return set(best[1].split(","))


def wait_for_file(path: Path, timeout_s: float = 10) -> str:
    """The file's text once its writer's `echo` has ended its line: the shell makes the file before it writes, and a
    busy machine showed the empty file in between."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return text
        time.sleep(0.05)
    return path.read_text() if path.exists() else ""


@ROOT_ONLY
def test_a_service_sees_the_book_read_only_but_its_own_folder_and_cannot_undo_it(tmp_path):
    """As the lab starts a JVM (read_only_view over without_privileges): the protected folder and what lies below it
    are read-only to the service, its own folder inside them writable; without CAP_SYS_ADMIN it cannot remount or
    unmount them; its pid is the command's; and the host's view is unchanged: the harness still writes there."""
    book, data = tmp_path / "book", tmp_path / "data"
    own = data / "step" / ".tmp" / "server"
    own.mkdir(parents=True)
    (book / "code").mkdir(parents=True)
    for folder in (book / "code", data, data / "step"):  # open to every user: only the view may refuse a write there
        folder.chmod(0o777)
    server_owned(own)  # as spawn_java gives it its folder
    script = ('touch "$1/code/x" 2>/dev/null; a=$?; touch "$2/y" 2>/dev/null; b=$?; touch "$3/z"; c=$?; '
              'mount -o remount,bind,rw "$1" 2>/dev/null; d=$?; umount "$1" 2>/dev/null; e=$?; '
              'touch ../../x ../../../x 2>/dev/null; f=$?; echo $a $b $c $d $e $f "$(pwd)" > "$3/rc"; exec sleep 30')
    cmd = read_only_view(without_privileges(["sh", "-c", script, "sh", str(book), str(data), str(own)],
                                            reads=[book, data, own]), own, [book, data])
    proc = spawn(cmd, dict(os.environ), tmp_path / "log", cwd=own)  # as spawn_java: started in its own folder
    try:
        codes = wait_for_file(own / "rc").split()
        assert codes[0] != "0" and codes[1] != "0", codes  # the book and the data: read-only
        assert codes[2] == "0", codes  # its own folder
        assert codes[3] != "0" and codes[4] != "0", codes  # no capability to remount or unmount
        assert codes[5] != "0" and codes[6] == str(own), codes  # relative paths up from its folder: read-only too
        assert not (data / "step" / "x").exists() and not (data / "x").exists()
        assert "ro" in mount_options(proc.pid, book / "code") and "ro" in mount_options(proc.pid, data)
        assert "rw" in mount_options(proc.pid, own)
        assert b"sleep" in Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # unshare, sh and setpriv exec'd
        assert "rw" in mount_options(os.getpid(), book)
    finally:
        proc.kill()
        proc.wait()
    (book / "code" / "x").write_text("")  # the host's view: writable as before
    assert not (tmp_path / "log").read_text()  # no mount complained


@ROOT_ONLY
def test_what_is_mounted_below_a_protected_folder_is_read_only_too(tmp_path):
    """A volume mounted inside the clone (a tmpfs here, a space in its name) stays visible to the service and is
    read-only to it too: a recursive bind made read-only changes only its top mount."""
    book = tmp_path / "book"
    volume = book / "a volume"
    volume.mkdir(parents=True)
    own = tmp_path / "own"
    own.mkdir()
    server_owned(own)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "lab-test", str(volume)], check=True)
    try:
        (volume / "seen").write_text("")
        script = 'ls "$1/seen" > /dev/null; a=$?; touch "$1/x" 2>/dev/null; b=$?; echo $a $b > rc; exec sleep 30'
        proc = spawn(read_only_view(without_privileges(["sh", "-c", script, "sh", str(volume)], reads=[volume, own]),
                                    own, [book]),
                     dict(os.environ), tmp_path / "log", cwd=own)
        try:
            assert wait_for_file(own / "rc").split() == ["0", "1"]  # visible, read-only
        finally:
            proc.kill()
            proc.wait()
        (volume / "x").write_text("")  # the host's view: writable as before
    finally:
        subprocess.run(["umount", str(volume)], check=True)


@ROOT_ONLY
def test_a_protected_folder_that_cannot_be_mounted_ends_the_service_with_its_reason(tmp_path):
    """The view is made before the service runs: a mount that fails ends it at once (exit 125), the reason in its log,
    instead of running it with the book writable."""
    own = tmp_path / "own"
    own.mkdir()
    cmd = read_only_view(["sh", "-c", "echo ran"], own, [tmp_path])
    cmd[cmd.index("--") - 1] = str(tmp_path / "gone")  # a folder deleted after the check
    proc = spawn(cmd, dict(os.environ), tmp_path / "log")
    assert proc.wait(timeout=10) == 125
    log = (tmp_path / "log").read_text()
    assert "ran" not in log and "gone" in log


@ROOT_ONLY
def test_a_machine_that_refuses_the_mounts_runs_the_servers_without_the_view_and_says_so_once(tmp_path, monkeypatch,
                                                                                            capsys):
    """Root with CAP_SYS_ADMIN may still be refused mounts (Docker's AppArmor profile, here a `mount` that fails as it
    does there): every server ended at its start with exit 125. Now a probe, once, finds it: one line names the
    reason, before anything starts, and the servers start without the view."""
    from harness.lab.backends import process
    from harness.lab.services.base import check_local_jvm

    if not process.may_make_view():
        pytest.skip("no CAP_SYS_ADMIN here: the probe is not made")
    (tmp_path / "mount").write_text('#!/bin/sh\necho "mount: permission denied by the profile" >&2\nexit 32\n')
    (tmp_path / "mount").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    process.mounts_work.cache_clear()
    try:
        check_local_jvm()  # the checks before anything starts
        said = capsys.readouterr().out
        assert "note: this machine refuses the mounts" in said and "permission denied by the profile" in said
        assert not process.may_make_view() and not process.may_make_view()
        assert read_only_view(["java"], tmp_path, [tmp_path]) == ["java"]
        assert not capsys.readouterr().out  # said once
    finally:
        process.mounts_work.cache_clear()
    monkeypatch.undo()
    assert process.may_make_view()  # with the machine's own mount


@ROOT_ONLY
def test_a_jdk_the_servers_user_cannot_run_is_named_before_anything_starts(tmp_path):
    """A JDK unpacked with umask 077 runs for root, not for the servers' user: every server start would fail. The
    check before anything starts runs it as that user, and names the JDK and what to do."""
    from harness import LabError
    from harness.lab.backends.process import check_server_can_run

    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text('#!/bin/sh\necho \'openjdk version "17.0.15"\' >&2\n')
    java.chmod(0o755)
    check_server_can_run(str(java))
    java.chmod(0o700)
    assert subprocess.run([str(java), "-version"]).returncode == 0  # root may
    with pytest.raises(LabError, match=rf"^{SERVER_USER}, a user the lab runs its JVMs as, cannot run {java} \(.*"
                                       r"Permission denied\): let every user run that JDK \(chmod -R o\+rX on its "
                                       r"folder\), or set JAVA_HOME to one they can$"):
        check_server_can_run(str(java))


def test_the_labs_own_requests_never_go_through_the_users_proxy(monkeypatch):
    """Readiness, Actuator and stub_status reach the service directly with a proxy in the user's shell: urllib would
    send even 127.0.0.1 to it (every step failed as 'not ready after 90 s')."""
    import http.server
    import threading
    import urllib.request

    from harness.lab.backends.process import http_json

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status": "UP"}')

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"
    try:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens on the discard port
        for name in ("NO_PROXY", "no_proxy"):  # a machine's own exceptions would let urllib's opener go direct
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(OSError):  # what the lab did: urlopen's opener, made (once) with the proxies of the time
            urllib.request.build_opener().open(url, timeout=5)
        assert http_json(url) == {"status": "UP"}
    finally:
        server.shutdown()


def test_without_root_the_command_is_left_as_it_is(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert without_privileges(["java", "-jar", "x.jar"]) == ["java", "-jar", "x.jar"]
    assert read_only_view(["java", "-jar", "x.jar"], tmp_path, [tmp_path]) == ["java", "-jar", "x.jar"]


@ROOT_ONLY
def test_a_child_without_privileges_still_dies_with_the_harness(tmp_path):
    """The parent-death signal survives setpriv: a harness killed hard takes the JVM with it."""
    code = (f"import os, sys; sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r}); "
            "from harness.lab.backends.process import spawn, without_privileges; "
            f"p = spawn(without_privileges(['sleep', '60']), dict(os.environ), __import__('pathlib').Path({str(tmp_path / 'log')!r})); "
            "print(p.pid, flush=True); import time; time.sleep(60)")
    harness = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(harness.stdout.readline())
    assert status_field(child, "PPid") == str(harness.pid)
    harness.kill()
    harness.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and status_field(child, "State")[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or status_field(child, "State")[0] == "Z"


@ROOT_ONLY
def test_a_command_whose_harness_died_while_its_uid_changed_does_not_run(tmp_path):
    """setpriv's change of uid clears the parent-death signal before it sets it again: a harness killed in between
    sends none. The command then finds its parent is no longer the harness (here: it never was) and does not run."""
    server_owned(tmp_path)
    cmd = without_privileges(["touch", str(tmp_path / "ran")], reads=[tmp_path])  # pytest's folder: closed to others
    orphaned = subprocess.run(["sh", "-c", '"$@"; exit $?', "sh", *cmd],  # its parent: this sh
                              capture_output=True, text=True)
    assert orphaned.returncode == 1 and not (tmp_path / "ran").exists()
    assert orphaned.stderr == "not started: the harness that started it is gone\n"
    assert subprocess.run(cmd).returncode == 0 and (tmp_path / "ran").exists()  # the harness's own child runs


@pytest.mark.skipif(not may_make_namespaces(), reason="a pid namespace needs root with CAP_SYS_ADMIN")
def test_in_its_own_pid_namespace_a_command_whose_unshare_died_while_its_uid_changed_does_not_run(tmp_path):
    """nginx's case: its parent is `unshare --pid --fork --kill-child`, and inside the namespace $PPID is 0. Root
    notes the parent (from /proc/self/stat) before setpriv; the guard after it compares: a parent gone meanwhile
    (here: a parent noted that never was), the command does not run."""
    from harness.lab.backends.process import as_user

    server_owned(tmp_path)
    cmd = [*as_user(SERVER_USER, SERVER_USER, ("dac_read_search",), under_unshare=True), "touch", str(tmp_path / "ran")]
    after_root = cmd[cmd.index("sh", 1) + 1:]  # setpriv onwards: what runs after root noted the parent
    orphaned = subprocess.run(after_root, env=dict(os.environ, LAB_PARENT="1"), capture_output=True, text=True)
    assert orphaned.returncode == 1 and not (tmp_path / "ran").exists()
    assert orphaned.stderr == "not started: the harness that started it is gone\n"
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    assert subprocess.run([unshare, "--pid", "--fork", "--kill-child", *cmd]).returncode == 0
    assert (tmp_path / "ran").exists()


@ROOT_ONLY
def test_a_root_without_cap_dac_read_search_still_starts_its_servers_and_names_a_closed_folder():
    """Docker's default capabilities lack CAP_DAC_READ_SEARCH, and setpriv cannot give what the bounding set lacks:
    every JVM and nginx failed at start (setpriv: exit 127). Now they start without it, reading what every user may;
    a folder of the book closed to other users, or your jar closed to them, is named before anything starts."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="lab-reach-"))  # /tmp/pytest-of-root is closed to other users
    base.chmod(0o755)
    closed = base / "closed" / "data"
    closed.mkdir(parents=True)
    closed.parent.chmod(0o700)
    (base / "link").symlink_to(closed)  # open by its name, closed where it leads
    readable, unreadable = base / "app.jar", base / "yours.jar"
    readable.write_bytes(b"PK")
    readable.chmod(0o644)  # whatever the umask
    unreadable.write_bytes(b"PK")
    unreadable.chmod(0o600)
    code = ("import subprocess, sys; from pathlib import Path; from harness import LabError; "
            "from harness.lab.backends.process import bounded, check_servers_reach, without_privileges; "
            "print(bounded('dac_read_search'), subprocess.run(without_privileges(['true'])).returncode); "
            "check_servers_reach([Path(sys.argv[1]).parent.parent, Path(sys.argv[1]).parent.parent / 'app.jar']); "
            "print('open ok')\n"
            "for path in sys.argv[1:]:\n"
            "    try: check_servers_reach([Path(path)])\n"
            "    except LabError as err: print(err)")
    try:
        done = subprocess.run([shutil.which("setpriv") or "/usr/bin/setpriv", "--bounding-set=-dac_read_search",
                               sys.executable, "-c", code, str(closed), str(base / "link"), str(unreadable)],
                              capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    finally:
        shutil.rmtree(base)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[:2] == ["False 0", "open ok"], done.stdout + done.stderr
    lacks = ("root here lacks CAP_DAC_READ_SEARCH (a container without --cap-add DAC_READ_SEARCH), so the lab's servers "
             "read only what every user may")
    assert lines[2:] == [*(f"{lacks}, and {closed.parent} is closed to them (on the way to {named}): chmod o+x "
                           f"{closed.parent}, or give root that capability" for named in (closed, base / "link")),
                         f"{lacks}, and {unreadable} is not readable by them: chmod o+r {unreadable}, or give root "
                         f"that capability"]


def test_your_jars_are_checked_for_the_servers_reach_before_anything_starts(tmp_path, monkeypatch):
    from harness.lab.services import springjar

    checked = []
    monkeypatch.setattr(springjar, "check_servers_reach", checked.append)
    steps = [SimpleNamespace(server={}, services={"server": {"kind": "spring-jar", "path": str(tmp_path / f"{n}.jar")},
                                                  "edge": {"kind": "nginx"}}) for n in ("b", "a", "b")]
    springjar.KIND.check_steps(steps, "local")
    assert checked == [[tmp_path / "a.jar", tmp_path / "b.jar"]]


def test_a_busy_port_is_refused_without_ss_its_holder_unnamed(tmp_path, monkeypatch):
    """`ss` names who holds a busy port; on a machine without it the port is still refused in one line (it was a
    FileNotFoundError while naming the holder: issue 42)."""
    import socket

    from harness import LabError
    from harness.lab.backends.process import check_port_free, listener

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setenv("PATH", str(tmp_path))  # no ss here
        assert listener(port) is None
        with pytest.raises(LabError, match=rf"server port {port} on 127.0.0.1 is in use: stop that process"):
            check_port_free("127.0.0.1", port, "server")


def test_the_commit_is_read_from_a_clone_of_another_user_and_unknown_outside_git(tmp_path):
    """git refuses to read a clone another user owns ("dubious ownership": a reader's clone run as root for a CPU
    quota), and a copy without .git is no repository: step.json's git_commit was git's error text, +dirty. Now the
    commit, or "unknown"; +dirty only for changed code."""
    from harness.lab.system import git_commit

    clone = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    (clone / "code.py").write_text("x = 1\n")
    for args in (["add", "code.py"], ["-c", "user.name=r", "-c", "user.email=r@x", "commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(clone), *args], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (clone / "book").mkdir()
    assert git_commit(clone / "book") == head  # the book in a larger repository: git finds it above
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "nobody", str(clone)], check=True)
        assert subprocess.run(["git", "-C", str(clone), "status"], capture_output=True).returncode != 0  # refused
    assert git_commit(clone) == head
    (clone / "code.py").write_text("x = 2\n")
    assert git_commit(clone) == f"{head}+dirty"
    copy = tmp_path / "copy"
    copy.mkdir()
    assert git_commit(copy) == "unknown"


def test_a_process_runs_until_it_exits_and_its_zombie_does_not():
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert process_running(child.pid)
        child.kill()
        deadline = time.monotonic() + 10
        while process_running(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Path(f"/proc/{child.pid}").exists() and not process_running(child.pid)  # a zombie, not yet reaped
        child.wait()
        assert not process_running(child.pid)  # reaped: its /proc entry is gone
    finally:
        child.kill()
        child.wait()


def test_a_process_that_exits_while_its_stat_is_read_is_not_running(monkeypatch):
    """Reading /proc/<pid>/stat of a task that exits meanwhile fails with ESRCH, not ENOENT (seen as a flake: a JVM's
    thread counted while the JVM died)."""
    def exiting(self, *args, **kwargs):
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(Path, "read_text", exiting)
    assert process_running(os.getpid()) is False
