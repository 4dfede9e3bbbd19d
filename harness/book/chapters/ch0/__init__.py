"""The answer page (chapters/00-the-answer.qmd), the references (chapters/references.qmd) and the glossary
(chapters/glossary.qmd). The answer page reads the other chapters only through their faces (harness.book.faces:
judge(), limits()), so each number it shows is computed once, by the chapter that measured it."""
from __future__ import annotations

from harness import LabError
from harness.book.chapters.ch0.outcomes import Finding, Tally, findings, findings_table, tally, tally_sentence  # noqa: F401
from harness.book.chapters.ch0.gather import Answer, Read, answer, has_data  # noqa: F401
from harness.book.chapters.ch0.terms import Glossary, glossary  # noqa: F401
from harness.book.chapters.ch0.limits import limits_intro, limits_list, missing_note  # noqa: F401
from harness.book.chapters.ch0.references import articles_table, findings_by_article  # noqa: F401
from harness.book.explorer import Explorer, capacity_explorer, explorer_measured
from harness.lab import store

MEASURED_SPIKES = ("chapter2", "chapter3", "chapter7")  # chapters whose steps are spikes the explorer can draw


def explorer() -> Explorer:
    """The capacity explorer with every spike step of the book that can be drawn on it (a chapter without data adds
    none: the note of missing chapters says so)."""
    datas = []
    for chapter in MEASURED_SPIKES:
        if has_data(chapter):
            try:
                datas.append(store.load(chapter))
            except LabError:
                continue
    return capacity_explorer(explorer_measured(*datas))
