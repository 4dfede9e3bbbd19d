"""Chapter 1's claims (seed 002), judged by the rules declared in experiments/claims/chapter1.toml: one function per
claim's statistic, computed once per run of the steps its rule names (Measured.values: one value per run).

Run k pairs run k of each step a rule reads; a step run once (C = 1 and C = 10) gives its one run to every pair. Its
spread then comes from the run itself: the rate over each 10-s stretch, by batch means (runs.batch_sigma).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from harness.book import claims
from harness.book.chapters.ch1 import runs
from harness.book.chapters.ch1.runs import Run, paired
from harness.book.claims import Judgement, Measured
from harness.book.noise import most_stray

ARTICLE_RPS = {1: 4.98, 10: 49.84, 100: 484.10, 500: 488.11}  # F002-a: the article's `ab` results at C = 1 … 500
TOOLS = ("k6", "ab")
QUEUED = 500  # the article's queueing case: 500 clients on 100 threads
FULL = 100  # the pool just full


def step(tool: str, clients: int) -> str:
    """The rules name steps by tool and C: k6-c500, ab-c1 …"""
    return f"{tool}-c{clients}"


def pool_threads(run: Run) -> int:
    return runs.pool_of_meta(run.name, run.meta).threads


# ---- F002-a: the article's rates --------------------------------------------------------------------------------

def farther(values: list[float]) -> float:
    """Of the tools' deviations, the one farther from 0 (its sign kept)."""
    return max(values, key=abs)


def rate_against_article(clients: int) -> Measured:
    """Each tool's whole-run rate less the article's, the tool farther from it, per run (F002-a.1 … a.4)."""
    pairs = paired(*(step(t, clients) for t in TOOLS))
    values = tuple(farther([runs.whole_rate(r) - ARTICLE_RPS[clients] for r in pair]) for pair in pairs)
    first = pairs[0]
    if len(pairs) > 1:
        return Measured(values, note=f"k6 and ab, {len(pairs)} runs each")
    # One run of each tool: the farther tool's spread from its own run, stretch by stretch (none in a short run).
    worst = max(first, key=lambda r: abs(runs.whole_rate(r) - ARTICLE_RPS[clients]))
    sigma = runs.batch_sigma(worst)
    if math.isnan(sigma):
        return Measured(values, note=f"k6 and ab, one run each, too short to read a spread from ({worst.name})")
    return Measured(values, borrowed_sigma=sigma,
                    sigma_source=f"the run itself: its rate over each {runs.BATCH_S:g}-s stretch, by batch means",
                    note=f"k6 and ab, one run each; the farther is {worst.name}")


# ---- F002-b and F002-d.0b: the steady rate --------------------------------------------------------------------------

def model_deviation(run: Run, window=runs.STEADY) -> float:
    """A run's steady rate over the model's min(C, threads) × rate, less 1."""
    pool = runs.pool_of_meta(run.name, run.meta)
    return runs.steady_rate(run, window) / pool.model_rps(runs.clients_of(run.meta)) - 1


def every_step() -> list[str]:
    return [step(t, c) for c in ARTICLE_RPS for t in TOOLS]


def largest_model_deviation(window=runs.STEADY) -> list[float]:
    return [farther([model_deviation(r, window) for r in pair]) for pair in paired(*every_step())]


def steady_against_model() -> Measured:
    """F002-b.1: the steady rate over min(C, 100) × 5, less 1, the largest deviation of the eight steps, per run."""
    return Measured(tuple(largest_model_deviation()),
                    nearby=tuple(statistics.fmean(largest_model_deviation(w)) for w in runs.NEARBY),
                    note="the eight steps; a step run once (C = 1, 10) counts in every run")


def beyond_pool(window=runs.STEADY) -> list[float]:
    """Per run: for each tool, the steady rate at C = 500 over that at C = 100, less 1; the larger deviation."""
    pairs = paired(*(step(t, c) for t in TOOLS for c in (FULL, QUEUED)))
    return [farther([runs.steady_rate(pair[2 * i + 1], window) / runs.steady_rate(pair[2 * i], window) - 1
                     for i in range(len(TOOLS))]) for pair in pairs]


