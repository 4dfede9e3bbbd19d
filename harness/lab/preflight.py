"""Checks made before a run starts anything: where data goes is usable and belongs to this spec, and what earlier
runs killed with SIGKILL left behind is cleaned up (or reported while its run is still alive)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
from pathlib import Path

from harness import EXPERIMENTS, ROOT, TOOLS, LabError, say
from harness.lab import store
from harness.lab.load.options import requests_asked, scheduled_ms, stop_ms
from harness.lab.load.recording import record_mode
from harness.lab import leftovers

# What a step writes into the data directory, as rough upper bounds (measured on this lab's own data):
RAW_BYTES_PER_REQUEST = 1536  # k6's CSV (ab's TSV) while the step runs, deleted once read: 1.08 kB a request in
# tests/samples/k6-lab.csv.gz, more with error texts; a test split over k6 processes is merged, so twice that then
ROW_BYTES_PER_REQUEST = 32  # requests.parquet's small format: 6-13 B a request in data/chapter2, 3 and 6
SERIES_BYTES_PER_SECOND = 2048  # per-second recording (series, outcomes, latency): at most 0.6 kB/s in data/
SAMPLE_BYTES = 1024  # one tick of the samplers (ss, actuator, process, cpu, each service's): ~0.3 kB in data/
STEP_BYTES = 4 * 2**20  # step.json, the tool's summary, compressed logs: at most 0.25 MB a step in data/
DISK_RESERVE = 256 * 2**20  # left free: a full disk stops more than the lab
# Requests per second one k6 process can issue at most: chapter 6's fastest k6 steps measured about 5,100/s on its
# 2-core machine (k6 itself the bottleneck); twice that bounds a closed loop on a faster machine.
K6_MAX_RATE = 10_000


def check_data_root() -> Path:
    """LAB_DATA_DIR (or data/) must be a directory this user can write, or a path one can be created at."""
    root, where = named_data_root()
    problem = folder_problem(root, where)
    if problem:
        raise LabError(f"{problem}: point LAB_DATA_DIR at a directory you can write (it is created if missing)")
    return root


def disk_full_note(path: Path) -> str:
    """"; the disk holding <path> is full" when less than 1 MiB is left there (what a tool wrote is then cut short)."""
    try:
        return f"; the disk holding {path} is full" if shutil.disk_usage(path).free < 2**20 else ""
    except OSError:
        return ""


def no_home(path: Path) -> str:
    """Why a path that still starts with ~ names no folder ("" for any other): store.home_expanded found no such
    user."""
    head = str(path).split("/")[0]
    return f"starts with {head}, and no user of that name has a home folder" if head.startswith("~") else ""


def named_data_root() -> tuple[Path, str]:
    """The data directory and how a message names it, refused when LAB_DATA_DIR is set but empty (the working
    directory, to pathlib)."""
    if "LAB_DATA_DIR" in os.environ and not os.environ["LAB_DATA_DIR"].strip():
        raise LabError("LAB_DATA_DIR is set but empty (it would mean the working directory): unset it for data/, or "
                       "point it at a directory")
    root = store.data_root()
    return root, f"LAB_DATA_DIR={root}" if "LAB_DATA_DIR" in os.environ else f"the data directory {root}"


def readable_data_root() -> Path:
    """The data directory, for a command that only reads it (`invoke list`): a missing or read-only one is fine (no
    step ran there); a path no folder can be at (a file, under a file, a link to nothing, a home of no user, a name
    too long) is one LabError, as `invoke run` would refuse it, not a list of steps that never ran."""
    root, where = named_data_root()
    problem = shape_problem(root, where)
    if problem:
        raise LabError(f"{problem}: point LAB_DATA_DIR at a folder of steps, or unset it for data/")
    return root


def folder_problem(folder: Path, where: str) -> str | None:
    """Why `folder` cannot hold what the lab writes (a file, under a file, not writable), or None when it can: it is a
    directory this user can write a file into, or the nearest existing folder above it is."""
    if problem := shape_problem(folder, where):
        return problem
    existing = nearest_existing(folder)
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except (OSError, ValueError) as err:  # a read-only filesystem, no permission
        return f"{where} is not writable ({existing}: {getattr(err, 'strerror', None) or err})"
    return None


def shape_problem(folder: Path, where: str) -> str | None:
    """Why no folder can be at `folder` (a home of no user, a file, under a file, a link to nothing, a name too long),
    or None: it is a directory, or could be created as one."""
    if no_home(folder):
        return f"{where} {no_home(folder)}"
    try:
        if folder.exists() and not folder.is_dir():
            return f"{where} is a file, not a directory"
        existing = nearest_existing(folder)
        if existing.is_symlink() and not existing.exists():
            return f"{where} cannot be used: {existing} is a symbolic link to nothing (its target is missing, or links loop)"
        if not existing.is_dir():
            return f"{where} cannot be created: {existing} is a file, not a directory"
    except (OSError, ValueError) as err:  # a name too long, no permission to look
        return f"{where} cannot be used ({getattr(err, 'strerror', None) or err})"
    return None


def nearest_existing(path: Path) -> Path:
    """`path`, or the nearest folder above it that exists (a symbolic link counts, even one that leads nowhere:
    creating the folders below it would fail there)."""
    path = path.absolute()
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def check_environment(steps) -> None:
    """Before anything starts, every problem of this machine for these steps in one message: the chapter's folder in
    the data directory, the PostgreSQL clusters' folder (steps with a postgres service) and the free disk space."""
    if not steps:
        return
    problems: list[str] = []
    for chapter in sorted({step.chapter for step in steps}):
        if problem := folder_problem(store.data_root() / chapter, f"the chapter's folder {store.data_root() / chapter}"):
            problems.append(problem)
    for step in steps:
        problems += [f"{place} is in the way of step {step.id}: {store.what_it_is(place)}, not a step's folder, which is "
                     f"all a run replaces; move it elsewhere" for place in store.in_the_way(step.chapter, step.id)]
    if any(knobs.get("kind") == "postgres" for step in steps for knobs in step.services.values()):
        problems += cluster_problems()
    if not problems and (problem := disk_problem(steps)):
        problems.append(problem)
    if problems:
        raise LabError("this machine cannot run these steps yet:\n" + "\n".join(f"  - {p}" for p in problems))


