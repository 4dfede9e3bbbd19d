"""Chapter 5's claims judged (seed 001, F001-a … F001-g): one function per claim's statistic, on every run of the steps
it reads, with the rules declared in experiments/claims/chapter5.toml (harness.book.claims judges them).

Most of this chapter's claims compare settings ("no significant change", "pool 10 the best"), each measured several
times (runs = n), not always equally often. Such a statistic is a function of the settings' means; its σ is
propagated from the runs' spread about their own setting's mean, pooled over the settings it compares (they differ
in a knob, not in their noise), and it counts every run it reads (`Compared`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness import DATA
from harness.book import claims
from harness.book.chapters.ch5.runs import (API, CHAPTER, HOLD, HOLD_WINDOWS, LAST_STAGE, STAGE_WINDOWS, runs_table,
                                             window_column)
from harness.book.claims import Judgement, Measured, Rule
from harness.models import pool

ARTICLE = DATA / CHAPTER  # the article's numbers (article-*.csv; their source in article.md)
DAILY_VIEWS = 19_080_000  # the article's page views a day
ARTICLE_GOAL = 220.69  # the TPS the article writes for DAILY_VIEWS / 86,400
DEFAULTS = "tomcat-defaults"  # Spring Boot's Tomcat defaults: the threads and accept-count series' common step
POOL_STEPS = {5: "pool-5", 10: "pool-10", 20: "pool-20"}  # F001-c: the scenario, open-in-view on, the small database
THREAD_STEPS = {100: "threads-100", 150: "threads-150", 200: DEFAULTS}
CONNECTION_STEPS = {4000: "max-connections-4000", 6000: "max-connections-6000", 8000: "max-connections-8000",
                    8192: DEFAULTS}  # 8192: Tomcat's default max-connections
ACCEPT_STEPS = {100: DEFAULTS, 200: "accept-count-200"}
PENDING_APIS = ("api-room-create", "api-room-status", "api-todo-create")  # where the article gives its pending maxima
FINAL_STEP = "final"  # the article's final settings, open-in-view on as it ran them
MOST = 0.5  # "throttled in most of its periods"


@dataclass(frozen=True)
class Compared(Measured):
    """A statistic of several settings' means: `values` holds it once, `standard_error` its σ propagated from the
    runs (None when no setting was run twice), and `of_runs` every run it reads."""

    of_runs: int = 0
    standard_error: float | None = None

    @property
    def runs(self) -> int:
        return self.of_runs

    @property
    def sigma(self) -> float | None:
        return self.standard_error


def article_runs() -> pd.DataFrame:
    return pd.read_csv(ARTICLE / "article-runs.csv")


def article_apis() -> pd.DataFrame:
    return pd.read_csv(ARTICLE / "article-single-apis.csv")


def judge() -> list[Judgement]:
    """Every claim of chapter 5 judged on the data being read (harness.lab.store.reading), in the rules' order."""
    runs = runs_table()
    return claims.judge_chapter(CHAPTER, {claim: lambda rule, f=f: f(runs, rule) for claim, f in STATISTICS.items()})


# ---- the statistics, one per claim -------------------------------------------------------------------------------

