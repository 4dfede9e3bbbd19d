"""History that only grows: every row that any commit ever held in a chapter's kept history (passes.csv, the
withdrawals, and verdicts.csv, the judgements made before the protocol) is still there at HEAD. A pass leaves the
book's verdicts only by a withdrawal row that says why, never by a row removed."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness import ROOT

HISTORY_FILES = ("passes.csv", "withdrawn.csv", "verdicts.csv")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def lost_rows(path: str) -> list[tuple[str, str]]:
    """(commit, row) for each line an earlier commit of `path` held that HEAD's file lacks, oldest first."""
    head = set((ROOT / path).read_text().splitlines()) if (ROOT / path).exists() else set()
    lost, seen = [], set()
    for commit in reversed(git("log", "--format=%H", "--", path).split()):
        try:
            text = git("show", f"{commit}:{path}")
        except subprocess.CalledProcessError:  # the commit that removed the file
            continue
        for line in text.splitlines():
            if line not in head and line not in seen:
                seen.add(line)
                lost.append((commit[:12], line))
    return lost


def history_paths() -> list[str]:
    tracked = git("log", "--format=", "--name-only", "--", "data").split()
    return sorted({p for p in tracked if Path(p).name in HISTORY_FILES})


def test_the_clone_has_the_whole_history():
    assert git("rev-parse", "--is-shallow-repository").strip() == "false", \
        "a shallow clone cannot prove that the kept history only grew: clone without --depth"
    assert "data/chapter1/verdicts.csv" in history_paths()  # the walk finds the files it must check


@pytest.mark.parametrize("path", history_paths())
def test_no_row_of_any_earlier_commit_is_missing_at_head(path):
    lost = lost_rows(path)
    assert not lost, f"{len(lost)} row(s) of {path} that earlier commits held are gone, e.g. {lost[0]}"


def test_a_lost_row_is_found(tmp_path):
    """The walk itself can fail: a row that HEAD lacks is reported with its commit (a file of this repository whose
    first commit had a line the current one does not: the README's first version)."""
    first = git("log", "--diff-filter=A", "--format=%H", "--", "README.md").split()[-1]
    old = set(git("show", f"{first}:README.md").splitlines())
    assert old - set((ROOT / "README.md").read_text().splitlines())
    assert lost_rows("README.md")
