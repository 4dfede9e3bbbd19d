"""Chapter 2's checks: what the book relies on of its lab, each a rule declared here before the data (a threshold with
its source: an article's number, a model's assumption, a machine fact, or a goal of the lab labelled as a goal), judged
on the chapter's data by harness.book.claims.judge with the run-to-run spread the chapter's own repeats measure.

Two kinds of rule:
- a threshold ("below", "above"): the measured value with its σ (from its runs, or borrowed from the repeats of a like
  measurement, relative to the value, naming where it comes from);
- "the same" (two settings agree): the difference of their means in σ of that difference, which holds within 3σ
  (`z` below). No typed tolerance: how far two results may differ is what the repeats show.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from harness.book.chapters.ch2.lab import (
    AGAIN,
    BATCH,
    CV,
    HOLD,
    MIB,
    NOISE,
    UNSAMPLED,
    every_run,
    first_starts_s,
    memory_bound_users,
    memory_table,
    noise_table,
    overflow_table,
    recorded_machine,
    repeated_users,
    run_metas,
    runs_table,
    sampler_cost_table,
    sampler_share,
    spike_limit,
    start_table,
    steps_with,
)
from harness.book.claims import Judgement, Measured, Rule, judge
from harness.book.prose import and_list
from harness.lab.store import ChapterData

K = 3.0
MINUS = "\u2212"
SIGMA = "σ"  # the unit of a "same" rule's statistic: the difference in σ of the difference
IDENTICAL = "identical in every run"  # a "same" check whose runs all gave one number (no spread, no difference)
GOAL_SPIKE_BATCH_S = 2.0  # the lab's goal (issue 13): a spike's requests all in flight within 2 s in batch mode
GOAL_K6_MEMORY = 25.0  # %: k6 is "no limit" while its peak stays under this share of the machine's memory
GOAL_REDEPLOY_MS = 3000.0  # the lab's goal (issue 2): a chapter of 40 steps spends under 2 min starting servers
GOAL_SAMPLERS = {1000: 5.0, 15000: 15.0}  # % of one core the samplers may use, up to N connections


def _rule(check: str, says: str, measure: str, shape: str, threshold: float, source: str, unit: str) -> Rule:
    return Rule(claim=check, finding="the lab", seed="", quote=says, measure=measure, shape=shape, threshold=threshold,
                source=source, unit=unit, k=K)


def _budget_rule(upto: int, share: float) -> Rule:
    return _rule(f"samplers-{upto}", f"the samplers take at most {share:g}% of a core up to {upto:,} connections",
                 f"the samplers' CPU as a share of one core, at the step with the most of it up to {upto:,} connections",
                 "below", share, "a goal of the lab (the samplers' budget)", "%")


RULES = [
    _rule("spike", "k6 starts every user of a spike within 1 s, at every N the book sends",
          "the last user's first request at the largest N, one k6 VU per user (hold-N)", "below", 1.0,
          "the articles' executor: constant-vus for 1 s sends nothing for a user started later", "s"),
    _rule("batch", "with http.batch, k6 starts every user of a spike within 2 s",
          "the last user's first request at the largest N, through http.batch (batch-N)", "below", GOAL_SPIKE_BATCH_S,
          "a goal of the lab (issue 13)", "s"),
    _rule("constant-vus", "constant-vus for 1 s issues one request per user k6 starts within 1 s",
          "requests constant-vus issued (every run of cv-N and again-cv-N) less the users one VU per user started "
          "within 1 s (hold-N), at the N that ran again, in σ of the difference", "within", K,
          "the runs' own spread: again-cv-N's runs for constant-vus, noise's and unsampled's for the start", SIGMA),
    _rule("acceptor", "Tomcat accepts a spike as fast as it arrives while max-connections has room",
          "accept-queue overflows the kernel counted over the hold-N steps (max-connections above N)", "below", 1,
          "the spike model's assumption: an acceptor that takes each connection at once overflows nothing", ""),
    _rule("k6-memory", "k6's memory is no limit here: its peak stays under a quarter of the machine's memory",
          "k6's peak resident memory at the largest N, as a share of the machine's memory", "below", GOAL_K6_MEMORY,
          "a goal of the lab", "%"),
    _rule("files-first", "the open-files limit, not memory, caps how many users one machine holds",
          "users the machine's memory holds at the measured cost (k6's per user + the server's per connection with "
          "its thread)", "above", math.nan, "the open-files limit per process, recorded with the data", "users"),
    _rule("redeploy", "a redeploy takes under 3 s with Class Data Sharing",
          "mean start to healthy over redeploy-cds's starts", "below", GOAL_REDEPLOY_MS,
          "a goal of the lab (issue 2: a chapter of 40 steps spends under 2 minutes starting servers)", "ms"),
    *(_budget_rule(upto, share) for upto, share in GOAL_SAMPLERS.items()),
    _rule("sampling-failures", "switching the samplers off changes no result: the failures",
          "the headline step's failed requests without samplers (unsampled) less with them (noise), in σ of the "
          "difference", "within", K, "the runs' own spread (every run of noise and of unsampled)", SIGMA),
    _rule("sampling-waves", "switching the samplers off changes no result: the waves",
          "how late the waves come (median lag behind the model) without samplers less with them, in σ of the "
          "difference", "within", K, "the runs' own spread (every run of noise and of unsampled)", SIGMA),
]


@dataclass(frozen=True)
class Check:
    judgement: Judgement
    shown: str  # the measured value as the table shows it (for a "same" rule: the difference itself)
    margin_sigma: float | None  # distance to the boundary in σ (+ inside), None when no spread is known

    @property
    def rule(self) -> Rule:
        return self.judgement.rule

    @property
    def holds(self) -> bool | None:
        """True / False when decided, None when inconclusive."""
        return {"reproduced": True, "not reproduced": False}.get(self.judgement.outcome)

    @property
    def identical(self) -> bool:
        """A "same" check whose runs all gave one number: no spread, so no σ and no margin (0 ÷ 0)."""
        return self.judgement.measured.note.startswith(IDENTICAL)


def rules() -> dict[str, Rule]:
    return {r.claim: r for r in RULES}


# ---- the spreads the repeats give -------------------------------------------------------------------------------

def relative_spread(values) -> float:
    """The run-to-run standard deviation over the mean (NaN below two runs)."""
    values = [float(v) for v in values]
    return statistics.stdev(values) / abs(statistics.fmean(values)) if len(values) >= 2 else math.nan


def start_runs(data: ChapterData) -> list[tuple[float, int]]:
    """(last start s, users started within 1 s) of every run of the repeated 10,000-user spike, with and without
    samplers: the spread of k6's start from run to run."""
    runs = runs_table(noise_table(data))
    started = [int((first_starts_s(run, run_id) <= 1.0).sum()) for step in (NOISE, UNSAMPLED)
               for run_id, run in every_run(data, step)]
    return list(zip(runs["last_start_s"], started, strict=True)) if len(started) == len(runs) else []


