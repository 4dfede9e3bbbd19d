"""Verdicts a reader can trust: an article's finding is judged claim by claim, each by a rule fixed before the data,
with an honest middle.

A chapter declares its rules in one place a reader can see, `experiments/claims/chapterN.toml` (`rules(chapter)`):
per claim its finding, the article's words, what is measured, the rule's shape and threshold, the threshold's source
(the article's own number or effect size, a model, a kernel, Tomcat, k6 or nginx rule), k, the analysis window and the
machine fact that makes a miss "differs on this hardware". The chapter's module computes the measured statistic, once
per run of the steps it reads (`Measured`), and `judge` decides:

- the interval I = [x − k·σ, x + k·σ] around the mean x of the runs, σ the standard error of that mean from the runs'
  spread (or a spread borrowed from repeats of a like measurement, which says where it comes from; or 0 where the
  quantity is exact: the article's arithmetic, an integer count the kernel fixes; exact means every run gave the same
  value, else the runs' spread judges it); pooled over kept passes (harness.book.passes), σ has two levels;
- I inside the claim's region → reproduced; inside its complement → not reproduced, or differs on this hardware when
  the rule names a machine fact and the steps' own data shows it (in every run, the busiest CPU above the rule's
  `busy_above` share during the load); across the boundary → inconclusive, with the runs it would take;
- a statistic read over an analysis window is also read over nearby windows: an outcome that changes with the window
  is inconclusive.

A finding's outcome is composed from its claims' (`compose`): all reproduced → reproduced; an inconclusive core part
leaves the finding inconclusive unless a core part is decided against it; otherwise none reproduced → not reproduced
(or differs on this hardware when every miss is the machine's), some → partly reproduced, naming each part.
"""
from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import dataclass, replace
from functools import cache

from harness import LabError
from harness.lab import store
from harness.lab.protocol import CLAIMS_DIR

REPRODUCED, NOT_REPRODUCED, DIFFERS, INCONCLUSIVE = ("reproduced", "not reproduced", "differs on this hardware",
                                                     "inconclusive")
PARTLY = "partly reproduced"
OUTCOMES = (REPRODUCED, NOT_REPRODUCED, DIFFERS, INCONCLUSIVE)
SHAPES = ("above", "below", "band", "within")  # x > t; x < t; lo ≤ x ≤ hi; |x| < t (an equivalence: "no change")
RULE_KEYS = {"claim", "finding", "seed", "quote", "measure", "unit", "shape", "threshold", "source", "k", "window",
             "nearby", "machine", "busy_above", "machine_steps", "core", "changed"}


@dataclass(frozen=True)
class Rule:
    claim: str  # "F000-f.2": finding, part
    finding: str
    seed: str  # the article's file number, "000" … "004"
    quote: str  # the article's words for this part
    measure: str  # what is measured, in words
    shape: str  # one of SHAPES
    threshold: float | tuple[float, float]
    source: str  # where the threshold comes from
    unit: str = ""
    k: float = 3.0
    window: str = ""  # the analysis window, in words ("" when none)
    nearby: str = ""  # the nearby windows also read, in words
    machine: str = ""  # the machine fact that makes a miss "differs on this hardware" ("" when none)
    busy_above: float = 0.9  # … shown by the data when the busiest CPU during machine_steps' loads was busier than this
    machine_steps: tuple[str, ...] = ()  # the steps (every run of each) whose CPUs show the machine fact
    core: bool = True  # a core part of the finding (an inconclusive core part leaves the finding inconclusive unless
    # a core part is decided against it)
    changed: str = ""  # when the rule changed since it was first declared: why, and on which data it was judged


