"""A run compared with the book: `invoke compare chapterN [--data DIR]` judges the chapter's claims on another data
directory (a reader's run) with the same rules and prints each claim's outcome beside the book's: every kept pass
pooled (harness.book.passes), or, before any pass is kept, the committed data/ alone (said so). It fails when an
outcome moved between reproduced and not reproduced. `--keep` keeps the run as one of the book's passes: only a clean
pass (every step complete at one committed commit) is kept, appended to data/<chapter>/passes.csv.

`invoke compare chapterN@app` judges the chapter as run on a reader's own server (`invoke run chapterN --server
app.jar` writes <data>/chapterN@app/) by the same rules, beside the book's; never kept: the book's passes are its
sample server's.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import replace
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


def judged(chapter: str, root: Path) -> tuple[list[Judgement], str]:
    """The chapter's claims judged on `root`'s steps, and where their stray-failure rate came from, in words."""
    with stray_failures_of(root) as said, reading(root):
        return chapter_module(chapter).judge(), said


@contextmanager
def stray_failures_of(root: Path):
    """Judge with the stray-failure rate of `root`'s steps, or the book's (data/) where they measure none; yields
    which, in words. harness.book.noise keeps one rate per process (the book's, when a page judges), so it is
    measured here, once, and forgotten after."""
    noise.stray_failures.cache_clear()
    try:
        with reading(root):
            failed, requests = noise.stray_failures()
        if requests or root == DATA:
            # The rate is the folder's, over every clean chapter in it: for data/ the same for every chapter judged
            folder = "the book's (data/)" if root == DATA else "this run's folder's"
            said = (f"stray failures: {folder}, over its steps of {', '.join(noise.CLEAN_CHAPTERS)} "
                    f"({failed:,} in {requests:,} requests)")
        else:
            noise.stray_failures.cache_clear()
            with reading(DATA):
                noise.stray_failures()
            said = (f"stray failures: the book's (data/): this run's folder has no step of "
                    f"{', '.join(noise.CLEAN_CHAPTERS)} whose model predicts every answer")
        yield said
    finally:
        noise.stray_failures.cache_clear()


def the_book(chapter: str, kept: dict) -> tuple[list[Judgement], str]:
    """The book's judgements and what they are: every `kept` pass pooled, or data/ alone before any is kept."""
    if kept:
        n = len(kept)
        return passes.pooled(chapter, kept_passes=kept), f"the book ({n} {'pass' if n == 1 else 'passes'} pooled)"
    return judged(chapter, DATA)[0], "the book (data/, no kept pass yet)"


def compare(chapter: str, other: Path | None = None, keep: bool = False,
            label: str = "this run") -> tuple[str, list[str]]:
    """The side-by-side report and the claims whose outcome flipped; with `keep`, the run is kept as a pass. The run
    judged is `other`, or data/ itself; beside the book's pooled passes it gets a column of its own."""
    root = other or DATA
    if "@" in chapter:
        return compare_own_server(chapter, root, keep)
    if not (root / chapter).is_dir():
        raise LabError(f"no {chapter} in {root}: run it there first (LAB_DATA_DIR={root} invoke run {chapter})")
    if not os.access(root / chapter, os.R_OK | os.X_OK):  # else its steps would read as never run
        raise LabError(f"{root / chapter} cannot be read by this user (uid {os.geteuid()}): judge it as its owner")
    runs, noise_said = judged(chapter, root)
    if keep:
        with reading(root):
            one, problems = passes.this_pass(chapter), passes.pass_problems(chapter, root)
        path = passes.keep(chapter, plain_numbers(runs), one, problems)
    kept = passes.kept(chapter)
    reference, what = the_book(chapter, kept)
    beside = other is not None or bool(kept)  # data/ alone before any pass: one column
    ref = {j.rule.claim: j for j in reference}
    lines = [f"{'claim':<10} {what:<40} {label if beside else '':<34}"]
    for j in runs:
        mine = ref.get(j.rule.claim)
        left = f"{number(mine.measured.value, mine.rule.unit)}: {mine.outcome}" if mine else "–"
        right = f"{number(j.measured.value, j.rule.unit)}: {j.outcome}" if beside else ""
        lines.append(f"{j.rule.claim:<10} {left:<40} {right:<34}".rstrip())
    moved = passes.flips({c: j.outcome for c, j in ref.items()}, {j.rule.claim: j.outcome for j in runs})
    if beside:
        lines.append(noise_said)
    if other is not None and not keep and (problems := passes.pass_problems(chapter, root)):
        lines.append(f"not a whole pass of its spec (judged as it is, and --keep would refuse it): {'; '.join(problems)}")
    if moved:
        lines.append(f"moved between reproduced and not reproduced: {', '.join(moved)}")
    if keep:
        lines.append(f"kept in {path}")
    return "\n".join(lines), moved


def plain_numbers(judgements: list[Judgement]) -> list[Judgement]:
    """The judgements with their one-number fields as Python's floats. A statistic may hand back numpy's (np.float64),
    and the history file keeps a number as its repr, which for numpy's is "np.float64(0.0035)": a row no reader could
    read back (chapter 4's first pass of 2026-11-28 was kept so, and withdrawn)."""
    def plain(x):
        return None if x is None else float(x)

    return [replace(j, measured=replace(j.measured, borrowed_sigma=plain(j.measured.borrowed_sigma),
                                        busy=plain(j.measured.busy))) for j in judgements]


def compare_own_server(folder: str, root: Path, keep: bool) -> tuple[str, list[str]]:
    """A chapter run on a reader's own server (`folder`: chapterN@app in `root`) judged beside the book: the chapter's
    code reads it under the chapter's own name, through a link in a folder of its own."""
    chapter = folder.partition("@")[0]
    if keep:
        raise LabError(f"{folder} ran on your own server: it is compared with the book, never kept as one of its "
                       f"passes (those are the sample server's); drop --keep")
    if not (root / folder).is_dir():
        raise LabError(f"no {folder} in {root}: run it there first (invoke run {chapter} --server <your jar>)")
    with tempfile.TemporaryDirectory(prefix="lab-compare-") as tmp:
        (Path(tmp) / chapter).symlink_to((root / folder).resolve(), target_is_directory=True)
        return compare(chapter, Path(tmp), label=folder)  # the column's header names the folder
