"""data/<chapter>/<step-id>/: written atomically, read back as DataFrames.

A step is written into a hidden temporary directory beside its final place and renamed into place
when done. A failed step is kept with status `failed` and its reason, but never replaces a complete
one: then it goes to `.<step-id>.failed/` so nothing measured is lost and nothing good is overwritten.
"""
from __future__ import annotations

import errno
import functools
import gzip
import json
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from harness import DATA, TOOLS, LabError
from harness.lab import histogram, integrity
from harness.lab.compact import read_parquet, write_compact, write_requests
from harness.lab.backends.process import StepFailed

STEP_FILE = "step.json"
TEMP_DIR = ".tmp"  # in a step's work directory: its JVMs' java.io.tmpdir (Tomcat's work folders), removed before saving
LOAD_TABLES = ("requests", "ss", "actuator", "process")  # what a load step writes
SERIES_TABLES = ("series", "outcomes", "latency")  # instead of requests when a step records per second
TABLES = (*LOAD_TABLES, "startup", *SERIES_TABLES)  # a redeploy step (chapter 2) writes startup only
# The documented columns of each table (ARCHITECTURE.md); more may follow, these never change name.
COLUMNS = {
    "requests": ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error"],
    "ss": ["ts_ms", "estab", "syn_recv", "time_wait", "close_wait", "other_states", "accept_queue",
           "accept_backlog", "listen_overflows", "listen_drops", "syncookies_sent"],
    "actuator": ["ts_ms", "metric", "value"],
    "process": ["ts_ms", "process", "rss_bytes", "cpu_seconds"],
    "cpu": ["ts_ms", "cpu", "busy_seconds", "idle_seconds"],  # per CPU from /proc/stat (cumulative)
    "startup": ["start", "started_ms", "startup_ms", "rss_bytes"],  # redeploy steps only
    # Per-second recording (steps beyond ~20k requests); `second` counts from step.json's recording.t0_ms.
    "series": ["ts_ms", "second", "started", "requests", "vus", "dropped_iterations", "max_ms"],
    "outcomes": ["ts_ms", "second", "status", "error_code", "error", "requests"],
    "latency": ["ts_ms", "second", "bucket", "count"],  # harness.lab.histogram buckets of http_req_duration
}
LONG_COLUMNS = ["ts_ms", "metric", "value"]  # a service's own metrics (<service>.parquet), like actuator.parquet
SERVICE_COLUMNS = [*LONG_COLUMNS, "service", "step"]


def answered(requests: pd.DataFrame) -> pd.Series:
    """The book's one classification of a request: answered when the client got a 2xx or 3xx response and k6 recorded
    no error; every other request failed (no response, a k6 error, or a 4xx/5xx). Step counts, tables, charts and
    verdicts all use this."""
    return requests["status"].between(200, 399) & (requests["error_code"] == 0)


_READING: list[Path] = []  # data roots `reading` put first


def data_root() -> Path:
    """Where steps live; LAB_DATA_DIR moves it (tests use a temporary one so data/ stays untouched), and `reading`
    points the reading side at another for a while (a run compared with the book)."""
    return _READING[-1] if _READING else home_expanded(Path(os.environ.get("LAB_DATA_DIR", DATA)))


def clusters_root() -> Path:
    """Where PostgreSQL's clusters are cached (services.pgcluster): LAB_PG_CLUSTERS (~ expanded), else the clone's own;
    preflight.cluster_problems refuses a set but empty one."""
    return home_expanded(Path(os.environ.get("LAB_PG_CLUSTERS") or TOOLS / "postgres" / "clusters"))


def home_expanded(path: Path) -> Path:
    """`path` with a leading ~ or ~user expanded (a quoted "~/x" reaches the lab as is); as is for no such user."""
    try:
        return path.expanduser()
    except RuntimeError:
        return path


@contextmanager
def reading(root: Path):
    """Read steps from `root` inside the block (e.g. another run's data directory, to compare it with the book's)."""
    _READING.append(Path(root))
    try:
        yield
    finally:
        _READING.pop()


def step_dir(chapter: str, step_id: str) -> Path:
    return data_root() / chapter / step_id


BROKEN = "broken"  # a complete step whose files no longer are what its run wrote (harness.lab.integrity)


def read_meta(chapter: str, step_id: str) -> dict | None:
    """A step's step.json, None when there is none; a complete step whose files are not what its run wrote (or an
    unreadable step.json) comes back with status "broken" and the reason, naming the file."""
    path = step_dir(chapter, step_id) / STEP_FILE
    try:
        return _read_meta(path, step_id)
    except OSError as err:  # a folder or file this user may not read (os.stat raises then, on Python 3.11)
        return {"id": step_id, "status": BROKEN, "reason": f"{err.filename} cannot be read ({err.strerror})"}


