"""harness.book.quarto: a render is tried again when, and only when, a folder vanished under Quarto's listing of the
project (CI, 2026-11-26: the suite's render failed as an end-to-end run dropped a PostgreSQL cluster's database under .tools/).

One test runs a real Quarto on a one-page project while a thread makes and removes folders in it, as a run or a test
does beside a render: it fails without the second attempt. Without Quarto on PATH it skips, or fails where
LAB_REQUIRE_QUARTO=1."""
from __future__ import annotations

import shutil
import sys
import threading
from collections import deque
from pathlib import Path

import pytest

from harness.book.quarto import ATTEMPTS, render, vanished_while_listing

# Helpers beside this file (pytest puts tests/ on sys.path).
import rendered  # noqa: E402,I001

SAMPLE = Path(__file__).parent / "samples" / "quarto-render-vanished.txt"  # Quarto's output in that CI run
# the dropped database, under the CI checkout's own root
VANISHED = "/.tools/postgres/clusters/pg17.6.0-standin-100-1b38d055c804/data/base/5"


def test_the_folder_that_vanished_under_quartos_listing_is_named():
    assert vanished_while_listing(SAMPLE.read_text().splitlines()).endswith(VANISHED)


def test_a_vanished_file_anywhere_else_is_not_a_reason_to_render_again():
    """The same error raised outside the listing (a page's own code, a missing include) is a real failure."""
    listing_frames = ("projectContext", "projectResourceFiles")
    elsewhere = [line for line in SAMPLE.read_text().splitlines() if not any(f in line for f in listing_frames)]
    assert vanished_while_listing(elsewhere) is None
    assert vanished_while_listing(["ERROR: Error: Cell 3 raised KeyError: 'rps'", "at projectContext (x.ts:1:1)"]) is None
    assert vanished_while_listing([]) is None


@pytest.fixture
def quarto():
    return shutil.which("quarto") or rendered.missing_quarto()


@pytest.fixture
def project(tmp_path):
    """A one-page Quarto project with an output dir, so Quarto lists the project's files as it does the book's (its
    HTML minimal: no theme to compile)."""
    (tmp_path / "_quarto.yml").write_text("project:\n  output-dir: _site\nformat:\n  html:\n    minimal: true\n")
    (tmp_path / "index.md").write_text("# One page\n\nNo code: this render only has to list the project.\n")
    (tmp_path / "churn").mkdir()
    return tmp_path


class Churn:
    """Folders made and removed in a loop (the oldest of LIVE removed as each new one is made) until stopped."""

    LIVE = 2000

    def __init__(self, folder: Path):
        self.folder, self.stopping = folder, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        live: deque[Path] = deque()
        n = 0
        while not self.stopping.is_set():
            live.append(self.folder / f"d{n}")
            live[-1].mkdir()
            n += 1
            if len(live) > self.LIVE:
                live.popleft().rmdir()

    def __enter__(self) -> Churn:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()


def test_a_render_that_lost_a_folder_under_quartos_listing_is_tried_again(quarto, project):
    lines: list[str] = []
    with Churn(project / "churn") as churn:
        def seen(line: str) -> None:
            lines.append(line)
            if "rendering again" in line:
                churn.stop()  # the tree is still from here on: the next attempt must succeed
        rendered = render(on_line=seen, command=[quarto, "render", str(project)])
    retries = [line for line in lines if "rendering again" in line]
    assert (rendered.code, rendered.attempts) == (0, 2), "\n".join(lines[-40:])
    assert len(retries) == 1 and f"{project / 'churn'}/d" in retries[0], retries
    assert (project / "_site" / "index.html").is_file()


def test_a_render_that_keeps_losing_folders_gives_up_with_quartos_error():
    """After ATTEMPTS the failure is the user's to see (a stand-in prints that CI run's output and fails each time)."""
    lines: list[str] = []
    stand_in = [sys.executable, "-c", f"import sys; print(open({str(SAMPLE)!r}).read()); sys.exit(1)"]
    rendered = render(on_line=lines.append, command=stand_in)
    assert (rendered.code, rendered.attempts) == (1, ATTEMPTS)
    assert sum("rendering again" in line for line in lines) == ATTEMPTS - 1
    assert vanished_while_listing(rendered.tail).endswith(VANISHED)


def test_any_other_failure_is_not_tried_again():
    lines: list[str] = []
    rendered = render(on_line=lines.append, command=[sys.executable, "-c", "print('ERROR: a cell failed'); exit(1)"])
    assert (rendered.code, rendered.attempts, rendered.tail) == (1, 1, ["ERROR: a cell failed"])
