"""A finding's verdict, computed from data: what the article says, what we measured, and whether they agree.

Chapters build `Verdict`s from their step data with the helpers here and show them with
`harness.book.verdict_table`. A verdict is one of three words, so the book's tables stay comparable.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.spec import FINDING_ID

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
DIFFERS = "differs on this hardware"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, DIFFERS)


@dataclass(frozen=True)
class Verdict:
    finding: str  # an ID from the seeds, e.g. F001-a
    article: str  # what the article claims, in a phrase
    measured: str  # what the data shows, with the numbers
    verdict: str  # one of VERDICTS
    why: str = ""  # one sentence: the mechanism, or what differs

    def __post_init__(self):
        if not FINDING_ID.match(self.finding):
            raise ValueError(f"finding must be an ID like 'F001-a', got {self.finding!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(map(repr, VERDICTS))}, got {self.verdict!r}")


def within(measured: float, expected: float, rel_tol: float) -> bool:
    """Is `measured` within `rel_tol` (0.1 = 10 %) of `expected`? An expected 0 needs exactly 0."""
    return abs(measured - expected) <= rel_tol * abs(expected)


def within_abs(measured: float, expected: float, tol: float) -> bool:
    """Is `measured` within `tol` (same unit) of `expected`? For times, where a fixed slack is natural."""
    return abs(measured - expected) <= tol


def verdict_of(agrees: bool, machine_bound: bool = False) -> str:
    """`reproduced` when the data agrees with the article. When it does not: `differs on this hardware` if the
    claim depends on the machine (cores, memory, kernel limits), else `not reproduced`."""
    if agrees:
        return REPRODUCED
    return DIFFERS if machine_bound else NOT_REPRODUCED