def no_faster_beyond_pool() -> Measured:
    """F002-d.0b: 500 clients no faster than 100."""
    return Measured(tuple(beyond_pool()), nearby=tuple(statistics.fmean(beyond_pool(w)) for w in runs.NEARBY),
                    note="k6 and ab at C = 100 and C = 500")


# ---- F002-c: the queue at C = 500 -------------------------------------------------------------------------------------

def queued_pairs() -> list[tuple[Run, ...]]:
    return paired(*(step(t, QUEUED) for t in TOOLS))


def median_waits_for_no_sleep() -> Measured:
    """F002-c.1a: the larger median of the two tools, per run."""
    return Measured(tuple(max(runs.median_ms(r) for r in pair) for pair in queued_pairs()), note="k6-c500 and ab-c500")


def median_like_article() -> Measured:
    """F002-c.1b: the median farther from the article's 107 ms, per run."""
    article = 107.0
    return Measured(tuple(max((runs.median_ms(r) for r in pair), key=lambda v: abs(v - article))
                          for pair in queued_pairs()), note="k6-c500 and ab-c500")


def share_waiting_for_a_sleep() -> Measured:
    """F002-c.2: the share of requests answered after half a sleep, each run of both tools (pooled)."""
    every = [r for t in TOOLS for r in runs.runs(step(t, QUEUED))]
    half = {r.name: runs.pool_of_meta(r.name, r.meta).sleep_ms / 2 for r in every}
    return Measured(tuple(runs.share_over(r, half[r.name]) for r in every),
                    note="pooled: " + ", ".join(r.name for r in every))


def longest_about_two_sleeps(rule: claims.Rule) -> Measured:
    """F002-c.3: the longest answer time, the tool farther from the band (least inside it), per run."""
    return Measured(tuple(min((runs.longest_ms(r) for r in pair), key=lambda v: claims.margin(rule, v))
                          for pair in queued_pairs()), note="k6-c500 and ab-c500")


def outside_pool(run: Run) -> float:
    """How far the most busy threads lie outside [threads − most_stray(N), threads] (0 inside)."""
    threads, peak = pool_threads(run), runs.busy_peak(run)
    return max(0.0, threads - most_stray(runs.asked(run)) - peak, peak - threads)


def pool_all_busy(clients: tuple[int, ...]) -> Measured:
    """F002-c.4 (C = 500) and F002-d.0a (C = 100 and 500): the largest distance of the busy peak outside the pool."""
    pairs = paired(*(step(t, c) for t in TOOLS for c in clients))
    return Measured(tuple(max(outside_pool(r) for r in pair) for pair in pairs),
                    note=", ".join(step(t, c) for t in TOOLS for c in clients))


STATISTICS: dict[str, Callable[[claims.Rule], Measured]] = {
    "F002-a.1": lambda rule: rate_against_article(1),
    "F002-a.2": lambda rule: rate_against_article(10),
    "F002-a.3": lambda rule: rate_against_article(100),
    "F002-a.4": lambda rule: rate_against_article(500),
    "F002-b.1": lambda rule: steady_against_model(),
    "F002-c.1a": lambda rule: median_waits_for_no_sleep(),
    "F002-c.1b": lambda rule: median_like_article(),
    "F002-c.2": lambda rule: share_waiting_for_a_sleep(),
    "F002-c.3": longest_about_two_sleeps,
    "F002-c.4": lambda rule: pool_all_busy((QUEUED,)),
    "F002-d.0a": lambda rule: pool_all_busy((FULL, QUEUED)),
    "F002-d.0b": lambda rule: no_faster_beyond_pool(),
}


def judge() -> list[Judgement]:
    """Every claim of chapter 1, in the claims file's order, judged on the data directory in use."""
    return claims.judge_chapter(runs.CHAPTER, STATISTICS)
