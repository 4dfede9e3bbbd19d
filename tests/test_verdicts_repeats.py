"""Chapter 3's verdicts survive a re-run. Chapter 2 runs chapter 3's headline step again (`same_as`, with and without
the samplers): each repeat, judged as if it were that step, must give every F000 verdict the reference run gives, and
so must the issue's fresh-clone run (8519 answered, rebuilt from the reference run's rows)."""
from __future__ import annotations

import functools

import pandas as pd
import pytest

from harness.book.chapters.ch2_checks import as_step
from harness.book.chapters.ch3_verdicts import f000_verdicts
from harness.book.steps import ANY_MACHINE
from harness.lab.spec import load_spec
from harness.lab.store import TABLES, ChapterData, answered, load

FRESH_CLONE_OK = 8519  # f-10k-pv answered in the full re-run of chapter 3 from a fresh clone


@functools.cache
def chapters() -> tuple[ChapterData, ChapterData]:
    return load("chapter3"), load("chapter2")


def repeats() -> list[tuple[str, str]]:
    """(chapter-2 step, the chapter-3 step it repeats), from chapter 2's spec."""
    return [(s.id, s.same_as.split(":", 1)[1]) for s in load_spec("chapter2", ANY_MACHINE).steps
            if s.same_as.startswith("chapter3:")]


def with_run(chapter3: ChapterData, run: ChapterData, step: str) -> ChapterData:
    """Chapter 3 with `step`'s data replaced by `run` (one step, already under that id)."""
    rest = chapter3.only([s for s in chapter3.steps if s != step])
    tables = {name: pd.concat([getattr(rest, name), getattr(run, name)], ignore_index=True) for name in TABLES}
    return ChapterData(chapter3.chapter, {**rest.steps, step: run.steps[step]}, **tables)


@functools.cache
def reference() -> dict[str, str]:
    return {v.finding: v.verdict for v in f000_verdicts(chapters()[0])}


def test_chapter2_repeats_a_chapter3_step():
    assert len(repeats()) >= 8 and {step for _, step in repeats()} == {"f-10k-pv"}


@pytest.mark.parametrize("repeat, step", repeats())
def test_a_repeat_judged_as_its_step_gives_the_reference_verdicts(repeat, step):
    chapter3, chapter2 = chapters()
    assert repeat in chapter2.steps, f"{repeat}: no data in data/chapter2"
    ours, theirs = chapter3.steps[step]["config"], chapter2.steps[repeat]["config"]
    assert (ours["server"], ours["load"]) == (theirs["server"], theirs["load"]), "not the same settings"
    judged = {v.finding: v for v in f000_verdicts(with_run(chapter3, as_step(chapter2, repeat, step), step))}
    assert {f: v.verdict for f, v in judged.items()} == reference(), repeat
    assert step in judged["F000-f"].measured  # the repeat was judged, not left out


def fresh_clone_run(ok: int) -> ChapterData:
    """The reference f-10k-pv with users that failed at k6's dial timeout answered instead, until `ok` are."""
    chapter3 = chapters()[0]
    run = chapter3.only(["f-10k-pv"])
    rows = run.requests.copy()
    more = ok - int(answered(rows).sum())
    late = rows.index[rows["error"].fillna("").str.endswith("i/o timeout")][:more]
    rows.loc[late, ["status", "error_code", "error"]] = [200, 0, ""]
    rows.loc[late, "end_ms"] = rows.loc[late, "start_ms"] + 55_000  # in through SYN-RECV after slots freed
    rows["duration_ms"] = rows["end_ms"] - rows["start_ms"]
    meta = dict(run.steps["f-10k-pv"], requests={**run.steps["f-10k-pv"]["requests"], "succeeded": ok})
    return ChapterData(run.chapter, {"f-10k-pv": meta}, rows, run.ss, run.actuator, run.process, run.startup)


def test_the_fresh_clone_run_gives_the_reference_verdicts():
    chapter3 = chapters()[0]
    data = with_run(chapter3, fresh_clone_run(FRESH_CLONE_OK), "f-10k-pv")
    judged = {v.finding: v for v in f000_verdicts(data)}
    assert {f: v.verdict for f, v in judged.items()} == reference()
    assert f"{FRESH_CLONE_OK} of 10000 ok" in judged["F000-f"].measured