def _read_meta(path: Path, step_id: str) -> dict | None:
    folder = path.parent
    if not os.path.lexists(folder):
        return None  # a run writes step.json before it moves a step into place
    refused = "a run replaces no such thing: move it elsewhere first"
    if folder.is_symlink() or not folder.is_dir():  # a link may be another step's: its numbers would be misnamed
        return {"id": step_id, "status": BROKEN, "reason": f"{what_it_is(folder)}, not a step's folder ({refused})"}
    if not path.exists():
        return {"id": step_id, "status": BROKEN, "reason": f"its folder has no {STEP_FILE} (deleted, or copied in part; "
                                                           f"{refused})"}
    meta, unreadable = integrity.read_step_json(path)
    if meta is None:
        return {"id": step_id, "status": BROKEN, "reason": unreadable}
    if meta.get("status") == "complete" and (problem := integrity.problem(path.parent, meta)):
        return meta | {"status": BROKEN, "reason": problem}
    return meta


def is_complete(chapter: str, step_id: str) -> bool:
    meta = read_meta(chapter, step_id)
    return bool(meta and meta.get("status") == "complete")


class BrokenData(LabError):
    """Complete steps whose files changed since their run: a chapter refuses to read them."""


def failed_attempt(chapter: str, step_id: str) -> dict | None:
    """The step.json of a failed attempt kept beside a complete step (`.<step-id>.failed/`), if any."""
    path = step_dir(chapter, step_id).parent / f".{step_id}.failed" / STEP_FILE
    if not os.path.lexists(path):
        return None
    meta, unreadable = integrity.read_step_json(path)
    return meta if meta is not None else {"status": BROKEN, "reason": f"{path.parent.name}/{unreadable}"}


LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?:partial|old)-(?P<pid>\d+)$")  # StepWriter's and _replace's temporaries


def leftovers(chapter: str) -> list[tuple[Path, int]]:
    """Temporary step directories (`.<step>.partial-<pid>/`, `.<name>.old-<pid>/`) and the pid that made each."""
    root = data_root() / chapter
    found = [(p, LEFTOVER.match(p.name)) for p in sorted(root.glob(".*"))] if root.is_dir() else []
    return [(p, int(m["pid"])) for p, m in found if m and p.is_dir()]


@contextmanager
def _writing(what: str, error: type[Exception] = StepFailed):
    """A write into the step directory that fails (a full disk above all) ends the step with a clear reason (a
    StepFailed, the run goes on), or the run with a LabError where not even that can be recorded."""
    try:
        yield
    except OSError as err:
        full = err.errno == errno.ENOSPC or "No space left" in str(err)  # pyarrow's errors may carry no errno
        why = "the disk is full (no space left on device): free some space and run the step again" if full else err
        raise error(f"could not write {what}: {why}") from None


