"""One run at a time per data directory, and no `invoke clean` under any run's feet.

A run holds an exclusive lock on <data root>/.lab.lock (a second run on that data directory is refused at once, saying
who holds it) and a shared lock on the clone's .tools.lock: runs on other data directories share the clone's tools
(k6, the JDKs, the PostgreSQL clusters under .tools/), and `invoke clean`, which removes them, takes that lock
exclusively, so it is refused while any run of the clone goes on. The kernel drops a lock when its holder ends, even
by kill -9, so a killed run never leaves a stale lock behind.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from harness import ROOT, LabError
from harness.lab import store

LOCK_FILE = ".lab.lock"
TOOLS_LOCK = ROOT / ".tools.lock"  # beside .tools/, not in it: `invoke clean` removes the folder


@contextmanager
def holding(what: str, tools: str = "shared"):
    """Hold the data directory's lock and the clone's tools lock (`tools`: "shared" for a run, "exclusive" for what
    removes the tools) for `what` (e.g. "invoke run chapter3"), or refuse naming the holder."""
    root = store.data_root()
    root.mkdir(parents=True, exist_ok=True)
    with ExitStack() as held:
        held.enter_context(_held(root / LOCK_FILE, what, fcntl.LOCK_EX, f"another run holds {root}"))
        mode, whose = ((fcntl.LOCK_SH, "`invoke clean` is removing this clone's tools") if tools == "shared" else
                       (fcntl.LOCK_EX, f"a run uses this clone's tools ({TOOLS_LOCK.parent / '.tools'})"))
        held.enter_context(_held(TOOLS_LOCK, what, mode, whose))
        yield


@contextmanager
def _held(path: Path, what: str, mode: int, refused: str):
    handle = open(path, "a+")
    try:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(f"{refused}: {holder(path)}; wait for it to finish or stop it") from None
        handle.seek(0)
        handle.truncate()  # a shared lock's holders each say who they are: the last one's words stay
        handle.write(json.dumps({"pid": os.getpid(), "what": what, "since": datetime.now(UTC).isoformat(timespec="seconds"),
                                 "argv": sys.argv}))
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


def holder(path) -> str:
    """Who holds the lock, as its holder wrote it."""
    try:
        facts = json.loads(path.read_text())
        return f"pid {facts['pid']} ({facts['what']}, since {facts['since']})"
    except (OSError, ValueError, KeyError):
        return "a process that has not said who it is yet"
