"""Chapter 3's steps, chosen by what they test: the findings and roles of experiments/chapter3.toml, never step ids.
"""
from __future__ import annotations

from harness.book.steps import PLUS_ONE, spec_steps
from harness.lab.store import ChapterData

CHAPTER = "chapter3"


# The roles chapter 3's spec gives its steps, where findings alone do not pick them (PLUS_ONE, "the +1", is shared).
DEFAULT_GRACE, LONG_GRACE = "k6's default gracefulStop", "gracefulStop 5m"  # F000-c
FEW_THREADS, ENOUGH_THREADS = "too few threads", "enough threads"  # F000-d, F000-e
ARTICLES_RUN = "the article's run"  # F000-f, F000-h: 10k users at the article's settings, beside our isolating steps
ISOLATES_F, ISOLATES_J = "isolates F000-f", "isolates F000-j"
ACCEPT_1, ACCEPT_10 = "accept-count 1", "accept-count 10"  # F000-j: the article's two servers
ROLES = (DEFAULT_GRACE, LONG_GRACE, FEW_THREADS, ENOUGH_THREADS, ARTICLES_RUN, ISOLATES_F, ISOLATES_J, ACCEPT_1,
         ACCEPT_10, PLUS_ONE)


ONE_EACH = "per-vu-iterations"  # the executor that sends exactly one request per user


def f000_steps(*findings: str, role: str | None = None, one_each: bool = False) -> tuple[str, ...]:
    """Ids of chapter 3's steps, in spec order, that test any of `findings` (all steps when none is given) and have
    `role`; with `one_each`, only the runs that send one request per user (per-vu-iterations)."""
    executor = ONE_EACH if one_each else None
    picked = {s for finding in findings or (None,) for s in spec_steps(CHAPTER, finding, role, executor)}
    return tuple(s for s in spec_steps(CHAPTER) if s in picked)


def only_steps(data: ChapterData, *groups: tuple[str, ...]) -> ChapterData:
    """The chapter's data for the steps of these groups (from f000_steps) that it has, in spec order."""
    wanted = {s for group in groups for s in group}
    return data.only([s for s in spec_steps(data.chapter) if s in wanted and s in data.steps])