def cluster_problems() -> list[str]:
    """The folder of the cached PostgreSQL clusters (services.pgcluster.clusters_root: LAB_PG_CLUSTERS, else
    .tools/postgres/clusters) must be writable, and so must every cluster and lock file in it: a cluster another user
    made (root's, before a run as someone else) cannot be locked, used or replaced."""
    named = os.environ.get("LAB_PG_CLUSTERS")
    hint = "give this run clusters of its own with LAB_PG_CLUSTERS=<a directory you can write>"
    if named is not None and not named.strip():
        return [f"LAB_PG_CLUSTERS is set but empty: unset it for {TOOLS / 'postgres' / 'clusters'}, or {hint}"]
    root = store.clusters_root()
    where = f"LAB_PG_CLUSTERS={root}" if named else f"the PostgreSQL clusters' folder {root}"
    if problem := folder_problem(root, where):
        return [f"{problem}: {hint}"]
    theirs = [entry for entry in sorted(root.iterdir()) if not os.access(entry, os.W_OK)] if root.is_dir() else []
    if theirs:
        owner = _owner_name(theirs[0])
        return [f"{where} holds clusters this user (uid {os.geteuid()}) cannot use: {', '.join(p.name for p in theirs[:3])}"
                f"{' …' if len(theirs) > 3 else ''} belong to {owner}; run as {owner}, or {hint}"]
    return []


def _owner_name(path: Path) -> str:
    uid = path.stat().st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def requests_bound(load: dict) -> int:
    """At most how many requests a step's load issues: what its k6 processes can issue in the scheduled time, and no
    more than it asks when that is fixed (iterations, or rate × duration; constant-vus and ramping-vus loop as fast as
    the server answers). ab sends the iterations it is given."""
    if load["tool"] == "ab":
        return requests_asked(load)
    most = int(scheduled_ms(load) / 1000 * K6_MAX_RATE * load.get("processes", 1))
    return most if load["executor"] in ("constant-vus", "ramping-vus") else min(requests_asked(load), most)


def step_bytes(step) -> tuple[int, int]:
    """(what the step keeps, what it writes besides while it runs) in bytes, as upper bounds."""
    if step.kind != "load":
        return STEP_BYTES, 0
    requests, seconds = requests_bound(step.load), stop_ms(step.load) / 1000
    tool = step.load["tool"]
    raw = 0 if tool == "wrk" else requests * RAW_BYTES_PER_REQUEST * (2 if step.load.get("processes", 1) > 1 else 1)
    mode = "summary" if tool == "wrk" else "requests" if tool == "ab" else record_mode(step.system["record"],
                                                                                       step.requests_asked)
    rows = {"requests": requests * ROW_BYTES_PER_REQUEST, "seconds": seconds * SERIES_BYTES_PER_SECOND}.get(mode, 0)
    samples = seconds * 1000 / step.system["sample_interval_ms"] * SAMPLE_BYTES if step.system["sampling"] else 0
    return int(STEP_BYTES + rows + samples), int(raw)


def disk_problem(steps) -> str | None:
    """Whether the data directory's filesystem has room for what these steps write: all they keep, plus the most one
    writes while it runs (the load tool's raw output, read back and deleted after its step)."""
    sizes = {step.id: step_bytes(step) for step in steps}
    largest = max(sizes, key=lambda s: sizes[s][1], default=None)
    need = sum(kept for kept, _ in sizes.values()) + (sizes[largest][1] if largest else 0) + DISK_RESERVE
    root = store.data_root()
    free = shutil.disk_usage(nearest_existing(root)).free
    if need <= free:
        return None
    mb = 2**20
    return (f"the data directory {root} has {free / mb:,.0f} MB free, and these {len(steps)} step(s) may need up to "
            f"{need / mb:,.0f} MB (the most at once for step {largest}: {sizes[largest][1] / mb:,.0f} MB of the load "
            f"tool's raw output while it runs, deleted once read; {DISK_RESERVE // mb} MB kept free): free some space, "
            f"run fewer steps (--step), or point LAB_DATA_DIR at a larger filesystem")


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
    First what killed runs left outside their data (harness.lab.leftovers), whatever the chapter."""
    leftovers.sweep()
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
