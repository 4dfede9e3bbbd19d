"""Shared memory a killed PostgreSQL left, on real kernel objects with made-up contents: a SysV segment with
PostgreSQL's header that no process attaches, the /dev/shm control segment its header names and a segment that lists.
Segments still attached, or not PostgreSQL's, stay. A real postgres killed with SIGKILL is in
tests/test_e2e_postgres.py."""
from __future__ import annotations

import ctypes
import os
import secrets

import pytest

from harness.lab.services import pgshm

IPC_PRIVATE, IPC_CREAT = 0, 0o1000


def make_segment(made: dict, header: bytes, attached: bool = False) -> int:
    """A SysV segment holding `header`, created by this process, which stays attached (a live postmaster) or not."""
    libc = pgshm._libc()
    libc.shmget.restype, libc.shmget.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    shmid = libc.shmget(IPC_PRIVATE, 56, IPC_CREAT | 0o600)
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    address = libc.shmat(shmid, None, 0)
    ctypes.memmove(address, header, len(header))
    if not attached:
        libc.shmdt(address)
    made["segments"].append((shmid, address if attached else None))
    return shmid


def pg_header(control: int, magic: int = pgshm.PG_SHMEM_MAGIC) -> bytes:
    return pgshm.PG_SHMEM_HEADER.pack(magic, 12345, 56, 56, control)


def control_segment(*handles: int) -> bytes:
    items = [pgshm.DSM_CONTROL_ITEM.pack(h, 2, 0, 0, 0, False) for h in handles]
    maxitems = 4
    items += [pgshm.DSM_CONTROL_ITEM.pack(0, 0, 0, 0, 0, False)] * (maxitems - len(items))
    return pgshm.DSM_CONTROL_HEADER.pack(pgshm.DSM_CONTROL_MAGIC, len(handles), maxitems) + b"".join(items)


def handle() -> int:
    return secrets.randbits(31) << 1  # even, as PostgreSQL's


@pytest.fixture
def made():
    """Whatever the test made is removed afterwards, also when it failed."""
    made = {"segments": [], "files": []}
    yield made
    libc = pgshm._libc()
    for shmid, address in made["segments"]:
        if address is not None:
            libc.shmdt(address)
        libc.shmctl(shmid, pgshm.IPC_RMID, None)
    for path in made["files"]:
        path.unlink(missing_ok=True)


def test_a_dead_postmasters_segment_and_its_dsm_are_removed_and_named(made):
    control, listed, in_main_area = handle(), handle(), handle() | 1  # an odd handle lives in the main area
    files = [pgshm.SHM_DIR / f"PostgreSQL.{h}" for h in (control, listed, in_main_area)]
    made["files"] += files
    files[0].write_bytes(control_segment(listed, in_main_area))
    files[1].write_bytes(b"\0" * 64)
    files[2].write_bytes(b"\0" * 64)  # not PostgreSQL's to remove: it never lives in /dev/shm
    shmid = make_segment(made, pg_header(control))  # its postmaster gone: no process attached
    assert pgshm.dsm_control(shmid) == control
    said = pgshm.remove_leftovers(os.geteuid())
    assert said and "killed PostgreSQL server(s) left: SysV segment(s)" in said and f"{shmid} (key 0)" in said
    assert f"PostgreSQL.{control}" in said and f"PostgreSQL.{listed}" in said
    assert shmid not in {s.shmid for s in pgshm.segments()}
    assert not files[0].exists() and not files[1].exists() and files[2].exists()


def test_live_foreign_and_other_users_segments_stay(made):
    attached = make_segment(made, pg_header(0), attached=True)  # a live postmaster's
    foreign = make_segment(made, pg_header(0, magic=1))  # not PostgreSQL's
    mine = make_segment(made, pg_header(0))
    said = pgshm.remove_leftovers(os.geteuid() + 1)  # another user's postgres: not ours to judge
    assert said is None or f"{mine} (key" not in said
    said = pgshm.remove_leftovers(os.geteuid())
    assert f"{mine} (key 0)" in said
    left = {s.shmid for s in pgshm.segments()}
    assert attached in left and foreign in left and mine not in left


def test_nothing_left_says_nothing(monkeypatch, tmp_path):
    table = tmp_path / "shm"
    table.write_text("       key      shmid perms  size  cpid  lpid nattch   uid   gid\n")
    monkeypatch.setattr(pgshm, "SYSV_TABLE", table)
    assert pgshm.remove_leftovers(os.geteuid()) is None
