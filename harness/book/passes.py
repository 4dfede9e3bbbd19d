"""Verdicts by a protocol the data cannot steer: every kept pass of a chapter, judged together.

A pass is a whole chapter run from a clean clone at one commit (every step of the spec complete with all its runs, no
`+dirty` commit, no void run left standing). `invoke compare chapterN --data DIR --keep` keeps one: it appends each
claim's per-run values, as that pass's code measured them, to data/<chapter>/passes.csv, with the digest of the
rules that judged them (`rules_digest`: the claims file, the spec's runs per step, and the bytes of the code that
computes each statistic). Rows are only ever appended; a pass is withdrawn only by appending to withdrawn.csv a row
that says why. data/<chapter>/verdicts.csv holds the judgements made before the protocol (frozen, never rewritten).

The book's verdict pools every kept pass judged under the current rules (`pooled`): the mean of the passes' means,
its σ on two levels (Kalibera & Jones, ISMM 2013): between passes, the spread of their means / √p, and within
passes, each pass's own σ of its mean combined; the larger judges. A claim declared exact is exact only if every run of
every pass gave one value; otherwise its spread judges it.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness import DATA, ROOT, LabError
from harness.book.claims import CLAIMS_DIR, NOT_REPRODUCED, REPRODUCED, Judgement, Measured, judge, rules
from harness.lab import store
from harness.lab.protocol import protocol
from harness.lab.spec import ANY_MACHINE, load_spec

PASSES, WITHDRAWN = "passes.csv", "withdrawn.csv"
COLUMNS = ["pass", "commit", "started", "rules", "steps", "claim", "values", "borrowed_sigma", "exact", "nearby",
           "busy", "outcome"]
WITHDRAWN_COLUMNS = ["pass", "why", "recorded"]
OPPOSITES = {REPRODUCED: NOT_REPRODUCED, NOT_REPRODUCED: REPRODUCED}


# ---- the rules' digest ----------------------------------------------------------------------------------------------

def rules_digest(chapter: str) -> str:
    """What judged a pass: the claims file, how many runs of each step a pass makes, and the statistic's code."""
    digest = hashlib.sha256()
    path = CLAIMS_DIR / f"{chapter}.toml"
    if not path.is_file():
        return "none"
    digest.update(path.read_bytes())
    runs = {s.id: s.runs for s in load_spec(chapter, ANY_MACHINE).steps}  # this machine's limits do not matter
    digest.update(json.dumps(runs, sort_keys=True).encode())
    for name in protocol(chapter).code:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return digest.hexdigest()[:12]


# ---- one pass: its label, its checks, its rows ------------------------------------------------------------------------

@dataclass(frozen=True)
class Pass:
    label: str  # "<commit> <started>": what names it in passes.csv
    commit: str
    started: str
    steps: str  # digest of every step.json of the pass, in step order


def this_pass(chapter: str, root: Path | None = None) -> Pass:
    """The pass a data directory holds: its steps' commit(s), first start and the digest of their step.json files."""
    with store.reading(root or store.data_root()):
        metas = store.complete_steps(chapter)
        folder = store.data_root() / chapter
    commits = sorted({m.get("git_commit", "unknown")[:12] + ("+dirty" if "+dirty" in m.get("git_commit", "") else "")
                      for m in metas.values()})
    started = datetime.fromtimestamp(min((m["started_ms"] for m in metas.values()), default=0) / 1000, UTC)
    digest = hashlib.sha256()
    for step_id in sorted(metas):
        digest.update(step_id.encode() + b"\0" + (folder / step_id / store.STEP_FILE).read_bytes())
    commit = "+".join(commits)
    return Pass(f"{commit} {started:%Y-%m-%d %H:%M}", commit, started.isoformat(timespec="minutes"),
                digest.hexdigest()[:12])


