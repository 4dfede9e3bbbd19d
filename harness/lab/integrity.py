"""Results that cannot silently rot: a step directory records a digest of every file in it (step.json's `files`), and
reading a step checks them. A file deleted, truncated, edited or copied over from another step makes the step
*broken*, named with the file: `invoke list` shows it, a chapter refuses to judge from it, `invoke run` measures it
again. Steps recorded before digests existed are checked as far as they can be: the tables their recording needs are
there and readable.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

STEP_FILE = "step.json"
STEP_DIGEST = "step.sha256"  # step.json's own digest: the one file its `files` cannot cover
CHUNK = 1 << 20


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


_CHECKED: dict[tuple, str] = {}  # a file's identity and change times → its digest, within this process


def file_identity(path: Path) -> tuple:
    """What any write or replacement of a file changes: its inode, size, mtime or ctime (ctime cannot be set back by
    hand). A result computed from the file stands while this is the same."""
    stat = path.stat()
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def checked_sha256(path: Path) -> str:
    """`sha256(path)`, hashed again only when the file may have changed (its file_identity): a page reads the same
    steps many times."""
    key = (str(path), *file_identity(path))
    if key not in _CHECKED:
        _CHECKED[key] = sha256(path)
    return _CHECKED[key]


def file_digests(step_dir: Path) -> dict[str, dict]:
    """Every file of a step directory but step.json and its digest: {name: {"bytes": size, "sha256": digest}}."""
    return {p.name: {"bytes": p.stat().st_size, "sha256": sha256(p)}
            for p in sorted(step_dir.iterdir()) if p.is_file() and p.name not in (STEP_FILE, STEP_DIGEST)}


def write_step_json(step_dir: Path, text: str) -> None:
    """step.json, then its own digest beside it (step.sha256, as `sha256sum` writes it), so an edit of step.json
    itself is seen too."""
    (step_dir / STEP_FILE).write_text(text)
    (step_dir / STEP_DIGEST).write_text(f"{hashlib.sha256(text.encode()).hexdigest()}  {STEP_FILE}\n")


def step_json_problem(step_dir: Path) -> str:
    """What is wrong with step.json's own digest ("" when it matches, or for a step written before it existed)."""
    path = step_dir / STEP_DIGEST
    if not path.is_file():
        return ""
    try:
        recorded = path.read_text().split()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return f"{STEP_DIGEST} is unreadable"
    if checked_sha256(step_dir / STEP_FILE) != recorded:
        return f"{STEP_FILE} differs from what the run wrote (its digest in {STEP_DIGEST} does not match)"
    return ""


def read_step_json(path: Path) -> tuple[dict | None, str]:
    """(step.json's content, "") or (None, what is wrong with it)."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        return None, f"step.json cannot be read ({err})"
    except json.JSONDecodeError as err:
        return None, f"step.json is not valid JSON ({err}): empty or cut short"
    if not isinstance(meta, dict):
        return None, "step.json holds no step (not a JSON object)"
    return meta, ""


def problem(step_dir: Path, meta: dict) -> str:
    """What makes a complete step unfit to read ("" when it is intact): the first file that is missing, changed
    or unreadable."""
    if own := step_json_problem(step_dir):
        return own
    recorded = meta.get("files")
    if recorded is None:
        return _unrecorded_problem(step_dir, meta)
    for name, facts in recorded.items():
        path = step_dir / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != facts["bytes"]:
            return f"{name} has {path.stat().st_size} bytes where the run wrote {facts['bytes']} (cut short or replaced)"
        if checked_sha256(path) != facts["sha256"]:
            return f"{name} differs from what the run wrote (changed or replaced since)"
    return ""


def needed_tables(meta: dict) -> list[str]:
    """The tables a complete load step's recording needs (none for a redeploy step: startup)."""
    if (meta.get("config") or {}).get("kind") == "redeploy":
        return ["startup"]
    fmt = (meta.get("recording") or {}).get("format", "requests")
    tables = {"requests": ["requests"], "seconds": ["series", "outcomes", "latency"], "summary": []}.get(fmt, [])
    return tables + ["ss", "process"]


def _unrecorded_problem(step_dir: Path, meta: dict) -> str:
    """A step from before digests: the tables its recording needs are there, and each parquet's footer reads."""
    for name in needed_tables(meta):
        path = step_dir / f"{name}.parquet"
        if not path.is_file():
            return f"{name}.parquet is missing"
    for path in sorted(step_dir.glob("*.parquet")):
        try:
            pq.read_metadata(path)
        except Exception as err:  # arrow says why: truncated, not parquet at all …
            return f"{path.name} is unreadable ({type(err).__name__}: {err})"
    return ""


_TREES: dict[tuple, str] = {}


def tree_digest(*paths: Path) -> str:
    """One digest of files and directory trees (each file's path relative to its tree, and its bytes), e.g. a Maven
    project's sources: what a kind's code is, for a step's fingerprint. Cached while no file's size or time changes."""
    files = sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob("*") if p.is_dir() else []) if f.is_file())
    key = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    if key not in _TREES:
        digest = hashlib.sha256()
        for f in files:
            digest.update(f"{f.name}\0{f.stat().st_size}\0".encode())
            digest.update(bytes.fromhex(sha256(f)))
        _TREES[key] = digest.hexdigest()
    return _TREES[key]
