"""The lab's child processes (harness/lab/backends/process.py): as root, a service's JVM runs without privileges."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.lab.backends.process import spawn, without_privileges

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab drops privileges only as root (CI runs as root)")


def status_field(pid: int, name: str) -> str:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith(f"{name}:"))
    return line.split(":", 1)[1].strip()


@ROOT_ONLY
def test_a_jvms_command_keeps_roots_uid_and_loses_every_capability(tmp_path):
    """Started as the lab starts a JVM (spawn, its own session and parent-death signal): the same pid as the command,
    uid 0, no capability at all, the parent-death signal kept; so it cannot write into a folder of nobody's (as
    PostgreSQL's cluster is), while the harness can, and it still reads root's own files."""
    theirs = tmp_path / "cluster"
    theirs.mkdir(mode=0o700)
    shutil.chown(theirs, "nobody", "nogroup")
    script = f'touch "{theirs}/x" 2>/dev/null; echo $? > "{tmp_path}/rc"; exec sleep 30'
    proc = spawn(without_privileges(["sh", "-c", script]), dict(os.environ), tmp_path / "log")
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "rc").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "rc").read_text().strip() != "0"  # permission denied: nobody's folder
        assert status_field(proc.pid, "Uid").split()[:2] == ["0", "0"]
        assert all(int(status_field(proc.pid, f"Cap{kind}"), 16) == 0 for kind in ("Inh", "Prm", "Eff", "Bnd", "Amb"))
        assert status_field(proc.pid, "NoNewPrivs") == "1"
        assert b"sleep" in Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # setpriv and sh exec'd: the pid is the command's
    finally:
        proc.kill()
        proc.wait()
    (theirs / "y").write_text("")  # the harness itself keeps its privileges


def test_without_root_the_command_is_left_as_it_is(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert without_privileges(["java", "-jar", "x.jar"]) == ["java", "-jar", "x.jar"]


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
