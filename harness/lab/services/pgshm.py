"""Shared memory that a killed PostgreSQL leaves behind, found and removed by the next run.

A postmaster killed with SIGKILL (with the harness: its parent-death signal) cannot remove its shared memory. Its
main area is anonymous (shared_memory_type = mmap), gone with its processes; what stays is the small SysV segment
every postmaster keeps as an interlock (a PGShmemHeader), and its dynamic shared memory (DSM). The lab's postgres
keeps DSM in the data directory (`dynamic_shared_memory_type = mmap`: removed with the cluster, and by postgres itself
at its next start), so it never writes /dev/shm; clusters of older versions of the lab used /dev/shm/PostgreSQL.<n>.
PostgreSQL removes a dead predecessor's segments when it starts again on the same data directory, but a cluster
rebuilt (a template load killed half-way), replaced or cleaned never starts again: its segments stay until reboot.

A leftover is a SysV segment owned by the user postgres runs as, attached by no process (a live postmaster always is)
and starting with PostgreSQL's magic number. Its header names the DSM control segment (`dsm_control`); when that is in
/dev/shm it lists the other segments, removed with it, as PostgreSQL's own dsm_cleanup_using_control_segment does.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import struct
from dataclasses import dataclass
from pathlib import Path

from harness import say
from harness.lab.services import pgbinaries

SYSV_TABLE = Path("/proc/sysvipc/shm")
SHM_DIR = Path("/dev/shm")
PG_SHMEM_MAGIC = 679834894
PG_SHMEM_HEADER = struct.Struct("=iiQQI")  # magic, creatorPID, totalsize, freeoffset, dsm_control (64-bit Linux)
DSM_CONTROL_MAGIC = 0x9A503D32
DSM_CONTROL_HEADER = struct.Struct("=III4x")  # magic, nitems, maxitems; the items are 8-byte aligned
DSM_CONTROL_ITEM = struct.Struct("=IIQQQ?7x")  # handle, refcnt, first_page, npages, impl_private_pm_handle, pinned
SHM_RDONLY, IPC_RMID = 0o10000, 0


@dataclass(frozen=True)
class Segment:
    shmid: int
    key: int
    uid: int
    nattch: int
    size: int


def segments() -> list[Segment]:
    """Every SysV shared memory segment the kernel lists (readable by any user)."""
    try:
        lines = SYSV_TABLE.read_text().splitlines()
    except OSError:
        return []
    names = lines[0].split()
    rows = [dict(zip(names, line.split(), strict=False)) for line in lines[1:]]
    return [Segment(int(r["shmid"]), int(r["key"]), int(r["uid"]), int(r["nattch"]), int(r["size"])) for r in rows]


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmdt.argtypes = [ctypes.c_void_p]
    libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return libc


def dsm_control(shmid: int) -> int | None:
    """The DSM control handle in a PostgreSQL segment's header (0: none), None when it is not PostgreSQL's."""
    libc = _libc()
    address = libc.shmat(shmid, None, SHM_RDONLY)
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        magic, _, _, _, control = PG_SHMEM_HEADER.unpack(ctypes.string_at(address, PG_SHMEM_HEADER.size))
    finally:
        libc.shmdt(address)
    return control if magic == PG_SHMEM_MAGIC else None


def dsm_files(control: int, uid: int) -> list[Path]:
    """The /dev/shm files of a dead postmaster's DSM (its control segment and the segments it lists), owned by `uid`."""
    path = SHM_DIR / f"PostgreSQL.{control}"
    try:
        if path.stat().st_uid != uid:
            return []
        raw = path.read_bytes()
    except OSError:
        return []
    found = [path]
    if len(raw) < DSM_CONTROL_HEADER.size:
        return found
    magic, nitems, maxitems = DSM_CONTROL_HEADER.unpack_from(raw)
    if magic != DSM_CONTROL_MAGIC or nitems > maxitems or len(raw) < DSM_CONTROL_HEADER.size + maxitems * DSM_CONTROL_ITEM.size:
        return found  # not sane: as PostgreSQL does, only the control segment goes
    for i in range(nitems):
        handle, refcnt, *_ = DSM_CONTROL_ITEM.unpack_from(raw, DSM_CONTROL_HEADER.size + i * DSM_CONTROL_ITEM.size)
        segment = SHM_DIR / f"PostgreSQL.{handle}"
        if refcnt and not handle & 1 and segment.exists():  # odd handles live in the main area, gone already
            found.append(segment)
    return found


def remove_leftovers(uid: int) -> str | None:
    """Remove what killed postmasters running as `uid` left; one line saying what, or None when there was nothing."""
    removed_segments, removed_files = [], []
    for segment in segments():
        if segment.uid != uid or segment.nattch != 0:
            continue
        control = dsm_control(segment.shmid)
        if control is None:
            continue
        for path in dsm_files(control, uid) if control else []:
            path.unlink(missing_ok=True)
            removed_files.append(path.name)
        if _libc().shmctl(segment.shmid, IPC_RMID, None) == 0:
            removed_segments.append(f"{segment.shmid} (key {segment.key})")
    if not removed_segments:
        return None
    files = f", and {len(removed_files)} in {SHM_DIR}: {', '.join(removed_files)}" if removed_files else ""
    return (f"removed the shared memory {len(removed_segments)} killed PostgreSQL server(s) left: SysV segment(s) "
            f"{', '.join(removed_segments)}{files}")


def clean_up() -> None:
    """Before a run (of any kind): what killed postgres servers of the lab left removed, saying so in one line."""
    try:
        uid = pgbinaries.runner_uid()
    except KeyError:  # root, and no `nobody` on this machine: no postgres of the lab ever ran
        return
    removed = remove_leftovers(uid)
    if removed:
        say(removed)
