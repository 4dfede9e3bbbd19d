"""Every outcome a chapter's sentences name (`claim["F002-c.3"].outcome`, `outcome["F002-b"]`, or words chosen from a
claim of the page's `claim`, as `say.bottleneck(claim["F001-b.3"])`) is the one its verdict table states: the book's,
every kept pass pooled (harness.book.passes), not the latest pass's alone."""
from __future__ import annotations

import re

import pytest

from harness import ROOT
from harness.book import passes
from harness.book.verdict_tables import finding_outcomes

import qmd  # noqa: I001 (tests/qmd.py: the page's cells)

INLINE = re.compile(r"`\{python\} [^`]*?\b(claim\[\"(?P<claim>[\w.-]+)\"\]\.outcome|outcome\[\"(?P<finding>[\w-]+)\"\])")
PAGES = sorted(p.name for p in (ROOT / "chapters").glob("0[1-7]-*.qmd")
               if INLINE.search(p.read_text()) or "claim = " in p.read_text())


def named_inline(page: str) -> tuple[set[str], set[str]]:
    """The claims and findings whose outcome the page's sentences name inline."""
    found = list(INLINE.finditer((ROOT / "chapters" / page).read_text()))
    return {m["claim"] for m in found if m["claim"]}, {m["finding"] for m in found if m["finding"]}


def test_the_pages_that_name_outcomes_inline_are_found():
    assert len(PAGES) >= 4, PAGES  # chapters 1, 4, 5 and 6 name outcomes in their sentences


@pytest.mark.parametrize("page", PAGES)
def test_every_outcome_named_inline_is_the_verdict_tables(page):
    chapter = f"chapter{int(page[:2])}"
    book = passes.pooled(chapter)
    assert book, f"{chapter} has no kept pass to pool"
    stated = {j.rule.claim: j.outcome for j in book}
    names = qmd.namespace(ROOT / "chapters" / page)
    claims, findings = named_inline(page)
    assert {c: names["claim"][c].outcome for c in claims} == {c: stated[c] for c in claims}
    assert {c: j.outcome for c, j in names["claim"].items()} == stated  # every word a page chooses from a claim
    if findings:
        assert {f: names["outcome"][f] for f in findings} == {f: finding_outcomes(book)[f] for f in findings}


def test_the_answer_page_states_every_findings_pooled_outcome_and_values():
    """Its table of findings and its tally: each finding composed from its claims' pooled verdicts, in every chapter
    that judges it (F002-d in chapters 1 and 7), with the pooled values the verdict tables show."""
    from harness.book.chapters.ch0 import gather, outcomes
    from harness.book.claims import compose

    book = {j.rule.claim: j for chapter in ("chapter1", "chapter3", "chapter4", "chapter5", "chapter6", "chapter7")
            for j in passes.pooled(chapter)}
    found = outcomes.findings(gather.answer())
    assert len(found) >= 31
    for finding in found:
        parts = [book[rule.claim] for _, rule in finding.claims]
        assert finding.outcome == compose(parts)[0], finding.finding
        assert [j.measured.value for j in finding.judgements] == pytest.approx([j.measured.value for j in parts],
                                                                               nan_ok=True), finding.finding