def borrowed(value: float, spread: float, source: str, note: str = "") -> Measured:
    return Measured((value,), borrowed_sigma=abs(value) * spread if spread == spread else None, sigma_source=source,
                    note=note)


def z_measured(a: list[float], b: list[float], what: str, b_sigma: float | None = None, unit: str = "",
               decimals: int = 0) -> tuple[Measured, str]:
    """Two settings' runs compared: the difference of their means in σ of that difference (each side's σ from its
    runs; `b_sigma` when b has one run). Exact: the rule's σ is inside the statistic. Also the difference as the
    table shows it."""
    if not a or not b:
        return Measured((), note=f"needs runs of both {what}"), "–"
    sa = statistics.stdev(a) if len(a) >= 2 else math.nan
    sb = statistics.stdev(b) if len(b) >= 2 else (b_sigma if b_sigma is not None else math.nan)
    difference = statistics.fmean(a) - statistics.fmean(b)
    sigma = math.sqrt(sa**2 / len(a) + sb**2 / len(b))
    if sigma == 0 and difference == 0 and len(a) >= 2 and len(b) >= 2:  # every run the same number: no change at all
        return (Measured((0.0,), exact=True, sigma_source=f"{len(a)} and {len(b)} runs ({what})",
                         note=f"{IDENTICAL}: {statistics.fmean(a):,.{decimals}f}{unit} in all {len(a) + len(b)}"),
                f"±0{unit}")
    if not sigma == sigma or sigma == 0:
        return Measured((), note=f"no spread measured between {what}"), "–"
    shown = f"{difference:+,.{decimals}f}{unit}".replace("-", MINUS)
    return (Measured((difference / sigma,), exact=True, sigma_source=f"{len(a)} and {len(b)} runs ({what})",
                     note=f"difference {shown}, σ of the difference {sigma:,.{decimals}f}{unit}"), shown)


# ---- one function per check --------------------------------------------------------------------------------------

def spike(data: ChapterData, prefix: str = HOLD) -> Measured:
    table = start_table(data)
    rows = table[table.step.str.startswith(prefix)]
    if rows.empty:
        return Measured((), note=f"no {prefix}N step")
    largest = rows.sort_values("users").iloc[-1]
    runs = start_runs(data)
    limit = spike_limit(table, prefix)
    return borrowed(float(largest.spread_s), relative_spread(s for s, _ in runs),
                    f"the last start's spread over the {len(runs)} runs of the repeated 10,000-user spike",
                    f"{largest.step}; every user started within 1 s up to N = {limit or 0:,}")


def constant_vus(data: ChapterData) -> tuple[Measured, str]:
    users = repeated_users(data)
    hold = f"{HOLD}{users}"
    if users is None or hold not in data.steps:
        return Measured((), note="needs again-cv-N and hold-N"), "–"
    issued = [float(m["requests"]["issued"]) for step in (f"{CV}{users}", f"{AGAIN}{users}") for m in run_metas(data, step)]
    started = int((first_starts_s(data, hold) <= 1.0).sum())
    runs = start_runs(data)
    started_sigma = statistics.stdev(n for _, n in runs) if len(runs) >= 2 else None
    return z_measured(issued, [float(started)], f"constant-vus at {users:,} users, and the start of one VU per user",
                      started_sigma)


