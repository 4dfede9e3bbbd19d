"""A run compared with the book: `invoke compare chapterN [--data DIR]` judges the chapter's claims on another data
directory (a reader's run) with the same rules and prints each claim's outcome beside the book's: every kept pass
pooled (harness.book.passes), or, before any pass is kept, the committed data/ alone (said so). It fails when an
outcome moved between reproduced and not reproduced. `--keep` keeps the run as one of the book's passes: only a clean
pass (every step complete at one committed commit) is kept, appended to data/<chapter>/passes.csv.
"""
from __future__ import annotations

from pathlib import Path

from harness import DATA, LabError
from harness.book import chapters, passes
from harness.book.claims import Judgement
from harness.book.verdict_tables import number
from harness.lab.store import reading


def chapter_module(chapter: str):
    """The chapter's face (harness.book.chapters.chN), which judges its claims: `judge()`."""
    module = chapters.face(chapter)
    if not hasattr(module, "judge"):
        raise LabError(f"{chapter}'s module judges no claims yet (no judge())")
    return module


def judged(chapter: str, root: Path) -> list[Judgement]:
    if not (root / chapter).is_dir():
        raise LabError(f"no {chapter} in {root}: run it there first (LAB_DATA_DIR={root} invoke run {chapter})")
    with reading(root):
        return chapter_module(chapter).judge()


def the_book(chapter: str, kept: dict) -> tuple[list[Judgement], str]:
    """The book's judgements and what they are: every `kept` pass pooled, or data/ alone before any is kept."""
    if kept:
        n = len(kept)
        return passes.pooled(chapter, kept_passes=kept), f"the book ({n} {'pass' if n == 1 else 'passes'} pooled)"
    return judged(chapter, DATA), "the book (data/, no kept pass yet)"


def compare(chapter: str, other: Path | None = None, keep: bool = False) -> tuple[str, list[str]]:
    """The side-by-side report and the claims whose outcome flipped; with `keep`, the run is kept as a pass. The run
    judged is `other`, or data/ itself; beside the book's pooled passes it gets a column of its own."""
    root = other or DATA
    runs = judged(chapter, root)
    if keep:
        with reading(root):
            one, problems = passes.this_pass(chapter), passes.pass_problems(chapter, root)
        path = passes.keep(chapter, runs, one, problems)
    kept = passes.kept(chapter)
    reference, what = the_book(chapter, kept)
    beside = other is not None or bool(kept)  # data/ alone before any pass: one column
    ref = {j.rule.claim: j for j in reference}
    lines = [f"{'claim':<10} {what:<40} {'this run' if beside else '':<34}"]
    for j in runs:
        mine = ref.get(j.rule.claim)
        left = f"{number(mine.measured.value, mine.rule.unit)}: {mine.outcome}" if mine else "–"
        right = f"{number(j.measured.value, j.rule.unit)}: {j.outcome}" if beside else ""
        lines.append(f"{j.rule.claim:<10} {left:<40} {right:<34}".rstrip())
    moved = passes.flips({c: j.outcome for c, j in ref.items()}, {j.rule.claim: j.outcome for j in runs})
    if moved:
        lines.append(f"moved between reproduced and not reproduced: {', '.join(moved)}")
    if keep:
        lines.append(f"kept in {path}")
    return "\n".join(lines), moved
