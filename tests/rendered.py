"""The book's render for the tests that read it (test_site.py: the site; test_book.py: the notebooks Quarto executed,
so that no chapter runs a second time). `invoke test` renders once, in its book job (tasks.JOBS), with

    python tests/rendered.py RESULT.json

and gives the tests RESULT.json in LAB_RENDER_RESULT; a pytest run without it renders on first need, once for all of
its xdist workers (a lock and a file named after the run). Without Quarto on PATH the tests that need the render are
skipped, or failed where LAB_REQUIRE_QUARTO=1 (CI: the site must be checked there).
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script (`invoke test`), the repository is not on the path
from harness.book.quarto import kept_notebooks, remove_kept_notebooks  # noqa: E402
RESULT_ENV = "LAB_RENDER_RESULT"
TIMEOUT_S = 900


def render(result: Path) -> dict:
    """`invoke render`'s render, each page's executed notebook kept; its exit code, seconds, start and output (a log
    file beside `result`) written to `result` as JSON."""
    remove_kept_notebooks()
    log = result.with_suffix(".log")
    started_at, began = time.time(), time.monotonic()
    with open(log, "w") as out:
        try:
            code = subprocess.run([sys.executable, "-m", "harness.book.quarto", "-M", "keep-ipynb:true"], cwd=ROOT,
                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            code = -9
    done = {"code": code, "seconds": time.monotonic() - began, "started_at": started_at, "log": str(log)}
    result.write_text(json.dumps(done))
    return done


def missing_quarto() -> NoReturn:
    """The test that needs Quarto is skipped for want of it, or failed where LAB_REQUIRE_QUARTO=1 (the book must be
    rendered there)."""
    reason = "quarto not on PATH: install it from https://quarto.org/docs/get-started/ to render the book"
    if os.environ.get("LAB_REQUIRE_QUARTO") == "1":
        pytest.fail(f"{reason} (LAB_REQUIRE_QUARTO=1: the site must be checked, not skipped)")
    pytest.skip(reason)


@functools.cache
def result() -> tuple[int, str, float, float] | None:
    """This run's render: exit code, output, seconds, and when it started (epoch seconds); None without Quarto."""
    given = os.environ.get(RESULT_ENV)
    if given:
        done = json.loads(Path(given).read_text())
    elif not shutil.which("quarto"):
        return None
    else:
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid{os.getpid()}")  # one render for all workers
        path = Path(tempfile.gettempdir()) / f"lab-render-{run}.json"
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = json.loads(path.read_text()) if path.exists() else render(path)
    if done.get("missing"):
        return None
    output = Path(done["log"]).read_text(errors="replace")
    return done["code"], output, done["seconds"], done["started_at"]


def needed() -> tuple[int, str, float, float]:
    """The render, for a test that cannot go on without it (skipped or failed without Quarto: missing_quarto)."""
    return result() or missing_quarto()


def executed_notebooks() -> dict[str, nbformat.NotebookNode]:
    """The notebooks this run's render executed, by page (`chapters/x.qmd`), their code cells only; {} when the
    render failed or none ran (no Quarto). A page Quarto kept frozen ran no cell (no execution counts) and is left out,
    as is a notebook older than the render: their pages must be executed by whoever needs them."""
    done = result()
    if done is None or done[0] != 0:
        return {}
    started_at = done[3]
    found = {}
    for path in (p for p in kept_notebooks() if p.suffix == ".quarto_ipynb"):
        notebook = nbformat.reads(path.read_text(), as_version=4)
        notebook.cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
        ran = notebook.cells and all(cell.get("execution_count") for cell in notebook.cells)
        if ran and path.stat().st_mtime >= started_at:
            found[str(path.relative_to(ROOT).with_suffix(".qmd"))] = notebook
    return found


if __name__ == "__main__":
    target = Path(sys.argv[1])
    if shutil.which("quarto"):
        render(target)
    else:  # the tests that need the render say so, once each
        target.write_text(json.dumps({"missing": True}))
