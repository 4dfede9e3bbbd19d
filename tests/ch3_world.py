"""Chapter 3's steps as the model plays them, as synthetic chapter data (for chart tests): each step of
experiments/chapter3.toml answers exactly when model.simulate says (its `completions`), fails at the client timeout,
and is cut off where k6 stops."""
from __future__ import annotations

import functools
import math

import pandas as pd
from conftest import LIMITS

from harness.book.verdict import INTERRUPTED_TEXT
from harness.lab.spec import load_spec
from harness.lab.store import COLUMNS, ChapterData
from harness.models import predict

T0 = 1_800_000_000_000  # the spike: every synthetic request starts here (epoch ms)
OVERHEAD_MS = 20  # an answer ends this long after its wave
STEPS = {s.id: s for s in load_spec("chapter3", LIMITS).steps}


def requests_frame(step: str, ok_ends_s: list[float], failures: list[tuple[str, float]] = (), interrupted: int = 0,
                   extra: int = 0) -> pd.DataFrame:
    """Answers ending at `ok_ends_s`, failures (error text, end s) and requests cut off when k6 stopped.
    `extra` more answered rows stand for users that sent a second request (constant-vus after a fast failure)."""
    rows = [(200, 0, "", T0 + s * 1000 + OVERHEAD_MS) for s in [*ok_ends_s, *[5.0] * extra]]
    rows += [(0, 1050 if text == "request timeout" else 1000, text, T0 + at * 1000) for text, at in failures]
    rows += [(0, -1, INTERRUPTED_TEXT, math.nan)] * interrupted
    frame = pd.DataFrame(rows, columns=["status", "error_code", "error", "end_ms"])
    frame["error"] = frame["error"].astype("string")
    return frame.assign(step=step, vu=range(1, len(frame) + 1), iteration=0, start_ms=float(T0),
                        duration_ms=frame["end_ms"] - T0)


def ss_frame(step: str, estab: int, accept_queue: int) -> pd.DataFrame:
    """Two samples: an idle server, then the peak."""
    return pd.DataFrame({"step": step, "ts_ms": [T0 - 500, T0 + 2000], "estab": [0, estab], "accept_queue": [0, accept_queue],
                         "syn_recv": 0, "listen_overflows": 0})


def model_step(step_id: str) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """A step that behaves exactly as the model predicts: its meta, requests and ss samples."""
    step = STEPS[step_id]
    model = predict(step).as_dict()
    ends = [t / 1000 for t, count in model["completions"] for _ in range(count)]
    stop_s = model["stop_ms"] / 1000
    timeout_s = model["client_timeout_ms"] / 1000
    failures = [("request timeout", timeout_s)] * model["failed"] if timeout_s <= stop_s else []
    requests = requests_frame(step_id, [e for e in ends if e <= stop_s], failures, interrupted=sum(e > stop_s for e in ends))
    mc, ac = step.knob("TOMCAT_MAX_CONNECTIONS"), step.knob("TOMCAT_ACCEPT_COUNT")
    ss = ss_frame(step_id, min(model["requests"], model["ceiling"]), min(max(model["requests"] - mc, 0), ac + 1))
    last = min(max([*ends, timeout_s if model["failed"] else 0]), stop_s)
    meta = {"id": step_id, "findings": list(step.findings), "status": "complete", "started_ms": T0 - 3000 + step.index,
            "config": step.config(), "requests": {"asked": model["requests"], "issued": len(requests)}, "model": model,
            "load_started_ms": T0 - 50, "load_ended_ms": T0 + last * 1000 + 100, "machine": {"nofile_limit": 20000}}
    return meta, requests, ss


@functools.cache
def _model_world() -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    built = {s: model_step(s) for s in STEPS}
    return ({s: b[0] for s, b in built.items()}, pd.concat([b[1] for b in built.values()], ignore_index=True),
            pd.concat([b[2] for b in built.values()], ignore_index=True))


def model_world() -> ChapterData:
    metas, requests, ss = _model_world()
    empty = pd.DataFrame(columns=["step", *COLUMNS["actuator"]])
    return ChapterData("chapter3", {s: dict(m) for s, m in metas.items()}, requests, ss, empty, empty)


def with_step(data: ChapterData, step: str, rows: pd.DataFrame | None = None, ss: pd.DataFrame | None = None,
              asked: int | None = None) -> ChapterData:
    """The chapter with one step's requests (`issued` follows them; `asked` may change too) or ss samples replaced."""
    metas = {**data.steps, step: dict(data.steps[step])}
    requests = data.requests
    if rows is not None:
        counts = metas[step]["requests"]
        metas[step]["requests"] = {"asked": counts["asked"] if asked is None else asked, "issued": len(rows)}
        requests = pd.concat([requests[requests.step != step], rows], ignore_index=True)
    if ss is not None:
        ss = pd.concat([data.ss[data.ss.step != step], ss], ignore_index=True)
    return ChapterData(data.chapter, metas, requests, data.ss if ss is None else ss, data.actuator, data.process)


def with_steps(data: ChapterData, step_ids, build) -> ChapterData:
    for step in step_ids:
        data = with_step(data, step, build(step))
    return data
