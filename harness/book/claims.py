"""Verdicts a reader can trust: an article's finding is judged claim by claim, each by a rule fixed before the data,
with an honest middle.

A chapter declares its rules in one place a reader can see, `experiments/claims/chapterN.toml` (`rules(chapter)`):
per claim its finding, the article's words, what is measured, the rule's shape and threshold, the threshold's source
(the article's own number or effect size, a model, a kernel, Tomcat, k6 or nginx rule), k, the analysis window and the
machine fact that makes a miss "differs on this hardware". The chapter's module computes the measured statistic, once
per run of the steps it reads (`Measured`), and `judge` decides:

- the interval I = [x − k·σ, x + k·σ] around the mean x of the runs, σ the standard error of that mean from the runs'
  spread (or a spread borrowed from repeats of a like measurement, which says where it comes from; or 0 where the
  quantity is exact: the article's arithmetic, an integer count the kernel fixes);
- I inside the claim's region → reproduced; inside its complement → not reproduced (differs on this hardware when the
  rule names the machine fact that decides it); across the boundary → inconclusive, with the runs it would take;
- a statistic read over an analysis window is also read over nearby windows: an outcome that changes with the window
  is inconclusive.

A finding's outcome is composed from its claims' (`compose`): all reproduced → reproduced; none reproduced → not
reproduced (or differs on this hardware when every miss is the machine's); some → partly reproduced, naming each part.
"""
from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import dataclass, field
from functools import cache

from harness import EXPERIMENTS, LabError

REPRODUCED, NOT_REPRODUCED, DIFFERS, INCONCLUSIVE = ("reproduced", "not reproduced", "differs on this hardware",
                                                     "inconclusive")
PARTLY = "partly reproduced"
OUTCOMES = (REPRODUCED, NOT_REPRODUCED, DIFFERS, INCONCLUSIVE)
SHAPES = ("above", "below", "band", "within")  # x > t; x < t; lo ≤ x ≤ hi; |x| < t (an equivalence: "no change")
CLAIMS_DIR = EXPERIMENTS / "claims"
RULE_KEYS = {"claim", "finding", "seed", "quote", "measure", "unit", "shape", "threshold", "source", "k", "window",
             "nearby", "machine", "core", "changed"}


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
    core: bool = True  # a core part of the finding (an inconclusive core part leaves the finding inconclusive)
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

    @property
    def value(self) -> float:
        return statistics.fmean(self.values) if self.values else float("nan")

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def sigma(self) -> float | None:
        """The standard error of the mean of the runs: exact → 0; ≥ 2 runs → their spread / √n (or the borrowed
        σ / √n when larger: a few runs underestimate spread); one run → the borrowed σ; else unknown (None)."""
        if self.exact:
            return 0.0
        own = statistics.stdev(self.values) if self.runs >= 2 else None
        run_sigma = max(x for x in (own, self.borrowed_sigma) if x is not None) if (own, self.borrowed_sigma) != (
            None, None) else None
        return None if run_sigma is None else run_sigma / math.sqrt(self.runs)


@dataclass(frozen=True)
class Judgement:
    rule: Rule
    measured: Measured
    outcome: str
    margin_sigma: float | None  # the distance to the rule's boundary in σ (signed: + inside the claim's region)
    why: str = ""  # what decides it, one clause (e.g. "depends on the window: …")
    history: tuple[str, ...] = field(default=())  # the outcomes of the kept runs (harness.book.history)


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
                                               else float(threshold)})))
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


def outcome_at(rule: Rule, x: float, sigma: float) -> str:
    """The outcome of one value with its σ: inside the region by k·σ, outside by k·σ, or in between."""
    m = margin(rule, x)
    if m > rule.k * sigma or (sigma == 0 and m > 0):
        return REPRODUCED
    if -m > rule.k * sigma or (sigma == 0 and m < 0):
        return DIFFERS if rule.machine else NOT_REPRODUCED
    return INCONCLUSIVE


def judge(rule: Rule, measured: Measured) -> Judgement:
    if not measured.values:  # a claim this lab cannot measure: its note says what it would take
        return Judgement(rule, measured, INCONCLUSIVE, None, measured.note or "not measured")
    sigma = measured.sigma
    if sigma is None:
        return Judgement(rule, measured, INCONCLUSIVE, None,
                         f"one run and no measured spread: it takes repeats of the step ({rule.claim})")
    outcome = outcome_at(rule, measured.value, sigma)
    elsewhere = {outcome_at(rule, x, sigma) for x in measured.nearby} - {outcome}
    margin_sigma = margin(rule, measured.value) / sigma if sigma else None
    if elsewhere:
        return Judgement(rule, measured, INCONCLUSIVE, margin_sigma,
                         f"depends on the window ({rule.window}: {outcome}; {rule.nearby}: {', '.join(sorted(elsewhere))})")
    if outcome == INCONCLUSIVE:
        return Judgement(rule, measured, outcome, margin_sigma, f"inside {rule.k:g}σ of the boundary: {runs_needed(rule, measured)}")
    return Judgement(rule, measured, outcome, margin_sigma, rule.machine if outcome == DIFFERS else "")


def runs_needed(rule: Rule, measured: Measured) -> str:
    """How many runs would decide an inconclusive claim, if its mean held: σ shrinks with √n."""
    m = abs(margin(rule, measured.value))
    run_sigma = (measured.sigma or 0) * math.sqrt(measured.runs)
    if m == 0 or run_sigma == 0:
        return "no number of runs decides a value on the boundary"
    needed = math.ceil((rule.k * run_sigma / m) ** 2)
    return f"about {needed} runs would decide it if the mean held ({measured.runs} so far)"


def compose(judgements: list[Judgement]) -> tuple[str, str]:
    """A finding's outcome from its claims', and the clause that names each part: "partly reproduced: <part>, yes;
    <part>, no"."""
    outcomes = [j.outcome for j in judgements]
    core = [j.outcome for j in judgements if j.rule.core]
    parts = "; ".join(f"{j.rule.measure}: {WORDS[j.outcome]}" for j in judgements)
    if INCONCLUSIVE in core and not {NOT_REPRODUCED, DIFFERS} & set(outcomes):
        verdict = INCONCLUSIVE if REPRODUCED not in outcomes else PARTLY
    elif all(o == REPRODUCED for o in outcomes):
        verdict = REPRODUCED
    elif REPRODUCED not in outcomes:
        decided = [o for o in outcomes if o != INCONCLUSIVE]
        verdict = DIFFERS if decided and all(o == DIFFERS for o in decided) else NOT_REPRODUCED if decided else INCONCLUSIVE
    else:
        verdict = PARTLY
    return verdict, parts


WORDS = {REPRODUCED: "yes", NOT_REPRODUCED: "no", DIFFERS: "differs on this hardware", INCONCLUSIVE: "inconclusive"}


def judge_chapter(chapter: str, measures: dict) -> list[Judgement]:
    """Every claim of a chapter's rules file, in its order, each judged on what `measures[claim](rule)` measured;
    a rule whose claim the chapter has no measure for is a LabError naming them all."""
    declared = rules(chapter)
    if unknown := set(declared) - set(measures):
        raise LabError(f"{chapter}'s rules name claims it has no statistic for: {sorted(unknown)}")
    return [judge(rule, measures[claim](rule)) for claim, rule in declared.items()]