def pass_problems(chapter: str, root: Path) -> list[str]:
    """Why a data directory's chapter is not a clean pass of its spec ([] when it is)."""
    with store.reading(root):
        metas = store.complete_steps(chapter)
        folder = store.data_root() / chapter
        every = {p.parent.name: store.read_meta(chapter, p.parent.name) or {}
                 for p in folder.glob(f"*/{store.STEP_FILE}")}
    wanted = [s.id for s in load_spec(chapter, ANY_MACHINE).select(None)]  # every run of every step
    problems = [f"{s} is not complete ({(every.get(s) or {}).get('status', 'never run')})" for s in wanted if s not in metas]
    commits = {m.get("git_commit", "unknown") for m in metas.values()}
    if len(commits) > 1:
        problems.append(f"its steps come from {len(commits)} commits ({', '.join(sorted(c[:12] for c in commits))}): "
                        "a pass is one commit")
    problems += [f"measured from uncommitted code ({c[:12]}+dirty)" for c in commits if c.endswith("+dirty")]
    return problems


def rows_of(chapter: str, judgements: list[Judgement], one: Pass) -> list[dict]:
    digest = rules_digest(chapter)
    return [{"pass": one.label, "commit": one.commit, "started": one.started, "rules": digest, "steps": one.steps,
             "claim": j.rule.claim, "values": _floats(j.measured.values),
             "borrowed_sigma": "" if j.measured.borrowed_sigma is None else repr(j.measured.borrowed_sigma),
             "exact": int(j.measured.exact), "nearby": _floats(j.measured.nearby),
             "busy": "" if j.measured.busy is None else repr(j.measured.busy), "outcome": j.outcome}
            for j in judgements]


def keep(chapter: str, judgements: list[Judgement], one: Pass, problems: list[str], root: Path | None = None) -> Path:
    """Append one clean pass's rows to the chapter's passes.csv; refused (LabError) for a pass that is not clean or
    is kept already. Nothing is ever rewritten."""
    if problems:
        raise LabError(f"not a clean pass of {chapter}, so not kept:\n" + "\n".join(f"  - {p}" for p in problems))
    path = (root or DATA) / chapter / PASSES
    if one.label in {r["pass"] for r in read(path)}:
        raise LabError(f"the pass {one.label} of {chapter} is kept already ({path})")
    append(path, COLUMNS, rows_of(chapter, judgements, one))
    return path


def withdraw(chapter: str, label: str, why: str, root: Path | None = None) -> Path:
    """Withdraw a kept pass: a row that says why, appended; the pass's own rows stay."""
    if not why.strip():
        raise LabError("a pass is withdrawn only with the reason (--why)")
    base = (root or DATA) / chapter
    if label not in {r["pass"] for r in read(base / PASSES)}:
        raise LabError(f"no kept pass {label!r} in {base / PASSES}")
    path = base / WITHDRAWN
    append(path, WITHDRAWN_COLUMNS, [{"pass": label, "why": why.strip(),
                                       "recorded": datetime.now(UTC).isoformat(timespec="minutes")}])
    return path