def goal_slip(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-a.1: the article's 220.69 against 19,080,000 / 86,400, as a share of the latter (exact arithmetic)."""
    goal = pool.tps_goal(DAILY_VIEWS)
    return Measured(((ARTICLE_GOAL - goal) / goal,), exact=True, note=f"{DAILY_VIEWS:,} / 86,400 = {goal:.2f}")


def api_tps(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-b.1: the single API whose throughput lies farthest outside the article's 5.3–25.8 TPS."""
    apis = runs[runs["kind"] == API]
    return _farthest(apis, "tps", rule, _borrowed(runs, "tps"))


def api_pending(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-b.2: of the three APIs the article gives pending maxima for, the most pending farthest outside 148–179."""
    apis = runs[runs["step"].isin(PENDING_APIS)]
    return _farthest(apis, "pending_max", rule, _borrowed(runs, "pending_max"))


def database_bottleneck(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-b.3: how many single APIs had the database throttled in most of its CPU periods and requests waiting."""
    apis = runs[runs["kind"] == API].drop_duplicates("step")
    if apis.empty or apis["db_periods"].isna().any():
        return Measured((), note="no throttling counters (step.json's during_load[\"db.cgroup\"]) in this data: runs "
                                 "recorded before they existed")
    share = apis["db_throttled"] / apis["db_periods"]
    both = (share > MOST) & (apis["pending_max"] > 0)
    listed = "; ".join(f"{s.removeprefix('api-')}: throttled in {t:.0%} of its periods, at most {p:,.0f} waiting"
                       for s, t, p in zip(apis["step"], share, apis["pending_max"], strict=True))
    return Measured((float(both.sum()),), exact=True, note=f"a count of {len(apis)} APIs ({listed})")


def pool_ten_best(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-c.1: TPS with pool 10 over the better of pools 5 and 20, less 1."""
    groups = _groups(runs, POOL_STEPS, "tps")
    if groups is None:
        return _missing(POOL_STEPS)
    ten, rival = groups[10], max((groups[5], groups[20]), key=np.mean)
    return _ratio(ten, rival, groups.values(), note=_means(groups, POOL_STEPS, "/s"))


def fewest_pending(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-c.2: mean pending over the last stage with pool 5 or 20 (the lower) less with pool 10; and nearby."""
    measured = []
    for window in (LAST_STAGE, *STAGE_WINDOWS):
        groups = _groups(runs, POOL_STEPS, window_column("pending_mean", window))
        if groups is None:
            return _missing(POOL_STEPS)
        low = min((groups[5], groups[20]), key=np.mean)
        measured.append(_difference(low, groups[10], groups.values(), note=_means(groups, POOL_STEPS, " waiting")))
    first, *nearby = measured
    return Compared(first.values, first.sigma_source, note=first.note, of_runs=first.of_runs,
                    standard_error=first.standard_error, nearby=tuple(m.value for m in nearby))


def threads_same(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-d.1: the largest difference between the TPS means of threads.max 100, 150 and 200, over the lower."""
    return _largest_difference(runs, THREAD_STEPS, "threads.max")


def threads_success(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-d.2: the share answered with threads.max 150 less the better of 100 and 200."""
    groups = _groups(runs, THREAD_STEPS, "success")
    if groups is None:
        return _missing(THREAD_STEPS)
    best = max((groups[100], groups[200]), key=np.mean)
    return _difference(groups[150], best, groups.values(), note=_means(groups, THREAD_STEPS, "", "{:.2%}"))


def connections_same(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-e.1: the largest difference between the TPS means of max-connections 4000, 6000, 8000 and 8192."""
    return _largest_difference(runs, CONNECTION_STEPS, "max-connections")


def gc_fourfold(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-e.2: ln of the longest GC pause's mean with max-connections 8000 over that with 6000."""
    picked = {m: CONNECTION_STEPS[m] for m in (6000, 8000)}
    groups = _groups(runs, picked, "gc_pause_max_ms")
    if groups is None or min(min(g) for g in groups.values()) <= 0:
        return _missing(picked)
    logs = [np.log(g) for g in groups.values()]
    sigma = _pooled(logs)
    error = None if sigma is None else sigma * math.sqrt(sum(1 / len(g) for g in logs))
    value = math.log(np.mean(groups[8000]) / np.mean(groups[6000]))
    return Compared((value,), "each setting's runs about their mean, as logarithms, pooled", of_runs=_count(groups),
                    standard_error=error, note=_means(groups, picked, " ms", "{:.1f}"))


def accept_same(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-f.1: TPS with accept-count 200 over that with 100, less 1."""
    groups = _groups(runs, ACCEPT_STEPS, "tps")
    if groups is None:
        return _missing(ACCEPT_STEPS)
    return _ratio(groups[200], groups[100], groups.values(), note=_means(groups, ACCEPT_STEPS, "/s"))


def final_rate(runs: pd.DataFrame, rule: Rule) -> Measured:
    """F001-g.1: answered requests per second on `final` over the hold of the offered rate, and nearby windows."""
    final = runs[runs["step"] == FINAL_STEP]
    if final.empty or final[window_column("tps", HOLD)].isna().all():
        return _missing({0: FINAL_STEP})
    hold = tuple(final[window_column("tps", HOLD)])
    nearby = tuple(float(final[window_column("tps", w)].mean()) for w in HOLD_WINDOWS)
    borrowed, source = _borrowed(runs, "tps") if len(hold) == 1 else (None, "the runs' spread")  # repeats: their own
    offered = final["offered_per_s"].iloc[0]
    return Measured(hold, source, None if borrowed is None else borrowed * np.mean(hold), nearby=nearby,
                    note=f"offered {offered:,.0f} requests a second; {final['success'].mean():.1%} of all answered")


STATISTICS = {"F001-a.1": goal_slip, "F001-b.1": api_tps, "F001-b.2": api_pending, "F001-b.3": database_bottleneck,
              "F001-c.1": pool_ten_best, "F001-c.2": fewest_pending, "F001-d.1": threads_same,
              "F001-d.2": threads_success, "F001-e.1": connections_same, "F001-e.2": gc_fourfold,
              "F001-f.1": accept_same, "F001-g.1": final_rate}


# ---- helpers ---------------------------------------------------------------------------------------------------

def _groups(runs: pd.DataFrame, steps: dict, column: str) -> dict | None:
    """Each setting's values of `column`, one per run; None when a step has no run in this data."""
    found = {key: runs.loc[runs["step"] == step, column].astype(float).to_numpy() for key, step in steps.items()}
    return None if any(len(v) == 0 or np.isnan(v).any() for v in found.values()) else found


def _missing(steps: dict) -> Measured:
    return Measured((), note=f"not measured: this data has no complete run of {', '.join(sorted(set(steps.values())))}")


def _pooled(groups) -> float | None:
    """The runs' standard deviation about their own setting's mean, pooled over the settings (None: no repeats)."""
    groups = list(groups)
    freedom = sum(len(g) - 1 for g in groups)
    if freedom == 0:
        return None
    return math.sqrt(sum(((g - np.mean(g)) ** 2).sum() for g in groups) / freedom)


def _count(groups: dict) -> int:
    return sum(len(g) for g in groups.values())


def _ratio(top, bottom, groups, note: str) -> Compared:
    """mean(top) / mean(bottom) − 1, its σ by the delta method with the pooled spread."""
    groups = list(groups)
    sigma = _pooled(groups)
    a, b = np.mean(top), np.mean(bottom)
    error = None if sigma is None else a / b * math.sqrt(sigma ** 2 / (len(top) * a ** 2) + sigma ** 2 / (len(bottom) * b ** 2))
    return Compared((a / b - 1,), "each setting's runs about their mean, pooled", of_runs=sum(len(g) for g in groups),
                    standard_error=error, note=note)


def _difference(first, second, groups, note: str) -> Compared:
    """mean(first) − mean(second), its σ from the pooled spread."""
    groups = list(groups)
    sigma = _pooled(groups)
    error = None if sigma is None else sigma * math.sqrt(1 / len(first) + 1 / len(second))
    return Compared((float(np.mean(first) - np.mean(second)),), "each setting's runs about their mean, pooled",
                    of_runs=sum(len(g) for g in groups), standard_error=error, note=note)


def _largest_difference(runs: pd.DataFrame, steps: dict, knob: str) -> Measured:
    """The largest difference between two settings' mean TPS, over the lower (a "no change" claim)."""
    groups = _groups(runs, steps, "tps")
    if groups is None:
        return _missing(steps)
    means = {key: np.mean(g) for key, g in groups.items()}
    high, low = max(means, key=means.get), min(means, key=means.get)
    return _ratio(groups[high], groups[low], groups.values(),
                  note=f"{knob} {high:,} against {low:,}, the two farthest apart; " + _means(groups, steps, "/s"))


def _means(groups: dict, steps: dict, unit: str, fmt: str = "{:,.1f}") -> str:
    return "means: " + ", ".join(f"{steps[k]} {fmt.format(np.mean(g))}{unit} ({len(g)} run{'s' * (len(g) > 1)})"
                                 for k, g in groups.items())


def _borrowed(runs: pd.DataFrame, column: str) -> tuple[float | None, str]:
    """The relative spread of one run of `column` on tomcat-defaults (the chapter's most repeated step), to borrow
    where a step ran once; None when it ran fewer than twice."""
    values = runs.loc[runs["step"] == DEFAULTS, column].astype(float)
    if len(values) < 2 or not values.mean():
        return None, f"no repeats of {DEFAULTS} to borrow a spread from"
    return float(values.std() / values.mean()), (f"borrowed: the relative spread of {DEFAULTS}'s {len(values)} runs "
                                                 f"({column}), applied to this value")


def _farthest(rows: pd.DataFrame, column: str, rule: Rule, borrowed: tuple[float | None, str]) -> Measured:
    """The row whose value lies farthest outside (or least inside) the rule's band, with its σ borrowed."""
    if rows.empty:
        return Measured((), note="not measured: no single-API step in this data")
    margins = rows[column].map(lambda x: claims.margin(rule, x))
    worst = rows.loc[margins.idxmin()]
    relative, source = borrowed
    listed = ", ".join(f"{s.removeprefix('api-')} {v:,.1f}" for s, v in zip(rows["step"], rows[column], strict=True))
    return Measured((float(worst[column]),), source, None if relative is None else relative * worst[column],
                    note=f"{worst['step']} (all: {listed})")
