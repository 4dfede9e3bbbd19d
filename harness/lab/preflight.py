"""Checks made before a run starts anything: where data goes is usable and belongs to this spec, and what earlier
runs killed with SIGKILL left behind is cleaned up (or reported while its run is still alive)."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from harness import EXPERIMENTS, ROOT, LabError, say
from harness.lab import store
from harness.lab.services import pgshm


def check_data_root() -> Path:
    """LAB_DATA_DIR (or data/) must be a directory this user can write, or a path one can be created at."""
    root = store.data_root()
    where = f"LAB_DATA_DIR={root}" if "LAB_DATA_DIR" in os.environ else f"the data directory {root}"
    if root.exists() and not root.is_dir():
        raise LabError(f"{where} is a file, not a directory: point LAB_DATA_DIR at a directory "
                       f"(it is created if missing)")
    existing = root
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise LabError(f"{where} cannot be created: {existing} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise LabError(f"{where} is not writable ({existing}: {err.strerror}): point LAB_DATA_DIR at a directory "
                       f"you can write") from None
    return root


def spec_file(path: Path) -> str:
    """How step.json names the spec a step came from: relative to the repository when inside it."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        return str(resolved)


def _owner(meta: dict, chapter: str) -> str | None:
    """The spec a recorded step came from; steps recorded before this was stored came from experiments/<chapter>.toml
    (all committed data did) when that file exists, else from an unknown spec."""
    if meta.get("spec"):
        return meta["spec"]
    legacy = EXPERIMENTS / f"{chapter}.toml"
    return spec_file(legacy) if legacy.exists() else None


def check_spec_home(spec) -> None:
    """A spec's data go to <data>/<its file name>/: refuse to mix them with the steps of another spec of that name
    (e.g. `invoke run elsewhere/smoke.toml` beside experiments/smoke.toml's data)."""
    mine = spec_file(spec.path)
    folder = store.data_root() / spec.chapter
    others: dict[str, list[str]] = {}
    for path in sorted(folder.glob(f"*/{store.STEP_FILE}")) if folder.is_dir() else []:
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        owner = _owner(meta, spec.chapter)
        if owner and owner != mine:
            others.setdefault(owner, []).append(path.parent.name)
    if others:
        owner, steps = next(iter(others.items()))
        raise LabError(
            f"{folder} holds the steps of {owner} ({', '.join(steps[:5])}{' …' if len(steps) > 5 else ''}); "
            f"{mine} has the same file name, and its results would be mixed with them: rename {Path(mine).name}, "
            f"or run it with LAB_DATA_DIR set to another directory")


def _running(pid: int) -> bool:
    """True when `pid` is a live harness (python/invoke) process, which may still be writing its step."""
    if pid == os.getpid():
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"python" in cmdline or b"invoke" in cmdline


def clean_leftovers(chapter: str) -> None:
    """Remove the temporary step directories of runs that died (SIGKILL, power loss); report those of a live run.
    And the shared memory their postgres servers left (pgshm), whatever the chapter."""
    pgshm.clean_up()
    for path, pid in store.leftovers(chapter):
        if _running(pid):
            say(f"note: {path} belongs to a run still going (pid {pid}); left alone")
            continue
        target = path.parent / store.LEFTOVER.match(path.name)["name"]
        if ".old-" in path.name and not target.exists():  # killed between moving a step aside and its successor in
            path.rename(target)
            say(f"restored {target} from {path.name}: a run killed while replacing it (pid {pid}, gone) had moved it aside")
            continue
        shutil.rmtree(path, ignore_errors=True)
        say(f"removed {path}: what a run killed before it could save (pid {pid}, gone) left half-written")
