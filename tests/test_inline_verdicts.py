"""Every outcome a chapter's sentences name (`verdict["F002-c.3"]`, `verdict["F002-b"]`, or words chosen from a claim
of the page's `claim`, as `say.bottleneck(claim["F001-b.3"])`) is the one its verdict table states: the book's, every
kept pass pooled (harness.book.passes), not the latest pass's alone; and a reader's own run is named beside it."""
from __future__ import annotations

import re

import pytest

from harness import ROOT
from harness.book import passes
from harness.book.chapters import ch6
from harness.book.verdict_tables import finding_outcomes, said_outcomes

import qmd  # noqa: I001 (tests/qmd.py: the page's cells)

INLINE = re.compile(r"`\{python\} verdict\[\"(?P<key>[\w.-]+)\"\]`")
CHAPTER_PAGES = sorted((ROOT / "chapters").glob("0[1-7]-*.qmd"))
PAGES = sorted(p.name for p in CHAPTER_PAGES if INLINE.search(p.read_text()) or "\nclaim = " in p.read_text())


def test_the_pages_that_name_outcomes_are_found_and_none_reads_a_judgement_outcome_inline():
    assert len(PAGES) >= 4, PAGES  # chapters 1, 4, 5 and 6 name outcomes in their sentences
    for page in CHAPTER_PAGES:  # `claim[…].outcome` inline would say the book's verdict with no reader's run beside
        assert not re.search(r"`\{python\} claim\[[^`]*\]\.outcome`", page.read_text()), page.name


@pytest.mark.parametrize("page", PAGES)
def test_every_outcome_a_page_names_is_its_verdict_tables(page):
    chapter = f"chapter{int(page[:2])}"
    book = passes.pooled(chapter)
    assert book, f"{chapter} has no kept pass to pool"
    stated = {j.rule.claim: j.outcome for j in book}
    names = qmd.namespace(ROOT / "chapters" / page)
    assert {c: j.outcome for c, j in names["claim"].items()} == stated  # every word a page chooses from a claim
    keys = {m["key"] for m in INLINE.finditer((ROOT / "chapters" / page).read_text())}
    expected = stated | finding_outcomes(book)
    assert {k: names["verdict"][k] for k in keys} == {k: expected[k] for k in keys}


def test_a_readers_run_is_named_beside_the_books_verdict_never_for_it(monkeypatch):
    judged = ch6.judge()
    book = {j.rule.claim: j.outcome for j in passes.pooled("chapter6")}
    mine = passes.Pass("0123456789ab 2026-12-01 10:00", "0123456789ab", "2026-12-01T10:00+00:00", "feedfeedfeed")
    monkeypatch.setattr(passes, "this_pass", lambda chapter, root=None: mine)
    said = said_outcomes("chapter6", judged)
    for j in judged:
        assert said[j.rule.claim] == f"{book[j.rule.claim]} over the book's passes, {j.outcome} in this data"
    assert said["F003-b"].endswith(f"{finding_outcomes(judged)['F003-b']} in this data")


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


def test_a_machine_miss_the_data_does_not_show_says_why_it_is_not_differs():
    from dataclasses import replace

    from harness.book.claims import DIFFERS, NOT_REPRODUCED, REPRODUCED, Judgement, Measured, Rule
    from harness.book.verdict_tables import machine_clause

    rule = Rule("F002-c.1b", "F002-c", "002", "q", "m", "within", 1.0, "s", machine="two shared cores",
                busy_above=0.9, machine_steps=("k6-c500", "ab-c500"))
    miss = Judgement(rule, Measured((1.0,), exact=True), NOT_REPRODUCED, None)
    assert machine_clause(miss) == ('; not "differs on this hardware", which needs the busiest CPU above 90% during '
                                    "k6-c500 and ab-c500, and the data does not show it")
    assert machine_clause(replace(miss, outcome=DIFFERS)) == machine_clause(replace(miss, outcome=REPRODUCED)) == ""
    assert machine_clause(replace(miss, rule=replace(rule, machine=""))) == ""