@dataclass(frozen=True)
class Measured:
    """The statistic of each run (runs of the same steps), its spread, and the same statistic over nearby windows."""

    values: tuple[float, ...]
    sigma_source: str = "the runs' spread"  # where σ comes from when not from `values` themselves
    borrowed_sigma: float | None = None  # σ of one run, borrowed from repeats of a like measurement
    exact: bool = False  # no run-to-run spread: the quantity is exact (the article's arithmetic, a kernel's count)
    nearby: tuple[float, ...] = ()  # the mean over runs in each nearby window
    note: str = ""  # what a reader needs beside the number (e.g. which steps)
    pooled_value: float | None = None  # the mean of the kept passes' means (harness.book.passes): passes weigh alike
    pooled_sigma: float | None = None  # σ of that mean, on two levels
    passes: int = 1  # how many kept passes the values pool
    busy: float | None = None  # the busiest CPU's share during the rule's machine_steps' loads (None: not read)

    @property
    def value(self) -> float:
        if self.pooled_value is not None:
            return self.pooled_value
        return statistics.fmean(self.values) if self.values else float("nan")

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def is_exact(self) -> bool:
        """Exact means exact: declared so, and every run gave the same value."""
        return self.exact and len(set(self.values)) <= 1

    @property
    def sigma(self) -> float | None:
        """The standard error of the mean of the runs: pooled passes → their two-level σ; exact (every run the same) →
        0; ≥ 2 runs → their spread / √n (or the borrowed σ / √n when larger: a few runs underestimate spread); one run
        → the borrowed σ, unless it is 0 (a like measurement that never varied says nothing of this one's spread: only
        a claim declared exact has none); else unknown (None)."""
        if self.pooled_sigma is not None:
            return self.pooled_sigma
        if self.is_exact:
            return 0.0
        own = statistics.stdev(self.values) if self.runs >= 2 else None
        borrowed = self.borrowed_sigma or None  # a borrowed spread of 0 says nothing: only `exact` claims none
        known = [x for x in (own, borrowed) if x is not None]
        return max(known) / math.sqrt(self.runs) if known else None


@dataclass(frozen=True)
class Judgement:
    rule: Rule
    measured: Measured
    outcome: str
    margin_sigma: float | None  # the distance to the rule's boundary in σ (signed: + inside the claim's region)
    why: str = ""  # what decides it, one clause (e.g. "depends on the window: …")


def rules(chapter: str) -> dict[str, Rule]:
    """The chapter's declared rules by claim id (experiments/claims/<chapter>.toml); problems listed at once."""
    return dict(_rules(chapter))


