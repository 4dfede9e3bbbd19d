"""A .qmd page as Quarto reads it: its `{{< include … >}}` lines expanded, its executable ```{python} cells in order.

Only what the book uses: includes (a path relative to the including file, or to the project root when it starts
with /) and python cells. The render cache keys a page on the files it includes; the tests and the render benchmark
run a page's cells as Quarto's Jupyter engine does.
"""
from __future__ import annotations

import re
from pathlib import Path

OPEN = re.compile(r"^(`{3,})\{python\b[^}]*\}\s*$")
INCLUDE = re.compile(r"^\{\{<\s*include\s+(\S+)\s*>\}\}$")


def _included(line: str, page: Path, root: Path) -> Path | None:
    match = INCLUDE.match(line.strip())
    if not match:
        return None
    target = match.group(1)
    return root / target.lstrip("/") if target.startswith("/") else page.parent / target


def expand_includes(path: Path, root: Path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        included = _included(line, path, root)
        lines.append(expand_includes(included, root) if included else line)
    return "\n".join(lines)


def included_files(path: Path, root: Path) -> list[Path]:
    """The page and every file it includes, at any depth (a missing one too: its absence matters)."""
    found = [path]
    for line in path.read_text().splitlines() if path.is_file() else []:
        included = _included(line, path, root)
        if included:
            found += included_files(included, root)
    return found


def python_cells(text: str) -> list[str]:
    """Sources of the ```{python} cells; a cell closes at a line of at least as many backticks."""
    cells, current, fence = [], None, ""
    for number, line in enumerate(text.splitlines(), start=1):
        if current is None:
            match = OPEN.match(line)
            if match:
                current, fence, start = [], match.group(1), number
        elif re.fullmatch(rf"`{{{len(fence)},}}\s*", line):
            cells.append("\n".join(current))
            current = None
        else:
            current.append(line)
    if current is not None:
        raise ValueError(f"the python cell opened on line {start} is never closed")
    return cells
