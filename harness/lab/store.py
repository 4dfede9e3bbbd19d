"""data/<chapter>/<step-id>/: written atomically, read back as DataFrames.

A step is written into a hidden temporary directory beside its final place and renamed into place
when done. A failed step is kept with status `failed` and its reason, but never replaces a complete
one: then it goes to `.<step-id>.failed/` so nothing measured is lost and nothing good is overwritten.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from harness import DATA

STEP_FILE = "step.json"
LOAD_TABLES = ("requests", "ss", "actuator", "process")  # what a load step writes
TABLES = (*LOAD_TABLES, "startup")  # a redeploy step (chapter 2) writes startup only
# The documented columns of each table (ARCHITECTURE.md); more may follow, these never change name.
COLUMNS = {
    "requests": ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error"],
    "ss": ["ts_ms", "estab", "syn_recv", "time_wait", "close_wait", "other_states", "accept_queue",
           "accept_backlog", "listen_overflows", "listen_drops", "syncookies_sent"],
    "actuator": ["ts_ms", "metric", "value"],
    "process": ["ts_ms", "process", "rss_bytes", "cpu_seconds"],
    "cpu": ["ts_ms", "cpu", "busy_seconds", "idle_seconds"],  # per CPU from /proc/stat (cumulative)
    "startup": ["start", "started_ms", "startup_ms", "rss_bytes"],  # redeploy steps only
}


def answered(requests: pd.DataFrame) -> pd.Series:
    """The book's one classification of a request: answered when the client got a 2xx or 3xx response and k6 recorded
    no error; every other request failed (no response, a k6 error, or a 4xx/5xx). Step counts, tables, charts and
    verdicts all use this."""
    return requests["status"].between(200, 399) & (requests["error_code"] == 0)


def data_root() -> Path:
    """Where steps live; LAB_DATA_DIR moves it (tests use a temporary one so data/ stays untouched)."""
    return Path(os.environ.get("LAB_DATA_DIR", DATA))


def step_dir(chapter: str, step_id: str) -> Path:
    return data_root() / chapter / step_id


def read_meta(chapter: str, step_id: str) -> dict | None:
    path = step_dir(chapter, step_id) / STEP_FILE
    return json.loads(path.read_text()) if path.exists() else None


def is_complete(chapter: str, step_id: str) -> bool:
    meta = read_meta(chapter, step_id)
    return bool(meta and meta.get("status") == "complete")


def failed_attempt(chapter: str, step_id: str) -> dict | None:
    """The step.json of a failed attempt kept beside a complete step (`.<step-id>.failed/`), if any."""
    path = step_dir(chapter, step_id).parent / f".{step_id}.failed" / STEP_FILE
    return json.loads(path.read_text()) if path.exists() else None


LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?:partial|old)-(?P<pid>\d+)$")  # StepWriter's and _replace's temporaries


def leftovers(chapter: str) -> list[tuple[Path, int]]:
    """Temporary step directories (`.<step>.partial-<pid>/`, `.<name>.old-<pid>/`) and the pid that made each."""
    root = data_root() / chapter
    found = [(p, LEFTOVER.match(p.name)) for p in sorted(root.glob(".*"))] if root.is_dir() else []
    return [(p, int(m["pid"])) for p, m in found if m and p.is_dir()]


class StepWriter:
    """Collects a step's files in a temporary directory; `finish` moves them into place."""

    def __init__(self, chapter: str, step_id: str):
        self.chapter, self.step_id = chapter, step_id
        self.final = step_dir(chapter, step_id)
        self.path = self.final.parent / f".{step_id}.partial-{os.getpid()}"
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)

    def table(self, name: str, rows: list[dict] | pd.DataFrame) -> None:
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
        for column in COLUMNS[name]:
            if column not in frame:
                frame[column] = pd.Series(dtype="float64")
        frame.to_parquet(self.path / f"{name}.parquet", index=False, compression="zstd")

    def gzip(self, source: Path, name: str) -> None:
        """Compress a log into the step directory as <name>.gz and drop the original."""
        if source.exists():
            with open(source, "rb") as raw, gzip.open(self.path / f"{name}.gz", "wb") as packed:
                shutil.copyfileobj(raw, packed)
            source.unlink()

    def finish(self, meta: dict) -> Path:
        """Write step.json and move the step into place; returns where it went."""
        (self.path / STEP_FILE).write_text(json.dumps(meta, indent=2, default=str) + "\n")
        target = self.final
        if meta["status"] != "complete" and is_complete(self.chapter, self.step_id):
            target = self.final.parent / f".{self.step_id}.failed"
        _replace(self.path, target)
        return target

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _replace(source: Path, target: Path) -> None:
    """Rename source to target; an existing target is moved aside first and removed after."""
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists():
        target.rename(old)
    source.rename(target)
    shutil.rmtree(old, ignore_errors=True)


# ---- reading -------------------------------------------------------------------------------------

@dataclass
class ChapterData:
    """Every complete step of a chapter: step metadata and the tables, each with a `step` column."""

    chapter: str
    steps: dict[str, dict]
    requests: pd.DataFrame
    ss: pd.DataFrame
    actuator: pd.DataFrame
    process: pd.DataFrame
    startup: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS["startup"] + ["step"]))

    def meta(self, step_id: str) -> dict:
        return self.steps[step_id]

    def only(self, step_ids: list[str]) -> ChapterData:
        """The same chapter with just these steps (for a chart about some of them)."""
        keep = {s: self.steps[s] for s in step_ids}
        tables = {name: getattr(self, name) for name in TABLES}
        return ChapterData(self.chapter, keep, **{n: t[t["step"].isin(keep)] for n, t in tables.items()})


def complete_steps(chapter: str) -> dict[str, dict]:
    root = data_root() / chapter
    metas = {}
    for path in sorted(root.glob(f"*/{STEP_FILE}")):
        meta = json.loads(path.read_text())
        if meta.get("status") == "complete":
            metas[path.parent.name] = meta
    return metas


def read_table(chapter: str, step_id: str, name: str) -> pd.DataFrame:
    """A step's table; empty with the documented columns when the step never got that far."""
    path = step_dir(chapter, step_id) / f"{name}.parquet"
    return pd.read_parquet(path) if path.exists() else pd.DataFrame(columns=COLUMNS[name])


def load(chapter: str) -> ChapterData:
    steps = complete_steps(chapter)
    tables = {}
    for name in TABLES:
        frames = [read_table(chapter, s, name).assign(step=s) for s in steps]
        tables[name] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS[name] + ["step"])
    return ChapterData(chapter, steps, **tables)
