"""A finding's verdict, computed from data: what the article says, what we measured, and whether they agree.

Also the book's one classification of a request (`answered`: a 2xx/3xx response with no k6 error; every other
request failed, of the kind `failure_kinds` names) and the tolerances verdicts share. A verdict is one of three
words, so the book's tables stay comparable; `verdict_table` shows a chapter's.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from IPython.display import Markdown

from harness.book.tables import folded, markdown_table
from harness.lab.load.k6 import INTERRUPTED_CODE
from harness.lab.spec import FINDING_ID
from harness.lab.store import answered

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


MODEL_NOISE = 0.05  # margin around the model's range for what else runs on the 2 cores


COUNT_TOLERANCE = 0.05  # a wave, or a count of users, within 5 % (stragglers of a wave land in the next bucket)


# The ceiling can be passed by one: the kernel checks a full accept queue without a lock, so on 2 cores two handshakes
# completing at once can both get in (seen in CI: Recv-Q 3 with a backlog of 1, ESTAB 7 against a ceiling of 6).
QUEUE_RACE = 1


INTERRUPTED_TEXT = "interrupted: k6 stopped before a response"  # harness.load writes it with INTERRUPTED_CODE


def failure_kinds(requests) -> pd.Series:
    """Per request, what went wrong as a short label; "" for an answered one.

    k6 (Go) writes `Get "http://…": read tcp 127.0.0.1:41234->127.0.0.1:8080: read: connection reset by peer`:
    the cause comes last, after addresses that differ per request, so the label is the text after the last ": "
    ("connection reset by peer", "i/o timeout", "request timeout"). No text: "http <status>" for a 4xx/5xx.
    """
    text = requests["error"].fillna("").astype(str)
    kind = text.map({t: t.rsplit(": ", 1)[-1] for t in text.unique()})  # a few distinct texts, many rows
    kind = kind.where(text != "", "http " + requests["status"].astype(str))
    kind = kind.mask((text == "") & (requests["status"] < 400) & (requests["error_code"] != 0),
                     "k6 error " + requests["error_code"].astype(str))
    kind = kind.mask(requests["error_code"] == INTERRUPTED_CODE, INTERRUPTED_TEXT)
    return kind.mask(answered(requests), "")


def verdict_table(verdicts: list[Verdict]) -> Markdown:
    """The chapter's closing table: finding, what the article says, the verdict and its reason in one clause;
    what we measured and the whole reason follow, folded."""
    if not verdicts:
        return Markdown("*No finding is tested in this chapter yet.*")
    table = pd.DataFrame([{"Finding": v.finding, "The article says": v.article,
                           "Verdict": f"**{v.verdict}**" + (f": {headline(v.why)}" if v.why else "")} for v in verdicts])
    evidence = "\n\n".join(f"**{v.finding}** ({v.verdict}). We measured: {v.measured}." + (f" Why: {v.why}." if v.why else "")
                            for v in verdicts)
    return Markdown(markdown_table(table) + "\n\n" + folded("The evidence behind each verdict", evidence))


def headline(reason: str) -> str:
    """A reason's first clause (up to its first semicolon): what a reader of the table needs first."""
    return reason.split("; ")[0]
