"""The duration estimates (harness.models.duration) against the wall times of the committed steps: per chapter the
steps, measured total, the estimate it replaces ("before": 4 s a step plus the model's minimum) and this one
("after"), with the worst steps; then the chapters the generic constants were measured in (FIT_CHAPTERS) and the
others, which check them; then the error by kind of step.

    python -m harness.models.duration_check [data dir]     (default: data/)

Each step is rebuilt from its chapter's spec now (matched by id) and estimated as it ran: a postgres template loaded
where its step.json says so, and the sample server started where the lab of the time started it idle.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import DATA, LabError
from harness.lab.spec import Step, load_spec
from harness.models.duration import (FIT_CHAPTERS, STARTUP_ALLOWANCE_MS, estimate, is_batch, needs_server, one_request,
                                     server_start_ms)


def measured_steps(data: Path, chapter: str) -> list[tuple[Step, dict]]:
    """The chapter's complete steps in data/, each as its spec makes it now (matched by id) with its step.json; the
    spec checked against the limits of the machine that measured them."""
    metas = [json.loads(p.read_text()) for p in sorted((data / chapter).glob("*/step.json"))]
    metas = {m["id"]: m for m in metas if m.get("status") == "complete"}
    if not metas:
        return []
    machine = next(iter(metas.values()))["machine"]
    limits = {"nofile": machine["nofile_limit"], "somaxconn": machine.get("somaxconn_before", machine["somaxconn"]),
              "can_raise_somaxconn": True, "cores": machine["cores"]}
    return [(step, metas[step.id]) for step in load_spec(chapter, limits).steps if step.id in metas]


def as_run_ms(step: Step, meta: dict) -> int:
    """The estimate for the step as it ran: its template loaded when step.json says so, and the sample server's
    start when it ran idle (before steps started only the services they need)."""
    cold = any(service.get("template_reused") is False for service in (meta.get("services") or {}).values())
    idle = step.kind == "load" and not needs_server(step) and "startup_ms" in meta
    return estimate(step, cold).duration_ms + (server_start_ms(step) if idle else 0)


def before_ms(step: Step, meta: dict) -> int:
    """The estimate this module replaces, from the prediction stored with the step."""
    if step.kind == "redeploy":
        return STARTUP_ALLOWANCE_MS * step.starts
    return STARTUP_ALLOWANCE_MS + (meta.get("model") or {}).get("min_duration_ms", 0)


def step_kind(step: Step) -> str:
    if step.kind == "redeploy":
        return "redeploy"
    load = step.load
    extra = " batch" if is_batch(load) else "" if one_request(step) else " scenario"
    return f"{load['tool']} {load['executor']}{extra}" + (f" ×{load['processes']}" if load.get("processes", 1) > 1 else "")


@dataclass(frozen=True)
class Row:
    chapter: str
    step: Step
    measured_ms: float  # step.json's wall_s
    before_ms: int
    after_ms: int


def _clock(ms: float) -> str:
    seconds = round(ms / 1000)
    return f"{seconds // 60}:{seconds % 60:02d}"


def _error(estimated: float, measured: float) -> str:
    return f"{100 * (estimated - measured) / measured:+.0f}%" if measured else "n/a"


def _totals(rows: list[Row]) -> tuple[float, float, float]:
    return (sum(r.measured_ms for r in rows), sum(r.before_ms for r in rows), sum(r.after_ms for r in rows))


def rows_of(data: Path, lines: list[str]) -> list[Row]:
    """Every chapter folder's measured steps with both estimates; a folder no spec reads is named in `lines`."""
    rows = []
    for chapter in sorted(p.name for p in data.iterdir() if p.is_dir()):
        try:
            steps = measured_steps(data, chapter)
        except LabError as err:
            lines.append(f"{chapter:<10} skipped: {str(err).splitlines()[0]}")
            continue
        rows += [Row(chapter, s, m["wall_s"] * 1000, before_ms(s, m), as_run_ms(s, m)) for s, m in steps]
    return rows


def report(data: Path) -> list[str]:
    """Per chapter: steps, measured, before and after (totals and error), the worst steps; then the fit and check
    chapters' totals and the error by kind of step."""
    if not data.is_dir():
        raise LabError(f"no data directory {data}: give the folder that holds the chapters' step folders")
    lines = [f"{'chapter':<10}{'steps':>6}{'measured':>10}{'before':>16}{'after':>16}  worst steps (after)"]
    rows = rows_of(data, lines)
    for chapter in sorted({r.chapter for r in rows}):
        mine = [r for r in rows if r.chapter == chapter]
        measured, before, after = _totals(mine)
        worst = sorted(mine, key=lambda r: -abs(r.after_ms - r.measured_ms))[:3]
        lines.append(f"{chapter:<10}{len(mine):>6}{_clock(measured):>10}{_clock(before):>8} {_error(before, measured):>6}"
                     f"{_clock(after):>9} {_error(after, measured):>6}  "
                     + ", ".join(f"{r.step.id} {(r.after_ms - r.measured_ms) / 1000:+.0f} s" for r in worst))
    for name, group in (("fit", [r for r in rows if r.chapter in FIT_CHAPTERS]),
                        ("check", [r for r in rows if r.chapter not in FIT_CHAPTERS])):
        if group:
            measured, before, after = _totals(group)
            lines.append(f"{name} ({', '.join(sorted({r.chapter for r in group}))}): measured {_clock(measured)}, "
                         f"before {_error(before, measured)}, after {_error(after, measured)}")
    lines.append(f"{'step kind':<34}{'steps':>6}{'measured':>10}{'after':>8}{'mean |error|':>14}")
    for kind in sorted({step_kind(r.step) for r in rows}):
        group = [r for r in rows if step_kind(r.step) == kind]
        measured, _, after = _totals(group)
        mean = sum(abs(r.after_ms - r.measured_ms) / r.measured_ms for r in group) / len(group) * 100
        lines.append(f"{kind:<34}{len(group):>6}{_clock(measured):>10}{_error(after, measured):>8}{mean:>13.0f}%")
    return lines


if __name__ == "__main__":
    try:
        print("\n".join(report(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)))
    except LabError as err:
        sys.exit(str(err))
