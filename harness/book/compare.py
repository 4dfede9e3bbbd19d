"""A run compared with the book: `invoke compare chapterN [--data DIR]` judges the chapter's claims on another data
directory (a reader's run) with the same rules and prints each claim's outcome beside the book's: every kept pass
pooled (harness.book.passes), or, before any pass is kept, the committed data/ alone (said so). It fails when an
outcome moved between reproduced and not reproduced. `--keep` keeps the run as one of the book's passes: only a clean
pass (every step complete at one committed commit) is kept, appended to data/<chapter>/passes.csv.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from harness import DATA, LabError
from harness.book import chapters, noise, passes
from harness.book.claims import Judgement
from harness.book.verdict_tables import number
from harness.lab.store import reading


def chapter_module(chapter: str):
    """The chapter's face (harness.book.chapters.chN), which judges its claims: `judge()`."""
    module = chapters.face(chapter)
    if not hasattr(module, "judge"):
        raise LabError(f"{chapter}'s module judges no claims yet (no judge())")
    return module


def judged(chapter: str, root: Path, noise_root: Path | None = None) -> list[Judgement]:
    """The chapter's claims judged on `root`'s steps, with the stray-failure rate measured in `noise_root` (`root`)."""
    with stray_failures_of(noise_root or root), reading(root):
        return chapter_module(chapter).judge()


@contextmanager
def stray_failures_of(root: Path):
    """Judge with the stray-failure rate of `root`'s steps: harness.book.noise keeps one per process (the book's,
    when a page judges), so it is measured again here, and forgotten after."""
    noise.stray_failures.cache_clear()
    with reading(root):
        noise.stray_failures()
    try:
        yield
    finally:
        noise.stray_failures.cache_clear()


def noise_source(root: Path) -> tuple[Path, str]:
    """Where a run's stray-failure rate comes from: its own steps when they measure one, else the book's data/."""
    with stray_failures_of(root), reading(root):
        failed, requests = noise.stray_failures()
    if requests or root == DATA:
        return root, f"stray failures: this run's own ({failed:,} in {requests:,} requests)"
    return DATA, (f"stray failures: the book's (data/): this run's folder has no step of "
                  f"{', '.join(noise.CLEAN_CHAPTERS)} whose model predicts every answer")


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
    if not (root / chapter).is_dir():
        raise LabError(f"no {chapter} in {root}: run it there first (LAB_DATA_DIR={root} invoke run {chapter})")
    noise_root, noise_said = noise_source(root)
    runs = judged(chapter, root, noise_root)
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
    if beside:
        lines.append(noise_said)
    if moved:
        lines.append(f"moved between reproduced and not reproduced: {', '.join(moved)}")
    if keep:
        lines.append(f"kept in {path}")
    return "\n".join(lines), moved