@cache
def _rules(chapter: str) -> tuple[tuple[str, Rule], ...]:
    path = CLAIMS_DIR / f"{chapter}.toml"
    if not path.exists():
        return ()
    raw = tomllib.loads(path.read_text())
    problems, found = [], []
    for n, table in enumerate(raw.get("claim", []), start=1):
        where = f"{path.name} claim {table.get('claim', f'#{n}')}"
        unknown = set(table) - RULE_KEYS
        missing = {"claim", "finding", "seed", "quote", "measure", "shape", "threshold", "source"} - set(table)
        if unknown or missing:
            problems.append(f"{where}: " + "; ".join(filter(None, [
                f"unknown keys {sorted(unknown)}" if unknown else "", f"missing {sorted(missing)}" if missing else ""])))
            continue
        if table["shape"] not in SHAPES:
            problems.append(f"{where}: shape must be one of {', '.join(SHAPES)}, got {table['shape']!r}")
            continue
        threshold = table["threshold"]
        if (table["shape"] == "band") != isinstance(threshold, list) or (isinstance(threshold, list) and len(threshold) != 2):
            problems.append(f"{where}: a band's threshold is [low, high], every other shape's one number")
            continue
        found.append((table["claim"], Rule(**{**table, "threshold": tuple(threshold) if isinstance(threshold, list)
                                               else float(threshold),
                                               "machine_steps": tuple(table.get("machine_steps", ()))})))
    if problems:
        raise LabError(f"{path} has {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))
    return tuple(found)


def margin(rule: Rule, x: float) -> float:
    """How far x is inside the claim's region (negative: outside), in the statistic's unit."""
    t = rule.threshold
    if rule.shape == "above":
        return x - t
    if rule.shape == "below":
        return t - x
    if rule.shape == "within":
        return t - abs(x)
    low, high = t
    return min(x - low, high - x)


def outcome_at(rule: Rule, x: float, sigma: float, busy: float | None = None) -> str:
    """The outcome of one value with its σ: inside the region by k·σ, outside by k·σ, or in between. Outside is
    "differs on this hardware" only when the rule names a machine fact and `busy` (the data's) shows it."""
    m = margin(rule, x)
    if m > rule.k * sigma or (sigma == 0 and m > 0):
        return REPRODUCED
    if -m > rule.k * sigma or (sigma == 0 and m < 0):
        return DIFFERS if machine_shown(rule, busy) else NOT_REPRODUCED
    return INCONCLUSIVE


def machine_shown(rule: Rule, busy: float | None) -> bool:
    """Does the steps' own data show the machine fact the rule names (their busiest CPU above its share)?"""
    return bool(rule.machine) and busy is not None and busy > rule.busy_above


def judge(rule: Rule, measured: Measured) -> Judgement:
    if not measured.values:  # a claim this lab cannot measure: its note says what it would take
        return Judgement(rule, measured, INCONCLUSIVE, None, measured.note or "not measured")
    sigma = measured.sigma
    if sigma is None:
        return Judgement(rule, measured, INCONCLUSIVE, None,
                         f"one run and no measured spread: it takes repeats of the step ({rule.claim})")
    outcome = outcome_at(rule, measured.value, sigma, measured.busy)
    elsewhere = {outcome_at(rule, x, sigma, measured.busy) for x in measured.nearby} - {outcome}
    margin_sigma = margin(rule, measured.value) / sigma if sigma else None
    if elsewhere:
        return Judgement(rule, measured, INCONCLUSIVE, margin_sigma,
                         f"depends on the window ({rule.window}: {outcome}; {rule.nearby}: {', '.join(sorted(elsewhere))})")
    if outcome == INCONCLUSIVE:
        return Judgement(rule, measured, outcome, margin_sigma, f"inside {rule.k:g}σ of the boundary: {runs_needed(rule, measured)}")
    return Judgement(rule, measured, outcome, margin_sigma,
                     f"{rule.machine} (in every run its busiest CPU was at least {measured.busy:.0%} busy during the load)" if outcome == DIFFERS else "")


def runs_needed(rule: Rule, measured: Measured) -> str:
    """How many runs would decide an inconclusive claim, if its mean held: σ shrinks with √n."""
    m = abs(margin(rule, measured.value))
    run_sigma = (measured.sigma or 0) * math.sqrt(measured.runs)
    if m == 0 or run_sigma == 0:
        return "no number of runs decides a value on the boundary"
    needed = math.ceil((rule.k * run_sigma / m) ** 2)
    return f"about {needed} runs would decide it if the mean held ({measured.runs} so far)"


def compose(judgements: list[Judgement]) -> tuple[str, str]:
    """A finding's outcome from its claims', and the clause that names each part ("<part>: yes; <part>: no"): all
    reproduced → reproduced; an inconclusive core part → inconclusive, unless a core part is decided against the
    finding; otherwise no part reproduced → not reproduced (differs on this hardware when every decided miss is the
    machine's), some → partly reproduced."""
    outcomes = [j.outcome for j in judgements]
    core = [j.outcome for j in judgements if j.rule.core]
    parts = "; ".join(f"{j.rule.measure}: {WORDS[j.outcome]}" for j in judgements)
    against = {NOT_REPRODUCED, DIFFERS}
    if all(o == REPRODUCED for o in outcomes):
        verdict = REPRODUCED
    elif INCONCLUSIVE in core and not against & set(core):
        verdict = INCONCLUSIVE
    elif REPRODUCED in outcomes:
        verdict = PARTLY
    else:
        decided = [o for o in outcomes if o != INCONCLUSIVE]
        verdict = DIFFERS if decided and all(o == DIFFERS for o in decided) else NOT_REPRODUCED if decided else INCONCLUSIVE
    return verdict, parts


WORDS = {REPRODUCED: "yes", NOT_REPRODUCED: "no", DIFFERS: "differs on this hardware", INCONCLUSIVE: "inconclusive"}


def judge_chapter(chapter: str, measures: dict) -> list[Judgement]:
    """Every claim of a chapter's rules file, in its order, each judged on what `measures[claim](rule)` measured (with
    the machine fact its rule names read from the data: `busiest_cpu`); a rule whose claim the chapter has no measure
    for is a LabError naming them all."""
    declared = rules(chapter)
    if unknown := set(declared) - set(measures):
        raise LabError(f"{chapter}'s rules name claims it has no statistic for: {sorted(unknown)}")
    return [judge(rule, with_machine_fact(chapter, rule, measures[claim](rule))) for claim, rule in declared.items()]


def with_machine_fact(chapter: str, rule: Rule, measured: Measured) -> Measured:
    if not rule.machine or measured.busy is not None:
        return measured
    return replace(measured, busy=busiest_cpu(chapter, rule.machine_steps))


def busiest_cpu(chapter: str, steps: tuple[str, ...]) -> float | None:
    """How busy the machine was in every run of `steps`: per run, its busiest CPU's share during the load (cpu.parquet
    between load start and end); the least of those over the runs, as the fact must show in each. None when no such
    run was recorded with its CPUs."""
    per_run = []
    for step_id, meta in store.complete_steps(chapter).items():
        if store.run_of(step_id)[0] not in steps or "load_started_ms" not in meta:
            continue
        cpu = store.read_table(chapter, step_id, "cpu")
        window = cpu[cpu["ts_ms"].between(meta["load_started_ms"], meta["load_ended_ms"])]
        shares = []
        for _, one in window.groupby("cpu"):
            busy, idle = (one[c].iloc[-1] - one[c].iloc[0] for c in ("busy_seconds", "idle_seconds"))
            if busy + idle > 0:
                shares.append(busy / (busy + idle))
        if shares:
            per_run.append(max(shares))
    return float(min(per_run)) if per_run else None