def append(path: Path, columns: list[str], rows: list[dict]) -> None:
    """Rows added at the end of a CSV file (its header first when new): earlier bytes are never rewritten."""
    new = not path.exists()
    with open(path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        if new:
            writer.writeheader()
        writer.writerows(rows)


def read(path: Path) -> list[dict]:
    """A history file's rows; a torn last line or a wrong header is refused, naming the file."""
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        found = list(csv.DictReader(handle))
    if found and None in found[-1]:
        raise LabError(f"{path} has a row with more fields than its header: edited by hand or torn")
    if found and any(v is None for v in found[-1].values()):
        raise LabError(f"{path}'s last row is cut short: a write was interrupted; restore it from git")
    return found


# ---- every kept pass, judged together -------------------------------------------------------------------------------

def kept(chapter: str, root: Path | None = None) -> dict[str, list[dict]]:
    """The kept passes judged under today's rules, by label (withdrawn ones left out), each with its claims' rows."""
    base = (root or DATA) / chapter
    gone = {r["pass"] for r in read(base / WITHDRAWN)}
    digest = rules_digest(chapter)
    found: dict[str, list[dict]] = {}
    for row in read(base / PASSES):
        if row["pass"] not in gone and row["rules"] == digest:
            found.setdefault(row["pass"], []).append(row)
    return found


def earlier(chapter: str, root: Path | None = None) -> list[str]:
    """Passes kept under earlier rules: listed, never pooled with today's."""
    base = (root or DATA) / chapter
    digest = rules_digest(chapter)
    return sorted({r["pass"] for r in read(base / PASSES) if r["rules"] != digest})


def withdrawn(chapter: str, root: Path | None = None) -> list[dict]:
    return read((root or DATA) / chapter / WITHDRAWN)


def measured_of(row: dict) -> Measured:
    return Measured(_parse(row["values"]), borrowed_sigma=float(row["borrowed_sigma"]) if row["borrowed_sigma"] else None,
                    exact=row["exact"] == "1", nearby=_parse(row["nearby"]),
                    busy=float(row["busy"]) if row["busy"] else None)


def pool(each: list[Measured]) -> Measured:
    """The passes' measurements of one claim as one: every run's value, the mean of the passes' means, and σ on two
    levels (the larger of between passes, sd(means)/√p, and within, √Σσᵢ²/p). A claim some pass measured no value of
    has none pooled: inconclusive, as in that pass."""
    if len(each) == 1:
        return each[0]
    means = [m.value for m in each]
    p = len(each)
    if not all(math.isfinite(v) for v in means):  # a pass measured no value: none is pooled (as each such pass)
        return Measured((), sigma_source=f"{p} passes, not every one with a value", note=each[-1].note, passes=p)
    every = tuple(v for m in each for v in m.values)
    exact = all(m.exact for m in each) and len(set(every)) <= 1
    own = [m.sigma for m in each]
    within = math.sqrt(sum(s * s for s in own)) / p if all(s is not None for s in own) else 0.0
    between = statistics.stdev(means) / math.sqrt(p)
    widths = {len(m.nearby) for m in each}
    nearby = tuple(statistics.fmean(m.nearby[i] for m in each) for i in range(widths.pop())) if len(widths) == 1 else ()
    busy = [m.busy for m in each if m.busy is not None]
    return Measured(every, sigma_source=f"{p} passes: between them and within each, the larger", exact=exact,
                    nearby=nearby, note=each[-1].note, pooled_value=statistics.fmean(means),
                    pooled_sigma=0.0 if exact else max(between, within), passes=p,
                    busy=min(busy) if len(busy) == p else None)


def pooled(chapter: str, root: Path | None = None, kept_passes: dict | None = None) -> list[Judgement]:
    """Every claim judged on all kept passes together ([] when none is kept); `kept_passes`: kept() already read."""
    passes = kept(chapter, root) if kept_passes is None else kept_passes
    if not passes:
        return []
    by_claim: dict[str, list[Measured]] = {}
    for rows in passes.values():
        for row in rows:
            by_claim.setdefault(row["claim"], []).append(measured_of(row))
    return [judge(rule, pool(by_claim[claim])) for claim, rule in rules(chapter).items() if claim in by_claim]


def held(chapter: str, judgement: Judgement, root: Path | None = None,
         kept_passes: dict | None = None) -> tuple[int, int]:
    """In how many kept passes the claim came out as it does pooled, of how many kept passes judged it."""
    passes = kept(chapter, root) if kept_passes is None else kept_passes
    mine = [r["outcome"] for rows in passes.values() for r in rows if r["claim"] == judgement.rule.claim]
    return sum(o == judgement.outcome for o in mine), len(mine)


def flips(reference: dict[str, str], other: dict[str, str]) -> list[str]:
    """The claims whose outcome moved between reproduced and not reproduced (through inconclusive is allowed)."""
    return [claim for claim, outcome in other.items() if OPPOSITES.get(reference.get(claim)) == outcome]


def _floats(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def _parse(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split()) if text else ()