def acceptor(data: ChapterData) -> Measured:
    table = overflow_table(data)
    hold = table[table.step.str.startswith(HOLD)]
    if hold.empty:
        return Measured((), note="no hold-N step")
    over = hold[hold.listen_overflows > 0]
    at = and_list(f"{int(users):,}" for users in sorted(set(over.users)))  # not "from N on": none at some N above
    note = f"overflows at {at} users, none at the other N" if len(over) else "no overflow at any N"
    return Measured((float(hold.listen_overflows.sum()),), exact=True, sigma_source="the kernel's count (exact)",
                    note=note)


def k6_memory(data: ChapterData) -> Measured:
    table = memory_table(data)
    if table.empty:
        return Measured((), note="no hold, batch or queue step")
    biggest = table.sort_values(["users", "k6_mib"]).iloc[-1]
    share = 100 * biggest["k6_mib"] * MIB / recorded_machine(data)["memory_bytes"]
    peaks = [run.process.loc[run.process.process == "k6", "rss_bytes"].max() for run_id, run in every_run(data, NOISE)]
    return borrowed(share, relative_spread(p for p in peaks if p == p),
                    f"k6's peak over the {len(peaks)} runs of noise", f"{biggest.step}: {biggest.k6_mib:,.0f} MiB")


def files_first(data: ChapterData) -> tuple[Rule, Measured]:
    users, error = memory_bound_users(data)
    nofile = recorded_machine(data)["nofile_limit"]
    rule = rules()["files-first"]
    rule = Rule(**{**rule.__dict__, "threshold": float(nofile)})
    return rule, Measured((users,), borrowed_sigma=error, sigma_source="the standard errors of the memory fits' slopes",
                          note=f"open files per process: {nofile:,}")


def redeploy(data: ChapterData) -> Measured:
    starts = data.startup[data.startup.step.isin([s for s in steps_with(data, "redeploy-")
                                                  if data.steps[s].get("launch") == "cds"])]["startup_ms"]
    return Measured(tuple(float(v) for v in starts), sigma_source=f"the {len(starts)} starts' spread")


def samplers(data: ChapterData, upto: int) -> Measured:
    table = sampler_cost_table(data)
    lower = max([u for u in GOAL_SAMPLERS if u < upto], default=0)
    rows = table[(table.connections > lower) & (table.connections <= upto)]
    if rows.empty:
        return Measured((), note=f"no step between {lower:,} and {upto:,} connections")
    worst = rows.loc[rows.core_share.idxmax()]
    shares = [s for m in run_metas(data, NOISE) if (s := sampler_share(m)) is not None]
    return borrowed(100 * float(worst.core_share), relative_spread(shares),
                    f"the samplers' CPU over the {len(shares)} runs of noise",
                    f"{worst.step} at {worst.connections:,.0f} connections")


def sampling(data: ChapterData, column: str, unit: str, decimals: int) -> tuple[Measured, str]:
    runs = runs_table(noise_table(data))
    sampled = runs.sampled.astype(bool)
    on, off = runs[sampled][column].tolist(), runs[~sampled][column].tolist()
    return z_measured([float(v) for v in off], [float(v) for v in on], "unsampled and noise", unit=unit,
                      decimals=decimals)


def checks(data: ChapterData) -> list[Check]:
    """Every check, judged on `data`, in the order of RULES."""
    declared = rules()
    found = {}
    for prefix, name in ((HOLD, "spike"), (BATCH, "batch")):
        found[name] = (declared[name], spike(data, prefix), None)
    found["constant-vus"] = (declared["constant-vus"], *constant_vus(data))
    found["acceptor"] = (declared["acceptor"], acceptor(data), None)
    found["k6-memory"] = (declared["k6-memory"], k6_memory(data), None)
    found["files-first"] = (*files_first(data), None)
    found["redeploy"] = (declared["redeploy"], redeploy(data), None)
    for upto in GOAL_SAMPLERS:
        found[f"samplers-{upto}"] = (declared[f"samplers-{upto}"], samplers(data, upto), None)
    found["sampling-failures"] = (declared["sampling-failures"], *sampling(data, "failed", "", 0))
    found["sampling-waves"] = (declared["sampling-waves"], *sampling(data, "lag_s", " s", 2))
    return [_check(*found[r.claim]) for r in RULES]


def _check(rule: Rule, measured: Measured, shown: str | None) -> Check:
    if not all(math.isfinite(v) for v in measured.values):  # too few steps or runs for the statistic
        measured = Measured((), note=measured.note or "too few steps to compute it")
    judgement = judge(rule, measured)
    if rule.unit == SIGMA and measured.values:
        margin = rule.threshold - abs(measured.value)  # already in σ
    else:
        margin = judgement.margin_sigma
    return Check(judgement, shown or "", margin)
