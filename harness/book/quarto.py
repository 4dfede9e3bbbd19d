"""`quarto render` as the book runs it everywhere: `invoke render`, the test suite's render and the render benchmark.

    python -m harness.book.quarto [quarto render's arguments]     # exits with Quarto's code

Quarto lists every file under the project before it renders a page (project-resources.ts: its own ignore globs,
such as `**/*.quarto_ipynb`, are expanded over the whole tree, .tools/, .venv/ and data/ included): it reads each
folder, then looks at each folder it found there. A folder removed in between (a PostgreSQL cluster's database a run
drops, a step folder moved into place, git's or pytest's temporary ones) fails the whole render with
`NotFound: … stat '<path>'` (or `readdir`) before any page has run. So the render is tried again, up to ATTEMPTS
times, when it fails in that way and only then, saying so and naming the folder. Anything else fails at once.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness import ROOT, LabError, say as progress

ATTEMPTS = 3
TAIL_LINES = 200  # Quarto's error and its stack trace fit in this many lines
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
VANISHED = re.compile(r"NotFound: No such file or directory \(os error 2\): (?:stat|lstat|readdir) '([^']+)'")
LISTING = ("projectContext", "projectResourceFiles")  # the stack frames of Quarto's listing of the project


@dataclass
class Rendered:
    code: int
    tail: list[str]  # the last lines of the last attempt's output, without colours
    attempts: int


def kept_notebooks() -> list:
    """The notebooks a render with `-M keep-ipynb:true` leaves beside the pages (the tests read them)."""
    return [*ROOT.glob("*.quarto_ipynb*"), *ROOT.glob("chapters/*.quarto_ipynb*")]


def remove_kept_notebooks() -> None:
    """Quarto numbers a page's notebook after any left beside it (x.quarto_ipynb_1): none may be left."""
    for path in kept_notebooks():
        path.unlink(missing_ok=True)


def vanished_while_listing(tail: Sequence[str]) -> str | None:
    """The file that vanished while Quarto listed the project, when that is why the render failed; else None."""
    text = "\n".join(tail)
    found = VANISHED.search(text)
    return found.group(1) if found and any(frame in text for frame in LISTING) else None


def quarto() -> str:
    found = shutil.which("quarto")
    if not found:
        raise LabError("quarto is not on PATH: install it from quarto.org (Get Started), then render again")
    return found


def render(args: Sequence[str] = (), on_line: Callable[[str], None] | None = None,
           command: Sequence[str] | None = None) -> Rendered:
    """`quarto render <args>` from the project's root, every output line passed to `on_line` (default: printed) as it
    comes; tried again while it fails only because a file vanished under Quarto's listing of the project. The book
    renders from data/, whatever LAB_DATA_DIR says. `command` replaces `quarto render` (a test's stand-in)."""
    say = on_line or progress  # Quarto's lines, dropped once stdout is lost: the render goes on
    argv = [*(command or [quarto(), "render"]), *args]
    env = {k: v for k, v in os.environ.items() if k != "LAB_DATA_DIR"}
    attempt = 1
    while True:
        code, tail = _run(argv, env, say)
        path = vanished_while_listing(tail) if code else None
        if not path or attempt == ATTEMPTS:
            return Rendered(code, tail, attempt)
        attempt += 1
        say(f"quarto render: {path} vanished while Quarto listed the project's files (something else changed the "
            f"tree meanwhile: a run, a test, git); rendering again (attempt {attempt} of {ATTEMPTS})")


def _run(argv: list[str], env: dict[str, str], say: Callable[[str], None]) -> tuple[int, list[str]]:
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True, bufsize=1, errors="replace")
    tail: list[str] = []
    try:
        for raw in process.stdout:
            line = raw.rstrip("\n")
            say(line)
            tail = (tail + [COLOUR.sub("", line)])[-TAIL_LINES:]
    except KeyboardInterrupt:  # Quarto got the same Ctrl-C (one process group): let it end before going on
        process.wait()
        raise
    return process.wait(), tail


def main(argv: list[str]) -> int:
    try:
        return render(argv).code
    except LabError as error:
        print(error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
