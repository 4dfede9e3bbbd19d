"""Stability as evidence: every clean run of a chapter leaves a small summary of its claims' values and outcomes in
data/<chapter>/verdicts.csv, so each verdict can say it "held in n of m runs", and a run compared with the book
(`invoke compare`) can say which outcomes moved.

A row per (run, claim): the run's label (its commit and when it started), the commit, the digest of the rules that
judged it, and the claim's value, σ, runs and outcome. Rows are only ever added; a run judged again under the same
label replaces its own rows.
"""
from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from harness.book.claims import CLAIMS_DIR, NOT_REPRODUCED, REPRODUCED, Judgement
from harness.lab.store import complete_steps, data_root, reading

KEPT = "verdicts.csv"
COLUMNS = ["run", "commit", "started", "rules", "claim", "value", "sigma", "runs", "outcome"]
OPPOSITES = {REPRODUCED: NOT_REPRODUCED, NOT_REPRODUCED: REPRODUCED}


def kept(chapter: str, root: Path | None = None) -> pd.DataFrame:
    path = (root or data_root()) / chapter / KEPT
    return pd.read_csv(path, dtype={"commit": str, "run": str}) if path.exists() else pd.DataFrame(columns=COLUMNS)


def rules_digest(chapter: str) -> str:
    path = CLAIMS_DIR / f"{chapter}.toml"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.exists() else "none"


def run_label(chapter: str, root: Path | None = None) -> tuple[str, str, str]:
    """(label, commit, started) of the run a data directory holds: its steps' commit(s) and first start."""
    with reading(root or data_root()):
        metas = complete_steps(chapter)
    commits = sorted({m.get("git_commit", "unknown")[:12] for m in metas.values()})
    started = datetime.fromtimestamp(min((m["started_ms"] for m in metas.values()), default=0) / 1000, UTC)
    commit = "+".join(commits)
    return f"{commit} {started:%Y-%m-%d %H:%M}", commit, started.isoformat(timespec="minutes")


def rows(chapter: str, judgements: list[Judgement], label: tuple[str, str, str]) -> pd.DataFrame:
    run, commit, started = label
    return pd.DataFrame([{"run": run, "commit": commit, "started": started, "rules": rules_digest(chapter),
                          "claim": j.rule.claim, "value": j.measured.value, "sigma": j.measured.sigma,
                          "runs": j.measured.runs, "outcome": j.outcome} for j in judgements], columns=COLUMNS)


def keep(chapter: str, judgements: list[Judgement], label: tuple[str, str, str], root: Path | None = None) -> Path:
    """Add (or replace) one run's rows in the chapter's kept summary; returns its path."""
    path = (root or data_root()) / chapter / KEPT
    old = kept(chapter, root)
    new = rows(chapter, judgements, label)
    merged = pd.concat([old[old["run"] != label[0]], new], ignore_index=True) if len(old) else new
    merged.to_csv(path, index=False)
    return path


def held(chapter: str, judgement: Judgement) -> tuple[int, int]:
    """In how many of the kept runs the claim had this outcome, of how many runs judged it."""
    table = kept(chapter)
    mine = table[table["claim"] == judgement.rule.claim]
    return int((mine["outcome"] == judgement.outcome).sum()), len(mine)


def flips(reference: dict[str, str], other: dict[str, str]) -> list[str]:
    """The claims whose outcome moved between reproduced and not reproduced (through inconclusive is allowed)."""
    return [claim for claim, outcome in other.items() if OPPOSITES.get(reference.get(claim)) == outcome]
