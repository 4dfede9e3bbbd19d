"""Chapter 2, the lab and its limits: its face, what chapters/02-the-lab-and-its-limits.qmd and the answer page import
(`from harness.book.chapters import ch2`).

- `judge()`: chapter 2 judges no article finding (there is no experiments/claims/chapter2.toml), so none;
- `limits()`: the limits its data shows are the lab's (k6's start, the samplers), not a server's: none for the answer
  page;
- `checks(data)`: what the book relies on of its lab, each judged by a rule declared in ch2.lab_checks (a threshold with
  its source or a goal of the lab, with the spread the chapter's repeats measure);
- the numbers its prose quotes (ch2.values), the clauses whose wording depends on the data (ch2.words), its charts
  (ch2.charts) and tables (ch2.tables).

Chapter 2's repeats are data for other chapters too, read through harness.lab.store (never through this module):
`noise` (5 runs) and `unsampled` (3) are chapter 3's `f-10k-pv` (same_as), hold-N and queue-N give chapter 7 the
memory of a thread.
"""
from __future__ import annotations

from harness.book.chapters.ch2 import words
from harness.book.chapters.ch2.charts import (
    issued_chart,
    memory_chart,
    noise_chart,
    redeploy_chart,
    sampler_cost_chart,
    spread_chart,
    start_curves_chart,
)
from harness.book.chapters.ch2.lab_checks import GOAL_REDEPLOY_MS, GOAL_SAMPLERS, GOAL_SPIKE_BATCH_S, Check, checks
from harness.book.chapters.ch2.lab import CHAPTER
from harness.book.chapters.ch2.tables import (
    ceilings_table,
    checks_table,
    issued_table,
    memory_costs_table,
    memory_peaks_table,
    noise_runs_table,
    overflows_table,
    redeploys_table,
    rules_table,
    spreads_table,
    starts_table,
)
from harness.book.chapters.ch2.values import (
    batch,
    constant_vus,
    memory,
    noise,
    overflows,
    redeploys,
    samplers,
    setup,
    starts,
)
from harness.book.claims import Judgement
from harness.book.faces import Limit
from harness.lab import store
from harness.lab.store import ChapterData

__all__ = ["judge", "limits", "load", "checks", "by_id", "words", "Check",
           "GOAL_REDEPLOY_MS", "GOAL_SAMPLERS", "GOAL_SPIKE_BATCH_S",
           "setup", "starts", "batch", "overflows", "constant_vus", "memory", "redeploys", "samplers", "noise",
           "start_curves_chart", "spread_chart", "issued_chart", "memory_chart", "redeploy_chart", "sampler_cost_chart",
           "noise_chart", "rules_table", "checks_table", "starts_table", "overflows_table", "issued_table",
           "memory_costs_table", "memory_peaks_table", "redeploys_table", "noise_runs_table", "spreads_table",
           "ceilings_table"]


def load() -> ChapterData:
    return store.load(CHAPTER)


def judge() -> list[Judgement]:
    """Chapter 2's claims of the articles: none (its checks are of the lab: `checks`)."""
    return []


def limits() -> list[Limit]:
    """The limits a server meets that chapter 2's data shows: none (its limits are the lab's)."""
    return []


def by_id(checked: list[Check]) -> dict[str, Check]:
    """The checks by id, for the sentences that quote one's outcome."""
    return {c.rule.claim: c for c in checked}
