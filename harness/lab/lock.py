"""One run at a time per data directory: a run (and `invoke clean`) holds an exclusive lock on <data root>/.lab.lock,
and a second one is refused at once, saying who holds it. The kernel drops the lock when its holder ends, even by
kill -9, so a killed run never leaves a stale lock behind.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
from contextlib import contextmanager
from datetime import UTC, datetime

from harness import LabError
from harness.lab import store

LOCK_FILE = ".lab.lock"


@contextmanager
def holding(what: str):
    """Hold the data directory's lock for `what` (e.g. "invoke run chapter3"), or refuse naming its holder."""
    root = store.data_root()
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    handle = open(path, "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(f"another run holds {root}: {holder(path)}; wait for it to finish or stop it") from None
        handle.seek(0)
        handle.truncate()
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
