"""The compact formats of a step's tables (harness.lab.store writes and reads them through these).

requests.parquet, small format (step.json's recording.format = "requests"): `start` (int ms from t0_ms), durations
as integer µs (`duration_us`; end_ms is start + duration), small int types, error (and a scenario's `name`)
dictionary-encoded, zstd. k6's phases nest (duration ⊃ http_req_duration ⊃ waiting, blocked ⊃ connecting), so each
is stored as its small gap to an enclosing one (GAPS) when that one is there for every row, else as `<phase>_us`.
The old format (float ms columns, as the book reads them) is read as it is.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

PHASES = ["http_req_duration_ms", "blocked_ms", "connecting_ms", "waiting_ms"]  # optional requests columns (ms)
RECORDING_KEY = b"lab.recording"  # parquet metadata of a compact table: {"format": ..., "t0_ms": ...}

GAPS = {  # phase → (stored column, the enclosing value in µs it is subtracted from)
    "http_req_duration": ("lead_us", lambda us: us["duration"]),  # before k6 sent: blocked + script time
    "blocked": ("lead_gap_us", lambda us: us["duration"] - us["http_req_duration"]),
    "connecting": ("connect_gap_us", lambda us: us["blocked"]),  # blocked but not connecting (a free slot)
    "waiting": ("transfer_us", lambda us: us["http_req_duration"]),  # sending + receiving
}


def _int(values: pd.Series, scale: float = 1.0) -> pd.Series:
    """Rounded to the smallest nullable int type that holds them (int16/int32/int64)."""
    scaled = (pd.to_numeric(values, errors="coerce").astype("float64") * scale).round()
    low, high = (scaled.min(), scaled.max()) if scaled.notna().any() else (0, 0)
    for kind in ("Int16", "Int32", "Int64"):
        info = np.iinfo(kind.lower())
        if info.min <= low and high <= info.max:
            return scaled.astype(kind)
    raise ValueError(f"values up to {high} do not fit an int64")


def encode_requests(requests: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One row per request (the book's columns) → the small format and its t0_ms."""
    starts = pd.to_numeric(requests["start_ms"], errors="coerce") if "start_ms" in requests else pd.Series(dtype="float64")
    t0_ms = int(np.floor(starts.min())) if starts.notna().any() else 0
    out = pd.DataFrame(index=requests.index)
    for column in ("vu", "iteration", "req"):
        if column in requests or column != "req":
            out[column] = _int(requests.get(column, pd.Series(np.nan, index=requests.index)))
    out["start"] = _int(starts - t0_ms)
    duration = requests["duration_ms"] if "duration_ms" in requests else requests.get("end_ms", np.nan) - starts
    out["duration_us"] = _int(duration, 1000)
    for column in ("status", "error_code"):
        out[column] = _int(requests[column]).fillna(0) if column in requests else pd.Series(0, index=out.index, dtype="Int16")
    out["error"] = (requests["error"].fillna("") if "error" in requests else pd.Series("", index=out.index)).astype("category")
    if "name" in requests:
        out["name"] = requests["name"].fillna("").astype("category")
    us = {"duration": out["duration_us"].astype("float64")}
    for column in PHASES:
        if column not in requests:
            continue
        phase = column.removesuffix("_ms")
        us[phase] = _int(requests[column], 1000).astype("float64")
        stored, enclosing = GAPS[phase]
        try:
            base = enclosing(us)
        except KeyError:  # the enclosing phase is not recorded (ab has no blocked or http_req_duration)
            base = None
        if base is not None and not (us[phase].notna() & base.isna()).any():
            out[stored] = _int(base - us[phase])
        else:
            out[f"{phase}_us"] = _int(us[phase])
    return out.reset_index(drop=True), t0_ms


def decode_requests(compact: pd.DataFrame, t0_ms: int) -> pd.DataFrame:
    """The small format → the book's columns, in the old format's types (float ms, int64 status, string error)."""
    out = pd.DataFrame({column: compact[column].astype("Int64") for column in ("vu", "iteration") if column in compact})
    out["start_ms"] = compact["start"].astype("float64") + t0_ms
    out["duration_ms"] = compact["duration_us"].astype("float64") / 1000
    out["end_ms"] = out["start_ms"] + out["duration_ms"]
    out["status"] = compact["status"].astype("int64")
    out["error_code"] = compact["error_code"].astype("int64")
    out["error"] = compact["error"].astype("string")
    extra = [c for c in ("req", "name") if c in compact]
    for column in extra:
        out[column] = compact[column].astype("Int64" if column == "req" else "string")
    us = {"duration": compact["duration_us"].astype("float64")}
    for column in PHASES:  # in GAPS' order: each enclosing phase is decoded before the ones inside it
        phase = column.removesuffix("_ms")
        stored, enclosing = GAPS[phase]
        if f"{phase}_us" in compact:
            us[phase] = compact[f"{phase}_us"].astype("float64")
        elif stored in compact:
            us[phase] = enclosing(us) - compact[stored].astype("float64")
        else:
            continue
        out[column] = us[phase] / 1000
    first = ["vu", "iteration", "start_ms", "end_ms", "duration_ms", "status", "error_code", "error"]
    return out[[c for c in first if c in out] + extra + [c for c in PHASES if c in out]]


def write_requests(requests: pd.DataFrame, path: Path) -> dict:
    """requests.parquet in the small format; returns step.json's `recording`."""
    compact, t0_ms = encode_requests(requests)
    recording = {"format": "requests", "t0_ms": t0_ms}
    write_compact(compact, path, recording)
    return recording


def write_compact(frame: pd.DataFrame, path: Path, recording: dict) -> None:
    """A table without pandas' metadata (about 1.5 kB a file), with the recording it belongs to: zstd at level 19
    (these tables are small: ~0.2 s for 15,000 requests), dictionaries for strings only (a dictionary of 15,000 VU
    numbers costs more than it saves), sorted offsets delta-encoded."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({RECORDING_KEY: json.dumps(recording).encode()})
    strings = [c for c in frame if isinstance(frame[c].dtype, pd.CategoricalDtype) or frame[c].dtype == object]
    deltas = {c: "DELTA_BINARY_PACKED" for c in ("start", "second") if c in frame}
    pq.write_table(table, path, compression="zstd", compression_level=19, use_dictionary=strings, column_encoding=deltas)


def read_parquet(path: Path, name: str) -> pd.DataFrame:
    """Any table, old or compact format, in the columns and units the book reads."""
    table = pq.read_table(path)
    raw = (table.schema.metadata or {}).get(RECORDING_KEY)
    if raw is None:
        return table.to_pandas()
    recording = json.loads(raw)
    frame = table.to_pandas()
    if name == "requests":
        return decode_requests(frame, recording["t0_ms"])
    frame.insert(0, "ts_ms", recording["t0_ms"] + frame["second"].astype("int64") * 1000)
    if "error" in frame:
        frame["error"] = frame["error"].astype("string")
    return frame