class StepWriter:
    """Collects a step's files in a temporary directory; `finish` moves them into place."""

    def __init__(self, chapter: str, step_id: str):
        self.chapter, self.step_id = chapter, step_id
        self.final = step_dir(chapter, step_id)
        self.path = self.final.parent / f".{step_id}.partial-{os.getpid()}"
        shutil.rmtree(self.path, ignore_errors=True)
        with _writing(f"the step directory {self.path}", LabError):
            self.path.mkdir(parents=True)
        self.recording: dict | None = None  # step.json's `recording` once requests or series are written

    def table(self, name: str, rows: list[dict] | pd.DataFrame) -> None:
        """A table of the step: one of COLUMNS, or a service's own metrics (<service>.parquet, long format)."""
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
        with _writing(f"{name}.parquet into {self.path}"):
            if name == "requests":
                self.recording = write_requests(frame, self.path / "requests.parquet")
                return
            for column in COLUMNS.get(name, LONG_COLUMNS):
                if column not in frame:
                    frame[column] = pd.Series(dtype="float64")
            frame.to_parquet(self.path / f"{name}.parquet", index=False, compression="zstd")

    def series(self, t0_ms: int, tables: dict[str, pd.DataFrame]) -> None:
        """The per-second tables (series, outcomes, latency: `second` offsets from t0_ms, no ts_ms column)."""
        self.recording = {"format": "seconds", "t0_ms": int(t0_ms)}
        for name in SERIES_TABLES:
            with _writing(f"{name}.parquet into {self.path}"):
                write_compact(tables[name], self.path / f"{name}.parquet", self.recording)

    def summary(self) -> None:
        """No table: the load tool gave totals only (wrk, in step.json's `requests`)."""
        self.recording = {"format": "summary"}

    def gzip(self, source: Path, name: str) -> None:
        """Compress a log into the step directory as <name>.gz and drop the original."""
        if source.exists():
            with _writing(f"{name}.gz into {self.path}"), open(source, "rb") as raw, \
                    gzip.open(self.path / f"{name}.gz", "wb") as packed:
                shutil.copyfileobj(raw, packed)
            source.unlink()

    def finish(self, meta: dict, aside: str | None = None) -> Path:
        """Write step.json (and its own digest, step.sha256) and move the step into place, or aside to `.<aside>/`
        (a void run); returns where it went. When not even step.json can be written, the run stops (LabError): the
        next run removes the half-written step (preflight.clean_leftovers)."""
        shutil.rmtree(self.path / TEMP_DIR, ignore_errors=True)  # the JVMs' temporary files are not results
        with _writing(f"{STEP_FILE} of step {self.step_id} ({meta.get('status')}) into {self.path}", LabError):
            meta["files"] = integrity.file_digests(self.path)
            integrity.write_step_json(self.path, json.dumps(meta, indent=2, default=str) + "\n")
        target = self.final
        if aside:
            target = self.final.parent / f".{aside}"
        elif meta["status"] != "complete" and is_complete(self.chapter, self.step_id):
            target = self.final.parent / f".{self.step_id}.failed"
        _replace(self.path, target)
        return target

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def in_the_way(chapter: str, step_id: str) -> list[Path]:
    """What a run of this step would replace and must not: a file, or a folder without a step.json (a reader's own,
    or a step whose step.json was deleted: its other files are still measured data), at the step's place or at that
    of its kept failed attempt."""
    places = (step_dir(chapter, step_id), step_dir(chapter, f".{step_id}.failed"))
    return [place for place in places if os.path.lexists(place) and not is_step_folder(place)]


def is_step_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and (path / STEP_FILE).is_file()


def what_it_is(path: Path) -> str:
    """What a thing that is not a step's folder is, in words (for the messages that refuse to replace it)."""
    if path.is_symlink():
        return f"a link to {os.readlink(path)}"
    return f"a folder without {STEP_FILE}" if path.is_dir() else "a file"


def _replace(source: Path, target: Path) -> None:
    """Rename source to target; an existing target (a step's folder: preflight refused anything else) is moved aside
    first and removed after."""
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if os.path.lexists(target):
        if not is_step_folder(target):  # a last guard: not even a run started before it appeared removes it
            raise LabError(f"{target} is {what_it_is(target)}, not a step's folder: it was left as it is, and this "
                           f"step stays in {source}")
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
    series: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS["series"] + ["step"]))
    outcomes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS["outcomes"] + ["step"]))
    latency: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS["latency"] + ["step"]))
    # Each [services.<name>]'s own metrics (<name>.parquet: pg_stat_*, stub_status …), long format, with `service`.
    services: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SERVICE_COLUMNS))
    # Every run of each step (spec: runs = n) by the step's id, first run first: {id: [step.json, …]}. `steps` and
    # the tables hold the first runs; a repeat's tables come from load_run(chapter, "<id>.<k>").
    runs: dict[str, list[dict]] = field(default_factory=dict)

    def meta(self, step_id: str) -> dict:
        return self.steps[step_id]

    def only(self, step_ids: list[str]) -> ChapterData:
        """The same chapter with just these steps (for a chart about some of them)."""
        keep = {s: self.steps[s] for s in step_ids}
        tables = {name: getattr(self, name) for name in (*TABLES, "services")}
        return ChapterData(self.chapter, keep, **{n: t[t["step"].isin(keep)] for n, t in tables.items()},
                           runs={s: self.runs.get(s, [self.steps[s]]) for s in step_ids})

    def service(self, name: str, step: str | None = None) -> pd.DataFrame:
        """One service's metrics (ts_ms, metric, value, step), of one step or all."""
        rows = self.services[self.services.service == name]
        return rows[rows.step == step] if step is not None else rows


