"""The answer page's list of limits says which data its numbers come from: this edition's run of each chapter, where
the findings table pools each chapter's kept passes (harness.book.chapters.ch0.limits.limits_intro), one case per
wording."""
from __future__ import annotations

from harness.book.chapters import ch0
from harness.book.chapters.ch0.gather import Answer, Read
from harness.book.claims import REPRODUCED, Judgement, Measured, rules

SAID = "Each number in this list is from the data of this edition's run of its chapter"


def read(chapter: str, passes: int) -> Read:
    """A chapter whose every claim is judged on `passes` kept passes pooled (1: the data's own)."""
    pooled = {"pooled_value": 1.0, "pooled_sigma": 0.1, "passes": passes} if passes > 1 else {}
    return Read(chapter, judgements=tuple(Judgement(rule, Measured((1.0,), **pooled), REPRODUCED, 1.0)
                                          for rule in rules(chapter).values()))


def test_with_no_pooled_passes_the_list_and_the_findings_read_the_same_run():
    assert ch0.limits_intro(Answer(())) == (f"{SAID}; the findings table further down judges each chapter's kept "
                                            "pass, or that run where none is kept.")
    assert ch0.limits_intro(Answer((read("chapter1", 1), Read("chapter7", missing="no data yet")))) == \
        ch0.limits_intro(Answer(()))


def test_pooled_passes_are_counted_from_the_verdicts():
    alike = Answer((read("chapter1", 3), read("chapter7", 3), Read("chapter2")))
    assert ch0.limits_intro(alike) == (f"{SAID}; the findings table further down pools each chapter's 3 kept passes, "
                                       "so where a limit and a claim measure the same thing their numbers can differ "
                                       "by the spread between passes.")
    mixed = Answer((read("chapter1", 2), read("chapter3", 1), read("chapter7", 3)))
    assert ch0.limits_intro(mixed).startswith(f"{SAID}; the findings table further down pools the kept passes of "
                                              "Chapter 1 (2) and Chapter 7 (3) and judges the other chapters on one, "
                                              "so where")
    differ = Answer((read("chapter1", 2), read("chapter7", 3)))
    assert ch0.limits_intro(differ).startswith(f"{SAID}; the findings table further down pools the kept passes of "
                                               "Chapter 1 (2) and Chapter 7 (3), so where")