def complete_steps(chapter: str, only: str | None = None) -> dict[str, dict]:
    """Every complete step of a chapter by id (`only`: that one, as a verdict reads each run); BrokenData (naming each
    step and file, and the fix) when one's files are not what its run wrote: nothing is judged from changed data."""
    root = data_root() / chapter
    metas, broken = {}, []
    for folder in [root / only] if only else sorted(p for p in root.glob("[!.]*") if p.is_dir()):  # not .partial …
        meta = read_meta(chapter, folder.name) or {}
        if meta.get("status") == BROKEN:
            broken.append(f"  - {folder}: {meta['reason']}")
        elif meta.get("status") == "complete":
            metas[folder.name] = meta
    if broken:
        raise BrokenData(f"{len(broken)} step(s) of {chapter} are broken, so nothing is read from them:\n"
                         + "\n".join(broken) + f"\nre-run them (`invoke run {chapter}` measures broken steps again) or "
                         f"restore the committed ones (`git checkout -- {root}`)")
    return metas


def read_table(chapter: str, step_id: str, name: str) -> pd.DataFrame:
    """A step's table; empty with the documented columns when the step never got that far. A compact table (requests
    in the small format, the per-second tables) comes back decoded: the same columns and units as the old format."""
    path = step_dir(chapter, step_id) / f"{name}.parquet"
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS[name])
    return _decoded(path, name, integrity.file_identity(path)).copy()


@functools.lru_cache(maxsize=4096)
def _decoded(path: Path, name: str, identity: tuple) -> pd.DataFrame:
    """A table file decoded once per process while it is unchanged: a page, or a test process, reads the same runs
    many times (chapter 4's table of runs reads each of its ~500 runs for every page that shows it). Its callers get
    copies, so none sees what another did to its frame."""
    return read_parquet(path, name)


def latency_percentiles(chapter: str, step_id: str, by: str | None = "second") -> pd.DataFrame:
    """A per-second step's http_req_duration percentiles (ms, within 1 %) and exact max: per second (`ts_ms`,
    `second`, `requests`, `p50`, `p90`, `p99`, `p999`, `max_ms`), or one row for the whole step with `by=None`."""
    return percentiles(read_table(chapter, step_id, "latency"), read_table(chapter, step_id, "series"), by)


def percentiles(latency: pd.DataFrame, series: pd.DataFrame, by: str | None = "second") -> pd.DataFrame:
    """The same from a step's latency and series tables (as read_table gives them)."""
    out = histogram.quantiles(latency, by)
    if by is None:
        return out.assign(max_ms=series["max_ms"].max() if len(series) else float("nan"))
    return out.merge(series[[by, "max_ms"]], on=by, how="left").merge(latency[[by, "ts_ms"]].drop_duplicates(by), on=by)


def run_of(step_id: str) -> tuple[str, int]:
    """(the step's id, which run) of a step directory's name: `<id>` is run 1, `<id>.<k>` run k."""
    base, _, run = step_id.partition(".")
    return base, int(run) if run.isdigit() else 1


def load(chapter: str) -> ChapterData:
    """A chapter's complete steps: the first run of each, its tables read, and every run's step.json in `runs`."""
    every = complete_steps(chapter)
    runs: dict[str, list[dict]] = {}
    for step_id, meta in sorted(every.items(), key=lambda item: run_of(item[0])):
        runs.setdefault(run_of(step_id)[0], []).append(meta)
    return _read(chapter, {s: m for s, m in every.items() if run_of(s)[1] == 1}, runs)


def load_run(chapter: str, step_id: str) -> ChapterData:
    """One run of a step (`<id>` or `<id>.<k>`), with its tables: what a verdict reads of each run."""
    meta = complete_steps(chapter, only=step_id)[step_id]
    return _read(chapter, {step_id: meta}, {run_of(step_id)[0]: [meta]})


def _read(chapter: str, steps: dict[str, dict], runs: dict[str, list[dict]]) -> ChapterData:
    tables = {}
    for name in TABLES:  # a step without the file (a per-second step has no requests) adds no rows
        frames = [read_table(chapter, s, name).assign(step=s) for s in steps if (step_dir(chapter, s) / f"{name}.parquet").exists()]
        tables[name] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS[name] + ["step"])
    return ChapterData(chapter, steps, **tables, services=_service_tables(chapter, steps), runs=runs)


def _service_tables(chapter: str, steps: dict[str, dict]) -> pd.DataFrame:
    """Every step's service tables, one long frame: the services step.json names that left a <name>.parquet."""
    frames = [pd.read_parquet(path).assign(service=name, step=step)
              for step, meta in steps.items() for name in meta.get("services", {})
              if (path := step_dir(chapter, step) / f"{name}.parquet").exists()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SERVICE_COLUMNS)
